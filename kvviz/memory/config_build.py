"""Build transformers' config object for a config.json with a memory and time bound of its own.

`build_bounded(cls, raw)` calls `cls(**raw)` (the class kvviz.memory.hf_config picks, what `AutoConfig` does) in a
forked child process (Linux) with its own address-space limit (BUILD_MEMORY_BYTES above what the process already
maps) and time limit (BUILD_SECONDS): whatever a config class does with a value no check before it foresaw
(kvviz.memory.config_json), the server keeps its memory and the import is refused in one line. Elsewhere (no fork)
it runs in-process, bounded by the checks before it. It takes the class as an argument and imports no transformers.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import select
import sys
import time
from typing import Any, NoReturn

from kvviz.i18n import _
from kvviz.inputs import echo
from kvviz.memory.config_json import MAX_MESSAGE_CHARS

__all__ = ["BUILD_MEMORY_BYTES", "BUILD_SECONDS", "build_bounded"]

BUILD_MEMORY_BYTES = 512 * 2**20  # transformers' config construction: address space above what the process maps
BUILD_SECONDS = 15.0  # ... and wall time (a real config takes milliseconds; the margin is for a loaded 2-core CPU)


def _construct(cls: Any, raw: dict[str, Any]) -> tuple[str, Any]:
    """("ok", config) | ("deep", None) | ("memory", None) | ("error", transformers' reason on one line)."""
    try:
        return "ok", cls(**raw)
    except RecursionError:
        return "deep", None
    except MemoryError:
        return "memory", None
    except echo.RAW_PYTHON_ERRORS as exc:  # the class's own code tripped on a value: Python's words say nothing
        return "error", _(
            "its values do not fit together ({error}); compare them with the model's published config.json"
        ).format(error=type(exc).__name__)
    except Exception as exc:  # noqa: BLE001 -- transformers' validators raise many types
        return "error", echo.one_line(exc, MAX_MESSAGE_CHARS) or type(exc).__name__


def _vm_size_bytes() -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:"))
    except (OSError, StopIteration, ValueError):
        return None


def build_bounded(cls: Any, raw: dict[str, Any]) -> tuple[str, Any]:
    """transformers' config construction with a memory and time bound of its own.

    On Linux it runs in a forked child: the child caps its address space at what the process maps now plus
    BUILD_MEMORY_BYTES, builds the config, and sends it back pickled; the parent waits at most BUILD_SECONDS and
    kills the child past that. A Streamlit server shared by a class keeps its memory and its other sessions'
    time, whatever the config class does. Elsewhere (no fork) it runs in-process, bounded by the checks before it."""
    vm_size = _vm_size_bytes()
    if not (sys.platform.startswith("linux") and hasattr(os, "fork")) or vm_size is None:
        return _construct(cls, raw)
    read_fd, write_fd = os.pipe()
    try:
        pid = os.fork()
    except OSError:  # no process to spare (EAGAIN, ENOMEM): in-process, bounded by the checks before it
        os.close(read_fd)
        os.close(write_fd)
        return _construct(cls, raw)
    if pid == 0:
        _build_in_child(cls, raw, vm_size, read_fd, write_fd)
    os.close(write_fd)
    return _answer_of(pid, read_fd)


def _build_in_child(cls: Any, raw: dict[str, Any], vm_size: int, read_fd: int, write_fd: int) -> NoReturn:
    """The forked child: cap the address space, build, write the pickled outcome, exit; never returns into the
    caller's code."""
    status = 1
    try:
        import resource  # Unix only (Windows has none): imported in the forked child, the one place that uses it

        os.close(read_fd)
        gc.disable()  # a collection would touch (and copy) every page shared with the parent
        limit = vm_size + BUILD_MEMORY_BYTES
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
        view = memoryview(_pickled(_construct(cls, raw)))
        while view:
            view = view[os.write(write_fd, view) :]
        status = 0
    finally:
        os._exit(status)


def _pickled(outcome: tuple[str, Any]) -> bytes:
    try:
        return pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        return pickle.dumps(("memory", None))
    except Exception as exc:  # noqa: BLE001 -- an attribute transformers set that cannot be pickled
        return pickle.dumps(("error", echo.one_line(exc, MAX_MESSAGE_CHARS) or type(exc).__name__))


def _answer_of(pid: int, read_fd: int) -> tuple[str, Any]:
    """The parent: the child's outcome, read within BUILD_SECONDS; ("time", None) past that, ("memory", None) when
    the child died before it answered whole. The child is killed and reaped either way."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + BUILD_SECONDS
    poller = select.poll()  # not select(): a server with many sockets has descriptors past FD_SETSIZE
    poller.register(read_fd, select.POLLIN | select.POLLHUP)
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not poller.poll(left * 1000):
                return "time", None
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            if len(chunks) > BUILD_MEMORY_BYTES >> 20:  # more pickle than the child could hold
                return "memory", None
    finally:
        os.close(read_fd)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
        os.waitpid(pid, 0)
    if not chunks:  # killed (out of memory before it could answer) or crashed
        return "memory", None
    try:
        return pickle.loads(b"".join(chunks))
    except Exception:  # noqa: BLE001 -- a truncated answer: the child died while writing
        return "memory", None

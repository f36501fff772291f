"""`python -m kvviz <command>`: one module per subcommand, and the rules every command shares (here).

- printable(text): untrusted text (a config's fields, a path, an argument) as a terminal may show it: control
  characters written as escapes, so a config.json holding "\\x1b]0;PWNED\\x07" cannot set the terminal's title.
  Every print of a command goes through say().
- Parser: the one argparse parser of every command: a refusal is one printable line, cut to MESSAGE_CHARS (a
  5,000-digit argument is never echoed whole), after the usage line or raised as the command's own error type.
- whole(lo, hi): the argparse type of a whole number, the app's parser with the app's limits
  (kvviz.inputs.query_values.bounded_int): '٣', '３２', '1_6' and 0 where the page's minimum is 1 are refused here too.
- output_problem(path, folder=...): say before the work starts whether a result can be written there.
- read_regular_file(path, limit): a regular file's bytes, never a FIFO, a device or a socket, with a time bound.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
import sys
import tempfile
import threading
import unicodedata
from collections.abc import Callable
from pathlib import Path

from kvviz.inputs import query_values

MESSAGE_CHARS = 200  # an error line is cut here
READ_TIMEOUT_S = 10.0  # a config file on a hung network mount is refused after this long
_BIDI_CONTROLS = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029")


def _visible(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def printable(text: object, *, keep_newlines: bool = True) -> str:
    """`text` with every control character made visible as an escape (ESC -> \\x1b, BEL -> \\x07, bidi overrides,
    lone surrogates from undecodable arguments); newlines (and tabs) kept when keep_newlines, for a table."""
    kept = "\n\t" if keep_newlines else ""
    out = []
    for ch in str(text):
        if ch in kept:
            out.append(ch)
        elif ch in _BIDI_CONTROLS or unicodedata.category(ch) in ("Cc", "Cs"):
            out.append(_visible(ch))
        else:
            out.append(ch)
    return "".join(out)


def say(text: object = "", *, file=None, flush: bool = False) -> None:
    """print() for every command: untrusted text inside `text` reaches the terminal as printable()."""
    print(printable(text), file=sys.stdout if file is None else file, flush=flush)


def one_line(message: object, max_chars: int = MESSAGE_CHARS) -> str:
    """A message on one printable line, cut with "…" past max_chars."""
    return query_values.shown(printable(message, keep_newlines=False), max_chars)


class ArgumentError(ValueError):
    """A refused argument of a command whose own errors are no other type (claims, evict); the message is one line."""


class Parser(argparse.ArgumentParser):
    """argparse whose refusals are one printable line of at most MESSAGE_CHARS (exit status 2).

    refusal None: argparse's way, the usage line then that line, and the process exits. refusal an exception type
    (the command's own: MemoryInputError, OpsInputError, ArgumentError): raised with that line, so the command answers
    a bad argument like any other bad input, in its one line."""

    def __init__(self, *args, refusal: type[Exception] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.refusal = refusal

    def error(self, message: str) -> None:  # type: ignore[override]
        if self.refusal is not None:
            raise self.refusal(one_line(message))
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {one_line(message)}\n")


def whole(lo: int, hi: int) -> Callable[[str], int]:
    """argparse type: a whole number in [lo, hi], read by the app's one parser (query_values.bounded_int)."""
    return query_values.cli_whole(lo, hi)


def within(setting) -> Callable[[str], int]:
    """argparse type for a page's setting (kvviz.inputs.prompt_rules.IntSetting): its bounds, the same rule."""
    return whole(setting.lo, setting.hi)


def output_problem(path: Path, *, folder: bool) -> str | None:
    """None if a result can be written at `path` (a file, or a folder when folder=True), else one sentence saying
    why not. Checked by trying, not by os.access (which answers yes to root, even under /sys): a probe file is
    created and removed, and a folder made for the probe is removed again."""
    path = Path(path)
    flag = "--out" if folder else "--csv"
    if folder and path.exists() and not path.is_dir():
        return f"{flag} {path} is an existing file, not a folder; give a folder path."
    if not folder and path.is_dir():
        return f"{flag} {path} is a folder; give a file path such as {path / 'passes.csv'}."
    if not path.parent.is_dir():
        return f"{flag} {path}: the folder {path.parent} does not exist; create it first."
    made = None
    try:
        if folder:
            if not path.exists():
                path.mkdir()
                made = path
            with tempfile.TemporaryFile(dir=path):
                pass
        elif path.exists():  # non-blocking: a FIFO nobody reads is refused (ENXIO), not waited on
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK))
        else:
            with open(path, "xb"):
                made = path
    except OSError as exc:
        return (
            f"{flag} {path}: cannot write there ({exc.strerror or type(exc).__name__}); give a path you can write to."
        )
    finally:
        if made is not None:
            with contextlib.suppress(OSError):
                made.rmdir() if folder else made.unlink()
    return None


class ReadRefused(ValueError):
    """A file that is not read: not a regular file, unreadable, or too slow; the message says which."""


def read_regular_file(path: Path, limit: int, timeout_s: float = READ_TIMEOUT_S) -> bytes:
    """Up to limit + 1 bytes of the regular file at `path` (one more than limit, so a caller knows it is longer).

    A FIFO, a device or a socket is refused before it is opened for reading (opening a FIFO with no writer waits
    forever); the file is opened non-blocking and checked again on the open descriptor; a read that takes longer
    than timeout_s (a hung network mount) is refused."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise ReadRefused(f"cannot read {path}: it does not exist; give the path of a config.json") from None
    except OSError as exc:
        raise ReadRefused(f"cannot read {path} ({exc.strerror or type(exc).__name__})") from None
    if stat.S_ISDIR(info.st_mode):
        raise ReadRefused(f"cannot read {path}: it is a folder; give the config.json file inside it")
    if not stat.S_ISREG(info.st_mode):
        raise ReadRefused(
            f"cannot read {path}: it is not a regular file (a pipe, a device or a socket); give the "
            "path of a config.json"
        )
    result: list[bytes | BaseException] = []

    def read() -> None:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped for a FIFO since the stat above
                    raise ReadRefused(f"cannot read {path}: it is not a regular file; give the path of a config.json")
                with os.fdopen(fd, "rb", closefd=False) as f:
                    result.append(f.read(limit + 1))
            finally:
                os.close(fd)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread below
            result.append(exc)

    reader = threading.Thread(target=read, name="kvviz-read-config", daemon=True)
    reader.start()
    reader.join(timeout_s)
    if not result:
        raise ReadRefused(f"cannot read {path}: no answer after {timeout_s:g} s; copy the file to a local folder")
    if isinstance(result[0], ReadRefused):
        raise result[0]
    if isinstance(result[0], OSError):
        raise ReadRefused(f"cannot read {path} ({result[0].strerror or type(result[0]).__name__})")
    if isinstance(result[0], BaseException):
        raise result[0]
    return result[0]

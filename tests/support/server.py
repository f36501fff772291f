"""Start the app: free ports, and the one launcher of a streamlit server every server test uses (`streamlit run
app.py`, or a deployment's start command as written)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from urllib.parse import urlparse

import pytest

from support import tiers
from support.repo import REPO

START_TIMEOUT_S = 90


def free_port() -> int:
    """A port nothing listens on now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_free(port: int) -> bool:
    """Nothing answers on `port`."""
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def free_port_block(n: int) -> int:
    """A base port with base .. base+n-1 all free (deploy/run_class.sh puts nginx on base, replicas after it)."""
    for _ in range(50):
        base = free_port()
        if base + n < 65536 and all(port_free(base + i) for i in range(n)):
            return base
    raise RuntimeError("no block of free ports")


@contextlib.contextmanager
def port_in_use(port: int) -> Iterator[int]:
    """`port` on 127.0.0.1 held by a listening socket for the block (a launcher must find it in use)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen(1)
        yield port


@contextlib.contextmanager
def streamlit_server(
    port: int | None = None,
    extra_args: Sequence[str] = (),
    *,
    args: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Iterator[str]:
    """A new streamlit process in the repository (nothing run yet: a fresh server's first visitor), offline; yields
    its URL once /_stcore/health answers, and stops it after.

    By default `streamlit run app.py`, headless, on `port` (a free one when None) with `extra_args`. args: a whole
    command to run instead, after `python -m` (a container's start command as written: ["streamlit", "run",
    "app.py", ...]); it names its own --server.port, and `port` and `extra_args` are not given with it.
    env: variables set for the server over this process's environment (HF_HUB_OFFLINE=1 unless env says)."""
    tiers.count("server")
    if args is None:
        port = free_port() if port is None else port
        args = [
            "streamlit",
            "run",
            "app.py",
            "--server.port",
            str(port),
            "--server.headless",
            "true",
            "--browser.gatherUsageStats",
            "false",
            *extra_args,
        ]
    elif port is not None or extra_args:
        raise TypeError("a whole command (args) names its own port and flags")
    else:
        port = int(args[list(args).index("--server.port") + 1])
    # The server's log goes to a file, never to a pipe nobody reads: a server that lives through a test module
    # fills a pipe's 64 KiB, and its next log line then blocks the thread writing it (its event loop included).
    log = tempfile.NamedTemporaryFile(  # noqa: SIM115 - open for the server's whole life, closed in the finally
        "w+", prefix=f"kvviz-server-{port}-", suffix=".log", delete=False
    )
    server = subprocess.Popen(
        [sys.executable, "-m", *args],
        cwd=REPO,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
        stdout=log,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + START_TIMEOUT_S
    try:
        while True:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                    break
            except OSError:
                pass  # not listening yet
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                pytest.fail("streamlit did not start: " + Path(log.name).read_text(errors="replace")[-4000:])
            time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=20)
        log.close()
        if not os.environ.get("KVVIZ_KEEP_SERVER_LOGS"):  # set it to read a server's log after a failure
            Path(log.name).unlink(missing_ok=True)


def server_log(url: str) -> Path:
    """The log file of the running streamlit_server at `url` (its stdout and stderr), to read for tracebacks."""
    port = urlparse(url).port
    logs = sorted(Path(tempfile.gettempdir()).glob(f"kvviz-server-{port}-*.log"), key=lambda p: p.stat().st_mtime)
    if not logs:
        raise FileNotFoundError(f"no server log for {url}")
    return logs[-1]

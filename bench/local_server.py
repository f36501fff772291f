"""`streamlit run app.py` on a free local port, for the scripts that drive the app in a real browser
(bench/first_render.py, bench/play_rate.py, scripts/screenshot.py). tests/support/server.py is the tests' own
launcher: it fails a test with the server's log, which a script has no use for.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_streamlit(port: int) -> tuple[subprocess.Popen, str]:
    """The app's server on 127.0.0.1:port, offline (the bundled models only), and its URL. The caller stops it."""
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.headless", "true"],
        cwd=REPO,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return server, f"http://127.0.0.1:{port}"


def wait_healthy(url: str, poll_s: float) -> None:
    """Return once the server at url answers its health check, asking every poll_s seconds."""
    while True:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).read() == b"ok":
                return
        except OSError:
            time.sleep(poll_s)

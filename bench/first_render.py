"""Time from `streamlit run app.py` (fresh process) to the first fully rendered page in a real browser.

    python bench/first_render.py [--repeats 3]

Issue #2 target: <= 5 s, the bundled model included. Starts the server, opens headless Debian Chromium
(Playwright) as soon as the health check answers, and stops the clock when the home page's title and the
sidebar's model label (which needs the loaded model) are both on screen. Repeats on fresh processes; prints
the median and the spread.
"""
from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_run(pw) -> float:
    # The user's browser is already open: launch it before the clock starts.
    browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True,
                                 args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
    tab = browser.new_page()
    port = _free_port()
    began = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.headless", "true"],
        cwd=REPO, env={**os.environ, "HF_HUB_OFFLINE": "1"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        while True:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.05)
        tab.goto(url)
        tab.wait_for_selector("h1", timeout=120_000)
        tab.get_by_text("Bundled Tiny-Shakespeare GPT-2").first.wait_for(timeout=120_000)
        return time.perf_counter() - began
    finally:
        browser.close()
        server.terminate()
        server.wait(timeout=20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        times_s = [one_run(pw) for _ in range(args.repeats)]
    print(f"first render after `streamlit run app.py`: median {statistics.median(times_s):.2f} s "
          f"(min {min(times_s):.2f}, max {max(times_s):.2f}, {args.repeats} fresh starts)")


if __name__ == "__main__":
    main()

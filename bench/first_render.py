"""Time from `streamlit run app.py` (fresh process) to the first fully rendered page in a real browser.

    python bench/first_render.py [--repeats 3]
    python bench/first_render.py --path /attention_ops --lang zh-CN --busy-core --repeats 3
    python bench/first_render.py --path "/lesson?step=1&lesson_class=true" --ready .st-key-lesson_question --busy-core

Target: <= 5 s, the bundled model included. Starts the server, opens headless Debian Chromium
(Playwright) as soon as the health check answers, and stops the clock when the page's title and the
sidebar's model label are both on screen (--ready: the title and that element instead, e.g. the lesson's
question, .st-key-lesson_question in class mode, which hides the sidebar). Two clocks: from `streamlit run` (the teacher's start), and from the
first visitor's click on the link (target <= 3 s: the page a class sees first, on a deep link, with a core
kept busy as on a laptop serving a class: --busy-core spins one core for the whole run). Repeats on fresh
processes; prints the medians and the spread.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from local_server import CHROMIUM_ARGS, free_port, start_streamlit, wait_healthy  # noqa: E402

MODEL_LABEL = {"en-US": "Bundled Tiny-Shakespeare GPT-2", "zh-CN": "内置 Tiny-Shakespeare GPT-2"}


def one_run(pw, path: str, lang: str, ready: str | None = None) -> tuple[float, float]:
    """(seconds from `streamlit run`, seconds from the visitor opening the link) to the rendered page."""
    # The user's browser is already open: launch it before the clock starts.
    browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
    tab = browser.new_context(locale=lang).new_page()
    port = free_port()
    began = time.perf_counter()
    server, url = start_streamlit(port)
    try:
        wait_healthy(url, poll_s=0.05)
        opened = time.perf_counter()
        tab.goto(url + path)
        tab.wait_for_selector("[data-testid=stMain] h1", timeout=120_000)
        if ready:  # class mode hides the sidebar, its model label with it
            tab.wait_for_selector(ready, state="visible", timeout=120_000)
        else:
            tab.get_by_text(MODEL_LABEL[lang]).first.wait_for(timeout=120_000)
        done = time.perf_counter()
        return done - began, done - opened
    finally:
        browser.close()
        server.terminate()
        server.wait(timeout=20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--path", default="/", help="the link the first visitor opens (e.g. /attention_ops)")
    parser.add_argument("--lang", choices=sorted(MODEL_LABEL), default="en-US", help="the browser's language")
    parser.add_argument("--ready", help="a CSS selector the page must also show (e.g. .st-key-lesson_question)")
    parser.add_argument("--busy-core", action="store_true", help="keep one core spinning for the whole run")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy_core else None
    try:
        with sync_playwright() as pw:
            runs = [one_run(pw, args.path, args.lang, args.ready) for _ in range(args.repeats)]
    finally:
        if busy is not None:
            busy.kill()
    print(f"{args.path}{' until ' + args.ready if args.ready else ''} ({args.lang}{', one core busy' if args.busy_core else ''}), {args.repeats} fresh starts, "
          f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for name, times_s in (("after `streamlit run app.py`", [r[0] for r in runs]),
                          ("after the first visitor opened the link", [r[1] for r in runs])):
        print(f"  first render {name}: median {statistics.median(times_s):.2f} s "
              f"(min {min(times_s):.2f}, max {max(times_s):.2f})")


if __name__ == "__main__":
    main()

"""How fast *Play 8* animates in a real browser (target: >= 2 steps/s on 2 cores).

    python bench/play_rate.py [--rounds 5]

Starts `streamlit run app.py` on a free port, opens the step page in headless Debian Chromium at 1280x720,
prefills, then presses Play 8 `--rounds` times. Each round is timed from the moment the first animated step
shows (the "Cache length" metric reads prompt + 1) to the moment the 8th does, so the rate is 7 steps over
that time, as a student watching the stage sees it. Prints the median and the spread, and the load average.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from local_server import CHROMIUM_ARGS, free_port, start_streamlit, wait_healthy  # noqa: E402

CACHE_LEN_JS = """() => { for (const e of document.querySelectorAll('[data-testid="stMetricValue"]'))
    if (e.innerText.endsWith('tokens')) return parseInt(e.innerText); return null; }"""


def one_round(tab) -> float:
    tab.wait_for_function(f"() => ({CACHE_LEN_JS})() !== null")
    start = tab.evaluate(CACHE_LEN_JS)
    for attempt in range(3):  # a click that lands while the page is still rerunning can be dropped: click again
        tab.get_by_role("button", name=re.compile("^Play")).click()
        try:
            tab.wait_for_function(f"() => ({CACHE_LEN_JS})() === {start + 1}", timeout=15_000)
            break
        except Exception:
            if attempt == 2:
                raise
    first = time.perf_counter()
    tab.wait_for_function(f"() => ({CACHE_LEN_JS})() === {start + 8}", timeout=60_000, polling=20)
    return 7 / (time.perf_counter() - first)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    server, url = start_streamlit(free_port())
    try:
        wait_healthy(url, poll_s=0.1)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", headless=True, args=CHROMIUM_ARGS)
            tab = browser.new_page(viewport={"width": 1280, "height": 720})
            tab.set_default_timeout(120_000)
            tab.goto(f"{url}/step_through")
            tab.get_by_role("button", name=re.compile("^Prefill")).click()
            tab.wait_for_selector(".kvviz-strip")
            tab.wait_for_timeout(1000)
            rates = []
            for _ in range(args.rounds):
                rates.append(one_round(tab))
                tab.wait_for_timeout(1500)  # let the last frame's full rerun settle
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=20)
    print(
        f"Play animation: median {statistics.median(rates):.2f} steps/s (min {min(rates):.2f}, "
        f"max {max(rates):.2f}, {args.rounds} rounds of Play 8); loadavg {os.getloadavg()[0]:.2f}, "
        f"{os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()

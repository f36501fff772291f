"""The CPU the whole machine spends on Chromium for the browser tests' ways of opening pages and of waiting
(tests/support/browser.py):

- opening pages: each page in a new tab of its own context (as each browser test once did), each in one tab that
  close_tab resets between them (the kept tabs), and from one page to the next by the sidebar's links in one tab
  (follow_page_link, as the every-page sweeps go) against loading each page's link in that tab;
- waiting: a wait for a condition that stays false, read on every animation frame (Playwright's default) and every
  POLL_MS (the support helpers' waits).

    python bench/browser_tabs.py [--repeats 3]

Starts `streamlit run app.py`, warms it on the pages, then for each round and each way opens the same pages (each
waited for as axe.settle waits: drawn, charts drawn, steady 1 s) and reads the machine's busy CPU seconds from
/proc/stat around it, so Chromium's renderers count whoever reaps them. Run it on a quiet machine: it prints the
load average beside the medians and the spread.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]
os.environ.setdefault("OMP_NUM_THREADS", "1")

from support import axe  # noqa: E402
from support.browser import POLL_MS, chromium, close_tab, follow_page_link, goto_drawn, new_tab  # noqa: E402
from support.server import streamlit_server  # noqa: E402

PAGES = ["", "attention_ops", "memory_budget", "step_through", "lesson", "internals_quant"]


def busy_cpu_s() -> float:
    """The machine's busy CPU seconds since boot (every process, every core)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def open_pages(browser, url: str, reuse: bool) -> None:
    for path in PAGES:
        tab = new_tab(browser, fresh=not reuse)
        goto_drawn(tab, url, path, lang="en", settle=axe.settle)
        close_tab(tab)


def go_on(tab, url: str, by_links: bool) -> None:
    """From the first page, each of the others: by the sidebar's link, or by loading its link."""
    for path in PAGES[1:]:
        if by_links:
            follow_page_link(tab, path, settle=axe.settle)
        else:
            goto_drawn(tab, url, path, lang="en", settle=axe.settle)


WAIT_S = 10
NEVER = "() => window.__kvvizNever === true"


def wait_in_vain(tab, polling) -> None:
    """A wait of WAIT_S for a condition that stays false, read every `polling` ms or animation frame ("raf")."""
    with contextlib.suppress(Exception):  # its timeout is the measure
        tab.wait_for_function(NEVER, timeout=WAIT_S * 1000, polling=polling)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    ways = ("a new tab per page", "one tab, reset between pages")
    onward = (f"{len(PAGES) - 1} more pages by loading each", f"{len(PAGES) - 1} more pages by the sidebar's links")
    waits = (f"{WAIT_S} s waiting, read every frame", f"{WAIT_S} s waiting, read every {POLL_MS} ms")
    results: dict[str, list[float]] = {name: [] for name in (*ways, *onward, *waits)}

    def measured(name: str, work) -> None:
        before = busy_cpu_s()
        work()
        results[name].append(busy_cpu_s() - before)

    with streamlit_server() as url, chromium() as browser:
        open_pages(browser, url, reuse=True)  # the server's first runs and the model load, not measured
        for _ in range(args.repeats):
            for name, reuse in zip(ways, (False, True), strict=True):
                measured(name, lambda reuse=reuse: open_pages(browser, url, reuse))
            tab = new_tab(browser)
            for name, by_links in zip(onward, (False, True), strict=True):
                goto_drawn(tab, url, PAGES[0], lang="en", settle=axe.settle)  # the first page: not measured
                measured(name, lambda tab=tab, by_links=by_links: go_on(tab, url, by_links))
            for name, polling in zip(waits, ("raf", POLL_MS), strict=True):
                measured(name, lambda tab=tab, polling=polling: wait_in_vain(tab, polling))
            close_tab(tab)
    print(f"{len(PAGES)} pages, {args.repeats} rounds, load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    for name, cpu_s in results.items():
        print(f"  {name:38s} median {statistics.median(cpu_s):5.2f} CPU-s (min {min(cpu_s):.2f}, max {max(cpu_s):.2f})")


if __name__ == "__main__":
    main()

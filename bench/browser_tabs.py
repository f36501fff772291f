"""The CPU the whole machine spends opening pages in Chromium: each page in a new tab of its own context (as each
browser test once did) against each in one tab that close_tab resets between them (the browser tests' kept tabs,
tests/support/browser.py).

    python bench/browser_tabs.py [--repeats 3]

Starts `streamlit run app.py`, warms it on the pages, then for each round and each way opens the same six pages
(each waited for as axe.settle waits: drawn, charts drawn, steady 1 s) and reads the machine's busy CPU seconds from
/proc/stat around it, so Chromium's renderers count whoever reaps them. Run it on a quiet machine: it prints the
load average beside the medians and the spread.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]
os.environ.setdefault("OMP_NUM_THREADS", "1")

from support import axe  # noqa: E402
from support.browser import chromium, close_tab, goto_drawn, new_tab  # noqa: E402
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, list[float]] = {"a new tab per page": [], "one tab, reset between pages": []}
    with streamlit_server() as url, chromium() as browser:
        open_pages(browser, url, reuse=True)  # the server's first runs and the model load, not measured
        for _ in range(args.repeats):
            for name, reuse in (("a new tab per page", False), ("one tab, reset between pages", True)):
                before = busy_cpu_s()
                open_pages(browser, url, reuse)
                results[name].append(busy_cpu_s() - before)
    print(f"{len(PAGES)} pages, {args.repeats} rounds, load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    for name, cpu_s in results.items():
        print(f"  {name:30s} median {statistics.median(cpu_s):5.1f} CPU-s (min {min(cpu_s):.1f}, max {max(cpu_s):.1f})")


if __name__ == "__main__":
    main()

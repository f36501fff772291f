"""The CPU a new AppTest's first run spends scanning the installed packages for Streamlit components, as Streamlit
ships it and as the tests run it (tests/support/pages.py scans once per test process and keeps the answer).

    python bench/apptest_scan.py [--apptests 40] [--repeats 3]

Each round builds and runs `--apptests` AppTests of a one-line page, first with Streamlit's own scanner (every new
AppTest scans every installed distribution's metadata), then with the scanner support.pages installs, and prints
this process's CPU seconds per AppTest for each (medians of the rounds, with their spread), the number of installed
distributions, and the load average. The suite builds about 480 AppTests in its model, app and slow tiers.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from streamlit.components.v2 import manifest_scanner  # noqa: E402

STREAMLITS_SCAN = manifest_scanner.scan_component_manifests  # before support.pages replaces it

from support.pages import app_test  # noqa: E402

SCAN_ONCE = manifest_scanner.scan_component_manifests


def one_line_page() -> None:
    import streamlit as st

    st.write("hello")


def cpu_s_per_apptest(n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        app_test(one_line_page).run()
    return (time.process_time() - start) / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apptests", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    cpu_s_per_apptest(3)  # warm: imports, the page's first compile
    rounds: dict[str, list[float]] = {"Streamlit's scan at each AppTest": [], "one scan per process": []}
    for _ in range(args.repeats):
        for name, scan in zip(rounds, (STREAMLITS_SCAN, SCAN_ONCE), strict=True):
            manifest_scanner.scan_component_manifests = scan
            rounds[name].append(cpu_s_per_apptest(args.apptests))
    manifest_scanner.scan_component_manifests = SCAN_ONCE
    print(
        f"{len(list(importlib.metadata.distributions()))} installed distributions; {args.apptests} AppTests x "
        f"{args.repeats} rounds; load average {os.getloadavg()[0]:.2f}"
    )
    for name, values in rounds.items():
        print(
            f"{name:34s} {1000 * statistics.median(values):6.1f} ms of CPU per AppTest "
            f"(rounds {', '.join(f'{1000 * v:.1f}' for v in values)})"
        )


if __name__ == "__main__":
    main()

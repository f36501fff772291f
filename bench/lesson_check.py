"""Server time of a lesson step's answer check (target: <= 300 ms), and of opening each step.

    python bench/lesson_check.py [--repeats 5]

Runs the real lesson page through the router in Streamlit's AppTest. "open" is the first run of a step (its
live answer is computed then: prefill, steps, timings on the real model); "check" is the click on Check
(the judged answer and the arithmetic drawn). Server time = Streamlit's script run, as bench/step_click.py.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from script_timer import time_script_runs  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from streamlit.testing.v1 import AppTest

    from kvviz.teaching import lesson

    script_ms = time_script_runs()
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=300)
    at.run()
    at.switch_page("pages/lesson.py").run()
    open_ms, check_ms = [], []
    for number in range(1, len(lesson.STEPS) + 1):
        if number > 1:
            script_ms.clear()
            at.button(key="lesson_next").click().run()
            open_ms.append(max(script_ms))
        for _ in range(args.repeats):
            script_ms.clear()
            at.button(key=f"lesson_show_{number}").click().run()
            check_ms.append(max(script_ms))
    print(
        f"lesson steps={len(lesson.STEPS)} repeats={args.repeats} loadavg={os.getloadavg()[0]:.2f} "
        f"cores={os.cpu_count()}"
    )
    print(f"answer check, server: median {statistics.median(check_ms):.1f} ms (max {max(check_ms):.1f})")
    print(
        f"opening a step (live answer computed), server: median {statistics.median(open_ms):.1f} ms "
        f"(max {max(open_ms):.1f})"
    )


if __name__ == "__main__":
    main()

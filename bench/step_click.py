"""Server time of one "Next token" click on the step-through page (issue #2 target: median <= 150 ms).

    python bench/step_click.py [--clicks 30] [--model bundled]

Runs the real page in Streamlit's AppTest (in-process: the same script run a server does for a click, minus
the websocket), prefills, then times `click Next token + full script rerun` for each click. Prints the
median and the min-max spread in ms. Machines are noisy: compare medians, not single runs.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the page imports kvviz


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clicks", type=int, default=30)
    parser.add_argument("--model", default="bundled")
    args = parser.parse_args()

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(REPO / "pages" / "step_through.py"), default_timeout=300)
    at.session_state["model_spec"] = args.model
    at.run()
    at.button(key="step_btn_prefill").click().run()
    for _ in range(3):  # warm-up: first plotly serializations, allocator growth
        at.button(key="step_btn_next").click().run()
    times_ms = []
    for _ in range(args.clicks):
        began = time.perf_counter()
        at.button(key="step_btn_next").click().run()
        times_ms.append((time.perf_counter() - began) * 1000)
        if at.exception or at.warning:  # context full or an error: stop timing
            break
    cache_len = next(m.value for m in at.metric if m.label == "Cache length")
    print(f"model={args.model} clicks={len(times_ms)} cache_len_end={cache_len}")
    print(f"next-token click server time: median {statistics.median(times_ms):.1f} ms "
          f"(min {min(times_ms):.1f}, max {max(times_ms):.1f})")


if __name__ == "__main__":
    main()

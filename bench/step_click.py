"""Server time of one "Next token" click on the step-through page (target: median <= 150 ms).

    python bench/step_click.py [--clicks 30] [--model bundled] [--view one|race] [--open-sections]

Runs the real page in Streamlit's AppTest (in-process: the same script run a server does for a click, minus
the websocket), prefills, then clicks Next token repeatedly. Three clocks per click:
  server  the script run itself, timed around Streamlit's ScriptRunner._run_script (what a server spends)
  CPU     the CPU time of that run on its thread (the per-click cost: the machine's load does not enter)
  round   click + rerun + AppTest's own polling and element parsing, as seen by the caller (an upper bound)
Then Play: the server time of one animation frame (the fragment's run_every rerun that takes one step); the
browser shows a frame every max(PLAY_DELAY_S, frame time), so frames/s <= 1 / max(0.35 s, frame time).
Prints medians and min-max spreads in ms, the torch thread count and the load average. Machines are noisy:
compare medians, not single runs.
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
sys.path.insert(0, str(REPO / "bench"))
from script_timer import time_script_runs  # noqa: E402

from kvviz.measure.cores import usable_cores  # noqa: E402
from kvviz.measure.load import load_avg_1min, load_label  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clicks", type=int, default=30)
    parser.add_argument("--model", default="bundled")
    parser.add_argument(
        "--open-sections", action="store_true", help="also open the without-cache expander (closed by default)"
    )
    parser.add_argument("--view", choices=("one", "race"), default="one", help="the stage's view")
    args = parser.parse_args()

    from streamlit.testing.v1 import AppTest

    cpu_ms: list[float] = []
    script_ms = time_script_runs(cpu_ms)

    at = AppTest.from_file(str(REPO / "pages" / "step_through.py"), default_timeout=300)
    at.session_state["model_spec"] = args.model
    if args.open_sections:
        at.session_state["step_exp_uncached"] = True
    at.session_state["step_view"] = args.view
    at.run()
    at.button(key="step_btn_prefill").click().run()
    for _ in range(3):  # warm-up: first plotly serializations, allocator growth
        at.button(key="step_btn_next").click().run()
    round_ms: list[float] = []
    script_ms.clear()
    cpu_ms.clear()
    for _ in range(args.clicks):
        began = time.perf_counter()
        at.button(key="step_btn_next").click().run()
        round_ms.append((time.perf_counter() - began) * 1000)
        if at.exception or at.warning:  # context full or an error: stop timing
            break
    click_ms, click_cpu_ms = list(script_ms), list(cpu_ms)
    at.button(key="step_btn_reset").click().run()
    at.button(key="step_btn_prefill").click().run()
    at.button(key="step_btn_play").click().run()
    script_ms.clear()
    while at.session_state["step_play_left"] > 0:  # one animation frame per run, as run_every does
        at.run()
    frame_ms = list(script_ms)
    import torch

    cache_len = next(m.value for m in at.metric if m.label == "Cache length")
    print(
        f"model={args.model} clicks={len(round_ms)} cache_len_end={cache_len} view={args.view} "
        f"open_sections={args.open_sections} torch_threads={torch.get_num_threads()} "
        f"{load_label(load_avg_1min(), usable_cores())}"
    )
    for name, values in (
        ("server (script run)", click_ms),
        ("server CPU (script thread)", click_cpu_ms),
        ("round trip in AppTest", round_ms),
        ("Play frame, server", frame_ms),
    ):
        print(
            f"next-token click, {name}: median {statistics.median(values):.1f} ms "
            f"(min {min(values):.1f}, max {max(values):.1f})"
        )


if __name__ == "__main__":
    main()

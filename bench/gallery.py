"""Server time of the attention-patterns page's head gallery for one layer (target: <= 300 ms).

    python bench/gallery.py [--model bundled|bundled-gqa] [--rounds 5]

Runs pages/attention_patterns.py in Streamlit's AppTest (the same script run a server does, minus the
websocket) and, per round, picks every layer in turn: each pick reruns the page, which draws every head's full
causal attention matrix of that layer (the uncached eager forward is cached per model and sequence, so a
layer switch costs the drawing; a new sequence costs one forward more: timed separately as "new prompt").
Server time = the script run itself, timed around ScriptRunner._run_script. Prints medians and min-max in ms,
the torch thread count and the load average. Compare medians, not single runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # the page imports kvviz
sys.path.insert(0, str(REPO / "bench"))
from script_timer import time_script_runs  # noqa: E402

MAX_ROUNDS = 20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="bundled")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not 1 <= args.rounds <= MAX_ROUNDS:
        parser.error(f"--rounds must be 1..{MAX_ROUNDS}")

    from streamlit.testing.v1 import AppTest

    script_ms = time_script_runs()
    at = AppTest.from_file(str(REPO / "pages" / "attention_patterns.py"), default_timeout=300)
    at.session_state["model_spec"] = args.model
    at.run()
    if at.exception:
        raise SystemExit(f"the page failed: {at.exception[0].message}")
    n_layer = len(at.selectbox(key="pat_layer").options)
    at.selectbox(key="pat_source").set_value("Type a prompt").run()  # a text box: each round a new sequence
    layer_ms: list[float] = []
    prompt_ms: list[float] = []
    for r in range(args.rounds):
        for layer in [*range(1, n_layer), 0]:
            script_ms.clear()
            at.selectbox(key="pat_layer").set_value(layer).run()
            layer_ms.extend(script_ms)
        script_ms.clear()
        at.text_area(key="pat_prompt").set_value(f"one two three one two three {r} one two").run()
        prompt_ms.extend(script_ms)
    import torch

    def show(name: str, values: list[float]) -> None:
        if values:
            print(
                f"  {name:<12} median {statistics.median(values):7.1f} ms  (min {min(values):.1f}, "
                f"max {max(values):.1f}, n={len(values)})"
            )

    print(
        f"model={args.model} layers={n_layer} rounds={args.rounds} torch_threads={torch.get_num_threads()} "
        f"load_avg_1min={os.getloadavg()[0]:.2f}"
    )
    show("layer switch", layer_ms)
    show("new prompt", prompt_ms)


if __name__ == "__main__":
    main()

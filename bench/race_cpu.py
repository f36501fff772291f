"""CPU per click of the step page's race view (against docs/measurements.md's per-click budget).

    python bench/race_cpu.py [--rows 255] [--clicks 3] [--on random:gpt2] [--threads 1]

Steps the bundled model until its cache holds --rows rows, then times what one race click does,
`StepEngine.race(on=<the --on model>)`, --clicks times: the CPU seconds of this process
(time.process_time, every torch thread included) and the wall seconds around each, with the repeats the race
took. Prints the torch thread count (the app's sessions run 1) and the 1-minute load average before and after.
The machine is shared: read the load beside the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=255, help="cached rows of the raced step")
    parser.add_argument("--clicks", type=int, default=3)
    parser.add_argument("--on", default="random:gpt2", help="the race's model (the page's GPT-2 124M shape)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the app's sessions run 1)")
    args = parser.parse_args()

    import torch

    from kvviz.measure.load import load_average
    from kvviz.model.loaders import load_model
    from kvviz.step.engine import StepEngine
    from kvviz.step.records import DEFAULT_SAMPLING

    torch.set_num_threads(args.threads)
    small = load_model("bundled", "eager")
    shape = load_model(args.on, "eager")
    engine = StepEngine(small, DEFAULT_SAMPLING)
    engine.prefill("ROMEO:")
    while engine.cache_len < min(args.rows, small.info.n_positions):
        engine.step()
    load_before = load_average()[0]
    cpu, wall, repeats = [], [], []
    for _ in range(args.clicks):
        c0, w0 = time.process_time(), time.perf_counter()
        timing = engine.race(on=shape)
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
        repeats.append(timing.repeats)
    print(
        f"race on {shape.info.label} at {engine.cache_len} cached tokens; torch threads {torch.get_num_threads()}; "
        f"load {load_before:.1f} -> {load_average()[0]:.1f} on {os.cpu_count()} cores"
    )
    print("CPU s per click: " + ", ".join(f"{x:.2f}" for x in cpu) + f" (median {statistics.median(cpu):.2f})")
    print("wall s per click: " + ", ".join(f"{x:.2f}" for x in wall) + f" (median {statistics.median(wall):.2f})")
    print("repeats a side: " + ", ".join(map(str, repeats)))


if __name__ == "__main__":
    main()

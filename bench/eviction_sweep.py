"""Time of the eviction page's full sweep on one bundled model (target: under 60 s on 2 cores).

    python bench/eviction_sweep.py [--model bundled|bundled-gqa] [--repeats 3] [--threads 1] [--table] [--markdown]

The sweep is what pages/internals_eviction.py measures before it draws its curves: every policy x every budget x
both measures (the copy test and the loss), then the quantized formats, run through the benchmark queue
(kvviz.work_queue, as the page runs it) from a cold start of each repeat (no cached line). Prints the median and
min-max of the repeats, the torch thread count and the load (kvviz.measure), and with --table the measured
policy x budget table (docs/measurements.md's, and `python -m kvviz evict --sweep`'s numbers). Compare medians,
not runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
MAX_REPEATS = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", choices=("bundled", "bundled-gqa"), default="bundled")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the interactive pages use 1)")
    parser.add_argument("--table", action="store_true", help="print the measured policy x budget table")
    parser.add_argument(
        "--markdown",
        action="store_true",
        help="print it as docs/measurements.md's markdown table (the table the doc holds)",
    )
    args = parser.parse_args()
    if not 1 <= args.repeats <= MAX_REPEATS:
        parser.error(f"--repeats must be 1..{MAX_REPEATS}")
    if not 1 <= args.threads <= 64:
        parser.error("--threads must be 1..64")

    import torch

    from kvviz.cli.evict import markdown_table, table
    from kvviz.internals.eviction_lab import runs
    from kvviz.measure.load import load_avg_1min, load_label
    from kvviz.measure.timing import median
    from kvviz.model.loaders import load_model
    from kvviz.work_queue import shared_queue

    torch.set_num_threads(args.threads)
    loaded = load_model(args.model, attn_implementation="eager")
    queue = shared_queue("benchmark")  # pages/internals_shared.QUEUE_NAME: the page's line
    load_before = load_avg_1min()
    seconds: list[float] = []
    sweep = None
    for _ in range(args.repeats):
        start = time.perf_counter()
        with queue.turn():
            sweep = runs.sweep(loaded)
        seconds.append(time.perf_counter() - start)
    assert sweep is not None
    points = len(sweep.points)
    print(
        f"model={args.model} points={points} (policies x budgets + quantized formats, 2 measures each) "
        f"torch_threads={torch.get_num_threads()} {load_label(load_before)} before, "
        f"{load_label(load_avg_1min())} after"
    )
    print(
        f"  full sweep   median {median(seconds):6.2f} s  (min {min(seconds):.2f}, max {max(seconds):.2f}, "
        f"n={len(seconds)})"
    )
    if args.table:
        print(table(list(sweep.points)))
    if args.markdown:
        print(markdown_table(list(sweep.points)))


if __name__ == "__main__":
    main()

"""The race view's statistic under load (target: at >= 30 cached rows with one core kept busy, the
cached side measured faster in >= 7 of 8 consecutive steps).

    python bench/race.py [--rows 30] [--steps 8] [--rounds 3] [--busy 1] [--model bundled] [--budget 0.25]

Prefills the "ROMEO:" prompt on the real model (one torch thread, as the app's sessions run), steps until the
cache holds --rows rows, starts --busy busy-loop processes (each keeps one core at 100%, as a class clicking on
the same server does), then for --steps consecutive Next-token steps times the step both ways:

  race    what the race view shows: kvviz.step.engine.race_timing, cached / uncached / 1-token repeats interleaved
          inside the click's budget (--budget seconds), medians compared
  single  the naive measurement, for contrast: the step's own single wall time vs one uncached forward

Per round it prints how many of the --steps steps measured the cached side faster (and, for the race, how many
were "inside the noise": the interquartile ranges overlap, the page says so instead of crowning a winner), the
medians, and the 1-minute load average. The machine is shared: read the load beside the figure.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _busy_loop() -> None:  # pragma: no cover (runs in a child process until terminated)
    while True:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=30, help="cached rows before the first timed step")
    parser.add_argument("--steps", type=int, default=8, help="consecutive steps per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--busy", type=int, default=1, help="busy-loop processes (cores kept busy)")
    parser.add_argument("--model", default="bundled")
    parser.add_argument("--budget", type=float, default=None, help="race seconds per step (default: the page's)")
    args = parser.parse_args()

    import torch

    from kvviz.measure.cores import usable_cores
    from kvviz.measure.load import load_average
    from kvviz.model.loaders import load_model
    from kvviz.step.engine import RACE_BUDGET_S, StepEngine
    from kvviz.step.records import DEFAULT_SAMPLING

    torch.set_num_threads(1)
    budget = RACE_BUDGET_S if args.budget is None else args.budget
    loaded = load_model(args.model, "eager")
    print(
        f"model: {loaded.info.label}; torch threads 1; {usable_cores()} usable cores; race budget {budget} s; "
        f"{args.busy} busy-loop process(es)"
    )
    busy = [multiprocessing.Process(target=_busy_loop, daemon=True) for _ in range(args.busy)]
    for p in busy:
        p.start()
    try:
        time.sleep(2.0)  # let the busy loops settle onto their cores
        wins_race, wins_single = [], []
        for round_no in range(1, args.rounds + 1):
            engine = StepEngine(loaded, DEFAULT_SAMPLING)
            engine.prefill("ROMEO:")
            while engine.cache_len < args.rows:
                engine.step()
            race_rows, single_rows = [], []
            for _ in range(args.steps):
                record = engine.step()
                race = engine.race(budget_s=budget)
                single_uncached = engine.check_without_cache().uncached_ms
                race_rows.append(race)
                single_rows.append((record.step_ms, single_uncached))
            faster = sum(r.cached_faster for r in race_rows)
            noise = sum(r.inside_noise for r in race_rows)
            single = sum(c < u for c, u in single_rows)
            wins_race.append(faster)
            wins_single.append(single)
            med = statistics.median
            print(
                f"round {round_no}: rows {race_rows[0].seq_len}-{race_rows[-1].seq_len}, load {load_average()[0]:.2f}: "
                f"race cached faster in {faster}/{args.steps} (inside the noise {noise}/{args.steps}; "
                f"medians cached {med(r.cached_median_ms for r in race_rows):.2f} ms, uncached "
                f"{med(r.uncached_median_ms for r in race_rows):.2f} ms, 1-token {med(r.fixed_median_ms for r in race_rows):.2f} ms, "
                f"{med(r.repeats for r in race_rows)} repeats a side); single measurement cached faster in "
                f"{single}/{args.steps}"
            )
        print(f"RESULT race: {wins_race} of {args.steps} per round (target >= 7); single measurement: {wins_single}")
    finally:
        for p in busy:
            p.terminate()
            p.join(timeout=5)


if __name__ == "__main__":
    main()

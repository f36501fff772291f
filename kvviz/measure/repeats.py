"""One interleaved timing loop: repeats of two or more passes taken in turn, so a load that comes and goes hits
every side alike, optionally bounded by a time budget.

    repeat 0: orders[0]   (a, b, ...)       repeat 1: orders[1 % len(orders)]   ...

A fixed order (a, b, a, b, ...) is `orders=(("a", "b"),)`; the race rotates three orders so no pass always
runs right after another. Each pass times itself and returns seconds (its own timer: set-up, a copy of a
cache or waiting for a lock stays outside it). With a budget the first repeat always runs; another starts only
while it is expected (from the last repeat's cost) to end within budget_s of the start. `time_pair` is the loop
for two callables with untimed set-up; kvviz.step.engine.race_timing drives it with the model's three passes.
Torch-free.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

from kvviz.measure.load import load_avg_1min
from kvviz.measure.timing import Timing

__all__ = ["interleaved_repeats", "time_pair"]


def interleaved_repeats(
    passes: Mapping[str, Callable[[], float]],
    max_repeats: int,
    orders: Sequence[Sequence[str]] | None = None,
    budget_s: float | None = None,
    warm_up: Callable[[], object] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> dict[str, tuple[float, ...]]:
    """Seconds of each named pass, repeat by repeat: up to max_repeats, repeat i in orders[i % len(orders)]
    (default: the passes' own order every time).

    warm_up(): untimed, once, after the budget's clock starts. budget_s: None runs every repeat; else the first
    repeat always runs and repeat i > 0 only while clock() + the last repeat's cost (the first repeat's: the
    sum of its passes' seconds, so a warm-up a pass does inside its first call stays out) ends within budget_s
    of the start. clock: seconds, read only for the budget (each pass reads its own).
    """
    if max_repeats < 1:
        raise ValueError("repeats must be at least 1")
    orders = orders or (tuple(passes),)
    samples: dict[str, list[float]] = {name: [] for name in passes}
    started = clock() if budget_s is not None else 0.0
    if warm_up is not None:
        warm_up()
    repeat_s = 0.0
    for i in range(max_repeats):
        began = 0.0
        if budget_s is not None and i:
            began = clock()
            if began + repeat_s > started + budget_s:  # the next repeat would end past the budget
                break
        taken = [passes[name]() for name in orders[i % len(orders)]]
        for name, s in zip(orders[i % len(orders)], taken, strict=True):
            samples[name].append(s)
        if budget_s is not None:
            repeat_s = sum(taken) if i == 0 else clock() - began
    return {name: tuple(xs) for name, xs in samples.items()}


def time_pair(
    run_a: Callable[[], object],
    run_b: Callable[[], object],
    repeats: int,
    prepare_a: Callable[[], object] | None = None,
    prepare_b: Callable[[], object] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[Timing, Timing]:
    """Time run_a and run_b `repeats` times each, interleaved (a, b, a, b, ...), after one untimed warm-up each.

    prepare_x(): untimed set-up before each run (e.g. a fresh copy of a cache); its result is passed to run_x
    when given, so the set-up never lands inside the timer. Both Timings carry the load when the repeats ended.
    """

    def timed(run: Callable[..., object], prepare: Callable[[], object] | None) -> Callable[[], float]:
        def once() -> float:
            arg = prepare() if prepare is not None else None
            began = clock()
            run(arg) if prepare is not None else run()
            return clock() - began

        return once

    a, b = timed(run_a, prepare_a), timed(run_b, prepare_b)
    seconds = interleaved_repeats({"a": a, "b": b}, repeats, warm_up=lambda: (a(), b()))
    load = load_avg_1min()
    return (
        Timing(tuple(s * 1000.0 for s in seconds["a"]), load),
        Timing(tuple(s * 1000.0 for s in seconds["b"]), load),
    )

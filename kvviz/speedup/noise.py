"""Is a measured difference real, or inside the noise? One rule for every timed comparison shown to a class.

A timing shown to a class is the median of several repeats, with its spread (the fastest and the slowest
repeat) and the machine's 1-minute load average at the time. Two timings are called different only when the
middle halves of their repeats do not overlap:

    inside the noise  <=>  [q1_a, q3_a] and [q1_b, q3_b] overlap   (q1, q3: 25th and 75th percentiles)

The interquartile range ignores one preempted repeat (a busy core stretches a single run, not the middle
half), yet it is wide when the machine is noisy, so a small gap on a busy machine is not crowned a winner.
Where the rule says "inside the noise", a page says so in one sentence instead of naming a faster side.

`time_pair` interleaves the two sides (a, b, a, b, ...): a load that comes and goes hits both alike.
Torch-free: the pages, figures and the internals modules all use it.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kvviz.i18n import _, ngettext


def load_avg_1min() -> float:
    """The machine's 1-minute load average now (nan where the OS has none)."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return float("nan")


def load_label(load_1min: float, cores: int | None = None) -> str:
    """'1-min load 1.70 on 2 cores': what to print beside every timing."""
    cores = os.cpu_count() if cores is None else cores
    if load_1min != load_1min:  # nan
        return _("machine load unknown")
    return ngettext("1-min load {load:.2f} on {cores} core", "1-min load {load:.2f} on {cores} cores",
                    cores).format(load=load_1min, cores=cores)


@dataclass(frozen=True)
class Timing:
    """Repeats of one measured thing, in milliseconds, and the load when they ran."""

    samples_ms: tuple[float, ...]
    load_1min: float = float("nan")

    def __post_init__(self) -> None:
        if not self.samples_ms:
            raise ValueError("a Timing needs at least one sample")

    @property
    def repeats(self) -> int:
        return len(self.samples_ms)

    @property
    def median_ms(self) -> float:
        return float(np.median(self.samples_ms))

    @property
    def min_ms(self) -> float:
        return float(min(self.samples_ms))

    @property
    def max_ms(self) -> float:
        return float(max(self.samples_ms))

    @property
    def quartiles_ms(self) -> tuple[float, float]:
        q1, q3 = np.percentile(self.samples_ms, [25, 75])
        return float(q1), float(q3)

    @property
    def spread_pct(self) -> float:
        """(slowest - fastest) / median, in percent."""
        return (self.max_ms - self.min_ms) / self.median_ms * 100.0 if self.median_ms > 0 else float("nan")

    def label(self, digits: int = 1) -> str:
        """'9.9 ms (median of 7, 8.8-12.1 ms)'."""
        median, fastest, slowest = (f"{x:.{digits}f}" for x in (self.median_ms, self.min_ms, self.max_ms))
        return _("{median} ms (median of {repeats}, {fastest}-{slowest} ms)").format(
            median=median, repeats=self.repeats, fastest=fastest, slowest=slowest)


def inside_noise(a: Timing, b: Timing) -> bool:
    """The middle halves of the two sets of repeats overlap: the data cannot say which side is faster."""
    a1, a3 = a.quartiles_ms
    b1, b3 = b.quartiles_ms
    return a1 <= b3 and b1 <= a3


@dataclass(frozen=True)
class Comparison:
    """Two named timings of the same work done two ways, and the verdict of the one rule above."""

    a_name: str
    a: Timing
    b_name: str
    b: Timing

    @property
    def inside_noise(self) -> bool:
        return inside_noise(self.a, self.b)

    @property
    def faster_name(self) -> str | None:
        """The side whose median is lower, or None when the difference is inside the noise."""
        if self.inside_noise:
            return None
        return self.a_name if self.a.median_ms < self.b.median_ms else self.b_name

    @property
    def ratio(self) -> float:
        """Slower median / faster median (>= 1)."""
        lo, hi = sorted((self.a.median_ms, self.b.median_ms))
        return hi / lo if lo > 0 else float("inf")

    @property
    def load_1min(self) -> float:
        loads = [x for x in (self.a.load_1min, self.b.load_1min) if x == x]  # nan != nan
        return max(loads) if loads else float("nan")

    def sentence(self) -> str:
        """One sentence for a class: a winner only when the data names one."""
        text = self._sentence()
        return text[:1].upper() + text[1:]

    def _sentence(self) -> str:
        load = load_label(self.load_1min)
        if self.inside_noise:
            return _("{a} ({a_ms:.1f} ms) and {b} ({b_ms:.1f} ms) are inside the noise: the middle halves of their "
                     "{a_repeats} and {b_repeats} repeats overlap ({load}), so this machine cannot tell them apart "
                     "at this size.").format(a=self.a_name, a_ms=self.a.median_ms, b=self.b_name,
                                             b_ms=self.b.median_ms, a_repeats=self.a.repeats,
                                             b_repeats=self.b.repeats, load=load)
        fast, slow = (self.a, self.b) if self.a.median_ms < self.b.median_ms else (self.b, self.a)
        fast_name, slow_name = (self.a_name, self.b_name) if fast is self.a else (self.b_name, self.a_name)
        return _("{fast} took {fast_ms:.1f} ms, {slow} {slow_ms:.1f} ms: {ratio:.2f}x faster, beyond the spread "
                 "of the repeats ({load}).").format(fast=fast_name, fast_ms=fast.median_ms, slow=slow_name,
                                                    slow_ms=slow.median_ms, ratio=self.ratio, load=load)


def time_pair(run_a: Callable[[], object], run_b: Callable[[], object], repeats: int,
              prepare_a: Callable[[], object] | None = None, prepare_b: Callable[[], object] | None = None,
              clock: Callable[[], float] = time.perf_counter) -> tuple[Timing, Timing]:
    """Time run_a and run_b `repeats` times each, interleaved (a, b, a, b, ...), after one untimed warm-up each.

    prepare_x(): untimed set-up before each run (e.g. a fresh copy of a cache); its result is passed to run_x
    when given, so the set-up never lands inside the timer.
    """
    if repeats < 1:
        raise ValueError("repeats must be at least 1")

    def once(run, prepare) -> float:
        arg = prepare() if prepare is not None else None
        began = clock()
        run(arg) if prepare is not None else run()
        return (clock() - began) * 1000.0

    once(run_a, prepare_a), once(run_b, prepare_b)  # warm-up: allocator, caches, lazy init
    a_ms, b_ms = [], []
    for _repeat in range(repeats):
        a_ms.append(once(run_a, prepare_a))
        b_ms.append(once(run_b, prepare_b))
    load = load_avg_1min()
    return Timing(tuple(a_ms), load), Timing(tuple(b_ms), load)

"""Is a measured difference real, or inside the noise? One statistic and one rule for every timed comparison.

A timing shown to a class is the median of several repeats, with its spread (the fastest and the slowest
repeat, and the middle half: 25th to 75th percentile) and the machine's 1-minute load average at the time.
Two timings are called different only when the middle halves of their repeats do not overlap:

    inside the noise  <=>  [q1_a, q3_a] and [q1_b, q3_b] overlap   (q1, q3: 25th and 75th percentiles)

The interquartile range ignores one preempted repeat (a busy core stretches a single run, not the middle
half), yet it is wide when the machine is noisy, so a small gap on a busy machine is not crowned a winner.
Where the rule says "inside the noise", a page says so in one sentence instead of naming a faster side.

A measured quality (the eviction lab's copy accuracy and loss change) is compared by the same rule on paired units:
two ways of doing the same work on the same n units (spans, passages) give n differences, and their 95% interval
(the mean ± Student's t(0.975, n - 1) x SD / sqrt(n), `paired_interval`) is held against zero:

    inside the noise  <=>  the paired interval of A - B overlaps [0, 0]   (`paired_inside_noise`)

The unit is the one that was sampled (a passage, a span), never a token of it: tokens of one passage rise and fall
together, so counting them as samples would narrow the interval past what the data say.

`median`, `quartiles` and `middle_halves_overlap` work on plain samples (the race's records and figures keep
tuples); `Timing` and `Comparison` wrap them for a named pair. Torch-free.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kvviz.i18n import _
from kvviz.measure.load import load_known, load_label

__all__ = [
    "Comparison",
    "Timing",
    "inside_noise",
    "intervals_overlap",
    "mean_interval",
    "median",
    "median_per_position",
    "middle_halves_overlap",
    "paired_inside_noise",
    "paired_interval",
    "quartiles",
    "spread_pct",
    "t_quantile_95",
]

# Student's t, 97.5th percentile (a two-sided 95% interval), for 1..30 degrees of freedom; beyond, the values at 40,
# 60 and 120, then the normal's 1.96 (tables of the t distribution; scipy.stats.t.ppf(0.975, df) to 3 decimals).
_T_975 = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)
_T_975_BEYOND = ((40, 2.021), (60, 2.000), (120, 1.980))


def median(samples: Sequence[float]) -> float:
    """The median of the repeats (an even count: the middle two averaged); nan with no samples."""
    return float(np.median(samples)) if len(samples) else float("nan")


def median_per_position(repeats: Sequence[Sequence[float]]) -> np.ndarray:
    """[positions] the median over repeats at each position, for repeats of equal length (a generation's per-token
    latencies, one row per repeat)."""
    return np.median(np.stack([np.asarray(r, dtype=float) for r in repeats]), axis=0)


def spread_pct(samples: Sequence[float]) -> float:
    """(largest - smallest) / median of the repeats, in percent; nan when the median is not positive."""
    middle = median(samples)
    return (float(max(samples)) - float(min(samples))) / middle * 100.0 if middle > 0 else float("nan")


def quartiles(samples: Sequence[float]) -> tuple[float, float]:
    """(25th, 75th percentile): the middle half of the repeats, the spread shown beside a median and the range
    the noise rule compares. (0.0, 0.0) with no samples, as the race has always drawn an empty side."""
    if not len(samples):
        return 0.0, 0.0
    q1, q3 = np.percentile(samples, [25, 75])
    return float(q1), float(q3)


def intervals_overlap(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """The rule on two (low, high) ranges: they overlap, so the data cannot say which side is larger. Timings
    compare their middle halves; a measured quality (the eviction lab's) its stated interval."""
    return a[0] <= b[1] and b[0] <= a[1]


def t_quantile_95(df: int) -> float:
    """Student's t at 0.975 for df degrees of freedom: the multiplier of a two-sided 95% interval of a mean of
    df + 1 samples (rounded up to the next tabled df beyond 30, so the interval is never narrower than t's)."""
    if df < 1:
        return float("nan")
    if df <= len(_T_975):
        return _T_975[df - 1]
    return next((t for limit, t in _T_975_BEYOND if df <= limit), 1.96)


def mean_interval(samples: Sequence[float]) -> tuple[float, float]:
    """(mean, half-width of its 95% interval): t_quantile_95(n - 1) x SD / sqrt(n), SD with n - 1 (one sample:
    a nan half-width, no interval)."""
    x = np.asarray(samples, dtype=float)
    if not len(x):
        return float("nan"), float("nan")
    if len(x) == 1:
        return float(x[0]), float("nan")
    return float(x.mean()), t_quantile_95(len(x) - 1) * float(x.std(ddof=1)) / len(x) ** 0.5


def paired_interval(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """The 95% interval (low, high) of the mean of a - b, unit by unit (the same units measured two ways)."""
    if len(a) != len(b):
        raise ValueError(f"paired samples need the same units: {len(a)} and {len(b)}")
    mean, half = mean_interval(np.asarray(a, dtype=float) - np.asarray(b, dtype=float))
    return mean - half, mean + half


def paired_inside_noise(a: Sequence[float], b: Sequence[float]) -> bool:
    """The rule on paired units: the interval of the differences overlaps zero (or there is no interval: one
    unit), so the data cannot say which side is larger."""
    low, high = paired_interval(a, b)
    return not (low == low and high == high) or intervals_overlap((low, high), (0.0, 0.0))


def middle_halves_overlap(a: Sequence[float], b: Sequence[float]) -> bool:
    """The rule: the middle halves of two sets of repeats overlap, so the data cannot say which is faster."""
    return intervals_overlap(quartiles(a), quartiles(b))


@dataclass(frozen=True)
class Timing:
    """Repeats of one measured thing, in milliseconds, and the load when they ran (nan: unknown)."""

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
        return median(self.samples_ms)

    @property
    def min_ms(self) -> float:
        return float(min(self.samples_ms))

    @property
    def max_ms(self) -> float:
        return float(max(self.samples_ms))

    @property
    def quartiles_ms(self) -> tuple[float, float]:
        return quartiles(self.samples_ms)

    @property
    def spread_pct(self) -> float:
        """(slowest - fastest) / median, in percent."""
        return spread_pct(self.samples_ms)

    def label(self, digits: int = 1) -> str:
        """'9.9 ms (median of 7, 8.8-12.1 ms)'."""
        median_, fastest, slowest = (f"{x:.{digits}f}" for x in (self.median_ms, self.min_ms, self.max_ms))
        return _("{median} ms (median of {repeats}, {fastest}-{slowest} ms)").format(
            median=median_, repeats=self.repeats, fastest=fastest, slowest=slowest
        )


def inside_noise(a: Timing, b: Timing) -> bool:
    """The middle halves of the two sets of repeats overlap: the data cannot say which side is faster."""
    return middle_halves_overlap(a.samples_ms, b.samples_ms)


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
        loads = [x for x in (self.a.load_1min, self.b.load_1min) if load_known(x)]
        return max(loads) if loads else float("nan")

    def sentence(self) -> str:
        """One sentence for a class: a winner only when the data names one."""
        text = self._sentence()
        return text[:1].upper() + text[1:]

    def _sentence(self) -> str:
        load = load_label(self.load_1min)
        if self.inside_noise:
            return _(
                "{a} ({a_ms:.1f} ms) and {b} ({b_ms:.1f} ms) are inside the noise: the middle halves of their "
                "{a_repeats} and {b_repeats} repeats overlap ({load}), so this machine cannot tell them apart "
                "at this size."
            ).format(
                a=self.a_name,
                a_ms=self.a.median_ms,
                b=self.b_name,
                b_ms=self.b.median_ms,
                a_repeats=self.a.repeats,
                b_repeats=self.b.repeats,
                load=load,
            )
        fast, slow = (self.a, self.b) if self.a.median_ms < self.b.median_ms else (self.b, self.a)
        fast_name, slow_name = (self.a_name, self.b_name) if fast is self.a else (self.b_name, self.a_name)
        return _(
            "{fast} took {fast_ms:.1f} ms, {slow} {slow_ms:.1f} ms: {ratio:.2f}x faster, beyond the spread "
            "of the repeats ({load})."
        ).format(
            fast=fast_name, fast_ms=fast.median_ms, slow=slow_name, slow_ms=slow.median_ms, ratio=self.ratio, load=load
        )

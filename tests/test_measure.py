"""Measurement has its own floor (kvviz.measure), and every timing stands on it.

- The floor stands alone: kvviz.measure imports nothing of kvviz but kvviz.i18n, and loads no torch.
- One home per rule: no module outside kvviz/measure reads the load average, counts cores or computes
  percentiles (a grep over the source of kvviz/ and pages/).
- One load reader with one failure behaviour (nan: unknown), and what its callers do with it.
- One statistic: the race's record, its figure and Timing judge the same samples the same way.
- One interleaved loop: the rotation, the budget and the first repeat that always runs.
"""

from __future__ import annotations

import ast
import json
import math
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kvviz.measure import cores, load
from kvviz.measure.repeats import interleaved_repeats
from kvviz.measure.timing import Timing, inside_noise, median, quartiles
from kvviz.speedup import machine
from kvviz.step.records import RaceTiming
from support.pages import REPO

MEASURE = REPO / "kvviz" / "measure"


def _kvviz_imports(path: Path) -> set[str]:
    """Every kvviz module a file imports, at any depth (function-level imports too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return {n for n in names if n.split(".")[0] == "kvviz"}


@pytest.mark.parametrize("path", sorted(MEASURE.glob("*.py")), ids=lambda p: p.name)
def test_the_floor_stands_alone(path):
    foreign = sorted(
        n for n in _kvviz_imports(path) if n != "kvviz" and not n.startswith(("kvviz.measure", "kvviz.i18n"))
    )
    assert foreign == [], f"kvviz/measure/{path.name} imports {foreign}"


@pytest.mark.slow
def test_the_floor_loads_no_torch():
    modules = [f"kvviz.measure.{p.stem}" for p in sorted(MEASURE.glob("*.py")) if p.stem != "__init__"]
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in modules)
        + ("print(','.join(m for m in ('torch', 'transformers') if m in sys.modules))\n")
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == ""


# What only kvviz/measure may write: reading the load, counting cores, taking percentiles.
OWN_RULES = {
    "a load-average reader": re.compile(r"getloadavg|/proc/loadavg"),
    "a count of cores": re.compile(r"cpu_count\(|sched_getaffinity|\"core id\"|def (usable|physical)_cores"),
    "a percentile": re.compile(r"percentile\(|quantiles?\(|def quartiles"),
}


def _sources_outside_the_floor() -> list[Path]:
    files = list((REPO / "kvviz").rglob("*.py")) + list((REPO / "pages").rglob("*.py")) + [REPO / "app.py"]
    return sorted(p for p in files if MEASURE not in p.parents)


@pytest.mark.parametrize("rule", sorted(OWN_RULES))
def test_no_module_outside_the_floor_writes_its_own(rule):
    pattern = OWN_RULES[rule]
    offenders = [
        f"{p.relative_to(REPO)}:{n}"
        for p in _sources_outside_the_floor()
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == [], f"{rule} outside kvviz/measure: {offenders}"


# A load printed by hand ("{load:.1f}") shows "nan" where the OS has no load average: every sentence that names
# the load goes through load_label or load_number.
HAND_FORMATTED_LOAD = re.compile(r"\{load(?:_before|_after|_avg_1min|_1min)?:\.\d+f\}")


GUARDED = {"kvviz/speedup/machine.py"}  # default_thread_count says "machine load unknown" before these sentences


def test_no_sentence_formats_the_load_by_hand():
    offenders = [
        f"{p.relative_to(REPO)}:{n}"
        for p in _sources_outside_the_floor()
        if str(p.relative_to(REPO)) not in GUARDED
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if HAND_FORMATTED_LOAD.search(line)
    ]
    assert offenders == [], offenders
    assert HAND_FORMATTED_LOAD.search('"Load {load:.1f} on"') and HAND_FORMATTED_LOAD.search("{load_before:.2f}")


def test_an_unknown_load_prints_as_unknown_never_nan():
    from kvviz.speedup import tables

    assert load.load_number(float("nan")) == "unknown" and load.load_number(1.704) == "1.70"
    assert load.load_number(1.75, 1) == "1.8" or load.load_number(1.75, 1) == "1.7"  # Python's rounding, one digit
    # the CLI's --json: a nan load (or spread) is null, never NaN, which is not JSON
    safe = tables.json_safe({"machine": {"load_before": (float("nan"), 1.0, float("inf"))}, "n": [float("nan")]})
    assert json.dumps(safe, allow_nan=False) == '{"machine": {"load_before": [null, 1.0, null]}, "n": [null]}'


# ----- the load reader: one behaviour where the OS has none -----------------------------------------------------
def test_the_load_reader_reads_the_os():
    if not hasattr(os, "getloadavg"):
        pytest.skip("this OS has no load average")
    assert all(x >= 0 for x in load.load_average()) and load.load_avg_1min() >= 0


@pytest.mark.parametrize("how", ["no load average on this OS", "the OS cannot read it"])
def test_an_unknown_load_is_nan_everywhere_and_said_so(monkeypatch, how):
    if how == "no load average on this OS":  # Windows: os has no getloadavg at all
        monkeypatch.delattr(os, "getloadavg", raising=False)
    else:

        def unreadable():
            raise OSError("load average unobtainable")

        monkeypatch.setattr(os, "getloadavg", unreadable)
    assert all(math.isnan(x) for x in load.load_average()) and math.isnan(load.load_avg_1min())
    assert load.load_label(load.load_avg_1min()) == "machine load unknown"
    # the thread choice decides as on an idle machine and says the load is unknown (never "load 0.00")
    threads, why = machine.default_thread_count()
    assert threads == machine.max_threads() == machine.free_cores() and why == "machine load unknown"


def test_one_cores_rule_for_the_label_and_the_threads():
    assert 1 <= cores.usable_cores() <= min(cores.physical_cores(), cores.logical_cpus())
    assert machine.max_threads() == min(cores.usable_cores(), machine.MAX_THREADS)
    assert load.load_label(1.5) == load.load_label(1.5, cores.usable_cores())


# ----- one statistic --------------------------------------------------------------------------------------------
def _samples(rng: random.Random) -> tuple[float, ...]:
    return tuple(round(rng.uniform(1.0, 9.0), 3) for _ in range(rng.randint(1, 9)))


def test_the_race_its_figure_and_timing_share_one_statistic():
    rng = random.Random(32)
    for _ in range(200):
        c, u, f = _samples(rng), _samples(rng), _samples(rng)
        race = RaceTiming(seq_len=4, cached_ms=c, uncached_ms=u, fixed_ms=f)
        assert race.inside_noise == inside_noise(Timing(c), Timing(u))
        assert race.cached_median_ms == Timing(c).median_ms == median(c)
        assert Timing(u).quartiles_ms == quartiles(u)
    assert math.isnan(median(())) and quartiles(()) == (0.0, 0.0)


def test_the_race_figure_draws_the_statistic():
    from kvviz.figures.step import race_timing_figure

    c, u, f = (1.0, 2.0, 4.0, 8.0), (10.0, 11.0, 19.0), (0.5, 0.6, 0.7)
    bar = race_timing_figure(c, u, f).data[0]
    assert list(bar.x) == [median(u), median(c)]
    assert list(bar.error_x.arrayminus) == pytest.approx([median(u) - quartiles(u)[0], median(c) - quartiles(c)[0]])
    assert list(bar.error_x.array) == pytest.approx([quartiles(u)[1] - median(u), quartiles(c)[1] - median(c)])


def test_the_race_figures_floor_label_reads_toward_the_room_it_has():
    """The 1-token forward's label sits beside its dashed line on the side with room: to the right of a floor in the
    left half of the axis, to the left of one in the right half (there it ran past the chart's edge)."""
    from kvviz.figures.step import race_timing_figure

    for floor, anchor in (((0.5, 0.6, 0.7), "left"), ((9.0, 9.5, 10.0), "right")):
        fig = race_timing_figure((1.0, 2.0, 3.0), (10.0, 11.0, 12.0), floor)
        label = next(a for a in fig.layout.annotations if "1-token forward" in a.text)
        assert label.xanchor == anchor and label.x == median(floor)
        assert label.text.startswith("┆") if anchor == "left" else label.text.endswith("┆")


# ----- one interleaved loop -------------------------------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _passes(clock: Clock, cost_s: dict[str, float], order: list[str]):
    def make(name: str):
        def run() -> float:
            order.append(name)
            clock.now += cost_s[name]
            return cost_s[name]

        return run

    return {name: make(name) for name in cost_s}


def test_the_loop_rotates_its_orders_and_runs_every_repeat_without_a_budget():
    clock, order = Clock(), []
    orders = (("a", "b", "c"), ("b", "c", "a"), ("c", "a", "b"))
    seconds = interleaved_repeats(_passes(clock, {"a": 1.0, "b": 2.0, "c": 3.0}, order), 4, orders=orders, clock=clock)
    assert order == ["a", "b", "c", "b", "c", "a", "c", "a", "b", "a", "b", "c"]
    assert seconds == {"a": (1.0,) * 4, "b": (2.0,) * 4, "c": (3.0,) * 4}


@pytest.mark.parametrize("budget_s, repeats", [(0.0, 1), (0.5, 1), (3.0, 1), (3.5, 1), (6.5, 2), (9.5, 3), (100.0, 5)])
def test_the_loop_spends_its_budget_or_one_repeat(budget_s, repeats):
    clock, order = Clock(), []
    warm = []
    seconds = interleaved_repeats(
        _passes(clock, {"a": 1.0, "b": 2.0}, order),
        5,
        budget_s=budget_s,
        warm_up=lambda: (warm.append(1), setattr(clock, "now", clock.now + 0.5)),
        clock=clock,
    )
    assert warm == [1] and len(seconds["a"]) == len(seconds["b"]) == repeats
    assert clock.now == pytest.approx(0.5 + 3.0 * repeats)
    assert clock.now <= max(budget_s, 0.5 + 3.0) + 1e-9  # the warm-up counts against the budget


def test_the_loop_wants_a_repeat():
    with pytest.raises(ValueError):
        interleaved_repeats({"a": lambda: 0.0}, 0)


def test_the_speedups_medians_and_spread_are_measures():
    """The benchmark's per-token medians and its tokens/s spread are kvviz.measure's statistic, like every timing."""
    from kvviz.measure import timing

    assert timing.spread_pct([90.0, 100.0, 120.0]) == pytest.approx(30.0)
    assert math.isnan(timing.spread_pct([0.0, 0.0]))
    assert timing.median_per_position([[1.0, 10.0], [3.0, 30.0], [2.0, 20.0], [4.0, 40.0]]).tolist() == [2.5, 25.0]

"""The eviction lab's one noise rule (pure: hand-made records, no model): an interval is over the units sampled
(copy: the spans; loss: the passages, each paired with the full cache's), and a takeaway calls two points apart only
where the paired interval of their difference, unit by unit, excludes 0. Every comparison the takeaways make is
recorded as a Claim; each is recomputed here by hand (numpy, Student's t from a table), so a takeaway that calls a
difference real without its paired interval's support fails."""

from __future__ import annotations

import re

import numpy as np
import pytest

from kvviz.internals import eviction as ev
from kvviz.internals.eviction_takeaways import Claim, eviction_takeaways
from kvviz.internals.records import EvictionPoint, EvictionSweep
from kvviz.measure import timing

FULL_BYTES = 65_536
T_975 = {3: 3.182, 7: 2.365, 15: 2.131}  # Student's t at 0.975, by degrees of freedom (printed tables)


def _by_hand(units: np.ndarray) -> tuple[float, float]:
    """The 95% interval of the mean of `units`: mean ± t(0.975, n - 1) x SD / sqrt(n)."""
    half = T_975[len(units) - 1] * units.std(ddof=1) / np.sqrt(len(units))
    return units.mean() - half, units.mean() + half


def test_paired_interval_is_the_t_interval_of_the_differences():
    rng = np.random.default_rng(1)
    for n in (4, 8, 16):
        a, b = rng.normal(0.3, 0.2, n), rng.normal(0.1, 0.2, n)
        low, high = timing.paired_interval(a, b)
        want = _by_hand(a - b)
        assert (low, high) == pytest.approx(want, abs=1e-12)
        assert timing.paired_inside_noise(a, b) == (want[0] <= 0 <= want[1])
    assert timing.t_quantile_95(15) == 2.131 and timing.t_quantile_95(1000) == 1.96
    assert timing.paired_inside_noise([1.0, 1.0], [1.0, 1.0])  # no difference at all: inside
    assert not timing.paired_inside_noise([1.0, 1.0], [0.0, 0.0])  # the same difference in every unit: apart
    assert timing.paired_inside_noise([1.0], [0.0])  # one unit: no interval, no side named
    with pytest.raises(ValueError, match="same units"):
        timing.paired_interval([1.0, 2.0], [1.0])


def _point(policy: str, keep: int, per_passage, per_span, kind: str = "eviction", share: float | None = None):
    rows = ev.rows_for_budget(keep, 64)
    kept = int(FULL_BYTES * share) if share is not None else FULL_BYTES * rows // 64
    per_span = tuple(int(h) for h in per_span)
    return EvictionPoint(
        policy,
        kind,
        keep,
        rows,
        64,
        kept,
        FULL_BYTES,
        sum(per_span),
        63 * len(per_span),
        3.0 + float(np.mean(per_passage)),
        3.0,
        per_span,
        tuple(float(x) for x in per_passage),
    )


def test_the_issues_example_is_inside_the_noise_over_passages():
    """The GQA Llama at 50% (issue 59): key norm's four passages +0.130, +0.225, +0.596, +0.032 against TOVA's. Over
    188 tokens the old interval called the spread real; over the 4 passages, paired, it holds 0."""
    key_norm = np.array([0.130, 0.225, 0.596, 0.032])
    tova = np.array([-0.05, 0.10, -0.12, 0.026])
    low, high = timing.paired_interval(tova, key_norm)
    assert low < 0 < high
    spans = [60] * 4
    points = [_point("full", 100, [0.0] * 4, spans)]
    for policy in ("random", "recent", "streaming", "h2o", "tova", "key_norm"):
        change = {"tova": tova, "key_norm": key_norm}.get(policy, key_norm * 0.5)
        points.append(_point(policy, 50, change, [40, 42, 38, 41]))
    sweep = EvictionSweep("test", ev.EvictSettings(n_spans=4, n_passages=4), tuple(points), 16, 900)
    claims: list[Claim] = []
    at50 = next(line.english for line in eviction_takeaways(sweep, claims) if line.english.startswith("At 50%"))
    assert "(TOVA) to" in at50 and "(key norm), inside the noise of each other" in at50
    assert "beyond" not in at50


def _random_sweep(seed: int) -> EvictionSweep:
    """Every policy at every budget and the quantized formats, 16 spans and 16 passages of seeded noise around a
    trend, so that some comparisons come out apart and some inside the noise."""
    rng = np.random.default_rng(seed)
    passages = 16
    points = [_point("full", 100, [0.0] * passages, rng.integers(55, 63, 16))]
    for n, policy in enumerate(ev.EVICT_POLICIES[1:]):
        for keep in ev.EVICT_KEEP_PERCENTS:
            level = (100 - keep) / 100
            change = rng.normal(level * (0.2 + 0.1 * n), 0.15 + 0.1 * level, passages)
            hits = np.clip(rng.normal(60 - 40 * level + n, 4, 16), 0, 63)
            share = 0.9 * keep / 100 if policy.startswith("duo") else None
            points.append(_point(policy, keep, change, hits, share=share))
    for scheme, share in (("fp16", 0.5), ("fp8", 0.25), ("int8", 0.28), ("int4", 0.16), ("int2", 0.09)):
        points.append(
            _point(
                scheme, 100, rng.normal(0.01, 0.02, passages), np.clip(rng.normal(58, 3, 16), 0, 63), "quantized", share
            )
        )
    return EvictionSweep("test", ev.EvictSettings(), tuple(points), 16, 3476)


@pytest.mark.parametrize("seed", range(6))
def test_a_takeaway_calls_a_difference_real_only_where_its_paired_interval_excludes_zero(seed):
    sweep = _random_sweep(seed)
    claims: list[Claim] = []
    lines = [line.english for line in eviction_takeaways(sweep, claims)]
    assert claims and any(c.differs for c in claims) and any(not c.differs for c in claims)
    for c in claims:
        low, high = _by_hand(np.array(c.a.units(c.metric)) - np.array(c.b.units(c.metric)))
        supported = not (low <= 0 <= high)
        assert c.differs == supported, (c.a.policy, c.a.keep_percent, c.b.policy, c.b.keep_percent, c.metric)
    # the words follow the claims: each budget's loss range is called apart only where its claim is
    for line in lines:
        m = re.match(r"At (\d+)%", line)
        if not m:
            continue
        keep = int(m.group(1))
        at = [sweep.point(p, keep) for p in ev.EVICT_POLICIES[2:]]
        low = min(at, key=lambda p: p.loss_change_nats)
        high = max(at, key=lambda p: p.loss_change_nats)
        apart = (
            not _by_hand(np.array(low.units("loss")) - np.array(high.units("loss")))[0]
            <= 0
            <= _by_hand(np.array(low.units("loss")) - np.array(high.units("loss")))[1]
        )
        assert ("apart beyond the noise" in line) == apart, line
        rand = sweep.point("random", keep)
        top = max(at, key=lambda p: p.copy_accuracy)
        r_low, r_high = _by_hand(np.array(rand.units("copy")) - np.array(top.units("copy")))
        assert ("random control's" in line and "is below it" in line) == (not r_low <= 0 <= r_high), line
    for line in lines:  # "lower the loss beyond the noise": the named point's passages, paired with the full cache
        if line.startswith("Some points lower the loss beyond the noise"):
            best = min(
                (p for p in sweep.points if p.policy != "full" and p.loss_change_nats < 0),
                key=lambda p: p.loss_change_nats,
            )
            assert _by_hand(np.array(best.units("loss")))[1] < 0


def test_the_first_takeaway_says_the_method_in_one_line():
    sweep = _random_sweep(0)
    first = eviction_takeaways(sweep)[0].english
    assert "16 spans" in first and "16 passages" in first and "excludes 0" in first


def test_a_conclusion_that_rests_on_one_policy_names_it():
    """int8 beats every eviction in its bytes but one: the line says the verdict rests on that one, and what it
    would be without it."""
    spans16 = [60] * 8 + [61] * 8
    zero = [0.0] * 16
    points = [_point("full", 100, zero, spans16)]
    for policy in ev.EVICT_POLICIES[1:]:
        for keep in (50, 25):
            good = policy == "kvzip"
            hits = [59] * 8 + [61] * 8 if good else [30] * 8 + [34] * 8
            points.append(_point(policy, keep, zero, hits))
    points.append(_point("int8", 100, zero, [60] * 8 + [60] * 8, "quantized", 0.28))
    sweep = EvictionSweep("test", ev.EvictSettings(), tuple(points), 16, 3476)
    lines = [line.english for line in eviction_takeaways(sweep)]
    int8 = next(line for line in lines if line.startswith("int8"))
    assert "KVzip at 25%" in int8 and ": inside the noise." in int8
    assert "This rests on KVzip: without it" in int8 and "quantizing wins" in int8
    summary = next(line for line in lines if line.startswith("Quantizing beats evicting"))
    assert "0 formats of 1" in summary and "This count rests on KVzip: without it, 1 format of 1." in summary


@pytest.mark.parametrize("seed", range(3))
def test_the_takeaways_read_as_chinese_sentences(seed):
    """In Chinese the takeaways join their clauses and sentences with the reader's separators: no ASCII full stop
    after a Chinese clause, no space after 。 (the sweeps are the random ones above, and the one whose verdict
    rests on one policy, which adds a second sentence to a line). The takeaways are computed once, in no language,
    and drawn in Chinese and in English from that one computation."""
    from kvviz import i18n
    from support.i18n_text import punctuation_faults

    takeaways = eviction_takeaways(_random_sweep(seed))  # no language is current while they are computed
    with i18n.language(i18n.CHINESE):
        lines = [line.shown() for line in takeaways]
    assert lines and punctuation_faults(lines) == []
    assert all(re.search(r"[\u4e00-\u9fff]", line) for line in lines)
    english = [line.english for line in takeaways]
    assert english[0].startswith("Every ± is an interval at 95%") and not any(
        re.search(r"[\u4e00-\u9fff]", line) for line in english
    )

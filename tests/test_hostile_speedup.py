"""Work that never ends, bounded: the speed-up page estimates a run's cost from its settings and refuses what would
pass its budget (with the estimate); a running benchmark stops within a fraction of a second; a result that cannot
be shown never sticks to the session; 1 new token (no decode pass) is described, not a TypeError.

Real bundled model, real timed passes (the estimate is checked for its shape, never for a speed)."""

from __future__ import annotations

import dataclasses
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvviz import ops
from kvviz.speedup.records import RooflineVerdict
from kvviz.speedup.settings import (
    PAGE_BUDGET_S,
    BenchInputError,
    BenchSettings,
    PassRates,
    check_budget,
    estimate_seconds,
    longest_within,
)
from kvviz.work_queue import timed_work_queue
from support.pages import PAGES_DIR, app_test

PAGE = str(PAGES_DIR / "speedup.py")
GPT2_124M = ops.ModelShape(12, 12, 12, 64, 768, 3072, 50257, 2, "gpt2 shape")
RATES = PassRates(overhead_s=0.01, s_per_op=1e-10)  # a plain laptop: 10 GMAC/s, 10 ms per pass
LAPTOP_RATES = PassRates(overhead_s=0.002, s_per_op=1e-10)  # the bundled model on a plain laptop: 2 ms a pass
ESTIMATE_EXAMPLES = 200


@settings(max_examples=ESTIMATE_EXAMPLES, deadline=None, derandomize=True)
@given(
    p=st.integers(1, 512),
    n=st.integers(1, 511),
    repeats=st.integers(1, 10),
    warmup=st.integers(0, 5),
    uncached_generate=st.booleans(),
)
def test_the_estimate_grows_with_the_work_and_the_uncached_part_with_n_squared(
    p, n, repeats, warmup, uncached_generate
):
    s = BenchSettings(
        prompt_len=p, new_tokens=n, repeats=repeats, warmup=warmup, include_generate_no_cache=uncached_generate
    )
    est = estimate_seconds(s, GPT2_124M, RATES)
    assert est > 0
    assert estimate_seconds(dataclasses.replace(s, new_tokens=n + 1), GPT2_124M, RATES) > est
    assert estimate_seconds(dataclasses.replace(s, repeats=repeats + 1), GPT2_124M, RATES) > est
    fits = longest_within(s, GPT2_124M, RATES, PAGE_BUDGET_S)
    assert fits <= n and (
        fits == 0 or estimate_seconds(dataclasses.replace(s, new_tokens=fits), GPT2_124M, RATES) <= PAGE_BUDGET_S
    )


def test_uncached_cost_grows_with_the_square_of_the_length():
    only_uncached = dict(include_static=False, include_int8=False, include_generate=False, repeats=1, warmup=0)
    no_ops = PassRates(overhead_s=0.0, s_per_op=1e-10)
    small = estimate_seconds(BenchSettings(prompt_len=1, new_tokens=400, **only_uncached), GPT2_124M, no_ops)
    large = estimate_seconds(BenchSettings(prompt_len=1, new_tokens=800, **only_uncached), GPT2_124M, no_ops)
    assert 2.5 < (large - 2.6) / (small - 2.6) < 4.5  # fixed probes (2.6 s) aside: well above linear


def test_the_issue_run_is_refused_with_its_estimate():
    """GPT-2 124M shape, prompt 1, 1,023 new tokens, 10 rounds, 5 warm-ups, generate(use_cache=False): hours."""
    s = BenchSettings(prompt_len=1, new_tokens=1023, repeats=10, warmup=5, threads=8, include_generate_no_cache=True)
    with pytest.raises(BenchInputError) as caught:
        check_budget(s, GPT2_124M, RATES)
    message = str(caught.value)
    assert "would take about" in message and "60 s budget" in message and "new tokens fit" in message
    assert "\n" not in message and len(message) < 400


@pytest.mark.model
def test_a_real_runs_estimate_comes_from_real_passes(sdpa_model, monkeypatch):
    """The estimate is the settings' arithmetic over rates measured from real passes of the model; the budget
    check is tested with injected rates (an estimate built from timed passes moves with the machine's load)."""
    from kvviz.speedup import harness

    rates = harness.pass_rates(sdpa_model, 1)  # real passes: positive rates, whatever the load
    assert rates.s_per_op > 0 and rates.overhead_s >= 0
    small_run = BenchSettings(prompt_len=4, new_tokens=8, repeats=1, warmup=0, threads=1)
    big_run = BenchSettings(
        prompt_len=1, new_tokens=255, repeats=10, warmup=5, threads=1, include_generate_no_cache=True
    )
    shape = sdpa_model.info.ops_shape()
    assert harness.estimate(sdpa_model, small_run) == estimate_seconds(small_run, shape, rates)  # from those passes
    laptop, asked = LAPTOP_RATES, []
    monkeypatch.setattr(harness, "pass_rates", lambda loaded, threads: asked.append((loaded, threads)) or laptop)
    small, big = harness.estimate(sdpa_model, small_run), harness.estimate(sdpa_model, big_run)
    assert asked == [(sdpa_model, 1), (sdpa_model, 1)]  # this model's rates, at the run's thread count
    assert small == estimate_seconds(small_run, shape, laptop) and big == estimate_seconds(big_run, shape, laptop)
    assert small < PAGE_BUDGET_S < big
    with pytest.raises(BenchInputError):
        harness.refuse_over_budget(sdpa_model, big_run, PAGE_BUDGET_S)
    assert harness.refuse_over_budget(sdpa_model, small_run, PAGE_BUDGET_S) == small


@pytest.mark.model
def test_a_running_benchmark_stops_within_a_second(sdpa_model):
    from kvviz.speedup import harness

    settings_ = BenchSettings(
        prompt_len=1, new_tokens=255, repeats=10, warmup=5, threads=1, include_generate_no_cache=True
    )  # minutes of work
    asked = []

    def should_stop() -> bool:
        if not asked and time.monotonic() - started > 1.0:
            asked.append(time.monotonic())
        return bool(asked)

    started = time.monotonic()
    with pytest.raises(harness.BenchStopped):
        harness.run_benchmark(sdpa_model, settings_, should_stop=should_stop)
    assert time.monotonic() - asked[0] < 1.0
    assert not timed_work_queue().state().busy  # the line is free for the next student
    assert all(not block._forward_pre_hooks for block in sdpa_model.model.transformer.h)  # nothing left on the model


def test_one_new_token_is_described_not_a_type_error():
    verdict = RooflineVerdict(fractions=(), disturbed=False, in_cache=False)
    assert verdict.label == "no decode pass" and "no decode pass" in verdict.describe()


@pytest.fixture()
def speedup_app():
    import streamlit as st

    st.cache_resource.clear()
    yield app_test(PAGE)
    st.cache_resource.clear()


@pytest.mark.app
def test_the_page_refuses_a_run_over_its_budget_and_keeps_earlier_results(speedup_app, monkeypatch):
    from kvviz.speedup import harness

    # injected rates: the page's own estimate, timed on a loaded machine, put this run under the budget (and ran it)
    monkeypatch.setattr(harness, "pass_rates", lambda loaded, threads: LAPTOP_RATES)
    speedup_app.run()
    speedup_app.session_state["bench_result"] = None
    speedup_app.number_input(key="bench_prompt_len").set_value(1)
    speedup_app.number_input(key="bench_new_tokens").set_value(255)
    speedup_app.number_input(key="bench_repeats").set_value(10)
    speedup_app.number_input(key="bench_warmup").set_value(5)
    speedup_app.checkbox(key="bench_generate_no_cache").check()
    speedup_app.button(key="bench_run").click().run()
    assert not speedup_app.exception
    assert any("would take about" in e.value and "60 s budget" in e.value for e in speedup_app.error)


@pytest.mark.app
def test_a_result_that_cannot_be_shown_is_dropped_once(speedup_app):
    speedup_app.run()
    speedup_app.session_state["bench_result"] = "a broken result"  # what a failing render left behind
    speedup_app.run()
    assert not speedup_app.exception and any("could not be shown" in e.value for e in speedup_app.error)
    speedup_app.run()
    assert not speedup_app.exception and not speedup_app.error  # not stuck: the next rerun is clean


INPUTS_TRIED = ESTIMATE_EXAMPLES + 2 + 1 + 2 + 1 + 1 + 1 + 1

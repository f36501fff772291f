"""The step page's race view: a click's work is bounded (the budget, or one
repeat of each side where one repeat costs more: the GPT-2 124M shape at a long context), whatever check() raises
ends a race within one transformer block, and the caption never says what the chart contradicts; on the GPT-2
124M shape each part says which model it shows.

The passes are real (the bundled model); the clock is injected where a test counts work against the budget: a
forward pre-hook advances it by a pass's cost at stated rates, so the arithmetic is checked, never a speed."""

from __future__ import annotations

import random

import pytest
from streamlit.testing.v1 import AppTest

from kvviz.step.records import RACE_BUDGET_S, RaceTiming
from support.pages import app_test

GPT2_124M_RATES = (
    0.070,
    0.008,
)  # s per pass, s per token fed: docs/measurements.md: GPT-2 124M on one thread (70 ms floor, 330 ms at 32 tokens)


class PassClock:
    """A clock that moves only when the model runs: each forward adds overhead_s + per_token_s x tokens fed.
    Also counts the passes by the tokens each fed."""

    def __init__(self, model, overhead_s: float, per_token_s: float) -> None:
        self.now, self.fed = 0.0, []
        self.overhead_s, self.per_token_s = overhead_s, per_token_s
        self.model = model

    def __call__(self) -> float:
        return self.now

    def _hook(self, module, args, kwargs):  # noqa: ANN001 - torch's pre-hook signature
        tokens = int(kwargs["input_ids"].shape[1])
        self.fed.append(tokens)
        self.now += self.overhead_s + self.per_token_s * tokens

    def __enter__(self) -> PassClock:
        self.handle = self.model.register_forward_pre_hook(self._hook, with_kwargs=True)
        return self

    def __exit__(self, *exc) -> None:
        self.handle.remove()


def _ids(bundled, n: int) -> list[int]:
    text = "ROMEO:\nBut, soft! what light through yonder window breaks? It is the east, and Juliet is the sun. " * 20
    ids = bundled.tokenizer(text).input_ids
    return ids[:n]


@pytest.mark.model
def test_a_click_at_the_124m_shape_and_255_tokens_does_one_repeat_and_one_long_pass(bundled):
    """~255 cached tokens at GPT-2 124M rates: one repeat, not three (four 255-token passes with the fill), and its
    uncached pass also fills the cached side's cache."""
    from kvviz.step.engine import race_timing

    length = min(256, bundled.info.n_positions)
    with PassClock(bundled.model, *GPT2_124M_RATES) as clock:
        timing = race_timing(bundled, _ids(bundled, length), clock=clock)
    assert timing.repeats == 1 and timing.single_repeat
    assert len(timing.cached_ms) == len(timing.uncached_ms) == len(timing.fixed_ms) == 1
    assert sorted(clock.fed) == [1, 1, 1, 1, length]  # warm-ups (fixed, cached), one repeat: a single long pass
    one_pass = lambda n: GPT2_124M_RATES[0] + GPT2_124M_RATES[1] * n  # noqa: E731
    assert timing.uncached_ms[0] == pytest.approx(1000 * one_pass(length))
    assert clock.now == pytest.approx(4 * one_pass(1) + one_pass(length))


RATE_CASES = [
    (
        random.Random(seed).uniform(1e-5, 0.2),
        random.Random(seed + 99).uniform(0.0, 0.02),
        random.Random(seed + 7).randint(2, 48),
    )
    for seed in range(14)
]
RATE_CASES += [(0.0005, 0.00002, 30), (0.07, 0.008, 40), (0.05, 0.0, 2)]  # the bundled model quiet; 124M; 1 row


@pytest.mark.model
@pytest.mark.parametrize("overhead_s, per_token_s, length", RATE_CASES)
def test_a_click_spends_its_budget_or_one_repeat_and_no_more(bundled, overhead_s, per_token_s, length):
    """Whatever the rates: the click's time is at most the budget, or the warm-ups and one repeat where that
    is more; and it takes every repeat that fits (up to the maximum)."""
    from kvviz.step import engine as step_engine
    from kvviz.step.engine import race_timing

    cost = lambda n: overhead_s + per_token_s * n  # noqa: E731
    with PassClock(bundled.model, overhead_s, per_token_s) as clock:
        timing = race_timing(bundled, _ids(bundled, length), clock=clock)
    warm, repeat = 2 * cost(1), 2 * cost(1) + cost(length)
    assert clock.now <= max(RACE_BUDGET_S, warm + repeat) + 1e-9
    assert clock.now == pytest.approx(warm + timing.repeats * repeat)
    fits_another = warm + (timing.repeats + 1) * repeat <= RACE_BUDGET_S + 1e-9
    assert timing.repeats == step_engine.RACE_MAX_REPEATS or not fits_another
    assert len(timing.cached_ms) == len(timing.uncached_ms) == len(timing.fixed_ms) == timing.repeats


class NewerClick(Exception):
    """What Streamlit raises at a write when a newer run or a closed tab ends this one (its Rerun/Stop)."""


@pytest.mark.model
def test_a_newer_click_ends_the_race_inside_its_long_pass(bundled):
    """check() is called between passes and before every transformer block: what it raises ends the race there,
    nothing is returned, the lock is free and no hook is left on the shared model."""
    from kvviz.step.engine import MODEL_LOCK, race_timing

    n_layer, calls, passes = bundled.info.n_layer, [], []
    stop_at = 1 + n_layer + 1 + 2  # before the fixed warm-up, its blocks, before the long pass, its 2nd block

    def check() -> None:
        calls.append(1)
        if len(calls) == stop_at:
            raise NewerClick

    done = bundled.model.register_forward_hook(lambda *a: passes.append(1))
    try:
        with pytest.raises(NewerClick):
            race_timing(bundled, _ids(bundled, 40), check=check)
    finally:
        done.remove()
    assert len(calls) == stop_at and len(passes) == 1  # only the warm-up finished; nothing ran after the stop
    assert MODEL_LOCK.acquire(blocking=False)
    MODEL_LOCK.release()
    assert all(not block._forward_pre_hooks for block in bundled.model.transformer.h)


@pytest.mark.model
def test_an_engine_race_changes_nothing_and_with_no_budget_measures_once(bundled):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    engine.prefill("ROMEO:")
    for _ in range(4):
        engine.step()
    keys, length = engine.layer_keys(0).copy(), engine.cache_len
    timing = engine.race(budget_s=0.0)
    assert timing.repeats == 1 and timing.seq_len == length
    assert engine.cache_len == length and (engine.layer_keys(0) == keys).all()


# ----- the caption: computed from the numbers ---------------------------------------------------------------
UNDER = RaceTiming(
    seq_len=10,
    cached_ms=(1.9, 2.0, 2.1),
    uncached_ms=(18.0, 19.1, 20.0),
    fixed_ms=(3.5, 3.6, 3.7),
    model_label="bundled",
    load_1min=1.0,
)  # the cached median under the floor
ABOVE = RaceTiming(
    seq_len=10,
    cached_ms=(4.0, 4.1, 4.2),
    uncached_ms=(18.0, 19.1, 20.0),
    fixed_ms=(3.5, 3.6, 3.7),
    model_label="bundled",
    load_1min=1.0,
)


def test_below_floor_names_the_sides_under_the_one_token_forward():
    assert UNDER.below_floor == ("cached",) and ABOVE.below_floor == ()
    both = RaceTiming(seq_len=2, cached_ms=(1.0,), uncached_ms=(1.5,), fixed_ms=(2.0,))
    assert both.below_floor == ("cached", "uncached") and both.single_repeat


def _race_page() -> AppTest:
    at = app_test("pages/step_through.py")
    at.run()
    at.button(key="step_btn_prefill").click().run()
    at.button(key="step_btn_next").click().run()
    at.segmented_control(key="step_view").set_value("race").run()
    assert not at.exception
    return at


def _text(at: AppTest) -> str:
    return " ".join([m.value for m in at.markdown] + [c.value for c in at.caption])


@pytest.mark.app
def test_the_caption_never_says_both_stand_on_a_floor_one_is_drawn_under(fresh_streamlit_caches):
    at = _race_page()
    key, _measured = at.session_state["step_race_timing"]
    for timing, says, never in (
        (UNDER, "The cached step's median (2.0 ms) came in under the dashed line", "Both stand on the dashed line"),
        (ABOVE, "Both stand on the dashed line", "came in under the dashed line"),
    ):
        at.session_state["step_race_timing"] = (key, timing)
        at.run()
        assert not at.exception
        text = _text(at)
        assert says in text and never not in text, text


@pytest.mark.app
def test_on_the_124m_shape_each_part_of_the_race_says_which_model_it_shows(fresh_streamlit_caches):
    at = _race_page()
    small = at.session_state["step_engine"].loaded.info.label
    assert "The tiles above count" not in _text(at)  # one model: nothing to tell apart
    at.segmented_control(key="step_race_scale").set_value("gpt2").run()
    assert not at.exception
    timing = at.session_state["step_race_timing"][1]
    assert timing.model_label != small and "gpt2" in timing.model_label
    text = _text(at)
    assert (
        f"K caches and counts below: {small}, the model generating. The clock under them: {timing.model_label}" in text
    )
    assert f"The tiles above count {small}; the clock and the verdict below time {timing.model_label}." in text
    assert f"Clock: {timing.model_label}." in text
    assert "At this shape:" in text or "Inside the noise" in text or "measured slower" in text

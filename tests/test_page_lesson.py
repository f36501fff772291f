"""AppTest of the guided lesson on the real bundled model: every step renders with its figure, answers are judged
against the numbers computed live (first wrong answer -> a hint without the number, second -> the worked answer),
byte answers in any unit, the ending's score, class mode's one-click reveal, and ?step=N deep links."""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from kvviz import memory
from kvviz.i18n import Message
from kvviz.measure.timing import quartiles
from kvviz.memory.presets import get_preset
from kvviz.teaching import grading, lesson
from support.pages import app_test, open_page

N = len(lesson.STEPS)
BYTES_STEP = 1 + [s.ask for s in lesson.STEPS].index(lesson._bytes_at_1000)
DOTS_STEP = 1 + [s.ask for s in lesson.STEPS].index(lesson._dots_one_step)


def _lesson(step: int | str | None = None, class_mode: bool = False, lang: str | None = None) -> AppTest:
    """The lesson through the router (its page links need st.navigation), optionally deep-linked."""
    query = {} if step is None else {"step": str(step)}
    if class_mode:
        query["lesson_class"] = "true"
    return open_page("pages/lesson.py", lang=lang, query=query, router=True)


def _question(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Question.**"))


def _answer(at: AppTest, number: int, value, unit: str | None = None) -> AppTest:
    widget = (
        at.radio(key=f"lesson_answer_{number}")
        if isinstance(value, Message)  # a choice: the radio holds the choices themselves
        else at.number_input(key=f"lesson_answer_{number}")
    )
    widget.set_value(value)  # in the step's form: sent with the click on Check, as a browser sends them
    if unit is not None:
        at.selectbox(key=f"lesson_unit_{number}").set_value(unit)
    at.button(key=f"lesson_check_{number}").click().run()
    assert not at.exception
    return at


@pytest.mark.app
def test_every_step_renders_with_a_figure_and_next_on_12_leads_to_the_ending(fresh_streamlit_caches, bundled):
    from kvviz.step.engine import StepEngine

    at = _lesson()
    seen = []
    for number in range(1, N + 1):
        assert at.session_state["step"] == number
        assert f"Step {number} of {N}" in at.get("progress")[0].proto.text
        seen.append(_question(at))
        at.button(key=f"lesson_show_{number}").click().run()  # reveal: answer, arithmetic, figures, link
        assert not at.exception
        assert at.info and "computed answer" in at.info[0].value
        chips = [h for h in at.get("html") if "kvviz-token-grid" in h.proto.body]  # the tokens' picture
        assert at.get("plotly_chart") or chips, f"step {number} shows no figure"
        if number == 2:  # the prompt as chips, one per position, in order (they wrap on a phone)
            (grid,) = chips
            prompt = len(StepEngine(bundled).tokenize(lesson.LESSON_PROMPT))
            assert re.findall(r'data-pos="(\d+)"', grid.proto.body) == [str(i) for i in range(prompt)]
        at.button(key="lesson_next").click().run()
        assert not at.exception
    assert len(set(seen)) == N  # every step asks its own question
    assert at.session_state["step"] == N + 1  # Next on step 12 leads to the ending
    assert any("What you learned" in h.value for h in at.header)
    assert at.metric[0].value == f"0 of {N}"  # every answer was shown, none earned
    at.button(key="lesson_back").click().run()
    assert at.session_state["step"] == N


@pytest.mark.app
def test_first_wrong_answer_gets_a_hint_without_the_number_second_the_worked_answer(fresh_streamlit_caches, bundled):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    right = lesson._dots_one_step(engine).answer
    info = bundled.info
    forgot_own_key = info.n_layer * info.n_head * (engine.cache_len + 3)  # the predictable mistake: 320 here
    at = _lesson(step=DOTS_STEP)
    _answer(at, DOTS_STEP, forgot_own_key)
    assert at.warning and not at.error and not at.success
    hint = at.warning[0].value
    assert "own key" in hint  # the targeted hint
    assert f"{right}" not in hint and f"{right:,}" not in hint  # never the answer
    assert not any(f"{right:,}" in m.value for m in at.markdown)  # the worked answer is not shown yet
    _answer(at, DOTS_STEP, forgot_own_key + 1)  # a second wrong answer: the worked answer
    assert at.error and f"**{right:,}**" in at.error[0].value
    assert any(f"**{right:,}**" in m.value for m in at.markdown)  # the arithmetic
    assert at.session_state["lesson_outcomes"][DOTS_STEP].result == "shown"


@pytest.mark.app
def test_a_right_answer_after_a_hint_and_choices_are_judged(fresh_streamlit_caches, bundled):
    from kvviz.step.engine import StepEngine

    prompt_tokens = len(StepEngine(bundled).tokenize(lesson.LESSON_PROMPT))  # the real tokenizer decides
    at = _lesson(step=2)  # "after the prefill, how many rows does layer 0 hold?"
    _answer(at, 2, prompt_tokens - 1)  # counted positions from 1
    assert at.warning and "Positions start at 0" in at.warning[0].value
    _answer(at, 2, prompt_tokens)
    assert at.success and f"**{prompt_tokens}**" in at.success[0].value
    assert at.session_state["lesson_outcomes"][2].result == "after a hint"
    at = _lesson(step=4)  # why no Q cache
    _answer(at, 4, lesson.NO_Q)
    assert at.success and at.session_state["lesson_outcomes"][4].result == "first try"


@pytest.mark.app
def test_byte_answers_are_accepted_in_the_students_unit(fresh_streamlit_caches):
    exact = memory.kv_bytes(get_preset("gpt2").kv, 1000)  # 73,728,000 B: 2 x 12 x 12 x 64 x 4 x 1000
    assert exact == 2 * 12 * 12 * 64 * 4 * 1000
    for value, unit in ((70.31, "MiB"), (73.7, "MB"), (exact, "B"), (0.0737, "GB"), (72000, "KiB")):
        at = _lesson(step=BYTES_STEP)
        _answer(at, BYTES_STEP, value, unit)
        assert at.success, (value, unit)
    at = _lesson(step=BYTES_STEP)
    _answer(at, BYTES_STEP, 70.31, "MB")  # the MiB number read as decimal MB: 4.6% off, outside 1%
    assert at.warning and not at.success
    _answer(at, BYTES_STEP, exact / 2, "B")  # the fp16 (or K-only) answer: wrong for fp32
    assert at.error


@pytest.mark.app
def test_the_ending_scores_the_answers_and_starts_again(fresh_streamlit_caches, bundled):
    from kvviz.step.engine import StepEngine

    prompt_tokens = len(StepEngine(bundled).tokenize(lesson.LESSON_PROMPT))
    at = _lesson(step=2)
    _answer(at, 2, prompt_tokens)  # right at the first try
    at.button(key="lesson_next").click().run()
    _answer(at, 3, 1)  # wrong, then shown
    at.button(key="lesson_show_3").click().run()
    at.query_params["step"] = str(N + 1)
    at.session_state["step"] = N + 1
    at.run()
    assert not at.exception
    assert at.metric[0].value == f"1 of {N}" and at.metric[1].value == "1" and at.metric[2].value == "1"
    table = at.table[0].value
    assert list(table["result"][:3]) == ["not answered", "first try", "shown"]
    assert str(table["your answer"][1]) == f"{prompt_tokens:g}"
    at.button(key="lesson_restart").click().run()
    assert at.session_state["step"] == 1 and at.session_state["lesson_outcomes"] == {}


@pytest.mark.app
def test_class_mode_asks_without_typing_and_reveals_with_one_click(fresh_streamlit_caches):
    at = _lesson(step=4, class_mode=True)
    assert not at.main.radio and not at.main.number_input  # nothing to type (the sidebar has the model radio)
    assert any(lesson.NO_Q.english in m.value for m in at.markdown)  # the choices are on the screen, lettered
    assert not at.success
    at.button(key="lesson_reveal_btn_4").click().run()
    assert at.success and lesson.NO_Q.english in at.success[0].value


@pytest.mark.app
@pytest.mark.parametrize("number", [1, 6, 12])
def test_deep_links_open_the_right_step(fresh_streamlit_caches, number):
    at = _lesson(step=number)
    assert at.session_state["step"] == number
    assert lesson.STEPS[number - 1].title in at.get("progress")[0].proto.text


def test_check_judges_numbers_within_tolerance_and_choices_exactly():
    ask, none = Message.verbatim("?"), Message.verbatim("")
    q = lesson.Question(ask, 72.3, none, rel_tolerance=0.25)
    assert grading.check(q, 60) and grading.check(q, 90) and not grading.check(q, 50) and not grading.check(q, None)
    a, b = Message.verbatim("a"), Message.verbatim("b")
    c = lesson.Question(ask, b, none, choices=(a, b))
    assert grading.check(c, b) and not grading.check(c, a)  # a choice by its identity
    assert grading.check(c, "b") and not grading.check(c, "a") and not grading.check(c, "c")  # or by its words
    b = lesson.Question(ask, 73_728_000, none, rel_tolerance=0.01, unit="bytes")
    assert grading.check(b, 70.31, "MiB") and grading.check(b, 73.7, "MB") and not grading.check(b, 70.31, "MB")


@pytest.mark.model
def test_no_title_footer_or_hint_gives_the_answer_away(bundled):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    for number, step in enumerate(lesson.STEPS, start=1):
        q = step.ask(engine)
        numbers = [] if q.is_choice else [f"{q.answer:,}", f"{q.answer}"]
        for text in (step.title, step.teach, q.hint.english, *(why.english for _, why in q.traps)):
            assert not any(n in text for n in numbers), (number, text)
        if q.is_choice:
            assert q.answer.english not in step.title
        for pic in q.pictures:  # a figure shown before the question must not carry the answer's number
            assert pic.after or q.answer_text() not in pic.caption.english
    assert str(bundled.info.head_dim) not in bundled.info.label.split(" (")[0]  # the footer shows the title only


@pytest.mark.model
def test_whole_run_notation_matches_the_numbers_shown(bundled):
    from kvviz import ops
    from kvviz.step.engine import StepEngine

    q = lesson._quadratic(StepEngine(bundled))
    shape = bundled.info.ops_shape()
    heads, t = shape.n_layer * shape.n_head, 16 + 200 - 1
    cached, uncached = ops.generation_totals(shape, 16, 200)
    assert cached.attention_dot_products == heads * t * (t + 1) // 2  # the formula the question states
    assert f"{heads * t * (t + 1) // 2:,}" in q.arithmetic.english
    assert grading.check(q, (t + 2) / 3) and grading.check(q, t / 3)  # the derived rule is accepted
    assert not grading.check(q, (t + 1) / 2)  # extrapolating the last step's ratio is not
    assert "last step" in grading.hint(q, (t + 1) / 2).english


@pytest.mark.app
def test_full_page_links_carry_the_lessons_state(fresh_streamlit_caches, bundled):
    """Step 5's link opens Attention patterns at the copying head the lesson names; step 2's opens the step page
    replaying the lesson's own prompt."""
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    copying = lesson._copying_head(engine)
    layer, head = copying.page_query["pat_layer"], copying.page_query["pat_head"]
    assert f"Layer {layer}, head {head}" in copying.text.english
    at = app_test("pages/attention_patterns.py", query=copying.page_query)
    at.run()
    assert not at.exception
    assert at.session_state["pat_source"] == lesson.PATTERNS_PRESET
    assert (str(at.session_state["pat_layer"]), str(at.session_state["pat_head"])) == (layer, head)

    prefill = lesson._prefill_rows(engine)
    at = app_test("pages/step_through.py", query=prefill.page_query)
    at.run()
    assert not at.exception
    stage = at.session_state["step_engine"]
    assert stage.prompt_text == lesson.LESSON_PROMPT and stage.cache_len == prefill.answer


# ----- the lesson's sentences as right as its numbers ------------------------------------------------------------
@pytest.mark.model
def test_step_1_teaches_projections_of_the_whole_vector_and_k_v_heads():
    """No 'equal slice' of the hidden vector; on the GQA model one layer's K per token is
    n_kv_heads x head_dim (2 x 16 = 32), not a share of the hidden size."""
    from kvviz.model.loaders import load_model
    from kvviz.step.engine import StepEngine

    first = lesson.STEPS[0]
    assert "slice" not in first.teach and "whole hidden vector" in first.teach and "K/V head" in first.teach
    assert "in every head of every layer" not in first.teach
    gqa = load_model("bundled-gqa")
    q = lesson._k_row(StepEngine(gqa))
    info = gqa.info
    assert info.n_kv_heads < info.n_head
    assert f"{info.n_kv_heads} x {q.answer} = {info.n_kv_heads * q.answer} K numbers per token" in q.arithmetic.english
    assert "split evenly between" not in q.arithmetic.english and "share" not in q.hint.english


@pytest.mark.model
def test_step_8_formula_and_total_agree(bundled):
    """The uncached total printed is the formula the step teaches (the prefill is one triangle)."""
    from kvviz import ops
    from kvviz.step.engine import StepEngine

    q = lesson._quadratic(StepEngine(bundled))
    shape = bundled.info.ops_shape()
    p, t = 16, 16 + 200 - 1
    heads = shape.n_layer * shape.n_head
    _, uncached = ops.generation_totals(shape, p, 200)
    formula = heads * (t * (t + 1) * (t + 2) // 6 - (p - 1) * p * (p + 1) // 6)
    assert formula == uncached.attention_dot_products
    assert f"**{formula:,}**" in q.arithmetic.english
    assert "T(T+1)(T+2)/6 - (P-1)P(P+1)/6" in lesson.STEPS[7].teach and "(P-1)P(P+1)/6" in q.arithmetic.english


@pytest.mark.model
def test_step_11_times_both_sides_interleaved_with_the_races_noise_rule(bundled):
    """Step 11 uses the race's interleaved repeats (kvviz.step.engine.race_timing), medians with their
    interquartile ranges, and says whether the difference is inside the noise."""
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    races = []
    real_race = engine.race

    def recorded(*args, **kwargs):
        races.append(real_race(*args, **kwargs))
        return races[-1]

    engine.race = recorded
    q = lesson._measured_speedup(engine, steps=4, budget_s=0.5)
    (race,) = races
    assert "interleaved" in q.arithmetic.english
    assert f"cached step median {race.cached_median_ms:.2f} ms" in q.arithmetic.english
    assert f"uncached pass median {race.uncached_median_ms:.2f} ms" in q.arithmetic.english
    c_lo, c_hi = quartiles(race.cached_ms)
    assert f"interquartile range {c_lo:.2f} to {c_hi:.2f}" in q.arithmetic.english
    if race.single_repeat:
        assert "no spread to judge the noise by" in q.arithmetic.english
    elif race.inside_noise:
        assert "inside the noise" in q.arithmetic.english
    else:
        assert "larger than the noise" in q.arithmetic.english
    assert sorted(q.picture.data["cached"]) == sorted(race.cached_ms)

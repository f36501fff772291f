"""AppTest of the guided lesson on the real bundled model: every step renders, answers are judged against
the numbers computed live, and ?step=N deep links open step N."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from conftest import APP_TIMEOUT_S
from kvviz import lesson, memory
from kvviz.presets import get_preset
from kvviz.stepping import StepEngine

REPO = Path(__file__).resolve().parents[1]


def _lesson(step: int | None = None) -> AppTest:
    """The lesson through the router (its page links need st.navigation), optionally deep-linked."""
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=APP_TIMEOUT_S)
    if step is not None:
        at.query_params["step"] = str(step)
    at.run()
    at.switch_page("pages/lesson.py").run()
    assert not at.exception
    return at


def _question(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("**Question.**"))


def test_every_lesson_step_renders_and_next_back_walk_through_them(fresh_streamlit_caches):
    at = _lesson()
    seen = []
    for number in range(1, len(lesson.STEPS) + 1):
        assert at.session_state["step"] == number
        assert f"Step {number} of {len(lesson.STEPS)}" in at.get("progress")[0].proto.text
        seen.append(_question(at))
        at.button(key=f"lesson_show_{number}").click().run()  # reveal: answer, arithmetic, link
        assert not at.exception
        assert at.info and "computed answer" in at.info[0].value
        if number < len(lesson.STEPS):
            at.button(key="lesson_next").click().run()
            assert not at.exception
    assert len(set(seen)) == len(lesson.STEPS)  # every step asks its own question
    at.button(key="lesson_back").click().run()
    assert at.session_state["step"] == len(lesson.STEPS) - 1


def test_a_right_and_a_wrong_number_are_judged_against_the_live_model(fresh_streamlit_caches, bundled):
    prompt_tokens = len(StepEngine(bundled).tokenize(lesson.LESSON_PROMPT))  # the real tokenizer decides
    at = _lesson(step=2)  # "after the prefill, how many rows does layer 0 hold?"
    at.number_input(key="lesson_answer_2").set_value(prompt_tokens).run()
    at.button(key="lesson_check_2").click().run()
    assert at.success and f"**{prompt_tokens}**" in at.success[0].value
    at.number_input(key="lesson_answer_2").set_value(prompt_tokens + 1).run()
    at.button(key="lesson_check_2").click().run()
    assert at.error and not at.success
    at = _lesson(step=3)  # after 10 more steps: prompt + 10 rows
    at.number_input(key="lesson_answer_3").set_value(prompt_tokens + 10).run()
    at.button(key="lesson_check_3").click().run()
    assert at.success


def test_a_choice_and_a_memory_answer_are_judged(fresh_streamlit_caches):
    at = _lesson(step=4)  # why no Q cache
    at.radio(key="lesson_answer_4").set_value(lesson.NO_Q).run()
    at.button(key="lesson_check_4").click().run()
    assert at.success
    at.radio(key="lesson_answer_4").set_value("Their Q, K and V").run()
    at.button(key="lesson_check_4").click().run()
    assert at.error
    exact = memory.kv_bytes(get_preset("gpt2").kv, 1000)  # 73,728,000 B: 2 x 12 x 12 x 64 x 4 x 1000
    assert exact == 2 * 12 * 12 * 64 * 4 * 1000
    n = 1 + [s.ask for s in lesson.STEPS].index(lesson._bytes_at_1000)  # the memory step
    at = _lesson(step=n)
    at.number_input(key=f"lesson_answer_{n}").set_value(exact * 1.005).run()  # "within 1%"
    at.button(key=f"lesson_check_{n}").click().run()
    assert at.success
    at.number_input(key=f"lesson_answer_{n}").set_value(exact // 2).run()  # the fp16 answer: wrong for fp32
    at.button(key=f"lesson_check_{n}").click().run()
    assert at.error


@pytest.mark.parametrize("number", [1, 6, 12])
def test_deep_links_open_the_right_step(fresh_streamlit_caches, number):
    at = _lesson(step=number)
    assert at.session_state["step"] == number
    assert lesson.STEPS[number - 1].title in at.get("progress")[0].proto.text


def test_check_judges_numbers_within_tolerance_and_choices_exactly():
    q = lesson.Question("?", 72.3, "", rel_tolerance=0.25)
    assert lesson.check(q, 60) and lesson.check(q, 90) and not lesson.check(q, 50) and not lesson.check(q, None)
    c = lesson.Question("?", "b", "", choices=("a", "b"))
    assert lesson.check(c, "b") and not lesson.check(c, "a")

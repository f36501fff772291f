"""The lesson in a teacher's hands (AppTest and the records, the browser parts are in
test_browser_lesson.py): class mode scores the room (V reveals, Y/N mark; no key reads as a choice's letter), the
score rides in the URL so a reload keeps it, a deep link's Back works on its first run, step 9's MB/MiB slip gets the
targeted hint, step 4's chart names every bar, step 7's triangle never runs past its rows, and the worksheet exists."""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from kvviz import i18n
from kvviz.figures.lesson import lesson_figure
from kvviz.teaching import grading, handout, lesson, score
from support.pages import open_page

N = len(lesson.STEPS)
BYTES_STEP = 1 + [s.ask for s in lesson.STEPS].index(lesson._bytes_at_1000)
DOTS_STEP = 1 + [s.ask for s in lesson.STEPS].index(lesson._dots_one_step)
WHY_NO_Q_STEP = 1 + [s.ask for s in lesson.STEPS].index(lesson._why_no_q)


def _open(**params: str) -> AppTest:
    return open_page("pages/lesson.py", query=params, router=True)


def _signed(code: str) -> str:
    """A score as the page writes it into the URL: signed with the key this (test) server keeps."""
    import streamlit as st

    return score.sign_score(code, score.score_key(st.get_option("server.cookieSecret")))


def _shortcuts(at: AppTest) -> set[str]:
    return {b.proto.shortcut.upper() for b in at.button if b.proto.shortcut}


@pytest.mark.app
def test_class_mode_scores_the_room_with_keys_that_are_not_answer_letters(fresh_streamlit_caches):
    at = _open(step="1", lesson_class="true")
    letters = {chr(65 + i) for i in range(6)}  # A-F: a choice's letter
    for number, right in ((1, True), (2, False), (3, True)):
        reveal = at.button(key=f"lesson_reveal_btn_{number}")
        assert reveal.proto.shortcut.upper() not in letters
        if number == 3:
            at.button(key="lesson_hint_btn_3").click().run()  # the room needed the hint
        reveal.click().run()
        assert at.success
        assert not (_shortcuts(at) & letters), _shortcuts(at)
        at.button(key=f"lesson_room_{'right' if right else 'wrong'}_{number}").click().run()
        assert not at.exception and at.caption and "Marked for the room" in " ".join(c.value for c in at.caption)
        at.button(key="lesson_next").click().run()
    outcomes = at.session_state["lesson_outcomes"]
    assert [outcomes[n].result for n in (1, 2, 3)] == ["first try", "shown", "after a hint"]
    at.query_params["step"] = "End"
    at.session_state["step"] = N + 1
    at.run()
    assert at.metric[0].value == f"2 of {N}" and at.metric[1].value == "1"
    table = at.table[0].value
    assert list(table["result"][:4]) == ["first try", "shown", "after a hint", "not answered"]


@pytest.mark.app
def test_the_score_rides_in_the_url_and_a_reload_keeps_it(fresh_streamlit_caches, bundled):
    from kvviz.step.engine import StepEngine

    prompt_tokens = len(StepEngine(bundled).tokenize(lesson.LESSON_PROMPT))
    at = _open(step="2")
    at.number_input(key="lesson_answer_2").set_value(prompt_tokens)
    at.button(key="lesson_check_2").click().run()
    code = at.query_params["lesson_score"]
    code = code[0] if isinstance(code, list) else code
    assert code.partition(".")[0] == "-f" + "-" * (N - 2)  # signed: "-f---.<signature>"
    # a reload: a new session opened at the same URL
    again = _open(step="End", lesson_score=code)
    assert again.metric[0].value == f"1 of {N}" and again.metric[1].value == "1"
    assert score.decode_outcomes("fhsx" + "-" * 20, N) == {
        1: score.Outcome("first try", ""),
        2: score.Outcome("after a hint", ""),
        3: score.Outcome("shown", ""),
    }


@pytest.mark.app
def test_a_click_sent_before_the_browser_took_the_last_runs_url_keeps_the_step_and_the_score(fresh_streamlit_caches):
    """A rerun carries the URL as the browser has it when the click is sent; a Next clicked (or a key queued) just
    after a mark, on a busy laptop, carries the URL from before the mark; were the URL's score to win, the mark
    would be lost (step 4's miss not answered). A click's run keeps the session's."""
    at = _open(step="3", lesson_class="true")
    at.button(key="lesson_reveal_btn_3").click().run()
    at.button(key="lesson_room_right_3").click().run()
    at.button(key="lesson_next").click().run()
    at.button(key="lesson_reveal_btn_4").click().run()
    stale = dict(at.query_params)  # the URL before the next mark: step 3's alone
    at.button(key="lesson_room_wrong_4").click().run()
    code = _signed("--fs" + "-" * (N - 4))
    assert at.query_params["lesson_score"] in (code, [code])
    at.query_params.clear()
    at.query_params.update(stale)
    at.button(key="lesson_next").click().run()
    outcomes = at.session_state["lesson_outcomes"]
    assert at.session_state["step"] == 5 and [outcomes[n].result for n in (3, 4)] == ["first try", "shown"]
    assert at.query_params["lesson_score"] in (code, [code])
    at.query_params["step"] = "4"  # a second Next clicked before the browser took the first one's step
    at.button(key="lesson_next").click().run()
    assert at.session_state["step"] == 6 and at.query_params["step"] in ("6", ["6"])


@pytest.mark.app
def test_class_mode_switched_off_just_after_a_mark_keeps_the_mark(fresh_streamlit_caches):
    """The class-mode toggle is a click on this page too: switched just after a mark, its run carries the URL from
    before the mark and must keep the session's score, as Next does."""
    at = _open(step="3", lesson_class="true")
    at.button(key="lesson_reveal_btn_3").click().run()
    at.button(key="lesson_room_right_3").click().run()
    at.button(key="lesson_next").click().run()
    at.button(key="lesson_reveal_btn_4").click().run()
    stale = dict(at.query_params)  # the URL before the next mark: step 3's score alone
    at.button(key="lesson_room_wrong_4").click().run()
    at.query_params.clear()
    at.query_params.update(stale)
    at.toggle(key="lesson_class").set_value(False).run()
    outcomes = at.session_state["lesson_outcomes"]
    assert at.session_state["step"] == 4 and [outcomes[n].result for n in (3, 4)] == ["first try", "shown"]


@pytest.mark.app
def test_a_deep_links_back_button_works_on_its_first_run(fresh_streamlit_caches):
    at = _open(step="7", lesson_class="true")
    back = at.button(key="lesson_back")
    assert not back.proto.disabled
    back.click().run()
    assert at.session_state["step"] == 6


@pytest.mark.model
def test_the_mb_mib_slip_gets_the_targeted_hint(bundled):
    from kvviz.step.engine import StepEngine

    q = lesson._bytes_at_1000(StepEngine(bundled))
    mib, mb = lesson.BYTE_UNITS["MiB"], lesson.BYTE_UNITS["MB"]
    for value, unit in ((q.answer / mb, "MiB"), (q.answer / mib, "MB")):
        assert not grading.check(q, value, unit)
        assert "MiB" in grading.hint(q, value, unit).english and grading.hint(q, value, unit) != q.hint


@pytest.mark.model
def test_step_4_names_every_bar_and_step_7_stays_within_its_rows(bundled):
    from kvviz.step.engine import StepEngine

    q = lesson._why_no_q(StepEngine(bundled))
    fig = lesson_figure(q.picture.kind, q.picture.data)
    weights = q.picture.data["weights"]
    assert list(fig.layout.xaxis.tickvals) == list(range(len(weights)))  # the tallest bar is named as its own
    triangle = lesson._dots_one_step(StepEngine(bundled)).picture
    tri, seq = lesson_figure(triangle.kind, triangle.data), triangle.data["seq"]
    assert sorted(tri.layout.yaxis.range) == [-0.5, seq - 0.5] and tri.layout.yaxis.constrain == "domain"


@pytest.mark.model
def test_the_worksheet_exists_without_answers(bundled):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    steps = lesson.STEPS[:5]
    questions = [s.ask(engine) for s in steps]
    sheet = handout.handout_html(steps, questions, "GPT-2", worksheet=True)
    full = handout.handout_html(steps, questions, "GPT-2")
    assert "worksheet" in full.split("<section")[0].lower() and "worksheet" in sheet.lower()
    assert 'class="answer"' not in sheet and 'class="hint"' not in sheet and sheet.count("<section") == 5
    assert full.count('class="answer"') == 5
    body = re.sub(r"<script.*?</script>", "", sheet, flags=re.S)
    for q in questions:  # no worked answer leaks into the worksheet
        assert re.sub(r"[*`]", "", q.arithmetic.english)[:40] not in body


@pytest.mark.model
def test_the_handout_prints_no_markdown(bundled):
    """Step 5's choices and answer name tokens as code (`en`): the printed page draws them as code, never as raw
    backticks or asterisks, in both languages."""
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    step = lesson.STEPS[4]
    question = step.ask(engine)  # computed once, printed in each language
    for language in i18n.LANGUAGES:
        with i18n.language(language):
            doc = handout.handout_html([step], [question], "GPT-2")
            # the lesson writes them as code
            assert "`" in question.answer_text() + "".join(c.shown() for c in question.choices)
        body = re.sub(r"<script.*?</script>|<style.*?</style>", " ", doc, flags=re.S)
        text = re.sub(r"<[^>]+>", " ", body[body.index("<body>") :])
        assert "`" not in text and "**" not in text, language
        assert "<code>" in body.split("class='choices'")[1], language


@pytest.mark.model
def test_the_handout_names_the_model_each_step_used(bundled):
    """Steps 9, 10 and 12 compute with the GPT-2 small and Llama-3-8B presets, not the lesson's
    model: the intro says so and each page names its model."""
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    questions = [s.ask(engine) for s in lesson.STEPS]
    doc = handout.handout_html(lesson.STEPS, questions, "Bundled GPT-2")
    intro = doc.split("<section")[0]
    assert "Every number was computed for" not in intro
    preset_steps = {n: q.model for n, q in enumerate(questions, start=1) if q.model}
    assert preset_steps == {9: "GPT-2 small", 10: "Llama-3-8B", 12: "Llama-3-8B"}
    for n, model in preset_steps.items():
        assert f"step {n}: {model}" in intro
    pages = doc.split("<section")[1:]
    for n, page in enumerate(pages, start=1):
        named = preset_steps.get(n, "Bundled GPT-2")
        assert f"Computed for {named}" in page, n


@pytest.mark.model
def test_each_steps_preset_is_the_model_its_question_uses(bundled):
    """A step's declared preset is the model its question computes with (the lesson page's handout note
    lists them)."""
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    for step in lesson.STEPS:
        if step.ask is lesson._measured_speedup:
            continue  # times the lesson's own model
        assert step.ask(engine).model == lesson.PRESET_MODELS.get(step.preset, ""), step.title
    assert lesson.preset_steps_text() == "step 9: GPT-2 small; step 10: Llama-3-8B; step 12: Llama-3-8B"


@pytest.mark.app
def test_the_handout_popover_names_the_preset_steps(fresh_streamlit_caches):
    """On the page: the handout's note does not say every number is the lesson's model's."""
    at = _open(step="1")
    text = " ".join(m.value for m in at.markdown)
    assert (
        "except where a step uses a published model's preset (step 9: GPT-2 small; step 10: Llama-3-8B; "
        "step 12: Llama-3-8B)" in text
    )
    assert "with every number computed for" not in text


def test_the_timing_figures_median_is_the_texts_median_for_an_even_count():
    """Step 11's chart labels each bar with the median its text states: with four repeats that is the mean of the
    middle two (np.median, as the race's RaceTiming computes it), not the upper middle sample."""
    cached, uncached = [4.0, 1.0, 3.0, 2.0], [9.0, 5.0, 8.0, 6.0]
    fig = lesson_figure("timings", {"cached": cached, "uncached": uncached, "op_ratio": 3.0, "load": 1.0})
    bars = [trace for trace in fig.data if trace.type == "bar"]
    assert [bar.x[0] for bar in bars] == [2.5, 7.0]
    assert "median 2.50 ms" in bars[0].y[0] and "median 7.00 ms" in bars[1].y[0]


@pytest.mark.app
def test_the_key_queues_badge_speaks_the_runs_language_and_counts_one_press_in_the_singular(fresh_streamlit_caches):
    """The key queue's script is installed once per tab; its badge's words come from the state element every run
    writes, so a language switch changes them (the badge kept the tab's first language) and one press is 'key
    press' (it said '1 key presses')."""

    def state(at: AppTest) -> str:
        return next(h.proto.body for h in at.get("html") if h.proto.body.startswith('<div class="kvviz-lesson-state'))

    english = state(_open(step="2"))
    assert 'data-busy-one="Lesson busy: {n} key press queued"' in english
    assert 'data-busy-many="Lesson busy: {n} key presses queued"' in english
    chinese = state(open_page("pages/lesson.py", lang=i18n.CHINESE, query={"step": "2"}, router=True))
    assert 'data-busy-one="课程忙：已排队 {n} 次按键"' in chinese and "Lesson busy" not in chinese

"""The lesson in Simplified Chinese, on the real bundled model: at ?lang=zh-CN its steps, hints, worked
answers, class mode, summary and handout read in Chinese (no English sentence left but names and the model's own
text), numbers are judged exactly as in English, a choice is accepted in either language, ?step=End still opens
the summary, and the lesson's own links carry the language."""

from __future__ import annotations

import re
from urllib.parse import parse_qs

import pytest
from streamlit.testing.v1 import AppTest

from kvviz import i18n
from kvviz.i18n import _
from kvviz.teaching import glossary, grading, handout, lesson
from support.i18n_text import english_leftovers, english_ratios, page_texts, shown_texts
from support.pages import open_page

CJK = re.compile(r"[\u4e00-\u9fff]")
ZH = {i18n.QUERY_PARAM: i18n.CHINESE}


def _lesson_zh(step: int | str, class_mode: bool = False) -> AppTest:
    """The lesson in Chinese through the router, deep-linked to `step`."""
    query = {"step": str(step), **({"lesson_class": "true"} if class_mode else {})}
    return open_page("pages/lesson.py", lang=i18n.CHINESE, query=query, router=True)


def _leftovers(at: AppTest, number: int | None = None) -> list[str]:
    """English runs on the page, the glossary's own tooltips aside (the glossary translates those: its slice)."""
    with i18n.language(i18n.CHINESE):
        tooltips = {glossary.help_text(t) for t in lesson.STEPS[number - 1].terms} if number else set()
    return english_leftovers(
        [t for t in page_texts(at) if t not in tooltips], allowed=[t.name for t in glossary.TERMS]
    )  # a term's English name may stand beside it


def _page_links(at: AppTest) -> list:
    return [e.proto for e in at.get("page_link")]


@pytest.mark.app
def test_steps_show_chinese_with_their_worked_answers(fresh_streamlit_caches):
    for number in (1, 5, 9):  # a number, a choice built from the model's tokens, a byte answer with a unit
        at = _lesson_zh(number)
        progress = at.get("progress")[0].proto.text
        with i18n.language(i18n.CHINESE):
            title = _(lesson.STEPS[number - 1].title)
        assert title in progress and CJK.search(title) and f"第 {number} 步" in progress
        at.button(key=f"lesson_show_{number}").click().run()  # the worked answer and its figures
        assert not at.exception
        assert at.info and at.info[0].value.startswith("正确答案是")
        assert not _leftovers(at, number), (number, _leftovers(at, number))
        link = next(p for p in _page_links(at) if p.label.startswith("在完整页面中查看"))
        assert parse_qs(link.query_string)[i18n.QUERY_PARAM] == [i18n.CHINESE]  # the full page opens in Chinese
        assert all(parse_qs(p.query_string).get(i18n.QUERY_PARAM) == [i18n.CHINESE] for p in _page_links(at))


@pytest.mark.app
def test_a_hint_and_a_right_number_in_chinese(fresh_streamlit_caches, bundled):
    from kvviz.step.engine import StepEngine

    prompt_tokens = len(StepEngine(bundled).tokenize(lesson.LESSON_PROMPT))
    at = _lesson_zh(2)
    at.number_input(key="lesson_answer_2").set_value(prompt_tokens - 1)  # counted positions from 1
    at.button(key="lesson_check_2").click().run()
    hint = at.warning[0].value
    assert "位置从 0 开始" in hint and not english_leftovers([hint])
    at.number_input(key="lesson_answer_2").set_value(prompt_tokens)  # judged exactly as in English
    at.button(key="lesson_check_2").click().run()
    assert at.success and at.success[0].value == f"正确：**{prompt_tokens}**。"


@pytest.mark.app
def test_a_choice_is_chinese_and_accepted_in_either_language(fresh_streamlit_caches, bundled):
    from kvviz.step.engine import StepEngine

    at = _lesson_zh(4)
    with i18n.language(i18n.CHINESE):
        chinese = lesson.NO_Q.shown()
    assert chinese != lesson.NO_Q.english and chinese in at.radio(key="lesson_answer_4").options
    at.radio(key="lesson_answer_4").set_value(lesson.NO_Q)  # the choice itself: the radio draws its Chinese words
    at.button(key="lesson_check_4").click().run()
    assert at.success and chinese in at.success[0].value
    assert at.session_state["lesson_outcomes"][4].result == "first try"
    question = lesson._why_no_q(StepEngine(bundled))  # one record, judged and drawn in either language
    with i18n.language(i18n.CHINESE):
        assert question.answer_text() == chinese and CJK.search(question.arithmetic.shown())
        assert CJK.search(grading.hint(question, lesson.ONLY_Q).shown())  # the targeted hint, found by identity
    assert question.answer == lesson.NO_Q and grading.check(question, lesson.NO_Q)
    assert grading.check(question, chinese) and grading.check(question, lesson.NO_Q.english)  # words in either
    assert not grading.check(question, lesson.ONLY_Q) and not grading.check(question, lesson.ONLY_Q.english)


@pytest.mark.app
def test_the_summary_shows_a_choice_in_the_readers_language(fresh_streamlit_caches, bundled):
    """A choice answered in Chinese, then the page switched to English: the ending shows no Chinese choice text
    under English headings. The answer is kept as the choice itself and shown in the reader's language."""
    at = _lesson_zh(4)
    at.radio(key="lesson_answer_4").set_value(lesson.NO_Q)
    at.button(key="lesson_check_4").click().run()
    at.sidebar.segmented_control(key="app_language").set_value(i18n.ENGLISH).run()
    at.segmented_control(key="step").set_value(len(lesson.STEPS) + 1).run()
    assert not at.exception
    table = at.table[0].value
    assert (
        table.loc[table["step"] == 4, "your answer"].iloc[0] == lesson.NO_Q.english
    )  # English, as the page reads after the switch
    assert table.loc[table["step"] == 4, "result"].iloc[0] == "first try"


@pytest.mark.app
def test_class_mode_and_the_summary_in_chinese(fresh_streamlit_caches):
    at = _lesson_zh(4, class_mode=True)
    at.button(key="lesson_reveal_btn_4").click().run()
    assert at.success and at.success[0].value.startswith("### 答案：")
    assert not _leftovers(at, 4)
    at = _lesson_zh("End")  # an English ?step=End link still opens the summary
    assert at.session_state["step"] == len(lesson.STEPS) + 1
    assert at.header[0].value == "你学到了什么" and at.metric[0].value == f"0 / {len(lesson.STEPS)}"
    table = at.table[0].value
    assert list(table.columns)[:2] == ["步", "要点"] and set(table["结果"]) == {"未作答"}
    assert not _leftovers(at)


@pytest.mark.model
def test_the_handout_in_chinese(bundled):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    with i18n.language(i18n.CHINESE):
        steps = lesson.STEPS[:2]
        doc = handout.handout_html(steps, [s.ask(engine) for s in steps], "GPT-2")
    assert "<html lang='zh-CN'>" in doc and "第 1 步" in doc and "提示：" in doc and "<b>答案：" in doc
    body = re.sub(r"<script.*?</script>|<div class=\"plotly-graph-div\".*?</div>", " ", doc, flags=re.S)
    text = [t for t in re.sub(r"<[^>]+>", "\n", body[body.index("<body>") :]).split("\n") if t.strip()]
    assert not english_leftovers(text)


@pytest.mark.app
def test_step_8_states_its_ratio_in_bei(fresh_streamlit_caches):
    """Step 8's answer is a ratio: "72.3 倍" on a Chinese page (class mode's answer, the worked answer's first
    sentence), never the English "72.3x"; the same formatter (kvviz.i18n.numbers.ratio) that the handout uses."""
    at = _lesson_zh(8, class_mode=True)
    at.button(key="lesson_reveal_btn_8").click().run()
    assert re.fullmatch(r"### 答案：[\d,.]+ 倍", at.success[0].value), at.success[0].value
    assert english_ratios(shown_texts(at)) == []
    at = _lesson_zh(8)
    at.button(key="lesson_show_8").click().run()
    assert re.match(r"正确答案是 \*\*[\d,.]+ 倍\*\*。", at.info[0].value), at.info[0].value
    assert english_ratios(shown_texts(at)) == []


@pytest.mark.model
def test_the_handouts_ratio_in_both_languages(bundled):
    from kvviz.step.engine import StepEngine

    engine = StepEngine(bundled)
    step = lesson.STEPS[7]
    docs = {}
    for code in (i18n.CHINESE, i18n.ENGLISH):
        with i18n.language(code):
            question = step.ask(engine)
            docs[code] = (question.answer_text(), handout.handout_html([step], [question], "GPT-2"))
    (zh_answer, zh_doc), (en_answer, en_doc) = docs[i18n.CHINESE], docs[i18n.ENGLISH]
    assert zh_answer.endswith(" 倍") and en_answer.endswith("x") and zh_answer[:-2] == en_answer[:-1]
    assert f"答案：{zh_answer}" in zh_doc and f"Answer: {en_answer}" in en_doc
    body = re.sub(r"<script.*?</script>", " ", zh_doc, flags=re.S)
    assert english_ratios(re.sub(r"<[^>]+>", "\n", body[body.index("<body>") :]).split("\n")) == []

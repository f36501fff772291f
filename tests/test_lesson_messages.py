"""Words are drawn at the last moment (issue 56): the lesson's questions, the class poll's questions and the eviction
takeaways are computed once, language-free (kvviz.i18n Messages), and drawn in the reader's language.

- The rule itself, read from the source: no `_()`, `gettext()` or `ngettext()` call inside the functions that build
  these records (an AST walk), so no sentence is frozen in the language that happened to compute it.
- One computation, both languages: a question computed once draws in English and in Chinese, its choices judged by
  identity; on the page, switching the language redraws the step's question without running the model again.
- Messages survive the poll store's JSON (plural forms, nested messages, joined lists) and draw alike after it.
- A config.json's reading (what was used, what was missing, the notes) is language-free too: only a refusal, raised
  to the reader who asked, is written in a language.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

import pytest

from kvviz import i18n
from kvviz.i18n import Joined, Message, Nn_
from kvviz.teaching import grading, lesson
from support.repo import REPO

CJK = re.compile(r"[\u4e00-\u9fff]")
TRANSLATING_CALLS = {"_", "gettext", "ngettext"}

# The modules whose records are stored or cached, and the functions there that draw (run when a page shows a
# record, never while one is computed): each named with why it may translate.
RECORD_MODULES = (
    "kvviz/teaching/lesson.py",
    "kvviz/teaching/poll_choices.py",
    "kvviz/poll/question.py",
    "kvviz/internals/eviction_takeaways.py",
)
DRAWING_FUNCTIONS = {
    ("kvviz/teaching/lesson.py", "preset_steps_text"),  # the handout popover's sentence, written when it is drawn
}
# kvviz/poll/store.py: the methods that store and read the polls (its refusals' sentences are drawn by str(), and
# export_csv draws the stored polls in the language it is asked for).
STORE_POLL_METHODS = {
    "_show",
    "open_step",
    "go_to_step",
    "poll_again",
    "next_question",
    "poll",
    "_any_poll",
    "_tally",
    "_polled",
}


def _translating_calls(node: ast.AST) -> list[int]:
    """The lines of every `_(...)`, `gettext(...)` or `ngettext(...)` call under `node` (N_ marks, never translates)."""
    return [
        call.lineno
        for call in ast.walk(node)
        if isinstance(call, ast.Call)
        and (
            (isinstance(call.func, ast.Name) and call.func.id in TRANSLATING_CALLS)
            or (isinstance(call.func, ast.Attribute) and call.func.attr in TRANSLATING_CALLS)
        )
    ]


def _functions(tree: ast.AST):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_no_record_is_translated_while_it_is_computed():
    offenders = []
    for path in RECORD_MODULES:
        tree = ast.parse((REPO / path).read_text())
        drawing = [f for f in _functions(tree) if (path, f.name) in DRAWING_FUNCTIONS]
        allowed = {line for f in drawing for line in _translating_calls(f)}
        offenders += [f"{path}:{line}" for line in _translating_calls(tree) if line not in allowed]
    store = ast.parse((REPO / "kvviz/poll/store.py").read_text())
    offenders += [
        f"kvviz/poll/store.py:{line}"
        for f in _functions(store)
        if f.name in STORE_POLL_METHODS
        for line in _translating_calls(f)
    ]
    assert offenders == [], offenders


# A config.json's reading (kvviz.memory.config_import's ImportedConfig, which presets.py caches per preset): what was
# used, what was missing and the notes. Only a refusal may translate, since it is raised to the reader who asked, never
# kept.
CONFIG_MODULES = ("kvviz/memory/config_import.py", "kvviz/memory/hf_cache.py", "kvviz/memory/serving.py")


def _raised_lines(tree: ast.AST) -> set[int]:
    return {line for n in ast.walk(tree) if isinstance(n, ast.Raise) for line in range(n.lineno, n.end_lineno + 1)}


def test_a_config_reading_is_not_translated_while_it_is_read():
    offenders = []
    for path in CONFIG_MODULES:
        tree = ast.parse((REPO / path).read_text())
        raised = _raised_lines(tree)
        offenders += [f"{path}:{line}" for line in _translating_calls(tree) if line not in raised]
    assert offenders == [], offenders


def test_one_config_reading_draws_in_both_languages():
    """A config read as written (no model_type: no transformers needed) keeps its missing fields and notes as
    messages: the one reading draws in English and in Chinese."""
    from kvviz.memory import config_import

    imported = config_import.parse_hf_config(
        {
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "hidden_size": 64,
            "sliding_window": 16,
            "layer_types": ["sliding_attention", "full_attention"] * 2,
        }
    )
    assert imported.missing and imported.notes
    texts = [*imported.missing, *imported.notes, imported.used["layer_types"]]
    with i18n.language(i18n.CHINESE):
        chinese = [t.shown() for t in texts]
    english = [t.english for t in texts]
    assert all(CJK.search(t) for t in chinese), chinese
    assert not any(CJK.search(t) for t in english) and "model_type absent" in english[0], english


def test_the_rule_catches_a_translated_record(tmp_path):
    """The walk above finds a `_()` in a record's builder (so the rule can fail)."""
    tree = ast.parse('def ask(engine):\n    return Question(_("How many?"), 3, i18n.ngettext("a", "b", 2))\n')
    assert _translating_calls(tree) == [2, 2]
    assert _translating_calls(ast.parse('def ask(engine):\n    return Message.lazy(N_("How many?"))\n')) == []


# ----- one computation, both languages -------------------------------------------------------------------------
def _drawn(question: lesson.Question) -> list[str]:
    """Every text of a question as the page draws it, in the current language."""
    texts = [question.text.shown(), question.arithmetic.shown(), question.hint.shown(), question.answer_text()]
    texts += [c.shown() for c in question.choices] + [why.shown() for _trap, why in question.traps]
    return texts + [p.caption.shown() for p in question.pictures]


@pytest.mark.parametrize("number", [9, 10, 12])  # the steps that compute from published presets: no model
def test_a_question_computed_once_draws_in_both_languages(number):
    question = lesson.STEPS[number - 1].ask(None)
    with i18n.language(i18n.ENGLISH):
        english = _drawn(question)
    with i18n.language(i18n.CHINESE):
        chinese = _drawn(question)
    assert not any(CJK.search(t) for t in english), english
    assert CJK.search(chinese[0]) and CJK.search(chinese[1]) and CJK.search(chinese[2]), chinese
    assert english[3] == chinese[3] or question.unit == "x"  # the answer's number: the same digits
    # the numbers the question carries are the same in both drawings
    assert re.findall(r"\d+(?:[,.]\d+)*", english[0]) == re.findall(r"\d+(?:[,.]\d+)*", chinese[0])


def test_a_choice_is_judged_by_its_identity_in_either_language():
    """The words a student reads differ by language; the choice (its Message) does not."""
    question = replace(
        lesson.Question(Message.verbatim("?"), lesson.NO_Q, Message.verbatim("")),
        choices=(lesson.ALL_QKV, lesson.NO_Q, lesson.ONLY_Q),
        traps=((lesson.ONLY_Q, Message.verbatim("a hint")),),
    )
    assert grading.check(question, lesson.NO_Q) and not grading.check(question, lesson.ALL_QKV)
    for code in i18n.LANGUAGES:
        with i18n.language(code):
            words = lesson.NO_Q.shown()
        assert grading.check(question, words), code  # words typed or stored are matched to the choice they name
    assert grading.hint(question, lesson.ONLY_Q) == Message.verbatim("a hint")
    assert grading.check(question, "Their K and V") is False  # words that name no choice


def test_a_message_keeps_its_plural_nested_texts_and_lists_through_json():
    count = Message.counted(*Nn_("{n} repeat", "{n} repeats"), n=3)
    text = Message.lazy(
        "{a}; {b}", a=Message.counted(*Nn_("{n} repeat", "{n} repeats"), n=1), b=Joined((count, "x"), "items")
    )
    back = Message.from_data(text.to_data())
    assert back == text
    with i18n.language(i18n.ENGLISH):
        assert back.shown() == "1 repeat; 3 repeats, x"
    with i18n.language(i18n.CHINESE):
        assert back.shown() == text.shown() and "、" in back.shown()
    counted_by = Message.counted(*Nn_("{won} format of {n}", "{won} formats of {n}"), by="won", won=1, n=2)
    assert Message.from_data(counted_by.to_data()).english == "1 format of 2"
    with pytest.raises(ValueError):
        Message.from_data({"text": "an older poll's words"})


# ----- the page: one question per step and model, whatever the language -------------------------------------------
@pytest.mark.app
def test_switching_the_language_redraws_the_question_without_running_the_model(fresh_streamlit_caches, monkeypatch):
    """Step 2 runs the real model once in English; switched to Chinese, the page draws the same record (the same
    object in the session) in Chinese, and the step's ask() is not called again."""
    from support.pages import open_page

    asked = []
    step = lesson.STEPS[1]

    def counted_ask(engine):
        asked.append(engine)
        return step.ask(engine)

    steps = list(lesson.STEPS)
    steps[1] = replace(step, ask=counted_ask)
    monkeypatch.setattr(lesson, "STEPS", tuple(steps))
    at = open_page("pages/lesson.py", lang=i18n.ENGLISH, query={"step": "2"}, router=True)
    keys = [k for k in at.session_state if str(k).startswith("lesson_q_")]
    assert len(asked) == 1 and len(keys) == 1
    record = at.session_state[keys[0]]
    english = next(m.value for m in at.markdown if m.value.startswith("**Question.**"))
    at.sidebar.segmented_control(key="app_language").set_value(i18n.CHINESE).run()
    assert not at.exception
    assert len(asked) == 1, "the model ran again for another language"
    assert [k for k in at.session_state if str(k).startswith("lesson_q_")] == keys
    assert at.session_state[keys[0]] is record
    chinese = next(m.value for m in at.markdown if CJK.search(m.value) and record.text.english not in m.value)
    with i18n.language(i18n.CHINESE):
        assert record.text.shown() in " ".join(m.value for m in at.markdown)
    assert record.text.english in english and CJK.search(chinese)

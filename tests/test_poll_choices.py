"""A lesson question as a class poll (kvviz.teaching.poll_choices), on the lesson's real questions: 3 to 5 choices
(a choice question keeps its own, 2 to 5), the right answer exactly once, no two alike, each wrong one explained,
and one order for a room and step whatever the language. Steps 9, 10 and 12 compute from published presets (no
model: the pure tier); the others run the bundled model (the model tier)."""

from __future__ import annotations

import pytest

from kvviz import i18n
from kvviz.poll.question import PollQuestion
from kvviz.teaching import grading, lesson, poll_choices
from kvviz.teaching.poll_choices import choices_for

NO_MODEL_STEPS = (9, 10, 12)  # their ask() never touches the engine
MODEL_STEPS = tuple(n for n in range(1, len(lesson.STEPS) + 1) if n not in NO_MODEL_STEPS)
MEASURED_STEP = 11  # its right answer is a timing: two asks may measure two answers
ROOMS = ("ABC234", "ZZZ999", "7KQ2MX")


def questions_in_every_language(step: int, engine=None) -> dict[str, lesson.Question]:
    out = {}
    for code in i18n.LANGUAGES:
        with i18n.language(code):
            out[code] = lesson.STEPS[step - 1].ask(engine)
    return out


def check_poll(question: lesson.Question, poll: PollQuestion) -> None:
    low = 2 if question.is_choice else poll_choices.MIN_CHOICES
    assert low <= len(poll.choices) <= poll_choices.MAX_CHOICES, poll.choices
    assert len(set(poll.choices)) == len(poll.choices), poll.choices
    assert len(poll.mistakes) == len(poll.choices) and poll.mistakes[poll.right] == ""
    assert all(m for i, m in enumerate(poll.mistakes) if i != poll.right), poll.mistakes
    assert poll.text == question.text
    if question.is_choice:
        assert grading.check(question, poll.choices[poll.right])
        assert [c for c in poll.choices if grading.check(question, c)] == [poll.choices[poll.right]]
        assert set(poll.choices) <= set(question.choices)
    else:
        right = _value(question, poll.choices[poll.right])
        assert grading.check(question, *right), (poll.choices[poll.right], question.answer)
        wrong = [c for i, c in enumerate(poll.choices) if i != poll.right]
        assert not [c for c in wrong if grading.check(question, *_value(question, c))], wrong


def _value(question: lesson.Question, label: str) -> tuple[float, str | None]:
    """A number choice's label read back as the lesson reads an answer: (number, unit)."""
    if question.unit == "bytes":
        number, unit = label.split(" ")
        return float(number.replace(",", "")), unit
    return float(label.replace(",", "").rstrip("x")), None


def check_step(step: int, by_language: dict[str, lesson.Question], across_languages: bool = True) -> None:
    for room in ROOMS:
        polls = {code: choices_for(q, step, room) for code, q in by_language.items()}
        for code, poll in polls.items():
            check_poll(by_language[code], poll)
            assert choices_for(by_language[code], step, room) == poll  # stable across calls
            assert PollQuestion.from_json(poll.to_json()) == poll
        if across_languages:
            english, chinese = polls[i18n.ENGLISH], polls[i18n.CHINESE]
            assert english.same_shape(chinese)
            if not by_language[i18n.ENGLISH].is_choice:  # numbers and units read the same in both languages
                assert english.choices == chinese.choices
            else:  # the same choice at each place: the one at the same index of the question's own choices
                en, zh = by_language[i18n.ENGLISH].choices, by_language[i18n.CHINESE].choices
                assert [en.index(c) for c in english.choices] == [zh.index(c) for c in chinese.choices]


@pytest.mark.parametrize("step", NO_MODEL_STEPS)
def test_polls_of_the_steps_without_a_model(step):
    check_step(step, questions_in_every_language(step))


def test_the_order_depends_on_the_room():
    question = lesson.STEPS[8].ask(None)
    orders = {choices_for(question, 9, f"ROOM{i:02d}").choices for i in range(20)}
    assert len(orders) > 3


def test_the_byte_poll_shows_the_unit_slip_beside_the_right_digits():
    """Step 9's MB/MiB slip: the right number under the other family's unit, explained as the lesson explains it."""
    question = lesson.STEPS[8].ask(None)
    for room in ROOMS:
        poll = choices_for(question, 9, room)
        number, unit = poll.choices[poll.right].split(" ")
        other = unit.replace("iB", "B") if "iB" in unit else unit.replace("B", "iB")
        assert f"{number} {other}" in poll.choices
        assert len(poll.choices) == poll_choices.MAX_CHOICES


def test_made_up_distractors_fill_a_question_with_one_trap():
    """Steps 10 and 12 have one trap each: the poll adds a distractor made from the answer, with its explanation."""
    for step in (10, 12):
        question = lesson.STEPS[step - 1].ask(None)
        assert len(question.traps) == 1
        poll = choices_for(question, step, "ABC234")
        assert len(poll.choices) == poll_choices.MIN_CHOICES
        assert poll_choices.OFF_BY_ONE in poll.mistakes and question.traps[0][1] in poll.mistakes


@pytest.mark.model
def test_polls_of_the_steps_with_the_model(bundled):
    from kvviz.step.engine import StepEngine

    for step in MODEL_STEPS:
        engine = StepEngine(bundled)
        by_language = {}
        for code in i18n.LANGUAGES:
            engine.reset()
            with i18n.language(code):
                by_language[code] = lesson.STEPS[step - 1].ask(engine)
        measured = step == MEASURED_STEP and not grading.same_choice(
            str(by_language[i18n.ENGLISH].answer), str(by_language[i18n.CHINESE].answer)
        )
        check_step(step, by_language, across_languages=not measured)

"""A lesson question as a class poll (kvviz.teaching.poll_choices), on the lesson's real questions: 3 to 5 choices
(a choice question keeps its own, 2 to 5), the right answer exactly once, no two alike, each wrong one explained,
one order for a room and step, and one poll that every language draws: its texts are Messages, computed once and
shown in English and in Chinese from the same record. Steps 9, 10 and 12 compute from published presets (no model:
the pure tier); the others run the bundled model (the model tier)."""

from __future__ import annotations

import re

import pytest

from kvviz import i18n
from kvviz.i18n import Message
from kvviz.poll.question import PollQuestion
from kvviz.teaching import grading, lesson, poll_choices
from kvviz.teaching.poll_choices import choices_for

NO_MODEL_STEPS = (9, 10, 12)  # their ask() never touches the engine
MODEL_STEPS = tuple(n for n in range(1, len(lesson.STEPS) + 1) if n not in NO_MODEL_STEPS)
ROOMS = ("ABC234", "ZZZ999", "7KQ2MX")
CJK = re.compile(r"[\u4e00-\u9fff]")


def check_poll(question: lesson.Question, poll: PollQuestion) -> None:
    low = 2 if question.is_choice else poll_choices.MIN_CHOICES
    assert low <= len(poll.choices) <= poll_choices.MAX_CHOICES, poll.choices
    assert len(set(poll.choices)) == len(poll.choices), poll.choices
    assert len(poll.mistakes) == len(poll.choices) and poll.mistakes[poll.right] is None
    assert all(isinstance(m, Message) for i, m in enumerate(poll.mistakes) if i != poll.right), poll.mistakes
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


def _value(question: lesson.Question, label: Message) -> tuple[float, str | None]:
    """A number choice's label read back as the lesson reads an answer: (number, unit), from its English words."""
    if question.unit == "bytes":
        number, unit = label.english.split(" ")
        return float(number.replace(",", "")), unit
    return float(label.english.replace(",", "").rstrip("x")), None


def check_step(step: int, question: lesson.Question) -> None:
    """The poll of one computed question, in every room: checked, stable, through JSON, and drawn in both languages
    from that one record (the same places, each language's own words)."""
    for room in ROOMS:
        poll = choices_for(question, step, room)
        check_poll(question, poll)
        assert choices_for(question, step, room) == poll  # stable across calls
        stored = PollQuestion.from_json(poll.to_json())
        assert stored == poll
        drawn = {}
        for code in i18n.LANGUAGES:
            with i18n.language(code):
                drawn[code] = (stored.text.shown(), [c.shown() for c in stored.choices])
        english, chinese = drawn[i18n.ENGLISH], drawn[i18n.CHINESE]
        assert not CJK.search(english[0]) and CJK.search(chinese[0]), drawn  # one record, two languages
        assert len(english[1]) == len(chinese[1])
        if question.unit in ("", "bytes") and not question.is_choice:  # numbers and units read the same
            assert english[1] == chinese[1]
        if question.is_choice:  # each choice in its language's words
            assert all(CJK.search(c) for c in chinese[1]) and not any(CJK.search(c) for c in english[1])


@pytest.mark.parametrize("step", NO_MODEL_STEPS)
def test_polls_of_the_steps_without_a_model(step):
    check_step(step, lesson.STEPS[step - 1].ask(None))


def test_the_order_depends_on_the_room():
    question = lesson.STEPS[8].ask(None)
    orders = {choices_for(question, 9, f"ROOM{i:02d}").choices for i in range(20)}
    assert len(orders) > 3


def test_the_byte_poll_shows_the_unit_slip_beside_the_right_digits():
    """Step 9's MB/MiB slip: the right number under the other family's unit, explained as the lesson explains it."""
    question = lesson.STEPS[8].ask(None)
    for room in ROOMS:
        poll = choices_for(question, 9, room)
        number, unit = poll.choices[poll.right].english.split(" ")
        other = unit.replace("iB", "B") if "iB" in unit else unit.replace("B", "iB")
        assert f"{number} {other}" in [c.english for c in poll.choices]
        assert len(poll.choices) == poll_choices.MAX_CHOICES


def test_made_up_distractors_fill_a_question_with_one_trap():
    """Steps 10 and 12 have one trap each: the poll adds a distractor made from the answer, with its explanation."""
    for step in (10, 12):
        question = lesson.STEPS[step - 1].ask(None)
        assert len(question.traps) == 1
        poll = choices_for(question, step, "ABC234")
        assert len(poll.choices) == poll_choices.MIN_CHOICES
        assert Message.lazy(poll_choices.OFF_BY_ONE) in poll.mistakes and question.traps[0][1] in poll.mistakes


@pytest.mark.model
def test_polls_of_the_steps_with_the_model(bundled):
    from kvviz.step.engine import StepEngine

    for step in MODEL_STEPS:
        check_step(step, lesson.STEPS[step - 1].ask(StepEngine(bundled)))

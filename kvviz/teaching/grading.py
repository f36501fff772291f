"""Grading: how an answer to a lesson Question is judged, and which hint a wrong one gets (torch-free, UI-free).

`check(question, given, unit)` is True when `given` is the computed answer: a number within the question's stated
relative tolerance (a byte answer in any of lesson.BYTE_UNITS), or the right choice. A choice is judged by its
identity, the Message the question carries (`choice_of`), never by its words: a page hands over the Message the student
picked; words typed or stored (an English msgid, its Chinese translation) are first matched to the choice they name.
`hint(question, given, unit)` picks the hint for a first wrong answer: the targeted one when `given` is one of the
question's predictable mistakes (its traps), else the question's general hint. Hints are Messages: the page shows them.

The records judged here (Question, BYTE_UNITS) are the lesson's: this module imports kvviz.teaching.lesson, and the
lesson never imports grading (a step computes its question; a page or a poll judges the answers), so there is no cycle.
"""

from __future__ import annotations

from typing import Any

from kvviz import i18n
from kvviz.i18n import Message, _
from kvviz.teaching.lesson import BYTE_UNITS, Question


def _in_base_units(question: Question, given: float, unit: str | None) -> float:
    return float(given) * BYTE_UNITS.get(unit or "B", 1) if question.unit == "bytes" else float(given)


def _close(question: Question, value: float, target: float) -> bool:
    return abs(value - target) <= question.rel_tolerance * abs(target) + 1e-9


def translations(text: str) -> set[str]:
    """`text` and its translation in every language (a msgid and its Chinese form): a link's word in any language."""
    out = {text}
    for code in i18n.LANGUAGES:
        with i18n.language(code):
            out.add(_(text))
    return out


def choice_of(question: Question, given: Any) -> Message | None:
    """The choice of `question` that `given` names: the Message itself, or words that are one of its choices in some
    language (its msgid, its English or Chinese text); None for anything else."""
    if isinstance(given, Message):
        return given if given in question.choices or given == question.answer else None
    if not isinstance(given, str):
        return None
    return next((c for c in question.choices if given in c.in_every_language()), None)


def check(question: Question, given: int | float | str | Message | None, unit: str | None = None) -> bool:
    """True when `given` (in `unit`, for byte answers) is the computed answer, within rel_tolerance. A choice is
    right when it is the answer's Message (choice_of: words in either language name it)."""
    if given is None:
        return False
    if question.is_choice:
        chosen = choice_of(question, given)
        return chosen is not None and chosen == question.answer
    if isinstance(given, (str, Message)):
        return False
    return _close(question, _in_base_units(question, float(given), unit), float(question.answer))


def hint(question: Question, given: int | float | str | Message | None, unit: str | None = None) -> Message | None:
    """The hint for a first wrong answer: the targeted one when `given` is a predictable mistake."""
    chosen = choice_of(question, given) if question.is_choice else None
    for trap, why in question.traps:
        if question.is_choice and chosen is not None and trap == chosen:
            return why
        if not question.is_choice and isinstance(given, (int, float)) and isinstance(trap, (int, float)):
            value = _in_base_units(question, float(given), unit)
            if abs(value - float(trap)) <= max(question.rel_tolerance, 0.005) * abs(float(trap)) + 1e-9:
                return why
    return question.hint

"""Grading: how an answer to a lesson Question is judged, and which hint a wrong one gets (torch-free, UI-free).

`check(question, given, unit)` is True when `given` is the computed answer: a number within the question's stated
relative tolerance (a byte answer in any of lesson.BYTE_UNITS), or a choice in either language (the English msgid or
its translation, `same_choice`). `hint(question, given, unit)` picks the hint for a first wrong answer: the targeted
one when `given` is one of the question's predictable mistakes (its traps), else the question's general hint.

The records judged here (Question, BYTE_UNITS) are the lesson's: this module imports kvviz.teaching.lesson, and the
lesson never imports grading (a step computes its question; a page or a poll judges the answers), so there is no cycle.
"""

from __future__ import annotations

from kvviz import i18n
from kvviz.i18n import _
from kvviz.teaching.lesson import BYTE_UNITS, Question


def _in_base_units(question: Question, given: float, unit: str | None) -> float:
    return float(given) * BYTE_UNITS.get(unit or "B", 1) if question.unit == "bytes" else float(given)


def _close(question: Question, value: float, target: float) -> bool:
    return abs(value - target) <= question.rel_tolerance * abs(target) + 1e-9


def translations(text: str) -> set[str]:
    """`text` and its translation in every language (a msgid and its Chinese form)."""
    out = {text}
    for code in i18n.LANGUAGES:
        with i18n.language(code):
            out.add(_(text))
    return out


def same_choice(given: str, answer: str) -> bool:
    """A choice equals the answer in either language: the English msgid or its translation. (A choice built
    from a template, like a row label, is compared as it is: a Question asks in one language.)"""
    if given == answer:
        return True
    return bool(translations(given) & translations(answer))


def check(question: Question, given: int | float | str | None, unit: str | None = None) -> bool:
    """True when `given` (in `unit`, for byte answers) is the computed answer, within rel_tolerance. A choice
    may be given in either language (its English text or its Chinese translation)."""
    if given is None:
        return False
    if question.is_choice:
        return isinstance(given, str) and same_choice(given, str(question.answer))
    return _close(question, _in_base_units(question, float(given), unit), float(question.answer))


def hint(question: Question, given: int | float | str | None, unit: str | None = None) -> str:
    """The hint for a first wrong answer: the targeted one when `given` is a predictable mistake."""
    for trap, why in question.traps:
        if question.is_choice and isinstance(given, str) and isinstance(trap, str) and same_choice(given, trap):
            return why
        if not question.is_choice and given is not None and not isinstance(trap, str):
            value = _in_base_units(question, float(given), unit)
            if abs(value - float(trap)) <= max(question.rel_tolerance, 0.005) * abs(float(trap)) + 1e-9:
                return why
    return question.hint

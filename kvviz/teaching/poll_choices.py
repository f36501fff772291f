"""A lesson question as a class poll: 3 to 5 labelled choices for a room to vote on (torch-free, UI-free).

`choices_for(question, step, room_code)` turns a lesson.Question into a PollQuestion (kvviz.poll.question): the right
answer among the question's own known mistakes (its traps), each wrong choice carrying the sentence that explains that
mistake, in an order shuffled by a seed made of the room's code and the step number. The poll is language-free, as the
question is: its texts are the question's Messages (a number's label a Message too: "72.7x" is "72.7 倍" in Chinese),
so one poll per step serves every phone in its own language, and no `_()` runs here. The poll stands apart from the
lesson; this module, in the lesson's package, is where a lesson question becomes a poll.

How the choices are made:
- A choice question (Question.choices) votes on its own choices, the lesson's Messages; a wrong one
  is explained by its trap, else by the question's hint. The lesson's choice questions have 2 to 5 choices (step 6
  asks "the same token or a different one": two); past MAX_CHOICES the trapped wrong choices are kept first.
- A number question shows each value as the lesson states its answer (Question.answer_text: "1,024", "72.7x").
  Bytes are shown in one unit family (the right answer's, decimal or binary, drawn by the same seed: "73.73 MB" or
  "70.31 MiB"), except a wrong value whose number reads as the right answer's under the other family's unit: it is
  shown that way ("73.73 MiB"), since that is the slip it stands for.
- Traps that share one explanation are one mistake (the lesson's six MB/MiB, KB/KiB, GB/GiB slips): the poll shows
  it once, preferring the value whose label repeats the right answer's number. A value the lesson would accept
  (grading.check: within the question's tolerance), a negative one, or one whose label another choice already has,
  is left out.
- With fewer than two wrong values left, distractors are made from the answer, in this order, until there are two:
  bytes: the right number under the other unit family, then twice and half the bytes; a whole count: one more, one
  fewer, twice, half; any other number: twice, half. Each has its own explanation (UNIT_SLIP, OFF_BY_ONE,
  FACTOR_OF_TWO). At most MAX_CHOICES - 1 wrong values are kept, in the lesson's order of traps.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

from kvviz.i18n import N_, Message
from kvviz.i18n.numbers import RATIO
from kvviz.memory import units
from kvviz.poll.question import PollQuestion
from kvviz.teaching import grading, lesson

MIN_CHOICES, MAX_CHOICES = 3, 5  # a number question's poll; a choice question keeps its own (2 to MAX_CHOICES)

UNIT_SLIP = N_(
    "The right digits under the wrong unit: MB counts 10^6 bytes, MiB 2^20 bytes (the same for KB/KiB and GB/GiB)."
)
OFF_BY_ONE = N_("Off by one: check where the count starts, and whether a last, partly filled one counts.")
FACTOR_OF_TWO = N_("Off by a factor of two: check what is counted twice, or not at all.")
NO_EXPLANATION = N_("Not this one: compare it with the worked answer.")

_FAMILIES = ("decimal", "binary")  # how a byte value is written: "73.73 MB" or "70.31 MiB"
_UNITS = {"decimal": ("GB", "MB", "KB"), "binary": ("GiB", "MiB", "KiB")}  # lesson.BYTE_UNITS' names, largest first


def seed(step: int, room_code: str) -> str:
    """The shuffle's seed: the room and the step, never the text. A str seed is
    hashed by random.Random with SHA-512: the same order in every process."""
    return f"kvviz-poll:{room_code}:{step}"


def choices_for(question: lesson.Question, step: int, room_code: str = "") -> PollQuestion:
    """The poll of `question` for lesson step `step` in room `room_code`, language-free."""
    rng = random.Random(seed(step, room_code))
    family = rng.choice(_FAMILIES)  # drawn first, whatever the question: the shuffle below then draws alike
    if question.is_choice:
        right, wrong = _choice_options(question)
    else:
        right, wrong = _number_options(question, family)
    options: list[Option] = [(right, None)] + wrong
    order = list(range(len(options)))
    rng.shuffle(order)
    return PollQuestion(
        step, question.text, tuple(options[i][0] for i in order), order.index(0), tuple(options[i][1] for i in order)
    )


Option = tuple[Message, Message | None]  # a choice's label and the mistake it stands for (None: the right one)


def _choice_options(question: lesson.Question) -> tuple[Message, list[Option]]:
    right = grading.choice_of(question, question.answer)
    trapped, plain = [], []
    for choice in dict.fromkeys(question.choices):  # a repeated label would be one choice
        if choice == right:
            continue
        why = next((w for t, w in question.traps if t == choice), None)
        if why:
            trapped.append((choice, why))
        else:
            plain.append((choice, question.hint or Message.lazy(NO_EXPLANATION)))
    return right, (trapped + plain)[: MAX_CHOICES - 1]


def _number_options(question: lesson.Question, family: str) -> tuple[Message, list[Option]]:
    is_bytes = question.unit == "bytes"
    right = _label(question, question.answer, family)
    shown = _number_part(right)

    def label(value: Any) -> Message:
        """A wrong value in the right answer's family, or in the other one where it reads as the unit slip."""
        if is_bytes:
            for other in _FAMILIES:
                text = _label(question, value, other)
                if other != family and _number_part(text) == shown:
                    return text
        return _label(question, value, family)

    def usable(value: Any) -> bool:
        return value >= 0 and not grading.check(question, value, "B" if is_bytes else None)

    wrong: list[Option] = []
    taken = {right}
    groups: dict[Message, list[Any]] = {}  # explanation -> its values, in the lesson's order
    for value, why in question.traps:
        if not isinstance(value, str) and value is not None:
            groups.setdefault(why, []).append(value)
    for why, values in groups.items():
        labels = [label(v) for v in values if usable(v) and label(v) not in taken]
        if labels:
            pick = next((t for t in labels if _number_part(t) == shown), labels[0])
            wrong.append((pick, why))
            taken.add(pick)
    for value, why in _made_up(question, family):
        if len(wrong) >= MIN_CHOICES - 1:
            break
        if usable(value) and label(value) not in taken:
            wrong.append((label(value), Message.lazy(why)))
            taken.add(label(value))
    return right, wrong[: MAX_CHOICES - 1]


def _made_up(question: lesson.Question, family: str) -> list[tuple[Any, str]]:
    """Distractors made from the answer, in the order the module's docstring gives (explanations as msgids)."""
    answer = question.answer
    if question.unit == "bytes":
        other = "binary" if family == "decimal" else "decimal"
        number, unit = _label(question, answer, family).msg.split(" ")
        slip = [(round(float(number.replace(",", "")) * _unit_bytes(other, unit)), UNIT_SLIP)] if unit != "B" else []
        return slip + [(answer * 2, FACTOR_OF_TWO), (answer // 2, FACTOR_OF_TWO)]
    if isinstance(answer, int):
        return [
            (answer + 1, OFF_BY_ONE),
            (answer - 1, OFF_BY_ONE),
            (answer * 2, FACTOR_OF_TWO),
            (answer // 2, FACTOR_OF_TWO),
        ]
    return [(round(answer * 2, 1), FACTOR_OF_TWO), (round(answer / 2, 1), FACTOR_OF_TWO)]


def _unit_bytes(family: str, unit: str) -> int:
    """The size of `unit`'s counterpart in `family` ("MB" -> 2^20 in binary, "MiB" -> 10^6 in decimal)."""
    return lesson.BYTE_UNITS[(units.BINARY_TWIN if family == "binary" else units.DECIMAL_TWIN)[unit]]


def _label(question: lesson.Question, value: Any, family: str) -> Message:
    """A value as the lesson writes its answer, as a Message: a ratio as the reader's language writes one
    (kvviz.i18n.numbers.RATIO: "72.7x", "72.7 倍"), any other number as Question.answer_text does (the same in every
    language); bytes as a student answers them in the lesson, a number and one of its units (lesson.BYTE_UNITS) in
    one family, 4 significant digits."""
    if question.unit == "x":
        return Message.lazy(RATIO, ratio=format(value, "," if isinstance(value, int) else ",.1f"))
    if question.unit != "bytes":
        return Message.verbatim(replace(question, answer=value).answer_text())
    n_bytes = int(value)
    unit = next((u for u in _UNITS[family] if n_bytes >= lesson.BYTE_UNITS[u]), "B")
    number = n_bytes / lesson.BYTE_UNITS[unit]
    return Message.verbatim(f"{number:,.0f} {unit}" if unit == "B" else f"{units.significant(number)} {unit}")


def _number_part(label: Message) -> str:
    """The number a label shows (its digits, before the unit), the same in every language."""
    return str(dict(label.fields).get("ratio", label.msg.split(" ")[0]))

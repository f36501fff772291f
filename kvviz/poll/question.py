"""One step's poll in one language: the record a phone draws and the store keeps (torch-free, UI-free, lesson-free).

kvviz.teaching.poll_choices builds it from a lesson question; the store keeps it as JSON (to_json / from_json), one
per language, and checks with same_shape that the languages agree.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class PollQuestion:
    """One step's poll in one language: what a phone shows and what the reveal explains."""

    step: int  # the lesson's step number (1-based)
    text: str  # the question, in markdown
    choices: tuple[str, ...]  # the labels, in the poll's order
    right: int  # the right choice's index
    mistakes: tuple[str, ...]  # per choice: the mistake it stands for ("" for the right one)

    def is_right(self, choice: int) -> bool:
        return choice == self.right

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> PollQuestion:
        data = json.loads(text)
        return cls(
            int(data["step"]), str(data["text"]), tuple(data["choices"]), int(data["right"]), tuple(data["mistakes"])
        )

    def same_shape(self, other: PollQuestion) -> bool:
        """The same poll in another language: same step, same number of choices, the right one at the same place."""
        return (self.step, len(self.choices), self.right) == (other.step, len(other.choices), other.right)

"""One step's poll: the record the store keeps and every phone draws, in its own language (torch-free, UI-free,
lesson-free).

kvviz.teaching.poll_choices builds it once from a lesson question; it is language-free: its texts are kvviz.i18n
Messages (msgids and the numbers they carry), shown in the reader's language where they are drawn (a phone, the
projector's vote chart and table, the CSV). The store keeps one per step as JSON (to_json / from_json: the Messages'
own data); a JSON this record cannot read (a poll stored per language by an older kvviz) is ValueError.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from kvviz.i18n import Message


@dataclass(frozen=True)
class PollQuestion:
    """One step's poll: what a phone shows and what the reveal explains."""

    step: int  # the lesson's step number (1-based)
    text: Message  # the question, in markdown
    choices: tuple[Message, ...]  # the labels, in the poll's order
    right: int  # the right choice's index
    mistakes: tuple[Message | None, ...]  # per choice: the mistake it stands for (None for the right one)

    def is_right(self, choice: int) -> bool:
        return choice == self.right

    def to_json(self) -> str:
        return json.dumps(
            {
                "step": self.step,
                "text": self.text.to_data(),
                "choices": [c.to_data() for c in self.choices],
                "right": self.right,
                "mistakes": [None if m is None else m.to_data() for m in self.mistakes],
            },
            ensure_ascii=False,
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> PollQuestion:
        """to_json's inverse; ValueError for anything else (an older kvviz's poll in one language's words)."""
        try:
            data = json.loads(text)
            return cls(
                int(data["step"]),
                Message.from_data(data["text"]),
                tuple(Message.from_data(c) for c in data["choices"]),
                int(data["right"]),
                tuple(None if m is None else Message.from_data(m) for m in data["mistakes"]),
            )
        except (TypeError, KeyError, json.JSONDecodeError) as bad:
            raise ValueError(f"not a stored poll: {bad}") from bad

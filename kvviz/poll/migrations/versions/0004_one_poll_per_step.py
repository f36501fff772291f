"""One poll per step, in no language: poll_questions loses its language column.

- poll_questions: one row per (room, step), its poll_json a language-free PollQuestion (kvviz.poll.question: the
  question, choices and mistakes as kvviz.i18n Messages, each phone shows them in its own language). A store from
  before keeps each step's poll as it was written, in one language's words (English where it had English, else the
  first language stored): its texts become verbatim Messages, shown as they were in every language. A row whose JSON
  is not a poll's is dropped (its votes stay; the store reads no choices for it).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# The tables as this migration reads and writes them (frozen here: never the store's live tables).
_old = sa.table(
    "poll_questions",
    sa.column("room", sa.String),
    sa.column("step", sa.Integer),
    sa.column("language", sa.String),
    sa.column("poll_json", sa.Text),
)


def _verbatim(text: object) -> dict:
    """A text as a verbatim Message's data (kvviz.i18n.Message.to_data of Message.verbatim(text))."""
    return {"msg": str(text), "fields": {}, "translate": False}


def _language_free(poll_json: str) -> str | None:
    """An old poll (its texts in one language's words) as a language-free one; None when it is not a poll's JSON."""
    try:
        data = json.loads(poll_json)
        return json.dumps(
            {
                "step": int(data["step"]),
                "text": _verbatim(data["text"]),
                "choices": [_verbatim(c) for c in data["choices"]],
                "right": int(data["right"]),
                "mistakes": [_verbatim(m) if m else None for m in data["mistakes"]],
            },
            ensure_ascii=False,
            sort_keys=True,
        )
    except (ValueError, TypeError, KeyError):
        return None


def upgrade() -> None:
    op.create_table(
        "poll_questions_0004",
        sa.Column("room", sa.String(16), primary_key=True),
        sa.Column("step", sa.Integer, primary_key=True),
        sa.Column("poll_json", sa.Text, nullable=False),
    )
    conn = op.get_bind()
    kept: dict[tuple[str, int], tuple[bool, str]] = {}  # (room, step) -> (English?, the poll's new JSON)
    for row in conn.execute(sa.select(_old).order_by(_old.c.room, _old.c.step, _old.c.language)):
        new = _language_free(row.poll_json)
        key = (row.room, row.step)
        if new is not None and (key not in kept or (row.language == "en" and not kept[key][0])):
            kept[key] = (row.language == "en", new)
    if kept:
        op.bulk_insert(
            sa.table("poll_questions_0004", sa.column("room"), sa.column("step"), sa.column("poll_json")),
            [{"room": room, "step": step, "poll_json": text} for (room, step), (_en, text) in kept.items()],
        )
    op.drop_table("poll_questions")
    op.rename_table("poll_questions_0004", "poll_questions")


def downgrade() -> None:
    op.drop_table("poll_questions")  # a language-free poll is no one language's: an older kvviz asks the step again
    op.create_table(
        "poll_questions",
        sa.Column("room", sa.String(16), primary_key=True),
        sa.Column("step", sa.Integer, primary_key=True),
        sa.Column("language", sa.String(16), primary_key=True),
        sa.Column("poll_json", sa.Text, nullable=False),
    )

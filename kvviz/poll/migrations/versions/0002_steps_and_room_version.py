"""Each step's last round and phase, and a per-room version number.

- poll_steps: one row per (room, step) the room has shown, with that step's last round and its phase, kept when the
  room moves on: a revealed round stays revealed (going back to its step, or an old tab opening it, shows its result
  and never reopens it). A store from before has only the room's current step's state: that row is made from it.
- poll_rooms.version: bumped by every host action (open, lock, reveal, vote again, reset), so a phone can poll one
  integer and redraw only when it changes. Existing rooms start at 0.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("poll_rooms", sa.Column("version", sa.Integer, nullable=False, server_default="0"))
    steps = op.create_table(
        "poll_steps",
        sa.Column("room", sa.String(16), primary_key=True),
        sa.Column("step", sa.Integer, primary_key=True),
        sa.Column("round", sa.Integer, nullable=False),
        sa.Column("phase", sa.String(16), nullable=False),
    )
    rooms = sa.table("poll_rooms", sa.column("code"), sa.column("step"), sa.column("round"), sa.column("phase"))
    op.execute(
        steps.insert().from_select(
            ["room", "step", "round", "phase"],
            sa.select(rooms.c.code, rooms.c.step, rooms.c.round, rooms.c.phase).where(rooms.c.step > 0),
        )
    )


def downgrade() -> None:
    op.drop_table("poll_steps")
    with op.batch_alter_table("poll_rooms") as batch:
        batch.drop_column("version")

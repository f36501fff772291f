"""The phones that drew each step's question: the projector's "Voted N of M" counts them (M).

- poll_views: one row per (room, step, phone's hashed voter token), made when the phone draws that step's question.
  A store from before starts with none: its rooms' current questions count their phones from their next draw.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "poll_views",
        sa.Column("room", sa.String(16), primary_key=True),
        sa.Column("step", sa.Integer, primary_key=True),
        sa.Column("voter_sha256", sa.String(64), primary_key=True),
        sa.Column("seen_s", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("poll_views")

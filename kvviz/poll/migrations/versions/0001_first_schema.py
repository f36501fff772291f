"""The poll store's tables as kvviz wrote them before its schema had versions (metadata.create_all).

A store from then has them already and is taken as at this revision; an empty database gets them here. The tables
are written out in this file, frozen: later revisions change them, never this one.

Revision ID: 0001
Revises: (none)
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

first = sa.MetaData()
sa.Table(
    "poll_rooms",
    first,
    sa.Column("code", sa.String(16), primary_key=True),
    sa.Column("host_key_sha256", sa.String(64), nullable=False),
    sa.Column("created_s", sa.Float, nullable=False),
    sa.Column("active_s", sa.Float, nullable=False),
    sa.Column("step", sa.Integer, nullable=False),
    sa.Column("round", sa.Integer, nullable=False),
    sa.Column("phase", sa.String(16), nullable=False),
    sa.Column("n_choices", sa.Integer, nullable=False),
)
sa.Table(
    "poll_questions",
    first,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("language", sa.String(16), primary_key=True),
    sa.Column("poll_json", sa.Text, nullable=False),
)
sa.Table(
    "poll_votes",
    first,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("round", sa.Integer, primary_key=True),
    sa.Column("voter_sha256", sa.String(64), primary_key=True),
    sa.Column("choice", sa.Integer, nullable=False),
    sa.Column("voted_s", sa.Float, nullable=False),
)
sa.Table(
    "poll_voters",
    first,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("voter_sha256", sa.String(64), primary_key=True),
    sa.Column("minute", sa.Integer, nullable=False),
    sa.Column("votes", sa.Integer, nullable=False),
)
sa.Table(
    "poll_results",
    first,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("right", sa.Boolean, nullable=False),
)
sa.Table(
    "poll_limits",
    first,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("per_address", sa.Integer, nullable=False),
    sa.Column("class_size", sa.Integer, nullable=True),
)
sa.Table(
    "poll_clients",
    first,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("client_sha256", sa.String(64), primary_key=True),
    sa.Column("voter_sha256", sa.String(64), primary_key=True),
)
sa.Table(
    "poll_held",
    first,
    sa.Column("room", sa.String(16), primary_key=True),
    sa.Column("step", sa.Integer, primary_key=True),
    sa.Column("round", sa.Integer, primary_key=True),
    sa.Column("voter_sha256", sa.String(64), primary_key=True),
)
sa.Table(
    "poll_openers",
    first,
    sa.Column("code", sa.String(16), primary_key=True),
    sa.Column("client_sha256", sa.String(64), nullable=False),
    sa.Column("created_s", sa.Float, nullable=False),
)


def upgrade() -> None:
    first.create_all(op.get_bind(), checkfirst=True)  # only the tables missing: a store from then keeps its rows


def downgrade() -> None:
    first.drop_all(op.get_bind())

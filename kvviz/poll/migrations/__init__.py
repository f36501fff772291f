"""The class poll store's schema versions, as Alembic (SQLAlchemy's migration tool) migrations.

kvviz.poll.store runs them when a store opens (`upgrade()` below, on the store's own connection, in one
transaction that one process holds at a time: BEGIN IMMEDIATE on SQLite, an advisory lock on PostgreSQL), so a store
written by any earlier kvviz upgrades in place and no alembic.ini is needed. The revision a store is at is kept in
its table `poll_schema_version` (not Alembic's default name: a school's PostgreSQL database may hold another
application's alembic_version).

- versions/0001_first_schema.py: the tables as kvviz wrote them before the schema had versions (made when missing;
  a store from then already has them and is taken as at 0001).
- versions/0002_steps_and_room_version.py: each step's last round and phase (a revealed round stays revealed after
  the room moves on) and a per-room version number (every host action bumps it: a phone polls one integer).
- versions/0003_views.py: the phones that drew each step's question (the projector's "Voted N of M").
- versions/0004_one_poll_per_step.py: one language-free poll per step (its texts Messages), no language column; an
  older store's polls are kept in the words they were written in.

A new migration: a file versions/NNNN_what.py with `revision = "NNNN"`, `down_revision` the last one's, and
`upgrade()` written with alembic.op against table definitions frozen in the file (never the store's live tables,
which follow the newest schema); then kvviz.poll.store's tables are changed to match.
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa

HERE = Path(__file__).resolve().parent
VERSION_TABLE = "poll_schema_version"
HEAD = "0004"  # the newest revision (tests check the store reaches it)


def upgrade(conn: sa.Connection) -> None:
    """Bring the store on `conn` (inside its transaction; the caller commits) to the newest schema."""
    from alembic import command
    from alembic.config import Config

    config = Config()  # no alembic.ini: the one option Alembic needs is where the migrations are
    config.set_main_option("script_location", str(HERE))
    config.attributes["connection"] = conn
    command.upgrade(config, "head")

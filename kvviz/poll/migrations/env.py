"""Alembic's environment for the poll store: the migrations run on the connection the store hands over
(kvviz.poll.migrations.upgrade), inside the store's transaction, which commits them."""

from __future__ import annotations

from alembic import context

from kvviz.poll.migrations import VERSION_TABLE

context.configure(
    connection=context.config.attributes["connection"], version_table=VERSION_TABLE, transactional_ddl=True
)
with context.begin_transaction():
    context.run_migrations()

"""The class poll: rooms, questions and votes (torch-free, UI-free).

- question.py: PollQuestion, one step's poll in no language (its text, lettered choices, the right one, what each
  wrong one stands for, as kvviz.i18n Messages each phone draws in its own language) and its JSON form, as the store
  keeps it: one per step.
- store.py: the rooms, questions and votes, one SQL path (SQLAlchemy Core) for SQLite and PostgreSQL (KVVIZ_POLL_DB);
  `python -m kvviz.poll.store` checks the setting and upgrades the schema.
- migrations/: the store's schema versions (Alembic), run when a store opens.

The poll knows nothing of the lesson: kvviz.teaching.poll_choices turns a lesson question into a PollQuestion (the
lesson stands on the poll, never the other way; tests/test_layering.py holds it), and kvviz.ui.poll draws it.
"""

"""The poll store's migrations, one file per schema version (Alembic loads them by path; see the package above)."""

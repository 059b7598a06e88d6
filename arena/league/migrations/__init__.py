"""The league's Alembic migrations; run them with ``arena.league._migrations``."""

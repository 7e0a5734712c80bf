"""Alembic migrations of simindex's schema (shipped in the wheel as simindex.migrations)."""

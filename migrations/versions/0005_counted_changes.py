"""The database counts every change of the fingerprint table, whoever makes it.

Up to revision 0004, simindex counted its own write transactions in
simindex_meta's ``changes`` row, and a snapshot of the index (held in
memory, or stored in simindex_snapshot) was trusted while that count stood
still. A writer that is not simindex (a ``sqlite3`` shell, a migration
script, another tool) changed rows without counting, and a stored snapshot
went on answering as if it had not. From this revision, triggers on
simindex_fingerprints count every INSERT, UPDATE and DELETE (and TRUNCATE on
PostgreSQL) in the writer's own transaction (storage/dialects.py,
``count_changes``): on SQLite one per row, on PostgreSQL one per statement,
through a function in the index's schema.

Stamps made before the triggers may hide an uncounted write: the stored
snapshot is emptied (the next holder reads the rows, and stores them
again), and the count moves on, so that no snapshot held elsewhere under an
older count is current any more. On PostgreSQL the generation moves too, as
at revisions 0002 and 0003: a process of an older simindex holding the
index reads its settings again and finds a revision it does not know,
instead of going on unaware of the triggers. Nothing is rewritten: an index
upgrades in place, in a moment.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

from simindex.storage.dialects import COUNT_FUNCTION, COUNT_SQL, COUNT_TRIGGERS, dialect_of

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

EXISTING = "EXISTS (SELECT 1 FROM simindex_meta WHERE name = 'format')"


def upgrade() -> None:
    bind = op.get_bind()
    dialect_of(bind).count_changes(bind)
    op.execute("DELETE FROM simindex_snapshot")
    op.execute(COUNT_SQL)
    if bind.dialect.name != "sqlite":  # (SQLite: the new triggers move the schema cookie)
        op.execute(
            "UPDATE simindex_meta SET value = CAST(CAST(value AS BIGINT) + 1 AS TEXT) "
            "WHERE name = 'generation'"
        )
        op.execute(
            f"INSERT INTO simindex_meta (name, value) SELECT 'generation', '1' WHERE {EXISTING} "
            f"AND NOT EXISTS (SELECT 1 FROM simindex_meta WHERE name = 'generation')"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name in COUNT_TRIGGERS.values():
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    else:
        op.execute(f"DROP TRIGGER IF EXISTS {COUNT_FUNCTION} ON simindex_fingerprints")
        op.execute(f"DROP FUNCTION IF EXISTS {COUNT_FUNCTION}()")

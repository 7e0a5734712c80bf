"""Every write transaction is counted, on every database.

simindex counts its write transactions in simindex_meta's ``changes`` row
(each write's last statement), so that a snapshot held in memory can tell
its owner's writes from anyone else's. On SQLite that was done from the
start (and SQLite's data_version sees any other commit besides); on
PostgreSQL, where nothing like data_version exists, it is done from this
revision on, and only an index at this revision is held in memory there: a
simindex from before it would write without counting, unseen. So the
generation moves on PostgreSQL, as at revision 0002, and a process of an
older simindex holding the index open reads the settings again and finds a
revision it does not know, instead of writing on uncounted. Nothing is
rewritten: an index upgrades in place, in a moment.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

EXISTING = "EXISTS (SELECT 1 FROM simindex_meta WHERE name = 'format')"


def upgrade() -> None:
    if op.get_context().dialect.name != "sqlite":  # SQLite: counted since revision 0001
        op.execute(
            "UPDATE simindex_meta SET value = CAST(CAST(value AS BIGINT) + 1 AS TEXT) "
            "WHERE name = 'generation'"
        )
        op.execute(
            f"INSERT INTO simindex_meta (name, value) SELECT 'generation', '1' WHERE {EXISTING} "
            f"AND NOT EXISTS (SELECT 1 FROM simindex_meta WHERE name = 'generation')"
        )


def downgrade() -> None:
    pass  # the count is harmless to an older simindex, which never reads it there

"""Short texts are found by the keys of their sets, at any distance.

A one-word edit of a six-word text moves its 64-bit fingerprint by about a
sixth of its bits, past any k the block indexes answer. From this revision a
row whose signature keeps a set of at least four units (revision 0006) is
also stored under its set keys (simindex/signature.py: set_keys) in
``simindex_set_keys``, and a short query looks its keys up there
(simindex/storage/short_sets.py). Triggers on the fingerprint table put
every row written with a short set in ``simindex_set_keys_due`` for every
writer, simindex or not; simindex makes their keys at the end of its writes,
and readers take the rows still due as candidates.

The upgrade makes the keys of the rows there are (one pass over the rows
with a short set). A simindex from before this revision refuses an upgraded
index (it does not know the revision); one that holds the index meanwhile
writes through the triggers, so what it writes is due, never missed.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from simindex.storage import schema, short_sets

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    bind = op.get_bind()
    if not sa.inspect(bind).has_table(schema.SET_KEYS_TABLE):
        keys, due = schema.set_key_tables()
        keys.create(bind)
        due.create(bind)
    if not sa.inspect(bind).has_table(schema.FINGERPRINT_TABLE):
        return  # (an empty database: the tables are made when the index is created)
    short_sets.mark_changes(bind)
    short_sets.mark_all(bind)
    short_sets.drain(bind)


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for name in short_sets.TRIGGERS[:3]:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    else:
        for name in short_sets.TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON {schema.FINGERPRINT_TABLE}")
        op.execute("DROP FUNCTION IF EXISTS simindex_set_keys_mark()")
    op.drop_table(schema.SET_KEYS_DUE_TABLE)
    op.drop_table(schema.SET_KEYS_TABLE)

"""A verification signature per document: a nullable column of the fingerprint table.

``signature`` holds the document's 64-byte sketch (simindex.signature),
written with its fingerprint; rows written before this revision (or by
``add_fingerprint``, which has no text) keep NULL there and are matched by
distance alone until the index is rebuilt from its texts. Adding a nullable
column rewrites nothing: an index upgrades in place, in a moment.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


# An existing index (its settings are there: not one being created, whose
# settings are written after the migrations) records the threshold it now
# verifies at, so that it does not follow a later release's default; and the
# generation moves, so that a process of an older simindex holding it open on
# PostgreSQL (where no schema cookie tells it) reads the settings again and
# finds a revision it does not know, instead of writing rows whose old
# signatures it leaves in place.
EXISTING = "EXISTS (SELECT 1 FROM simindex_meta WHERE name = 'format')"


def upgrade() -> None:
    op.add_column("simindex_fingerprints", sa.Column("signature", sa.LargeBinary(), nullable=True))
    for name, value in (("threshold", "0.8"), ("signature", "minhash128x4/1")):
        op.execute(
            f"INSERT INTO simindex_meta (name, value) SELECT '{name}', '{value}' "
            f"WHERE {EXISTING} AND NOT EXISTS "
            f"(SELECT 1 FROM simindex_meta WHERE name = '{name}')"
        )
    if op.get_context().dialect.name != "sqlite":  # SQLite: the schema cookie moves by itself
        op.execute(
            "UPDATE simindex_meta SET value = CAST(CAST(value AS BIGINT) + 1 AS TEXT) "
            "WHERE name = 'generation'"
        )
        op.execute(
            f"INSERT INTO simindex_meta (name, value) SELECT 'generation', '1' WHERE {EXISTING} "
            f"AND NOT EXISTS (SELECT 1 FROM simindex_meta WHERE name = 'generation')"
        )


def downgrade() -> None:
    op.execute("DELETE FROM simindex_meta WHERE name IN ('threshold', 'signature')")
    with op.batch_alter_table("simindex_fingerprints") as batch:
        batch.drop_column("signature")

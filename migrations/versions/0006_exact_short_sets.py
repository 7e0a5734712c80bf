"""Signatures of short texts keep their set of units exactly.

Up to revision 0005 a row's signature was the 64-byte sketch
(``minhash128x4/1``), whose similarity is an estimate: for a text of five to
eight words, one word replaced is a Jaccard of 0.67 to 0.78, under the
default threshold of 0.8, and the estimate's error is as large as the
difference. From this revision a text of at most 15 distinct units also
keeps the 32-bit hashes of its units after the sketch
(``minhash128x4/1+set15``, simindex/signature.py), and two such texts are
compared exactly.

Nothing is rewritten: rows written before keep the sketch alone and are
estimated as before, until the index is rebuilt from its texts. A simindex
from before this revision would misread the longer signatures, so the
settings name the new kind (it refuses an index whose signatures are of
another kind) and the generation moves (a process of an older simindex that
holds the index reads its settings again and refuses it): on PostgreSQL the
stored generation, on SQLite the schema cookie (a table made and dropped).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

EXISTING = "EXISTS (SELECT 1 FROM simindex_meta WHERE name = 'format')"
NAME = "minhash128x4/1+set15"
BEFORE = "minhash128x4/1"


def upgrade() -> None:
    op.execute(
        f"UPDATE simindex_meta SET value = '{NAME}' WHERE name = 'signature' AND value = '{BEFORE}'"
    )
    if op.get_bind().dialect.name == "sqlite":
        op.execute("CREATE TABLE simindex_0006 (x INTEGER)")
        op.execute("DROP TABLE simindex_0006")
    else:
        op.execute(
            "UPDATE simindex_meta SET value = CAST(CAST(value AS BIGINT) + 1 AS TEXT) "
            "WHERE name = 'generation'"
        )
        op.execute(
            f"INSERT INTO simindex_meta (name, value) SELECT 'generation', '1' WHERE {EXISTING} "
            f"AND NOT EXISTS (SELECT 1 FROM simindex_meta WHERE name = 'generation')"
        )


def downgrade() -> None:
    # Rows written since keep their exact sets: an older simindex would
    # misread them. Rebuild from the texts after a downgrade.
    op.execute(
        f"UPDATE simindex_meta SET value = '{BEFORE}' WHERE name = 'signature' AND value = '{NAME}'"
    )

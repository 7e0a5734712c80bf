"""Longer texts of CJK characters say so.

A text of more than 15 distinct units, more than half of them CJK
characters, keeps its sketch and one byte after it
(``minhash128x4/1+set15+order+cjk``, simindex/signature.py), and two such
texts are judged at a lower threshold than the one asked (the same share of
edits counted in characters: signature.characters_threshold). Nothing is
rewritten: a row written before keeps its sketch alone and is judged at the
threshold asked, until the index is rebuilt from its texts. A simindex from
before this revision would refuse the new signatures (65 bytes), so the
settings name the new kind and the generation moves (a process of an older
simindex that holds the index reads its settings again and refuses it): on
PostgreSQL the stored generation, on SQLite the schema cookie.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-06
"""

from __future__ import annotations

from alembic import op

from simindex.storage.migrate import rename_signatures

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

NAME = "minhash128x4/1+set15+order+cjk"
BEFORE = "minhash128x4/1+set15+order"


def upgrade() -> None:
    rename_signatures(op.get_bind(), BEFORE, NAME)


def downgrade() -> None:
    # Rows written since may keep the byte after their sketch: an older
    # simindex would refuse them. Rebuild from the texts after a downgrade.
    rename_signatures(op.get_bind(), NAME, BEFORE, move=False)

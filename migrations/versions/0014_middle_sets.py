"""Texts of 16 to 256 distinct units keep their set of 16-bit unit hashes.

A text of more than 15 and at most 256 distinct units keeps, after its
sketch, the top 16 bits of its units' hashes, sorted, once, and one byte
(3, or 4 where most of its units are CJK characters)
(``minhash128x4/1+set15+order+cjk+set256``, simindex/signature.py); two
such texts are compared by those sets, a Jaccard nearly exact, where the
sketch's estimate spread about 0.05 either side at these lengths. Nothing
is rewritten: a row written before keeps its sketch (and its byte) and is
estimated until the index is rebuilt from its texts. A simindex from before
this revision would refuse the new signatures, so the settings name the new
kind and the generation moves (a process of an older simindex that holds
the index reads its settings again and refuses it).

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-06
"""

from __future__ import annotations

from alembic import op

from simindex.storage.migrate import rename_signatures

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

NAME = "minhash128x4/1+set15+order+cjk+set256"
BEFORE = "minhash128x4/1+set15+order+cjk"


def upgrade() -> None:
    rename_signatures(op.get_bind(), BEFORE, NAME)


def downgrade() -> None:
    # Rows written since may keep a middle set after their sketch: an older
    # simindex would refuse them. Rebuild from the texts after a downgrade.
    rename_signatures(op.get_bind(), NAME, BEFORE, move=False)

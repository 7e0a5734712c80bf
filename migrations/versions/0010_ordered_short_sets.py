"""Short CJK texts keep their units in the text's order.

A text with CJK of at most 15 distinct units keeps its units in the text's
order, followed by one byte (``minhash128x4/1+set15+order``,
simindex/signature.py), so that two texts with the same characters in
another order are not equal. Nothing is rewritten: a row written before
keeps its sorted set and is compared as a set, until the index is rebuilt
from its texts. The set keys stay as they are: a set's keys do not depend
on the order of its units (signature.keys_of_sets), and revision 0009 made
them for the rule of two shared units. A simindex from before this revision
would refuse the ordered signatures, so the settings name the new kind and
the generation moves (a process of an older simindex that holds the index
reads its settings again and refuses it): on PostgreSQL the stored
generation, on SQLite the schema cookie (a table made and dropped).

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-05
"""

from __future__ import annotations

from alembic import op

from simindex.storage.migrate import rename_signatures

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

NAME = "minhash128x4/1+set15+order"
BEFORE = "minhash128x4/1+set15"


def upgrade() -> None:
    rename_signatures(op.get_bind(), BEFORE, NAME)


def downgrade() -> None:
    # Rows written since keep their sets in order: an older simindex would
    # refuse them. Rebuild from the texts after a downgrade.
    rename_signatures(op.get_bind(), NAME, BEFORE, move=False)

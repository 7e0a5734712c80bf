"""Longer texts stored under band keys too.

From this revision a row whose signature keeps no exact set (a text of more
than 15 distinct units) is also stored under ten keys, one for each run of
twelve bins of its sketch (simindex/signature.py: keys_of_bands), in the
table that keeps short texts' set keys; a verified query looks its own up,
and two texts with one band equal are candidates at any fingerprint
distance (signature.meets). The triggers that mark the rows whose keys are
due now mark every row with a signature (they marked short sets only), so
they are made again; on SQLite the key table is made again WITHOUT ROWID
(ten keys a longer text take about a third less); every row's keys are
made (one pass over the rows with a signature: no text needed, the bands
are the stored sketch's). It moves
the generation (SQLite: the schema cookie; PostgreSQL: the stored
generation), so a process of an older simindex holding the index reads its
settings again and refuses it (it would miss the band keys of the rows it
writes); a simindex from before this revision refuses the index.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-05
"""

from __future__ import annotations

from alembic import op

from simindex.storage.migrate import remake_keys

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    remake_keys(op.get_bind(), table=True)


def downgrade() -> None:
    # A simindex of revision 0010 verifies every candidate the band keys
    # give by its own rule (they are never one unit apart), so its answers
    # stay its own; its triggers would mark long rows needlessly.
    pass

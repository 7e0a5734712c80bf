"""Twelve bands of ten bins.

A longer text's band keys (simindex/signature.py: keys_of_bands) are from
this revision twelve runs of ten bins of its sketch, not ten runs of twelve:
a copy at a Jaccard of 0.8 whose fingerprint moved past k has no band equal
20% of the time, where it had 42% (docs/decisions/signature-bands.md). The
keys of every row with a signature are made again from the stored
signatures (no text needed; short texts' set keys come out as they were).
It moves the generation (SQLite: the schema cookie; PostgreSQL: the stored
generation), so a process of an older simindex holding the index reads its
settings again and refuses it (it would write the old bands' keys); a
simindex from before this revision refuses the index.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-06
"""

from __future__ import annotations

from alembic import op

from simindex.storage.migrate import remake_keys

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    remake_keys(op.get_bind())


def downgrade() -> None:
    # A simindex of revision 0012 would look the old bands' keys up and find
    # none of these: its band candidates would be missed (never a wrong
    # answer). Rebuild or `simindex check INDEX --repair` after a downgrade.
    pass

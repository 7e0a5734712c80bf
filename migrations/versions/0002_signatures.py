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


def upgrade() -> None:
    op.add_column("simindex_fingerprints", sa.Column("signature", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("simindex_fingerprints") as batch:
        batch.drop_column("signature")

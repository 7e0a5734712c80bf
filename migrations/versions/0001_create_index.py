"""Create the settings table and the fingerprint table with one column per block.

The number of blocks is chosen when an index is created (k + 1 for an index
made for distance k), so it reaches this migration through
``config.attributes["simindex.n_blocks"]``; Alembic run by hand defaults to 4.

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def _n_blocks() -> int:
    config = op.get_context().config
    n = config.attributes.get("simindex.n_blocks", 4) if config is not None else 4
    return int(n)


def upgrade() -> None:
    n_blocks = _n_blocks()
    op.create_table(
        "simindex_meta",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_simindex_meta"),
    )
    op.create_table(
        "simindex_fingerprints",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("key", sa.Text(), nullable=False),
        sa.Column("fingerprint", sa.BigInteger(), nullable=False),
        *(sa.Column(f"block_{i}", sa.BigInteger(), nullable=False) for i in range(n_blocks)),
        sa.PrimaryKeyConstraint("id", name="pk_simindex_fingerprints"),
        sa.UniqueConstraint("key", name="uq_simindex_fingerprints_key"),
    )
    for i in range(n_blocks):
        op.create_index(
            f"ix_simindex_fingerprints_block_{i}_fingerprint",
            "simindex_fingerprints",
            [f"block_{i}", "fingerprint"],
        )


def downgrade() -> None:
    op.drop_table("simindex_fingerprints")
    op.drop_table("simindex_meta")

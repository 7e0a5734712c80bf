"""Create the settings table and the fingerprint table with one column per block.

The block layout is chosen when an index is created, so it reaches this
migration through ``config.attributes["simindex.layout"]`` as
``{"widths": [...], "tables": [[...], ...]}``; Alembic run by hand gets the
default k = 3 layout (four 16-bit blocks, one index each).

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

DEFAULT_LAYOUT = {"widths": [16, 16, 16, 16], "tables": [[0], [1], [2], [3]]}


def _layout() -> dict[str, Any]:
    config = op.get_context().config
    layout = config.attributes.get("simindex.layout") if config is not None else None
    return layout or DEFAULT_LAYOUT


def upgrade() -> None:
    layout = _layout()
    n_blocks = len(layout["widths"])
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
    for j, table in enumerate(layout["tables"]):
        op.create_index(
            f"ix_simindex_fingerprints_t{j}",
            "simindex_fingerprints",
            [*(f"block_{b}" for b in table), "fingerprint"],
            # PostgreSQL: id in the index too, so lookups are index-only scans
            # (SQLite indexes carry the rowid anyway; its DDL is unchanged).
            postgresql_include=["id"],
        )


def downgrade() -> None:
    op.drop_table("simindex_fingerprints")
    op.drop_table("simindex_meta")

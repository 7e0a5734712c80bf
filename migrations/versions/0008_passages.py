"""Tables for the passages of an index that keeps them (overlaps).

An index created with ``overlaps=True`` (``simindex init --overlaps``) keeps
the winnowed hashes of each document's shingles (simindex/passages.py), so
that ``overlaps`` finds a text inside a stored one or a stored one inside
it. ``simindex_passage_docs`` holds each document's key and how many
hashes it has, ``simindex_passages`` each (hash, document), keyed by the
hash (on SQLite WITHOUT ROWID: the key is the table), and
``simindex_passage_hashes`` each document's hashes in one value, what
replacing or removing it deletes by (half the bytes of an index on the
document). Both stay empty in an index that
does not keep passages; whether one does is its ``passages`` setting, and
whether they are the index's now its ``passages_at`` stamp
(simindex/storage/passages.py).

Nothing is rewritten: an existing index gets the three empty tables and keeps
no passages until it is rebuilt from its texts with them. A simindex from
before this revision would write rows without passages, so it must refuse
the index: it does not know the revision, and the generation moves (a
process of an older simindex that holds the index open reads its settings
again and refuses it): on PostgreSQL the stored generation, on SQLite the
schema cookie (creating the tables moves it).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

EXISTING = "EXISTS (SELECT 1 FROM simindex_meta WHERE name = 'format')"


def upgrade() -> None:
    bind = op.get_bind()
    # 64-bit ids, but SQLite's rowid alias must be declared exactly INTEGER.
    id_type = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    if not sa.inspect(bind).has_table("simindex_passage_docs"):
        op.create_table(
            "simindex_passage_docs",
            sa.Column("doc", id_type, autoincrement=True, nullable=False),
            sa.Column("key", sa.Text(), nullable=False),
            sa.Column("hashes", sa.Integer(), nullable=False),
            sa.PrimaryKeyConstraint("doc", name="pk_simindex_passage_docs"),
            sa.UniqueConstraint("key", name="uq_simindex_passage_docs_key"),
        )
    if not sa.inspect(bind).has_table("simindex_passages"):
        op.create_table(
            "simindex_passages",
            sa.Column("hash", sa.BigInteger(), nullable=False),
            sa.Column("doc", sa.BigInteger(), nullable=False),
            sa.PrimaryKeyConstraint("hash", "doc", name="pk_simindex_passages"),
            sqlite_with_rowid=False,
        )
    if not sa.inspect(bind).has_table("simindex_passage_hashes"):
        op.create_table(
            "simindex_passage_hashes",
            sa.Column("doc", id_type, autoincrement=False, nullable=False),
            sa.Column("kept", sa.LargeBinary(), nullable=False),
            sa.PrimaryKeyConstraint("doc", name="pk_simindex_passage_hashes"),
        )
        if bind.dialect.name == "postgresql":  # (8 bytes a hash: nothing to compress)
            op.execute("ALTER TABLE simindex_passage_hashes ALTER COLUMN kept SET STORAGE EXTERNAL")
    if bind.dialect.name != "sqlite":
        op.execute(
            "UPDATE simindex_meta SET value = CAST(CAST(value AS BIGINT) + 1 AS TEXT) "
            "WHERE name = 'generation'"
        )
        op.execute(
            f"INSERT INTO simindex_meta (name, value) SELECT 'generation', '1' WHERE {EXISTING} "
            f"AND NOT EXISTS (SELECT 1 FROM simindex_meta WHERE name = 'generation')"
        )


def downgrade() -> None:
    op.execute("DELETE FROM simindex_meta WHERE name IN ('passages', 'passages_at')")
    op.drop_table("simindex_passage_hashes")
    op.drop_table("simindex_passages")
    op.drop_table("simindex_passage_docs")

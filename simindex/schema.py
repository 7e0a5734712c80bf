"""The database schema, as SQLAlchemy Core tables.

Alembic (migrations/) creates and changes the schema; this module only
describes the current one for the code that reads and writes it.

- ``simindex_meta``: one row per setting (format version, bits, k, block
  widths, fingerprint configuration, the simindex version that created it).
- ``simindex_fingerprints``: the caller's key (unique), the fingerprint as a
  signed 64-bit integer (see fingerprint.to_signed) and one column per block,
  ``block_0`` .. ``block_k``, each with an index on (block, fingerprint) so a
  block lookup reads its candidates' fingerprints from the index alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import BigInteger, Column, Index, Integer, MetaData, String, Table, Text

META_TABLE = "simindex_meta"
FINGERPRINT_TABLE = "simindex_fingerprints"
VERSION_TABLE = "simindex_alembic_version"

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "pk": "pk_%(table_name)s",
}


# 64-bit row ids, but SQLite's rowid alias must be declared exactly INTEGER.
ID_TYPE = BigInteger().with_variant(Integer, "sqlite")


def block_column(i: int) -> str:
    return f"block_{i}"


@dataclass(frozen=True)
class Schema:
    metadata: MetaData
    meta: Table
    fingerprints: Table


def build(n_blocks: int) -> Schema:
    """The tables of an index whose fingerprints are cut into n_blocks blocks."""
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    meta = Table(
        META_TABLE,
        metadata,
        Column("name", String(64), primary_key=True),
        Column("value", Text, nullable=False),
    )
    fingerprints = Table(
        FINGERPRINT_TABLE,
        metadata,
        Column("id", ID_TYPE, primary_key=True, autoincrement=True),
        Column("key", Text, nullable=False, unique=True),
        Column("fingerprint", BigInteger, nullable=False),
        *(Column(block_column(i), BigInteger, nullable=False) for i in range(n_blocks)),
    )
    for i in range(n_blocks):
        Index(None, fingerprints.c[block_column(i)], fingerprints.c.fingerprint)
    return Schema(metadata, meta, fingerprints)

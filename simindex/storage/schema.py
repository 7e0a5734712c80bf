"""The database schema, as SQLAlchemy Core tables.

Alembic (migrations/) creates and changes the schema; this module only
describes the current one for the code that reads and writes it.

- ``simindex_meta``: one row per setting (format version, bits, k, block
  widths, the block combinations indexed, fingerprint configuration, the
  simindex version that created it); on SQLite also ``changes``, the write
  transactions counted (dialects.py: count_write).
- ``simindex_fingerprints``: the caller's key (unique), the fingerprint as a
  signed 64-bit integer (see fingerprint.to_signed) and one column per block,
  ``block_0`` .. ``block_{m-1}``; one index per table of the layout, named
  ``ix_simindex_fingerprints_t{j}``, on (its blocks..., fingerprint), so a
  lookup reads its candidates' fingerprints from the index alone; and, from
  revision 0002, ``signature``: the document's verification signature
  (simindex.signature: a 64-byte sketch, then a short or middle-length text's
  set; NULL where none was made).
- ``simindex_snapshot`` (from revision 0004): the arrays a snapshot held in
  memory is made of, as the last holder read them (storage/stored.py), in
  parts of bytes: ``header`` (what they are and the generation and write
  count they were read at), then each array's parts in order.
- ``simindex_passage_docs``, ``simindex_passages`` and
  ``simindex_passage_hashes`` (from revision 0008; filled only in an index
  that keeps passages, storage/passages.py): a document's key and how many
  passage hashes it has, each (hash, document) pair, keyed by the hash, and
  each document's hashes in one value, which a replace or a removal deletes
  by.
- ``simindex_set_keys`` (from revision 0007): (set key, row id) of every
  row whose signature keeps a set of at least four units
  (signature.set_keys), so that a short text finds the texts one unit
  apart at any distance; and ``simindex_set_keys_due``: the ids of the rows
  whose keys are still to be made, put there by triggers on the
  fingerprint table for every writer (short_sets.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from sqlalchemy import (
    BigInteger,
    Column,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.schema import CreateIndex

from simindex.blocks import BlockLayout

META_TABLE = "simindex_meta"
SNAPSHOT_TABLE = "simindex_snapshot"
PASSAGE_DOCS_TABLE = "simindex_passage_docs"
PASSAGES_TABLE = "simindex_passages"
PASSAGE_HASHES_TABLE = "simindex_passage_hashes"
FINGERPRINT_TABLE = "simindex_fingerprints"
VERSION_TABLE = "simindex_alembic_version"
SET_KEYS_TABLE = "simindex_set_keys"
SET_KEYS_DUE_TABLE = "simindex_set_keys_due"

# 64-bit row ids, but SQLite's rowid alias must be declared exactly INTEGER.
ID_TYPE = BigInteger().with_variant(Integer, "sqlite")


def block_column(i: int) -> str:
    return f"block_{i}"


def table_index_name(j: int) -> str:
    return f"ix_{FINGERPRINT_TABLE}_t{j}"


# Columns a lookup index carries beside its keys (Index.info), so a lookup on
# PostgreSQL reads the matches' ids from the index alone (SQLite's indexes
# carry the rowid anyway). Not Index(postgresql_include=...): a dialect
# keyword makes SQLAlchemy load that dialect to check it, which cost every
# SQLite user's process about 20 ms of importing PostgreSQL's.
INCLUDE = "simindex_include"  # (a key of simindex's own: the hook is process-wide)


@compiles(CreateIndex, "postgresql")
def _create_index_including(create: CreateIndex, compiler: object, **kw: object) -> str:
    text: str = compiler.visit_create_index(create, **kw)  # type: ignore[attr-defined]
    include = create.element.info.get(INCLUDE, ())
    if include:
        quote = compiler.preparer.quote  # type: ignore[attr-defined]
        text += " INCLUDE (" + ", ".join(quote(name) for name in include) + ")"
    return text


@dataclass(frozen=True)
class Schema:
    metadata: MetaData
    meta: Table
    fingerprints: Table
    lookups: tuple[Index, ...]  # one per table of the layout, in order
    snapshot: Table
    set_keys: Table
    set_keys_due: Table


def set_key_tables(metadata: MetaData | None = None) -> tuple[Table, Table]:
    """The tables of short texts' set keys (revision 0007; short_sets.py)."""
    metadata = MetaData() if metadata is None else metadata
    keys = Table(
        SET_KEYS_TABLE,
        metadata,
        Column("set_key", BigInteger, nullable=False),
        Column("id", BigInteger, nullable=False),
        PrimaryKeyConstraint("set_key", "id", name=f"pk_{SET_KEYS_TABLE}"),
        Index(f"ix_{SET_KEYS_TABLE}_id", "id"),
        # (SQLite: the keys are the table's own B-tree, no rowid beside
        # them: about 390 bytes for a longer text's twelve keys instead of 600)
        sqlite_with_rowid=False,
    )
    due = Table(
        SET_KEYS_DUE_TABLE,
        metadata,
        Column("id", BigInteger, nullable=False),
        PrimaryKeyConstraint("id", name=f"pk_{SET_KEYS_DUE_TABLE}"),
    )
    return keys, due


def constraint_names(table: str) -> tuple[str, str]:
    """The names of a fingerprint table's primary key and unique key."""
    return f"pk_{table}", f"uq_{table}_key"


@cache
def build(
    layout: BlockLayout,
    *,
    name: str = FINGERPRINT_TABLE,
    lookups: bool = True,
    own_constraint_names: bool = False,
) -> Schema:
    """The tables of an index with this block layout: made once a process
    for each set of arguments, so that every index of the layout shares
    them, and with them the statements compiled from them (storage/sql.py
    keys its cache by SQLAlchemy's cache key, which names a table by its
    identity). Nothing changes a table once made.

    ``name`` gives the fingerprint table another name (a rebuild fills a new
    table, then renames it); its constraints keep the names of the real one,
    or with ``own_constraint_names`` get names of their own (PostgreSQL,
    where two tables cannot have constraints of one name).
    ``lookups=False`` leaves out its lookup indexes.
    """
    pk_name, uq_name = constraint_names(name if own_constraint_names else FINGERPRINT_TABLE)
    metadata = MetaData()
    meta = Table(
        META_TABLE,
        metadata,
        Column("name", String(64), primary_key=True),
        Column("value", Text, nullable=False),
        PrimaryKeyConstraint("name", name=f"pk_{META_TABLE}"),
    )
    fingerprints = Table(
        name,
        metadata,
        Column("id", ID_TYPE, autoincrement=True),
        Column("key", Text, nullable=False),
        Column("fingerprint", BigInteger, nullable=False),
        *(Column(block_column(i), BigInteger, nullable=False) for i in range(len(layout.widths))),
        Column("signature", LargeBinary, nullable=True),
        PrimaryKeyConstraint("id", name=pk_name),
        UniqueConstraint("key", name=uq_name),
    )
    snapshot = Table(
        SNAPSHOT_TABLE,
        metadata,
        Column("name", String(64), nullable=False),
        Column("part", Integer, nullable=False),
        Column("data", LargeBinary, nullable=False),
        PrimaryKeyConstraint("name", "part", name=f"pk_{SNAPSHOT_TABLE}"),
    )
    set_keys, set_keys_due = set_key_tables(metadata)
    indexes = tuple(
        Index(
            table_index_name(j),
            *(fingerprints.c[block_column(b)] for b in table),
            fingerprints.c.fingerprint,
            info={INCLUDE: ("id",)},
        )
        for j, table in enumerate(layout.tables)
        if lookups
    )
    build_passages(metadata)  # (described with the rest: the tests compare it with Alembic's)
    return Schema(metadata, meta, fingerprints, indexes, snapshot, set_keys, set_keys_due)


@dataclass(frozen=True)
class PassageTables:
    docs: Table
    passages: Table
    hashes: Table


@cache
def passage_tables() -> PassageTables:
    """build_passages() of a MetaData of their own, once a process (shared
    by every index, as build's tables are)."""
    return build_passages()


def build_passages(metadata: MetaData | None = None) -> PassageTables:
    """The tables of an index's passages (revision 0008): ``docs`` (``doc``,
    an integer id of its own; ``key``, unique; ``hashes``, how many passage
    hashes the document has), ``passages`` (``hash``, ``doc``): the primary
    key (hash, doc) is what a query looks up (SQLite: WITHOUT ROWID, the key
    is the table), and ``hashes`` (``doc``, ``kept``: its hashes, 8 bytes
    each, which a replace or a removal deletes by; apart, so that the rows
    a query reads stay small)."""
    metadata = MetaData() if metadata is None else metadata
    docs = Table(
        PASSAGE_DOCS_TABLE,
        metadata,
        Column("doc", ID_TYPE, autoincrement=True),
        Column("key", Text, nullable=False),
        Column("hashes", Integer, nullable=False),
        PrimaryKeyConstraint("doc", name=f"pk_{PASSAGE_DOCS_TABLE}"),
        UniqueConstraint("key", name=f"uq_{PASSAGE_DOCS_TABLE}_key"),
    )
    passages = Table(
        PASSAGES_TABLE,
        metadata,
        Column("hash", BigInteger, nullable=False),
        Column("doc", BigInteger, nullable=False),
        PrimaryKeyConstraint("hash", "doc", name=f"pk_{PASSAGES_TABLE}"),
        sqlite_with_rowid=False,
    )
    hashes = Table(
        PASSAGE_HASHES_TABLE,
        metadata,
        Column("doc", ID_TYPE, autoincrement=False),
        Column("kept", LargeBinary, nullable=False),
        PrimaryKeyConstraint("doc", name=f"pk_{PASSAGE_HASHES_TABLE}"),
    )
    return PassageTables(docs, passages, hashes)

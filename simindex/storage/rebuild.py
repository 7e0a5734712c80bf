"""Rebuilding an index in one transaction: a staging table for a rebuild's
source, a new fingerprint table laid out anew, and the swap that puts it in
the old one's place (readers see the old index until it commits)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    LargeBinary,
    MetaData,
    Table,
    Text,
    func,
    literal_column,
    select,
)

from simindex.storage import schema, short_sets
from simindex.storage.dialects import GENERATION_SQL, dialect_of
from simindex.storage.migrate import Settings, write_settings

STAGING_TABLE = "simindex_rebuild_staging"  # fingerprints of a rebuild's source
NEXT_TABLE = "simindex_fingerprints_next"  # the new table, until it takes over


def _staging() -> Table:
    return Table(
        STAGING_TABLE,
        MetaData(),
        Column("key", Text, primary_key=True),
        Column("fingerprint", BigInteger, nullable=False),
        Column("signature", LargeBinary, nullable=True),
    )


def start_staging(conn: Connection) -> None:
    conn.exec_driver_sql(f"DROP TABLE IF EXISTS {STAGING_TABLE}")
    _staging().create(conn)


def stage(
    conn: Connection,
    keys: Sequence[str],
    fingerprints: np.ndarray,
    signatures: Sequence[bytes | None] | None = None,
) -> None:
    """Put source fingerprints (and signatures) in the staging table (a later key wins)."""
    table = _staging()
    values = fingerprints.astype(np.uint64, copy=False).view(np.int64).tolist()
    sigs = signatures if signatures is not None else [None] * len(keys)
    statement = dialect_of(conn).insert(table)
    statement = statement.on_conflict_do_update(
        index_elements=[table.c.key],
        set_={
            "fingerprint": statement.excluded.fingerprint,
            "signature": statement.excluded.signature,
        },
    )
    conn.execute(
        statement,
        [
            {"key": k, "fingerprint": v, "signature": g}
            for k, v, g in zip(keys, values, sigs, strict=True)
        ],
    )


def swap_in(conn: Connection, settings: Settings, *, from_staging: bool) -> int:
    """Fill a new fingerprint table laid out as `settings` says, from the staging
    table or from the current table, and put it in the current one's place, with
    the new settings: all in the caller's transaction. Returns the rows."""
    layout = settings.layout
    dialect = dialect_of(conn)
    # A rebuild shows in SQLite's schema cookie by itself; elsewhere it counts
    # up a generation row in simindex_meta.
    generation = None
    if not dialect.schema_cookie:
        generation = int(conn.exec_driver_sql(GENERATION_SQL).scalar_one())
    new = schema.build(
        layout, name=NEXT_TABLE, lookups=False, own_constraint_names=dialect.renames_constraints
    ).fingerprints
    conn.exec_driver_sql(f"DROP TABLE IF EXISTS {NEXT_TABLE}")
    new.create(conn)
    source = _staging() if from_staging else schema.build(layout).fingerprints
    fp = source.c.fingerprint
    blocks = [
        fp if mask >> 63 else fp.op(">>")(literal_column(str(shift))).op("&")(mask)
        for shift, mask in layout.spans()
    ]
    columns = [
        "key",
        "fingerprint",
        *(schema.block_column(i) for i in range(len(blocks))),
        "signature",
    ]
    query = select(source.c.key, fp, *blocks, source.c.signature)
    if not from_staging:  # keep each row's id, so "first added" survives a re-layout
        columns.insert(0, "id")
        query = select(source.c.id, source.c.key, fp, *blocks, source.c.signature)
    conn.execute(new.insert().from_select(columns, query))
    conn.exec_driver_sql(f"DROP TABLE {schema.FINGERPRINT_TABLE}")
    conn.exec_driver_sql(f"ALTER TABLE {NEXT_TABLE} RENAME TO {schema.FINGERPRINT_TABLE}")
    dialect.took_over(conn, NEXT_TABLE, schema.FINGERPRINT_TABLE)
    dialect.count_changes(conn)  # (the old table's triggers went with it)
    short_sets.mark_changes(conn)
    short_sets.mark_all(conn)  # (ids and signatures may be new: every key made again)
    for index in schema.build(layout).lookups:
        index.create(conn)
    if from_staging:
        conn.exec_driver_sql(f"DROP TABLE {STAGING_TABLE}")
    write_settings(conn, settings)
    if generation is not None:
        meta = schema.build(layout).meta
        conn.execute(meta.insert(), [{"name": "generation", "value": str(generation + 1)}])
    dialect.analyze(conn)
    short_sets.drain(conn)
    final = schema.build(layout).fingerprints
    return int(conn.execute(select(func.count()).select_from(final)).scalar_one())

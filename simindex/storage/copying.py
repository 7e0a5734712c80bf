"""The fingerprint table's bulk paths through COPY (the Store inherits them):
rows loaded into a temporary table and moved in with one INSERT ... SELECT,
and a batch of queries joined with the index on the server. PostgreSQL's
(``caps.bulk_copy``, ``caps.server_join``), through psycopg's COPY."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Connection

from simindex.storage import schema
from simindex.storage.sql import block_rows

if TYPE_CHECKING:
    from simindex.blocks import BlockLayout
    from simindex.storage.dialects import Capabilities


class Copying:
    """COPY-based loads and the server's join of a batch (a part of Store)."""

    layout: BlockLayout
    signed: bool
    caps: Capabilities

    def _temp_table(self, conn: Connection, name: str, columns: list[str]) -> None:
        """An empty temporary table of BIGINT columns (key TEXT, signature BYTEA)
        for this transaction (PostgreSQL)."""
        kinds = {"key": "TEXT", "signature": "BYTEA"}
        types = ", ".join(f"{c} {kinds.get(c, 'BIGINT')}" for c in columns)
        conn.exec_driver_sql(
            f"CREATE TEMPORARY TABLE IF NOT EXISTS {name} ({types}) ON COMMIT DROP"
        )
        conn.exec_driver_sql(f"TRUNCATE {name}")

    def _copy(self, conn: Connection, name: str, columns: list[str], rows: Iterable[Any]) -> None:
        """COPY rows into a table (PostgreSQL, through psycopg)."""
        dbapi: Any = conn.connection.dbapi_connection  # a psycopg connection
        cursor = dbapi.cursor()
        try:
            with cursor.copy(f"COPY {name} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        finally:
            cursor.close()

    def _put_by_copy(self, conn: Connection, rows: list[tuple[Any, ...]], *, keep: bool) -> int:
        """PostgreSQL: COPY the rows into a temporary table, then one INSERT ...
        SELECT moves them in (per key, the first row with keep, else the last),
        in the order they came, so row ids keep "first added" meaningful."""
        blocks = [schema.block_column(i) for i in range(len(self.layout.widths))]
        columns = ["key", "fingerprint", *blocks, "signature"]
        load = f"simindex_load_{len(blocks)}_s"
        self._temp_table(conn, load, ["seq", *columns])
        self._copy(conn, load, ["seq", *columns], ((i, *r) for i, r in enumerate(rows)))
        listed = ", ".join(columns)
        pick = "ASC" if keep else "DESC"
        on_conflict = (
            "DO NOTHING"
            if keep
            else "DO UPDATE SET " + ", ".join(f"{c} = EXCLUDED.{c}" for c in columns if c != "key")
        )
        picked = load
        if len({r[0] for r in rows}) < len(rows):  # a key twice: keep one row of it
            picked = f"(SELECT DISTINCT ON (key) * FROM {load} ORDER BY key, seq {pick}) AS picked"
        done = conn.exec_driver_sql(
            f"INSERT INTO {schema.FINGERPRINT_TABLE} ({listed}) "
            f"SELECT {listed} FROM {picked} ORDER BY seq ON CONFLICT (key) {on_conflict}"
        )
        return max(0, done.rowcount) if keep else len(rows)

    def join_lookup(self, conn: Connection, fingerprints: Sequence[int], k: int) -> list[Any]:
        """PostgreSQL: every (query number, id, key, signed fingerprint, signature)
        within k of a batch of queries, found by the server in one join of the
        queries (COPYed into a temporary table) with the fingerprints, one
        equality join per table of the layout. k must be at most the layout's."""
        blocks = [schema.block_column(i) for i in range(len(self.layout.widths))]
        name = f"simindex_queries_{len(blocks)}"
        self._temp_table(conn, name, ["qid", "fingerprint", *blocks])
        rows = block_rows(
            [str(i) for i in range(len(fingerprints))],
            np.array(fingerprints, dtype=np.uint64),
            self.layout,
        )
        self._copy(conn, name, ["qid", "fingerprint", *blocks], rows)
        conn.exec_driver_sql(f"ANALYZE {name}")
        xor = "(q.fingerprint # f.fingerprint)::bit(64)"
        # bit_count(bit) came with PostgreSQL 14; before it, count the 1s in the text.
        distance = (
            f"bit_count({xor})"
            if self.caps.server_bit_count
            else f"length(replace({xor}::text, '0', ''))"
        )
        parts = []
        for table in self.layout.tables:
            on = " AND ".join(f"f.{blocks[b]} = q.{blocks[b]}" for b in table)
            parts.append(
                f"SELECT q.qid, f.id, f.key, f.fingerprint, "
                f"{'f.signature' if self.signed else 'NULL::bytea'} "
                f"FROM {name} q JOIN {schema.FINGERPRINT_TABLE} f ON {on} "
                f"WHERE {distance} <= {int(k)}"
            )
        return list(conn.exec_driver_sql(" UNION ".join(parts)).all())

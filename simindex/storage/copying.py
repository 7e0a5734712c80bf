"""The fingerprint table's bulk paths through COPY (``Store.copying``):
rows loaded into a temporary table and moved in with one INSERT ... SELECT,
and a batch of queries joined with the index on the server. PostgreSQL's
(``caps.bulk_copy``, ``caps.server_join``), through psycopg's COPY."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Connection
from sqlalchemy.exc import IntegrityError

from simindex.storage import schema
from simindex.storage.sql import Chunk, block_rows

if TYPE_CHECKING:
    from simindex.blocks import BlockLayout
    from simindex.storage.dialects import Capabilities


class Copying:
    """COPY-based loads and the server's join of a batch (``Store.copying``)."""

    def __init__(self, layout: BlockLayout, caps: Capabilities) -> None:
        self.layout = layout
        self.caps = caps

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

    def put(self, conn: Connection, rows: list[tuple[Any, ...]], *, keep: bool) -> int:
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
        if len({r[0] for r in rows}) < len(rows):  # a key twice: keep one row of it,
            # at the place of its first (as the rows go in one by one elsewhere)
            picked = (
                f"(SELECT DISTINCT ON (key) {listed}, min(seq) OVER (PARTITION BY key) AS seq "
                f"FROM {load} ORDER BY key, {load}.seq {pick}) AS picked"  # the row's own seq
            )
        done = conn.exec_driver_sql(
            f"INSERT INTO {schema.FINGERPRINT_TABLE} ({listed}) "
            f"SELECT {listed} FROM {picked} ORDER BY seq ON CONFLICT (key) {on_conflict}"
        )
        return max(0, done.rowcount) if keep else len(rows)

    # --- a first load straight into the table (PostgreSQL) -----------------------

    def _key_constraint(self, conn: Connection) -> str:
        """The name of the fingerprint table's unique key (a rebuild may have
        given it its own)."""
        return str(
            conn.exec_driver_sql(
                "SELECT conname FROM pg_constraint WHERE contype = 'u' "
                f"AND conrelid = '{schema.FINGERPRINT_TABLE}'::regclass"
            ).scalar_one()
        )

    def begin_fresh_load(self, conn: Connection) -> str:
        """PostgreSQL, the table empty: set its unique key aside, for rows
        COPYed straight in (copy_rows) until end_fresh_load. Returns the
        key's name."""
        name = self._key_constraint(conn)
        conn.exec_driver_sql(f"ALTER TABLE {schema.FINGERPRINT_TABLE} DROP CONSTRAINT {name}")
        return name

    def copy_rows(self, conn: Connection, chunks: Iterable[Chunk]) -> int:
        """COPY the chunks' rows straight into the fingerprint table, in one
        COPY (the server reads a chunk while the next one is made), between
        begin_fresh_load and end_fresh_load; ids follow their order. Returns
        the rows."""
        blocks = [schema.block_column(i) for i in range(len(self.layout.widths))]
        columns = ["key", "fingerprint", *blocks, "signature"]
        count = 0

        def rows() -> Iterator[tuple[Any, ...]]:
            nonlocal count
            for keys, fps, sigs in chunks:
                yield from block_rows(keys, fps, self.layout, sigs or [None] * len(keys))
                count += len(keys)

        self._copy(conn, schema.FINGERPRINT_TABLE, columns, rows())
        return count

    def end_fresh_load(self, conn: Connection, name: str, *, keep: bool) -> int:
        """Put the unique key back. Where a key came more than once, one row
        stays, as the usual path leaves it: the first row's id, with the first
        row's values (keep) or the last one's. Returns the rows removed."""
        table = schema.FINGERPRINT_TABLE
        add = f"ALTER TABLE {table} ADD CONSTRAINT {name} UNIQUE (key)"
        try:
            with conn.begin_nested():  # a key twice: the constraint fails, nothing else is undone
                conn.exec_driver_sql(add)
            return 0
        except IntegrityError:
            pass
        blocks = [schema.block_column(i) for i in range(len(self.layout.widths))]
        values = ["fingerprint", *blocks, "signature"]
        twice = f"SELECT key, min(id) AS first FROM {table} GROUP BY key HAVING count(*) > 1"
        if not keep:
            listed = ", ".join(values)
            conn.exec_driver_sql(
                f"UPDATE {table} AS t SET ({listed}) = "
                f"(SELECT {', '.join('last.' + c for c in values)}) "
                f"FROM (SELECT DISTINCT ON (key) key, {listed} FROM {table} "
                f"ORDER BY key, id DESC) AS last, ({twice}) AS d "
                "WHERE t.id = d.first AND last.key = d.key"
            )
        removed = conn.exec_driver_sql(
            f"DELETE FROM {table} AS t USING ({twice}) AS d WHERE t.key = d.key AND t.id <> d.first"
        ).rowcount
        conn.exec_driver_sql(add)
        return max(0, removed)

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
                f"SELECT q.qid, f.id, f.key, f.fingerprint, f.signature "
                f"FROM {name} q JOIN {schema.FINGERPRINT_TABLE} f ON {on} "
                f"WHERE {distance} <= {int(k)}"
            )
        return list(conn.exec_driver_sql(" UNION ".join(parts)).all())

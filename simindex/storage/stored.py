"""The stored snapshot: the arrays of the last snapshot read, kept in the
index (the table ``simindex_snapshot``, revision 0004; the Store inherits this).

Reading a snapshot from the rows costs about 0.6 s a million fingerprints on
SQLite, nearly all of it the driver making a Python row of each; the same
arrays stored as a few large parts of bytes read in a few tens of
milliseconds. A process that has read the rows stores what it read with the
generation (schema cookie) and write count it read them at; the next one
reads those arrays instead while both are still the index's.

It is exact because every simindex write transaction is counted (revision
0003) and the count only grows: arrays stamped with the count of now were
read after the last write, and no write has been counted since. A read that
was not one snapshot (PostgreSQL's READ COMMITTED) read the count first, so
a write between shows as a larger count than the stamp, which then never
matches again. Storing is a courtesy to the next reader: it never waits
for the write lock (another writer holds it: nothing is stored) and it is not
counted (it changes no row of the index), and any failure leaves the table
as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Connection, bindparam, select

from simindex.errors import StorageError
from simindex.storage import schema
from simindex.storage.sql import Sql

if TYPE_CHECKING:
    from simindex.storage.backend import Backend

FORMAT = 1  # of the header; another is not read
PART_BYTES = 1 << 25  # an array is stored in parts of at most 32 MB (bounds a statement)
HEADER = "header"
# Smaller snapshots are not stored: their rows read in a few milliseconds.
STORE_MIN_ROWS = 20_000

# (ids, unsigned fingerprints, signatures as (words, present) or None, and
# per k the single-query tables' order, snapshot.Snapshot.order)
Arrays = tuple[
    np.ndarray, np.ndarray, "tuple[np.ndarray, np.ndarray] | None", dict[int, np.ndarray]
]
ORDER = "order_k"  # an order array's name: ORDER and its k


def _named(
    ids: np.ndarray, fps: np.ndarray, signatures: Any, orders: dict[int, np.ndarray]
) -> dict[str, np.ndarray]:
    arrays = {"ids": ids.astype("<i8", copy=False), "fps": fps.astype("<u8", copy=False)}
    if signatures is not None:
        words, present = signatures
        arrays["words"] = words.astype("<u8", copy=False)
        arrays["present"] = present.astype(np.bool_, copy=False)
    for k, order in orders.items():
        arrays[f"{ORDER}{k}"] = order.astype(order.dtype.newbyteorder("<"), copy=False)
    return arrays


def _parts(array: np.ndarray) -> Iterator[bytes]:
    data = np.ascontiguousarray(array).view(np.uint8).reshape(-1)
    for start in range(0, max(len(data), 1), PART_BYTES):
        yield data[start : start + PART_BYTES].tobytes()


class Stored:
    """The stored snapshot (a part of Store)."""

    backend: Backend
    tables: schema.Schema
    stores: bool  # the index has the table (revision 0004)

    @cached_property
    def _stored_sql(self) -> tuple[Sql, Sql]:
        t = self.tables.snapshot
        dialect = self.backend.engine.dialect
        header = Sql(select(t.c.data).where(t.c.name == bindparam("n")), dialect, ["n"])
        others = select(t.c.name, t.c.data).where(t.c.name != bindparam("n"))
        parts = Sql(others.order_by(t.c.name, t.c.part), dialect, ["n"])
        return header, parts

    def stored_header(self, conn: Connection) -> dict[str, Any] | None:
        """The stored snapshot's header, read in the caller's transaction, or
        None (no table, nothing stored, or a format this simindex does not read)."""
        if not self.stores:
            return None
        header, _ = self._stored_sql
        row = conn.exec_driver_sql(header.text, header.params([HEADER])).first()
        if row is None:
            return None
        try:
            found = json.loads(bytes(row[0]))
        except ValueError:
            return None
        return found if isinstance(found, dict) and found.get("format") == FORMAT else None

    def stored_current(self) -> bool:
        """Whether the stored snapshot is the index's now (one read)."""
        if not self.stores:
            return False
        with self.backend.reading() as conn:
            header = self.stored_header(conn)
            if header is None:
                return False
            now = (self.backend.schema_version(conn), self.backend.writes_counted(conn))
        return (header.get("generation"), header.get("writes")) == now

    def load_stored(self, conn: Connection, generation: int, writes: int | None) -> Arrays | None:
        """The arrays stored, if they were read at this generation and write
        count (the caller read both in this transaction); else None."""
        if writes is None:
            return None
        header = self.stored_header(conn)
        if header is None or (header.get("generation"), header.get("writes")) != (
            generation,
            writes,
        ):
            return None
        _, parts = self._stored_sql
        dbapi = conn.connection.dbapi_connection
        assert dbapi is not None  # an open connection inside a transaction
        cursor = dbapi.cursor()
        chunks: dict[str, list[Any]] = {}
        try:
            cursor.execute(parts.text, parts.params([HEADER]))
            while rows := cursor.fetchmany(16):
                for name, data in rows:
                    chunks.setdefault(name, []).append(data)
        finally:
            cursor.close()
        arrays: dict[str, np.ndarray] = {}
        for name, (dtype, shape) in header.get("arrays", {}).items():
            data = bytearray().join(chunks.get(name, []))  # (writable, like a read's arrays)
            wanted = int(np.prod(shape)) * np.dtype(dtype).itemsize
            if len(data) != wanted:
                return None  # (a damaged table: read the rows instead)
            arrays[name] = np.frombuffer(data, dtype=dtype).reshape(shape)
        if "ids" not in arrays or "fps" not in arrays or len(arrays["ids"]) != header.get("rows"):
            return None
        signatures = None
        if "words" in arrays and "present" in arrays:
            signatures = (arrays["words"], arrays["present"])
        orders = {
            int(name[len(ORDER) :]): array
            for name, array in arrays.items()
            if name.startswith(ORDER) and name[len(ORDER) :].isdigit()
        }
        return arrays["ids"], arrays["fps"], signatures, orders

    def would_store(self, rows: int) -> bool:
        """Whether a snapshot of this many rows is stored (store_snapshot)."""
        return self.stores and not self.backend.readonly and rows >= STORE_MIN_ROWS

    def store_snapshot(
        self,
        ids: np.ndarray,
        fps: np.ndarray,
        signatures: tuple[np.ndarray, np.ndarray] | None,
        generation: int,
        writes: int,
        orders: dict[int, np.ndarray] | None = None,
    ) -> bool:
        """Store the arrays of a snapshot read at this generation and write
        count (and its tables' orders, per k), in place of what was stored,
        if both are still the index's and the write lock is free at once;
        True if stored. Never raises for what the database refuses
        (read-only, locked, full): nothing is stored."""
        if not self.would_store(len(ids)):
            return False
        arrays = _named(ids, fps, signatures, orders or {})
        header = {
            "format": FORMAT,
            "generation": generation,
            "writes": writes,
            "rows": len(ids),
            "arrays": {name: [a.dtype.str, list(a.shape)] for name, a in arrays.items()},
        }
        t = self.tables.snapshot
        try:
            with self.backend.writing(wait=0.0) as conn:
                now = (self.backend.schema_version(conn), self.backend.writes_counted(conn))
                if now != (generation, writes):
                    return False  # written meanwhile: what was read is not the index now
                conn.execute(t.delete())
                rows = [{"name": HEADER, "part": 0, "data": json.dumps(header).encode()}]
                conn.execute(t.insert(), rows)
                for name, array in arrays.items():
                    for part, data in enumerate(_parts(array)):
                        conn.execute(t.insert(), [{"name": name, "part": part, "data": data}])
        except StorageError:
            return False
        return True

    def drop_stored(self, conn: Connection) -> None:
        """Empty the table (inside the caller's write transaction)."""
        if self.stores:
            conn.execute(self.tables.snapshot.delete())

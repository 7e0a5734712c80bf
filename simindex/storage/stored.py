"""The stored snapshot: the arrays of the last snapshot read, kept in the
index (the table ``simindex_snapshot``, revision 0004; a Store holds one: ``Store.snapshots``).

Reading a snapshot from the rows costs about 0.6 s a million fingerprints on
SQLite, nearly all of it the driver making a Python row of each; the same
arrays stored as a few large parts of bytes read in a few tens of
milliseconds. A process that has read the rows stores what it read with the
versions (generation and changes counted: backend.Versions) it read them
at; the next one reads those arrays instead while both are still the
index's.

It is exact because the database itself counts every change of the
fingerprint table, whoever makes it (revision 0005's triggers: a plain
``sqlite3`` or ``psql`` session is counted as simindex is), and the count
only grows: arrays stamped with the count of now were read after the last
change. A read that was not one snapshot (PostgreSQL's READ COMMITTED) read
the count first, so a write between shows as a larger count than the
stamp, which then never matches again. Stamps written before revision 0005
are not trusted: its upgrade empties the table. Storing is a courtesy to
the next reader: it never waits for the write lock (another writer holds
it: nothing is stored), it changes no row of the index (nothing is
counted), and any failure leaves the table as it was.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import xxhash
from sqlalchemy import Connection, bindparam, select
from sqlalchemy.exc import SQLAlchemyError

from simindex.errors import StorageError
from simindex.signature import MAP_WORDS, WORDS, Sketches
from simindex.storage import schema
from simindex.storage.sql import Sql

if TYPE_CHECKING:
    from simindex.storage.backend import Backend, Versions

FORMAT = 2  # of the header; another is not read (1: no digests)
PART_BYTES = 1 << 25  # an array is stored in parts of at most 32 MB (bounds a statement)
HEADER = "header"
# Smaller snapshots are not stored: their rows read in a few milliseconds.
STORE_MIN_ROWS = 20_000

# Per k, the single-query tables' order and the (shift, span) of the
# blocks it sorts (snapshot.Snapshot.order).
Spans = tuple[tuple[int, int], ...]
Orders = dict[int, tuple[Spans, np.ndarray]]
# (ids, unsigned fingerprints, signatures as words or None, orders)
Arrays = tuple[np.ndarray, np.ndarray, "Sketches | None", Orders]
_SKETCHES = ("words", "present", "characters", "middle", "maps")  # a snapshot has all or none
ORDER = "order_k"  # an order array's name: ORDER and its k


def _digest(data: Any) -> str:
    """An array's bytes' xxh3 digest (a damaged part is never read as data)."""
    return xxhash.xxh3_64_hexdigest(data)


def _named(
    ids: np.ndarray, fps: np.ndarray, signatures: Sketches | None, orders: Orders
) -> dict[str, np.ndarray]:
    arrays = {"ids": ids.astype("<i8", copy=False), "fps": fps.astype("<u8", copy=False)}
    if signatures is not None:
        arrays["words"] = signatures.words.astype("<u8", copy=False)
        arrays["present"] = signatures.present.astype(np.bool_, copy=False)
        arrays["characters"] = signatures.characters.astype(np.bool_, copy=False)
        arrays["middle"] = signatures.middle.astype(np.bool_, copy=False)
        arrays["maps"] = signatures.maps.astype("<u8", copy=False)
    for k, (_, order) in orders.items():
        arrays[f"{ORDER}{k}"] = order.astype(order.dtype.newbyteorder("<"), copy=False)
    return arrays


def _parts(array: np.ndarray) -> Iterator[bytes]:
    data = np.ascontiguousarray(array).view(np.uint8).reshape(-1)
    for start in range(0, max(len(data), 1), PART_BYTES):
        yield data[start : start + PART_BYTES].tobytes()


Shape = tuple[np.dtype, tuple[int, ...], int, str]  # dtype, shape, bytes, digest


def _shapes(header: dict[str, Any]) -> dict[str, Shape] | None:
    """Each array the header names: (dtype, shape, bytes, digest), or None if
    the header does not hold together (what a snapshot needs missing, an
    array of another length than the rows or of a kind it cannot be)."""
    try:
        rows = int(header["rows"])
        shapes = {}
        for name, (dtype, shape, digest) in header["arrays"].items():
            kind, dims = np.dtype(dtype), tuple(int(d) for d in shape)
            size = int(np.prod(dims, dtype=np.int64)) * kind.itemsize
            shapes[str(name)] = (kind, dims, size, str(digest))
    except (AttributeError, KeyError, TypeError, ValueError):
        return None
    wanted = {"ids": "i", "fps": "u", "words": "u", "maps": "u"}
    wanted |= dict.fromkeys(("present", "characters", "middle"), "b")
    widths = {"words": WORDS, "maps": MAP_WORDS}  # (64-bit words a row)
    for name, (kind, dims, _, _) in shapes.items():
        expected = "iu" if name.startswith(ORDER) else wanted.get(name)
        if expected is None or kind.kind not in expected or not dims:
            return None
        if name.startswith(ORDER):
            if not name[len(ORDER) :].isdigit() or len(dims) != 1 or dims[0] % max(rows, 1):
                return None
        elif (
            dims[0] != rows
            or dims[1:] != ((widths[name],) if name in widths else ())
            or (name in widths and kind.itemsize != 8)
        ):
            return None
    sketches = sum(name in shapes for name in _SKETCHES)
    if "ids" not in shapes or "fps" not in shapes or sketches not in (0, len(_SKETCHES)):
        return None
    return shapes


def _stamped(header: dict[str, Any] | None, versions: Versions) -> bool:
    """Whether a header was written for arrays read at these versions."""
    return header is not None and (header.get("generation"), header.get("writes")) == versions


class StoredSnapshot:
    """The stored snapshot of one index (``Store.snapshots``)."""

    def __init__(self, backend: Backend, tables: schema.Schema, *, stores: bool) -> None:
        self.backend = backend
        self.tables = tables
        # Whether the index keeps one: it has the table (revision 0004), and
        # its stamps can be trusted (revision 0005's counting; see Store.holds).
        self.stores = stores

    @cached_property
    def _stored_sql(self) -> tuple[Sql, Sql]:
        t = self.tables.snapshot
        dialect = self.backend.engine.dialect
        header = Sql(select(t.c.data).where(t.c.name == bindparam("n")), dialect, ["n"])
        others = select(t.c.name, t.c.data).where(t.c.name != bindparam("n"))
        parts = Sql(others.order_by(t.c.name, t.c.part), dialect, ["n"])
        return header, parts

    def header(self, conn: Connection) -> dict[str, Any] | None:
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

    def current(self) -> bool:
        """Whether the stored snapshot is the index's now (one read)."""
        if not self.stores:
            return False
        with self.backend.reading() as conn:
            return _stamped(self.header(conn), self.backend.versions(conn))

    def load(
        self, conn: Connection, versions: Versions, *, fingerprints_only: bool = False
    ) -> Arrays | None:
        """The arrays stored, if they were read at these versions (the
        caller read them in this transaction: Backend.versions); else None
        (also for a header or parts that do not hold together: the rows are
        read instead). ``fingerprints_only``: the ids and fingerprints alone."""
        header = self.header(conn)
        if header is None or not _stamped(header, versions):
            return None
        shapes = _shapes(header)
        if shapes is None:
            return None
        if fingerprints_only:
            shapes = {name: shapes[name] for name in ("ids", "fps")}
        # Each array's parts copied into place as they come (one copy of
        # the bytes in memory, not every part kept until the last).
        buffers = {name: bytearray(size) for name, (_, _, size, _) in shapes.items()}
        filled = dict.fromkeys(shapes, 0)
        _, parts = self._stored_sql
        dbapi = conn.connection.dbapi_connection
        assert dbapi is not None  # an open connection inside a transaction
        cursor = self.backend.dialect.bytes_cursor(dbapi)
        try:
            cursor.execute(parts.text, parts.params([HEADER]))
            while rows := cursor.fetchmany(4):
                for name, data in rows:
                    if name not in buffers:
                        continue
                    if not isinstance(data, (bytes, bytearray, memoryview)):
                        return None  # (a part that is not bytes: damaged)
                    at, size = filled[name], len(data)
                    if at + size > len(buffers[name]):
                        return None  # (more than the header says: damaged)
                    buffers[name][at : at + size] = data
                    filled[name] = at + size
        finally:
            cursor.close()
        arrays: dict[str, np.ndarray] = {}
        for name, (dtype, shape, size, digest) in shapes.items():
            data = buffers.pop(name)
            if filled[name] != size or _digest(data) != digest:
                return None  # (a part missing, short or changed: damaged)
            arrays[name] = np.frombuffer(data, dtype=dtype).reshape(shape)
        signatures = None
        if "words" in arrays:  # (and the others: see _shapes)
            signatures = Sketches(*(arrays[name] for name in _SKETCHES))
        layouts = header.get("layouts", {})
        orders: Orders = {}
        for name, array in arrays.items():
            k = name[len(ORDER) :]
            if name.startswith(ORDER) and isinstance(layouts.get(k), list):
                try:
                    spans = tuple((int(a), int(b)) for a, b in layouts[k])
                except (TypeError, ValueError):
                    continue
                orders[int(k)] = (spans, array)
        return arrays["ids"], arrays["fps"], signatures, orders

    def would_store(self, rows: int) -> bool:
        """Whether a snapshot of this many rows is stored (``store``)."""
        backend = self.backend  # (an in-memory index: nobody else could read it)
        return (
            self.stores
            and not backend.readonly
            and not backend.shared_connection
            and rows >= STORE_MIN_ROWS
        )

    def store(
        self,
        ids: np.ndarray,
        fps: np.ndarray,
        signatures: Sketches | None,
        versions: Versions,
        orders: Orders | None = None,
    ) -> bool:
        """Store the arrays of a snapshot read at these versions (and its
        tables' orders, per k), in place of what was stored, if they are
        still the index's and the write lock is free at once;
        True if stored. Never raises for what the database refuses
        (read-only, locked, full): nothing is stored."""
        if not self.would_store(len(ids)):
            return False
        given = orders or {}
        arrays = _named(ids, fps, signatures, given)
        header = {
            "format": FORMAT,
            "generation": versions.generation,
            "writes": versions.changes,
            "rows": len(ids),
            "arrays": {
                name: [a.dtype.str, list(a.shape), _digest(np.ascontiguousarray(a))]
                for name, a in arrays.items()
            },
            "layouts": {str(k): [list(b) for b in spans] for k, (spans, _) in given.items()},
        }
        t = self.tables.snapshot
        try:
            with self.backend.writing(wait=0.0) as conn:
                if self.backend.versions(conn) != versions:
                    return False  # written meanwhile: what was read is not the index now
                conn.execute(t.delete())
                rows = [{"name": HEADER, "part": 0, "data": json.dumps(header).encode()}]
                conn.execute(t.insert(), rows)
                for name, array in arrays.items():
                    for part, data in enumerate(_parts(array)):
                        conn.execute(t.insert(), [{"name": name, "part": part, "data": data}])
        except (StorageError, SQLAlchemyError, self.backend.driver_error):
            return False  # (locked, read-only, full, gone: the next reader reads the rows)
        return True

    def drop(self, conn: Connection) -> None:
        """Empty the table (inside the caller's write transaction)."""
        if self.stores:
            conn.execute(self.tables.snapshot.delete())

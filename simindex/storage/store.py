"""The fingerprint table of one index: every statement simindex runs on it.

Portable SQLAlchemy Core, compiled once per index to the driver's own SQL
(the hot path runs it on a raw driver cursor); what differs between SQLite
and PostgreSQL is asked of the backend's dialect and capabilities.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from itertools import chain
from typing import Any, TypeVar

import numpy as np
from sqlalchemy import (
    Connection,
    bindparam,
    delete,
    func,
    literal_column,
    null,
    select,
    text,
    union_all,
)
from sqlalchemy.exc import SQLAlchemyError

from simindex.blocks import BlockLayout, Probe, can_probe, probes
from simindex.fingerprint import BITS, to_signed
from simindex.signature import NBYTES, Sketches
from simindex.storage import consistency, loading, schema, short_sets
from simindex.storage.backend import Backend, Versions, Write, db_error, expect
from simindex.storage.checks import Checks
from simindex.storage.copying import Copying
from simindex.storage.dialects import CHANGES
from simindex.storage.loading import Aside, Load
from simindex.storage.sql import Chunk, Kept, Signatures, Sql, block_rows, with_version
from simindex.storage.stored import StoredSnapshot

Row = tuple[int, str, int, "bytes | None"]  # (id, key, signed fingerprint, signature)
_CHUNK = 500  # keys per IN (...) list, well under every database's parameter limit
_RETURNED_ROWS = 16  # Store.put: rows written one by one to return their ids
_LOAD_CHUNK = 5000  # rows per executemany

T = TypeVar("T")


class Store:
    """The fingerprint table of one index: every statement simindex runs on it.

    Single lookups go straight to the driver (statements compiled once by
    SQLAlchemy for this database) on a connection each thread keeps; writes
    run in SQLAlchemy transactions that take the write lock at their start.
    Its parts: ``checks`` (what check and repair ask, checks.py),
    ``snapshots`` (the stored snapshot, stored.py) and ``copying``
    (PostgreSQL's COPY loads and the server's join, copying.py).
    """

    def __init__(
        self,
        backend: Backend,
        layout: BlockLayout,
        *,
        counted: bool = True,
        set_keys: bool = True,
    ) -> None:
        self.backend = backend
        self.engine = backend.engine
        self.where = backend.where
        self.caps = backend.caps
        self.layout = layout
        # Whether a snapshot read can tell it is still the index: while the
        # database counts every change (counted: Settings.counting, the
        # triggers there). An index opened read-only without them holds nothing.
        self.holds = self.caps.can_hold and counted
        # The table of the last snapshot read (stored.py), trusted while
        # its stamps count every writer.
        self.stores = self.holds
        self.tables = schema.build(layout)
        # Short texts' set keys (short_sets.py): kept by every write, looked
        # up by short queries (set_keys: Settings.marking, the triggers there).
        self.set_keys = set_keys
        self._set_sql: dict[tuple[int, bool], Sql] = {}
        self.checks = Checks(backend, layout, self.tables)
        self.snapshots = StoredSnapshot(backend, self.tables, stores=self.stores)
        self.copying = Copying(layout, self.caps)
        t = self.tables.fingerprints
        dialect = self.engine.dialect
        blocks = [schema.block_column(i) for i in range(len(layout.widths))]
        # Lookups read (id, fingerprint) from the covering indexes alone; the
        # keys of the few rows within k are read afterwards (rows_by_id).
        lookups = [
            select(t.c.id, t.c.fingerprint).where(
                *(t.c[blocks[b]] == bindparam(f"t{j}_b{b}") for b in table)
            )
            for j, table in enumerate(layout.tables)
        ]
        self._lookup_names = [f"t{j}_b{b}" for j, table in enumerate(layout.tables) for b in table]
        self._lookup = Sql(union_all(*lookups), dialect, self._lookup_names)
        # Plus the schema cookie or generation, read in the same snapshot.
        self._generation = backend.dialect.generation_sql
        self._lookup_text = (
            f"{self._lookup.text} UNION ALL {self._generation.replace('SELECT ', 'SELECT -1, ', 1)}"
        )
        # Where the server counts bits: the Hamming filter and the keys in the
        # same statement (named parameters only).
        matches = None
        if not self._lookup.positional:
            matches = backend.dialect.matches_sql(self._lookup.text, caps=self.caps)
        self.matches_on_server = matches is not None
        self._matches_text = matches or ""
        spans = layout.spans()
        # (shift, mask) of each lookup parameter, in the driver's order.
        ordered = [self._lookup_names[i] for i in self._lookup._order]
        self._lookup_spans = [spans[int(name.rsplit("_b", 1)[1])] for name in ordered]
        self._lookup_signed = max(layout.widths) == BITS  # a single 64-bit block
        self._by_id: dict[int, Sql] = {}
        self._with_versions: dict[int, Sql] = {}
        self._by_key: dict[int, Sql] = {}
        self._probe_sql: dict[int, tuple[Sql, tuple[np.ndarray, np.ndarray]]] = {}
        self.delete_keys = delete(t).where(t.c.key.in_(bindparam("keys", expanding=True)))
        self.count = select(func.count()).select_from(t)
        self.any_row = select(t.c.id).limit(1)
        self.scan = select(t.c.id, t.c.key, t.c.fingerprint, t.c.signature)
        self.keys_by_id = select(t.c.id, t.c.key, t.c.fingerprint, t.c.signature).where(
            t.c.id.in_(bindparam("ids", expanding=True))
        )
        self.count_without_signature = (
            select(func.count()).select_from(t).where(t.c.signature.is_(None))
        )
        # Reads on a kept connection run without a transaction: each statement
        # reads one snapshot (SQLite's autocommit; psycopg's, see Kept).
        self._local = threading.local()
        self._connections: list[Kept] = []  # every thread's kept connection
        self._connections_lock = threading.Lock()

    # Statements compiled on their first use (compiling every one as an
    # index opens cost a command that only queries ~20 ms).

    @cached_property
    def _writes(self) -> tuple[Sql, Sql, Sql, Sql]:
        """(upsert, insert new) of rows with signatures, then of rows
        without (add_fingerprints): the statements of before signatures,
        one parameter less a row, where a replaced key's signature is
        cleared (it belonged to the old text)."""
        dialect = self.engine.dialect
        blocks = [schema.block_column(i) for i in range(len(self.layout.widths))]
        names = ["key", "fingerprint", *blocks, "signature"]
        bare = ["key", "fingerprint", *blocks]
        return (
            Sql(self._upsert_statement(names), dialect, names),
            Sql(self._upsert_statement(names, keep=True), dialect, names),
            Sql(self._upsert_statement(bare), dialect, bare),
            Sql(self._upsert_statement(bare, keep=True), dialect, bare),
        )

    @cached_property
    def _get(self) -> Sql:
        t = self.tables.fingerprints
        statement = select(t.c.fingerprint).where(t.c.key == bindparam("key"))
        return Sql(statement, self.engine.dialect, ["key"])

    @cached_property
    def _loads(self) -> tuple[Sql, Sql, Sql, Sql]:
        """Every (id, fingerprint), the id checked against its lookup
        index's block columns (consistency); the same unchecked (another
        layout); every (id, signature) there is; the largest id."""
        t, dialect = self.tables.fingerprints, self.engine.dialect
        checked = consistency.checked_id(t, self.layout)
        with_signatures = select(t.c.id, t.c.signature).where(t.c.signature.is_not(None))
        return (
            Sql(select(checked, t.c.fingerprint), dialect, []),
            Sql(select(t.c.id, t.c.fingerprint), dialect, []),
            Sql(with_signatures, dialect, []),
            Sql(select(func.max(t.c.id)), dialect, []),
        )

    def _upsert_statement(self, names: list[str], *, keep: bool = False) -> Any:
        t = self.tables.fingerprints
        values: dict[str, Any] = {name: bindparam(name) for name in names}
        statement = self.backend.dialect.insert(t).values(values)
        if keep:
            return statement.on_conflict_do_nothing(index_elements=[t.c.key])
        replaced: dict[str, Any] = {n: statement.excluded[n] for n in names if n != "key"}
        if "signature" not in names:
            replaced["signature"] = null()
        return statement.on_conflict_do_update(index_elements=[t.c.key], set_=replaced)

    # --- the read hot path ---------------------------------------------------

    def _connection(self) -> Kept:
        kept: Kept | None = getattr(self._local, "kept", None)
        if kept is None or kept.pid != os.getpid():
            try:
                kept = Kept(
                    self.engine.raw_connection(),
                    autocommit=self.caps.read_autocommit,
                )
            except (SQLAlchemyError, self.backend.driver_error) as exc:  # (a server starting)
                raise db_error(self.where, exc) from exc
            self._local.kept = kept
            with self._connections_lock:
                self._connections.append(kept)
        return kept

    def _read(self, sql: str, params: Any) -> list[Any]:
        """One statement on this thread's kept connection (see _kept)."""

        def run(kept: Kept) -> list[Any]:
            with self.backend.turns:  # (an in-memory database: one connection)
                kept.cursor.execute(sql, params)
                rows: list[Any] = kept.cursor.fetchall()
            return rows

        return self._kept(run)

    def _kept(self, run: Callable[[Kept], T]) -> T:
        """``run(kept)`` on this thread's kept connection, and once more on a
        new one where the database has lost it (Kept.lost): what runs there
        is safe to repeat (a read, VACUUM), and a server's restart costs the
        caller nothing else. Every driver error becomes a StorageError."""
        for attempt in (1, 2):
            kept = self._connection()
            try:
                return run(kept)
            except self.backend.driver_error as exc:
                if attempt == 1 and self._lost(kept, exc):
                    continue
                raise db_error(self.where, exc) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _lost(self, kept: Kept, exc: BaseException) -> bool:
        if not kept.lost(exc, self.engine.dialect):
            return False
        self._local.kept = None  # (the next read opens another)
        with self._connections_lock:
            self._connections = [c for c in self._connections if c is not kept]
        return True

    def lookup(self, fingerprint: int, generation: int | None) -> list[tuple[int, int]]:
        """(id, signed fingerprint) of every row agreeing with the fingerprint
        on all blocks of at least one table (a row may come more than once),
        read under ``generation`` (else Changed: backend.expect)."""
        params = self._lookup_params(fingerprint)
        driver: Any = params
        if not self._lookup.positional:  # named style: _order is the names' order
            driver = dict(zip(self._lookup_names, params, strict=True))
        return with_version(self._read(self._lookup_text, driver), generation)

    def _lookup_params(self, fingerprint: int) -> tuple[int, ...]:
        """The query's block values, in the lookup's parameter order."""
        params = tuple([(fingerprint >> shift) & mask for shift, mask in self._lookup_spans])
        if self._lookup_signed:
            params = tuple(to_signed(p) for p in params)
        return params

    def lookup_matches(self, fingerprint: int, k: int, generation: int | None) -> list[Any]:
        """PostgreSQL: (id, key, signed fingerprint) of the rows within k, read
        under ``generation``, in one round trip: the candidates come from the indexes
        alone (index-only scans), the server keeps those within k and only
        then reads their keys."""
        driver = dict(zip(self._lookup_names, self._lookup_params(fingerprint), strict=True))
        driver |= {"query_fp": to_signed(fingerprint), "query_k": k}
        return with_version(self._read(self._matches_text, driver), generation, at=2)

    def can_probe(self, k: int) -> bool:
        """Whether probe_lookup answers k (a few probes), rather than a full scan."""
        if k in self._probe_sql:
            return True
        return can_probe(self.layout, k)

    def probe_lookup(
        self, fingerprint: int, k: int, generation: int | None
    ) -> list[tuple[int, int]] | None:
        """Like lookup, for a k above the layout's: every row agreeing with one
        of the probes (see blocks.probes) on a table's blocks. None when that
        would take more than blocks.MAX_PROBES lookups."""
        plan = self._probe_sql.get(k)
        if plan is None:
            found = probes(self.layout, k)
            if found is None:
                return None
            plan = self._probe_sql[k] = self._compile_probes(found)
        sql, (block_of, flips) = plan
        blocks = np.array(
            [(fingerprint >> shift) & mask for shift, mask in self.layout.spans()], np.uint64
        )
        # Each parameter: its block's value with the probe's bits flipped, as stored (signed).
        params = (blocks[block_of] ^ flips).view(np.int64).tolist()
        return with_version(self._read(sql.text, sql.params(params)), generation)

    def _compile_probes(self, found: list[Probe]) -> tuple[Sql, tuple[np.ndarray, np.ndarray]]:
        """The statement of these probes, and for its parameters in order
        the block each one is and the bits it flips (probe_lookup)."""
        # Written as SQL text, not built from column expressions: a default
        # index's probes are a few hundred terms, which SQLAlchemy's
        # expression and compiler passes took ~25 ms to build (a command's
        # first query).
        name = self.tables.fingerprints.name
        blocks = [schema.block_column(i) for i in range(len(self.layout.widths))]
        names: list[str] = []
        per_table: dict[int, list[list[str]]] = {}
        for i, probe in enumerate(found):
            table = self.layout.tables[probe.table]
            marks = []
            for b in table:
                names.append(f"p{i}_{b}")
                marks.append(names[-1])
            per_table.setdefault(probe.table, []).append(marks)
        selects = []
        for j, terms in per_table.items():
            table = self.layout.tables[j]
            if len(table) == 1:  # one column: an IN list, one index seek per value
                listed = ", ".join(f":{marks[0]}" for marks in terms)
                where = f"{blocks[table[0]]} IN ({listed})"
            else:  # several: OR of equalities, an index seek per term
                where = " OR ".join(
                    "(" + " AND ".join(f"{blocks[b]} = :{m}" for b, m in pairs) + ")"
                    for pairs in (zip(table, marks, strict=True) for marks in terms)
                )
            selects.append(f"SELECT id, fingerprint FROM {name} WHERE {where}")
        sql = Sql(text(" UNION ALL ".join(selects)), self.engine.dialect, names)
        marker = self._generation.replace("SELECT ", "SELECT -1, ", 1)
        sql.text = f"{sql.text} UNION ALL {marker}"
        pairs = [
            (b, flip)
            for probe in found
            for b, flip in zip(self.layout.tables[probe.table], probe.flips, strict=True)
        ]
        block_of = np.array([b for b, _ in pairs], np.intp)
        return sql, (block_of, np.array([flip for _, flip in pairs], np.uint64))

    # --- short texts' set keys (short_sets.py) ---------------------------------

    def set_rows(
        self, keys: Sequence[int], generation: int | None
    ) -> tuple[dict[int, list[Row]], list[Row], int]:
        """The rows stored under these set keys (by key), the rows whose keys
        are still due (short_sets.py), and the changes counted when the first
        statement read them (what a held query confirms it against), read
        under ``generation`` (else Changed). A statement a chunk of keys; the
        due rows with the first."""
        by_key: dict[int, list[Row]] = {}
        due: list[Row] = []
        changes = -1
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), _CHUNK):
            chunk = unique[start : start + _CHUNK]
            first = start == 0
            sql = self._set_sql.get((len(chunk), first))
            if sql is None:
                sql = self._set_sql[(len(chunk), first)] = self._compile_set_rows(len(chunk), first)
            rows = self._read(sql.text, sql.params(chunk))
            marker = next(r for r in rows if r[0] == -1)
            expect(int(marker[1]), generation)
            if first:
                changes = int(marker[4])
            read = [(r[0], r[1], (int(r[2]), r[3], int(r[4]), r[5])) for r in rows if r[0] != -1]
            consistency.formed(self.where, [row for _, _, row in read])
            for kind, set_key, row in read:
                if kind:
                    by_key.setdefault(int(set_key), []).append(row)
                else:
                    due.append(row)
        return by_key, due, changes

    def _compile_set_rows(self, n: int, due: bool) -> Sql:
        t, k, d = self.tables.fingerprints, self.tables.set_keys, self.tables.set_keys_due
        names = [f"s{i}" for i in range(n)]
        columns = (t.c.id, t.c.key, t.c.fingerprint, t.c.signature)
        keyed = (
            select(literal_column("1"), k.c.set_key, *columns)
            .select_from(k.join(t, t.c.id == k.c.id))
            .where(k.c.set_key.in_([bindparam(name) for name in names]))
        )
        marked = select(literal_column("0"), literal_column("0"), *columns).select_from(
            d.join(t, t.c.id == d.c.id)
        )
        sql = Sql(union_all(keyed, marked) if due else keyed, self.engine.dialect, names)
        sql.text += f" UNION ALL SELECT -1, ({self._generation}), NULL, NULL, ({CHANGES}), NULL"
        return sql

    def keyed_signatures(self, conn: Connection) -> list[Row]:
        """(id, key, signed fingerprint, signature) of every row with a
        signature (those with keys: signature.keys_of), in the caller's
        transaction (all pairs found by keys)."""
        t = self.tables.fingerprints
        statement = select(t.c.id, t.c.key, t.c.fingerprint, t.c.signature).where(
            func.length(t.c.signature) >= NBYTES
        )
        return consistency.formed(self.where, [tuple(r) for r in conn.execute(statement)])

    def sets_written(self, conn: Connection) -> None:
        """At the end of a write transaction: the set keys of the rows it
        wrote (short_sets.drain)."""
        if self.set_keys:
            short_sets.drain(conn)

    def rows_by_key(self, conn: Connection, keys: Sequence[str]) -> list[tuple[int, int]]:
        """(id, signed fingerprint) of the rows of these keys, in the caller's
        transaction (statements compiled once per chunk length: this follows
        every write of an index that holds a snapshot, often of one key)."""
        rows: list[tuple[int, int]] = []
        for start in range(0, len(keys), _CHUNK):
            chunk = list(keys[start : start + _CHUNK])
            sql = self._by_key.get(len(chunk))
            if sql is None:
                t = self.tables.fingerprints
                names = [f"key{i}" for i in range(len(chunk))]
                statement = select(t.c.id, t.c.fingerprint).where(
                    t.c.key.in_([bindparam(n) for n in names])
                )
                sql = self._by_key[len(chunk)] = Sql(statement, self.engine.dialect, names)
            rows += [(int(i), int(f)) for i, f in conn.exec_driver_sql(sql.text, sql.params(chunk))]
        return rows

    def rows_by_id(self, ids: Sequence[int]) -> list[tuple[int, str, int, bytes | None]]:
        """(id, key, signed fingerprint, signature) of the rows with these ids (a few)."""
        sql = self._by_id.get(len(ids))
        if sql is None:
            t = self.tables.fingerprints
            names = [f"id{i}" for i in range(len(ids))]
            statement = select(t.c.id, t.c.key, t.c.fingerprint, t.c.signature).where(
                t.c.id.in_([bindparam(n) for n in names])
            )
            sql = self._by_id[len(ids)] = Sql(statement, self.engine.dialect, names)
        return consistency.formed(self.where, self._read(sql.text, sql.params(list(ids))))

    def rows_and_versions(
        self, ids: Sequence[int]
    ) -> tuple[list[tuple[int, str, int, bytes | None]], Versions]:
        """rows_by_id(ids) and versions() in one statement (a round trip
        less for a held query): the rows, and the versions read with them."""
        sql = self._with_versions.get(len(ids))
        if sql is None:
            t = self.tables.fingerprints
            names = [f"id{i}" for i in range(len(ids))]
            v = select(
                literal_column(self.backend.dialect.generation).label("g"),
                literal_column(CHANGES).label("c"),
            ).subquery("v")
            joined = v.outerjoin(t, t.c.id.in_([bindparam(n) for n in names]))
            statement = select(
                t.c.id, t.c.key, t.c.fingerprint, t.c.signature, v.c.g, v.c.c
            ).select_from(joined)
            sql = self._with_versions[len(ids)] = Sql(statement, self.engine.dialect, names)
        found = self._read(sql.text, sql.params(list(ids)))
        versions = Versions(int(found[0][4]), int(found[0][5]))
        rows = [(r[0], r[1], r[2], r[3]) for r in found if r[0] is not None]
        return consistency.formed(self.where, rows), versions

    def versions(self) -> Versions | None:
        """(generation, changes counted) in one statement, or None where a
        held snapshot cannot tell it is current (see holds)."""
        if not self.holds:
            return None
        row = self._read(self.backend.dialect.versions_sql, ())[0]
        return Versions(int(row[0]), int(row[1]))

    def generation(self) -> int:
        """The schema cookie or generation (see Dialect.generation), read on this
        thread's connection."""
        return int(self._read(self._generation, ())[0][0])

    def estimated_size(self) -> int:
        """The largest row id: at least the row count, and read in one seek."""
        rows = self._read(self._loads[3].text, self._loads[3].params([]))
        return int(rows[0][0] or 0)

    def fetch(self, key: str) -> int | None:
        rows = self._read(self._get.text, self._get.params([key]))
        return rows[0][0] if rows else None

    def fetch_row(self, key: str) -> tuple[int, bytes | None] | None:
        """(signed fingerprint, signature) stored under key, or None."""
        t = self.tables.fingerprints
        statement = select(t.c.fingerprint, t.c.signature).where(t.c.key == bindparam("key"))
        with self.backend.reading() as conn:
            row = conn.execute(statement, {"key": key}).first()
        return None if row is None else (int(row[0]), row[1])

    # --- reads in one snapshot ---------------------------------------------

    def size(self, conn: Connection) -> int:
        return int(conn.execute(self.count).scalar_one())

    def everything(self, conn: Connection) -> Iterable[tuple[int, str, int, bytes | None]]:
        """(id, key, signed fingerprint, signature) of every row."""
        return conn.execute(self.scan)  # type: ignore[return-value,unused-ignore]

    def without_signature(self, conn: Connection) -> int:
        """The rows that have no signature (matched by distance alone)."""
        return int(conn.execute(self.count_without_signature).scalar_one())

    def load(self, conn: Connection, generation: int | None) -> tuple[np.ndarray, np.ndarray]:
        """(ids, unsigned fingerprints) of every row, read under ``generation``
        (else Changed), checked (consistency.fingerprints).

        Read through the driver's own cursor, inside the caller's transaction:
        building result rows for a million fingerprints costs far more than
        reading them.
        """
        expect(self.backend.generation(conn), generation)
        # Checked against the layout's block columns in a file only: damage is
        # a file's, and on a server the generation and the rows are not one
        # snapshot (READ COMMITTED; a rebuild there shows in the versions the
        # caller read first, and what was read is let go).
        statement = self._loads[0] if self.where.path is not None else self._loads[1]
        dbapi = conn.connection.dbapi_connection
        assert dbapi is not None  # an open connection inside a transaction
        cursor = dbapi.cursor()
        try:
            cursor.execute(statement.text, statement.params([]))
            parts = []
            while rows := cursor.fetchmany(100_000):
                parts.append(consistency.table(self.where, rows, 2))
        finally:
            cursor.close()
        if not parts:
            return np.zeros(0, np.int64), np.zeros(0, np.uint64)
        return consistency.fingerprints(self.where, np.concatenate(parts))

    def load_signatures(self, conn: Connection, ids: np.ndarray) -> Sketches | None:
        """The signatures of the rows ``ids`` (as load read them, in the same
        transaction) as held sketches (signature.as_words: the words, which
        rows have them, their script, their middle sets' flags and maps),
        position by position, or None when no row has one."""
        statement = self._loads[2]
        dbapi = conn.connection.dbapi_connection
        assert dbapi is not None  # an open connection inside a transaction
        cursor = dbapi.cursor()
        found_ids: list[np.ndarray] = []
        parts: list[Sketches] = []
        try:
            cursor.execute(statement.text, statement.params([]))
            while rows := cursor.fetchmany(100_000):
                found_ids.append(np.fromiter((r[0] for r in rows), np.int64, count=len(rows)))
                parts.append(consistency.signature_words(self.where, [r[1] for r in rows]))
        finally:
            cursor.close()
        if not parts or not len(ids):
            return None
        signature_ids = np.concatenate(found_ids)
        order = np.argsort(ids, kind="stable")
        at = np.minimum(np.searchsorted(ids, signature_ids, sorter=order), len(ids) - 1)
        where = order[at]
        known = ids[where] == signature_ids  # (always, in one snapshot)
        consistency.all_known(self.where, signature_ids, known)
        fields = list(zip(*parts, strict=True))  # (each field's parts)
        held = Sketches(*(np.zeros((len(ids), *f[0].shape[1:]), f[0].dtype) for f in fields))
        for array, read in zip(held, fields, strict=True):
            array[where[known]] = np.concatenate(read)[known]  # (each field, position by position)
        return held

    def keys_for(
        self, conn: Connection, wanted: dict[int, int]
    ) -> dict[int, tuple[str, bytes | None]]:
        """id -> (key, signature) of the rows ``wanted`` (id -> the signed
        fingerprint read for it), checked against it (consistency.rows)."""
        ids = list(wanted)
        found: list[Any] = []
        for start in range(0, len(ids), _CHUNK):
            found += conn.execute(self.keys_by_id, {"ids": ids[start : start + _CHUNK]})
        return consistency.rows(self.where, found, wanted)

    # --- writes --------------------------------------------------------------

    def put(
        self,
        conn: Connection,
        keys: Sequence[str],
        fingerprints: np.ndarray,
        *,
        keep: bool,
        written: list[tuple[int, int]] | None = None,
        signatures: Signatures | None = None,
    ) -> int:
        """Insert rows, with their signatures (default: none). A key already
        stored gets the new fingerprint and signature (the later one wins),
        or, with keep, keeps its own. Returns the rows written: with
        keep, the new keys only (a key stored already, or earlier in the same
        chunk, is left as it is and not counted).

        With ``written``, a few rows replacing on SQLite 3.35+ go one by one
        with RETURNING and their (id, signed fingerprint) are appended to it
        (cheaper than reading them back)."""
        if self.caps.bulk_copy:
            sigs = signatures or [None] * len(keys)
            return self.copying.put(
                conn, block_rows(keys, fingerprints, self.layout, sigs), keep=keep
            )
        with_signatures = signatures is not None
        rows = block_rows(keys, fingerprints, self.layout, signatures)
        upsert, insert_new = self._writes[:2] if with_signatures else self._writes[2:]
        if keep:
            done = conn.exec_driver_sql(insert_new.text, insert_new.many(rows))
            return max(0, done.rowcount)
        if written is not None and len(rows) <= _RETURNED_ROWS and self.caps.returning:
            text = f"{upsert.text} RETURNING id, fingerprint"
            for row in rows:
                found = conn.exec_driver_sql(text, upsert.params(row)).one()
                written.append((int(found[0]), int(found[1])))
            return len(rows)
        conn.exec_driver_sql(upsert.text, upsert.many(rows))
        return len(rows)

    def put_stream(
        self,
        write: Write,
        chunks: Iterable[Chunk],
        *,
        keep: bool = False,
        returned: list[tuple[int, int]] | None = None,
    ) -> tuple[int, int]:
        """Write chunks of (keys, fingerprints, signatures) in the caller's
        transaction (one that counts itself: Backend.write); returns the rows
        read and the rows written (see put).

        A large load sets aside what costs it per row (loading.py: the
        lookup indexes, past FAST_LOAD_MIN rows and the table's size; on
        SQLite the triggers that count changes and those that mark short
        sets, which the load then marks itself) and puts them back before it
        ends. On PostgreSQL a first load (the table empty, a first chunk of
        at least FRESH_LOAD_MIN rows) also sets the unique key aside and
        COPYs its rows straight into the table (Copying.begin_fresh_load),
        one row a key kept at the end as put would.
        With ``returned`` (a list), put appends the (id, signed fingerprint)
        of the rows it could return (see put): all of them when the list
        ends as long as the count returned.
        """
        conn = write.conn
        lookups, *triggers = self._asides(conn, keep)
        load = Load(conn, [*triggers, lookups])
        fresh: str | None = None  # the unique key set aside (see Copying.begin_fresh_load)
        read = written = 0
        chunks = iter(chunks)
        for keys, fps, sigs in chunks:
            first = not read and self.caps.bulk_copy and len(keys) >= loading.FRESH_LOAD_MIN
            if first and self._empty(conn):  # a first load: COPY it straight in
                load.take(lookups)
                fresh = self.copying.begin_fresh_load(conn)
                read = written = self.copying.copy_rows(conn, chain([(keys, fps, sigs)], chunks))
                break
            load.before(len(keys))
            written += self.put(conn, keys, fps, keep=keep, written=returned, signatures=sigs)
            load.after(keys)
            read += len(keys)
        if fresh is not None:
            removed = self.copying.end_fresh_load(conn, fresh, keep=keep)
            written -= removed if keep else 0
        load.end()
        return read, written

    def _asides(self, conn: Connection, keep: bool) -> list[Aside]:
        """What a load sets aside (loading.py): the lookup indexes first, then
        the triggers that mark short sets and those that count changes."""
        dialect = self.backend.dialect

        def drop_lookups(conn: Connection) -> bool:
            for index in self.tables.lookups:
                index.drop(conn)
            return True

        def make_lookups(conn: Connection, _: object) -> None:
            for index in self.tables.lookups:
                index.create(conn)
            dialect.analyze(conn)  # fresh statistics, or the planner scans

        return [
            Aside(
                "lookup indexes",
                loading.FAST_LOAD_MIN,
                drop_lookups,
                make_lookups,
                rows=lambda: self.size(conn),
            ),
            Aside(
                "the triggers that mark short sets",
                loading.MARK_ASIDE_MIN,
                short_sets.marking_aside,
                lambda conn, before: short_sets.mark_loaded(conn, before),
                # (the rows there before it whose texts it replaces; keep replaces none)
                None if keep else short_sets.mark_updated,
            ),
            Aside(
                "the triggers that count changes",
                loading.COUNT_ASIDE_MIN,
                lambda conn: dialect.counting_aside(conn) or None,
                lambda conn, _: dialect.count_changes(conn),
            ),
        ]

    def _empty(self, conn: Connection) -> bool:
        return conn.execute(self.any_row).first() is None

    def tidy_after_load(self) -> None:
        """After a large load has committed (see Dialect.tidy_after_load:
        PostgreSQL's VACUUM, on the kept autocommit connection)."""
        if not self.caps.vacuum_after_load:
            return
        # On the kept autocommit connection: VACUUM cannot run in a transaction.
        self._kept(lambda kept: self.backend.dialect.tidy_after_load(kept.cursor))

    def remove(self, conn: Connection, keys: Sequence[str]) -> int:
        removed = 0
        for start in range(0, len(keys), _CHUNK):
            result = conn.execute(self.delete_keys, {"keys": list(keys[start : start + _CHUNK])})
            removed += result.rowcount
        return removed

    def close(self) -> None:
        """Close the kept connections (the next read opens new ones)."""
        with self._connections_lock:
            kept, self._connections = self._connections, []
        for connection in kept:
            connection.close()
        self._local = threading.local()

"""The passages of an index that keeps them: every statement on their tables.

``simindex_passage_docs`` (a document's key and how many passage hashes it
has), ``simindex_passages`` ((hash, document), keyed by the hash) and
``simindex_passage_hashes`` (a document's hashes in one value, what
replacing or removing it deletes by), revision 0008; what a passage hash
is: simindex/passages.py. They are
written in the transaction that writes the document's row, by key (a key
replaced has its old passages deleted first), so they never disagree with
the fingerprint table after a write of simindex's.

Whether they are the index's now. Another program may write the
fingerprint table with plain SQL; it makes no passages. So the passages are
trusted by a stamp, as the stored snapshot is (stored.py): ``passages_at``
in simindex_meta is the count of changes (dialects.CHANGES, counted by the
database for every writer) at which the passages were last the index's.
``Passages.begin`` (the start of every write of simindex's, Views.writing)
finds whether they are now, holding the count's row so that no other writer
comes between on PostgreSQL (SQLite's write lock does that already), and
``Passages.end``, the statement before the write counts itself (one more,
Backend.write), moves the stamp to the count that write will leave, if
they were. A write of anyone else's leaves the stamp behind, for good: a
query (``read``) that finds the stamp is not the count raises
StalePassagesError until a rebuild from the texts makes them anew. The
stamp ``now`` says that this transaction has made them anew (a rebuild).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from itertools import repeat
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy import Connection, bindparam, delete, func, select, text

from simindex.storage import schema
from simindex.storage.dialects import CHANGES
from simindex.storage.sql import Sql

if TYPE_CHECKING:
    from simindex.storage.backend import Backend

STAMP = "passages_at"  # simindex_meta's row: the changes counted when they were the index's
MADE_NOW = "now"  # the stamp of passages made anew in the running transaction
_CHUNK = 500  # keys or hashes per IN (...) list, under every database's parameter limit
_ROWS = 5000  # passage rows per executemany

_META = schema.META_TABLE
_HOLD_COUNT = f"UPDATE {_META} SET value = value WHERE name = 'changes'"
_STAMP_AND_COUNT = f"SELECT (SELECT value FROM {_META} WHERE name = '{STAMP}'), {CHANGES}"
_MOVE_STAMP = text(
    f"UPDATE {_META} SET value = CAST({CHANGES} + 1 AS TEXT) "
    f"WHERE name = '{STAMP}' AND value IN ('{MADE_NOW}', :kept)"
)


def begin_passages(conn: Connection) -> None:
    """A new index that keeps passages (none yet): they are the index's at
    the count of now (no counted write comes after this one: creation)."""
    conn.exec_driver_sql(f"DELETE FROM {_META} WHERE name = '{STAMP}'")
    conn.exec_driver_sql(
        f"INSERT INTO {_META} (name, value) SELECT '{STAMP}', CAST({CHANGES} AS TEXT)"
    )


class _Statements:
    """The statements on the passage tables, for one database's dialect."""

    def __init__(self, tables: schema.PassageTables, dialect: Any) -> None:
        docs, rows = tables.docs, tables.passages
        names = ["hash", "doc"]
        self.insert = Sql(rows.insert().values({n: bindparam(n) for n in names}), dialect, names)
        self.delete = Sql(
            delete(rows).where(rows.c.hash == bindparam("hash"), rows.c.doc == bindparam("doc")),
            dialect,
            names,
        )
        keys: Any = bindparam("keys", expanding=True)
        self.docs_of = select(docs.c.key, docs.c.doc).where(docs.c.key.in_(keys))
        kept = tables.hashes
        self.kept_of = (
            select(kept.c.doc, kept.c.kept)
            .join_from(docs, kept, kept.c.doc == docs.c.doc)
            .where(docs.c.key.in_(keys))
        )
        self.delete_kept = delete(kept).where(
            kept.c.doc.in_(select(docs.c.doc).where(docs.c.key.in_(keys)).scalar_subquery())
        )
        self.delete_docs = delete(docs).where(docs.c.key.in_(keys))
        hashes: Any = bindparam("hashes", expanding=True)
        shared = (
            select(rows.c.doc, func.count().label("shared"))
            .where(rows.c.hash.in_(hashes))
            .group_by(rows.c.doc)
            .subquery()
        )
        self.shared = select(docs.c.key, docs.c.hashes, shared.c.shared).join_from(
            shared, docs, docs.c.doc == shared.c.doc
        )


class Passages:
    """The passage tables of one index (statements built on first use, once,
    for its database's dialect: every index is opened with one, and most
    keep no passages; building them cost each open about 3 ms)."""

    def __init__(self, backend: Backend) -> None:
        self._dialect = backend.engine.dialect

    @property
    def tables(self) -> schema.PassageTables:
        return schema.passage_tables()

    @cached_property
    def _sql(self) -> _Statements:
        return _Statements(self.tables, self._dialect)

    # --- the stamp -----------------------------------------------------------------

    def begin(self, conn: Connection) -> str | None:
        """At the start of a write: the stamp, if the passages are the
        index's now (else None), the count's row held to the commit."""
        conn.exec_driver_sql(_HOLD_COUNT)
        stamp, count = conn.exec_driver_sql(_STAMP_AND_COUNT).one()
        return stamp if stamp is not None and stamp == str(count) else None

    def end(self, conn: Connection, kept: str | None) -> None:
        """The statement before a write of simindex's counts itself: a stamp
        that was the count at its start (`kept`, from begin) or made now
        becomes the count it will leave."""
        conn.execute(_MOVE_STAMP, {"kept": kept or MADE_NOW})

    def made_now(self, conn: Connection) -> None:
        """Passages made anew in this transaction (a rebuild from the texts)."""
        conn.exec_driver_sql(f"DELETE FROM {_META} WHERE name = '{STAMP}'")
        conn.exec_driver_sql(f"INSERT INTO {_META} (name, value) VALUES ('{STAMP}', '{MADE_NOW}')")

    def current(self, conn: Connection) -> tuple[bool, str | None, int]:
        """(whether the passages are the index's now, the stamp, the count)."""
        stamp, count = conn.exec_driver_sql(_STAMP_AND_COUNT).one()
        return stamp is not None and stamp == str(count), stamp, int(count)

    # --- writes ----------------------------------------------------------------

    def clear(self, conn: Connection, *, keep_stamp: bool) -> None:
        """Every passage gone (a rebuild); the stamp too unless ``keep_stamp``."""
        conn.execute(delete(self.tables.passages))
        conn.execute(delete(self.tables.hashes))
        conn.execute(delete(self.tables.docs))
        if not keep_stamp:
            conn.exec_driver_sql(f"DELETE FROM {_META} WHERE name = '{STAMP}'")

    def put(
        self, conn: Connection, keys: Sequence[str], found: Sequence[np.ndarray], *, keep: bool
    ) -> None:
        """Store the passages of these keys' texts (`found`, as
        passages.passages gives them), as the fingerprint table stores
        their rows: a key stored already has its passages replaced, or
        with ``keep`` left as they are; a key twice keeps the later text
        (with keep: the first)."""
        chosen: dict[str, np.ndarray] = {}
        for key, hashes in zip(keys, found, strict=True):
            if keep:
                chosen.setdefault(key, hashes)
            else:
                chosen[key] = hashes
        names = list(chosen)
        if keep:
            for old, _ in self._docs(conn, names):
                chosen.pop(old, None)
            names = list(chosen)
        else:
            self.remove(conn, names)
        if not names:
            return
        conn.execute(
            self.tables.docs.insert(), [{"key": key, "hashes": len(chosen[key])} for key in names]
        )
        ids = dict(self._docs(conn, names))
        conn.execute(
            self.tables.hashes.insert(),
            [{"doc": ids[key], "kept": _packed(chosen[key])} for key in names],
        )
        rows: list[tuple[int, int]] = []
        for key in names:
            rows += zip(chosen[key].tolist(), repeat(ids[key]))
            if len(rows) >= _ROWS:
                conn.exec_driver_sql(self._sql.insert.text, self._sql.insert.many(rows))
                rows = []
        if rows:
            conn.exec_driver_sql(self._sql.insert.text, self._sql.insert.many(rows))

    def _docs(self, conn: Connection, keys: Sequence[str]) -> list[tuple[str, int]]:
        found: list[tuple[str, int]] = []
        for start in range(0, len(keys), _CHUNK):
            chunk = list(keys[start : start + _CHUNK])
            found += [(k, int(d)) for k, d in conn.execute(self._sql.docs_of, {"keys": chunk})]
        return found

    def remove(self, conn: Connection, keys: Sequence[str]) -> None:
        """The passages of these keys gone (the rows are removed or replaced):
        each (hash, document) by its key, from the hashes the document's row
        keeps."""
        for start in range(0, len(keys), _CHUNK):
            chunk = {"keys": list(keys[start : start + _CHUNK])}
            rows: list[tuple[int, int]] = []
            for doc, kept in conn.execute(self._sql.kept_of, chunk):
                rows += zip(np.frombuffer(kept, "<i8").tolist(), repeat(int(doc)))
                if len(rows) >= _ROWS:
                    conn.exec_driver_sql(self._sql.delete.text, self._sql.delete.many(rows))
                    rows = []
            if rows:
                conn.exec_driver_sql(self._sql.delete.text, self._sql.delete.many(rows))
            conn.execute(self._sql.delete_kept, chunk)
            conn.execute(self._sql.delete_docs, chunk)

    # --- reads -----------------------------------------------------------------

    def shared(self, conn: Connection, hashes: np.ndarray) -> dict[str, tuple[int, int]]:
        """key -> (its passage hashes, how many of `hashes` it has), for every
        document sharing one (in the caller's transaction)."""
        found: dict[str, tuple[int, int]] = {}
        values = hashes.tolist()
        for start in range(0, len(values), _CHUNK):
            chunk = values[start : start + _CHUNK]
            for key, total, shared in conn.execute(self._sql.shared, {"hashes": chunk}):
                had = found.get(key, (int(total), 0))[1]
                found[key] = (int(total), had + int(shared))
        return found

    def problems(self, conn: Connection) -> list[str]:
        """What check finds wrong with passages that are the index's (by
        their stamp): rows without passages, passages of no row, and hash
        rows other than the documents' counts say."""
        docs, rows = schema.PASSAGE_DOCS_TABLE, schema.PASSAGES_TABLE
        table = schema.FINGERPRINT_TABLE
        found = []
        missing = conn.exec_driver_sql(
            f"SELECT count(*) FROM {table} f WHERE NOT EXISTS "
            f"(SELECT 1 FROM {docs} d WHERE d.key = f.key)"
        ).scalar_one()
        if missing:
            found.append(f"{missing} documents have no passages")
        orphans = conn.exec_driver_sql(
            f"SELECT count(*) FROM {docs} d WHERE NOT EXISTS "
            f"(SELECT 1 FROM {table} f WHERE f.key = d.key)"
        ).scalar_one()
        if orphans:
            found.append(f"passages of {orphans} keys that are not stored")
        counted, stored = conn.exec_driver_sql(
            f"SELECT (SELECT COALESCE(SUM(hashes), 0) FROM {docs}), (SELECT count(*) FROM {rows})"
        ).one()
        if int(counted) != int(stored):
            found.append(f"{stored} passage hashes stored where the documents count {counted}")
        return found

    def stats(self, conn: Connection) -> tuple[int, int]:
        """(documents, passage rows) stored."""
        docs = conn.execute(select(func.count()).select_from(self.tables.docs)).scalar_one()
        rows = conn.execute(select(func.count()).select_from(self.tables.passages)).scalar_one()
        return int(docs), int(rows)


def _packed(hashes: np.ndarray) -> bytes:
    """A document's hashes as its row keeps them: 8 bytes each, little-endian."""
    return hashes.astype("<i8", copy=False).tobytes()

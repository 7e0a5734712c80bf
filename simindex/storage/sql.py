"""Statements compiled once to the driver's SQL, the connection a thread
keeps for reads, and fingerprints as the rows the table stores."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from simindex.blocks import BlockLayout
from simindex.storage.backend import expect

# What a statement compiled to, by its SQLAlchemy cache key and the dialect
# (its class, parameter style and server version): a process's indexes share
# them, so an index opened again compiles nothing it compiled before. A text
# is a function of its key, so nothing can make an entry stale; the oldest go
# past _COMPILED_MAX.
_compiled: dict[tuple[Any, ...], tuple[str, bool, tuple[str, ...]]] = {}
_COMPILED_MAX = 512
_compiled_lock = threading.Lock()


def _compile(statement: Any, dialect: Any) -> tuple[str, bool, tuple[str, ...]]:
    """(driver SQL, whether positional, the parameters' order), compiled once a process."""
    cache_key = statement._generate_cache_key()
    key = None
    # (A parameter with a value of its own may be rendered into the text,
    # which its cache key leaves out: such a statement is compiled each time.)
    if cache_key is not None and all(
        b.value is None and not b.literal_execute for b in cache_key.bindparams
    ):
        key = (type(dialect), dialect.paramstyle, dialect.server_version_info, cache_key.key)
        found = _compiled.get(key)
        if found is not None:
            return found
    compiled = statement.compile(dialect=dialect, compile_kwargs={"render_postcompile": True})
    made = (str(compiled), bool(compiled.positional), tuple(compiled.positiontup or ()))
    if key is not None:
        with _compiled_lock:
            while len(_compiled) >= _COMPILED_MAX:
                del _compiled[next(iter(_compiled))]
            _compiled[key] = made
    return made


class Sql:
    """A statement compiled to the driver's own SQL and parameter style (once
    a process: see _compile)."""

    def __init__(self, statement: Any, dialect: Any, names: Sequence[str]) -> None:
        self.text, self.positional, order = _compile(statement, dialect)
        index = {name: i for i, name in enumerate(names)}
        self._order = [index[name] for name in (order if self.positional else names)]
        self._names = list(names)

    def params(self, values: Sequence[Any]) -> Any:
        """Driver parameters from values given in `names` order."""
        if self.positional:
            return tuple(values[i] for i in self._order)
        return dict(zip(self._names, values, strict=True))

    def many(self, rows: list[tuple[Any, ...]]) -> list[Any]:
        """Driver parameters for executemany; rows already in order pass as they are."""
        if self.positional and self._order == list(range(len(self._order))):
            return rows
        return [self.params(r) for r in rows]


class Kept:
    """A raw driver connection kept by one thread for reads; returned when dropped."""

    def __init__(self, raw: Any, *, autocommit: bool = False) -> None:
        self.raw = raw
        # psycopg: each read its own statement, without BEGIN and ROLLBACK
        # round trips (and back to transactions before the pool has it again).
        self.autocommit = autocommit
        if autocommit:
            raw.driver_connection.autocommit = True
        self.cursor = raw.cursor()
        self.pid = os.getpid()

    def lost(self, exc: BaseException, dialect: Any) -> bool:
        """Whether `exc` says the database has lost this connection (the
        driver's judgement: SQLAlchemy's ``is_disconnect``, not the message
        text); if so the pool drops it."""
        if not dialect.is_disconnect(exc, self.raw.dbapi_connection, self.cursor):
            return False
        with contextlib.suppress(Exception):  # (a cursor of a connection already gone)
            self.cursor.close()
        with contextlib.suppress(Exception):
            self.raw.invalidate()
        self.pid = -1  # (closed: __del__ leaves it alone)
        return True

    def close(self) -> None:
        try:
            if self.autocommit:
                self.raw.driver_connection.autocommit = False
            self.cursor.close()
            self.raw.close()
        except Exception:  # noqa: BLE001 - closing a connection that is already gone
            pass

    def __del__(self) -> None:
        if self.pid == os.getpid():
            self.close()


Signatures = Sequence[bytes | None]  # one per row of a chunk (None: no signature)
Chunk = tuple[list[str], np.ndarray, Signatures | None]  # keys, fingerprints, signatures


def block_rows(
    keys: Sequence[str],
    fingerprints: np.ndarray,
    layout: BlockLayout,
    signatures: Signatures | None = None,
) -> list[tuple[Any, ...]]:
    """(key, signed fingerprint, block values...) rows, computed with numpy,
    and each row's signature last when ``signatures`` are given."""
    fps = fingerprints.astype(np.uint64, copy=False)
    columns: list[Any] = [fps.view(np.int64).tolist()]
    for shift, mask in layout.spans():
        block = (fps >> np.uint64(shift)) & np.uint64(mask)
        columns.append(block.view(np.int64).tolist() if mask >> 63 else block.tolist())
    if signatures is not None:
        columns.append(signatures)
    return list(zip(keys, *columns, strict=True))


def with_version(rows: list[Any], generation: int | None, at: int = -1) -> list[Any]:
    """A lookup's rows, once the generation in the marker row (first column
    -1, the number in column ``at``) the same statement read with them is
    ``generation``; else Changed (backend.expect)."""
    marker = rows.pop() if rows and rows[-1][0] == -1 else None
    if marker is None:  # pragma: no cover - UNION ALL keeps its order in practice
        marker = next(r for r in rows if r[0] == -1)
        rows.remove(marker)
    expect(int(marker[at]), generation)
    return rows

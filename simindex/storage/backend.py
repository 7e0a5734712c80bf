"""One index's database: its engine, its transactions, its errors.

``Backend`` is what the rest of simindex holds: ``reading()`` is a read
transaction (one consistent snapshot under WAL), ``writing()`` a write
transaction that takes the write lock at its start (SQLite's ``BEGIN
IMMEDIATE``, retried while SQLite answers "busy" within the timeout; on
PostgreSQL writers run side by side, except one that changes the schema,
``alone``), and ``write()`` the same, counting itself so that its owner
knows the changes counted before and after it (for a held snapshot: see
accelerator.py), yielding a ``Write``. Every driver error becomes a
StorageError in ``db_error``, here and nowhere else.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from typing import NamedTuple

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError, NoSuchModuleError, SQLAlchemyError

from simindex import waits
from simindex.errors import DamagedIndexError, InvalidArgumentError, NoIndexError, StorageError
from simindex.storage.dialects import (
    BUSY_TIMEOUT_S,
    WRITE_OPTION,
    Capabilities,
    Dialect,
    dialect_for,
)
from simindex.storage.location import (
    SQLITE_BUSY,
    SQLITE_CORRUPT,
    SQLITE_LOCKED,
    SQLITE_NOTADB,
    SQLITE_READONLY,
    SQLITE_TOOBIG,
    Location,
    sqlite_code,
)

_PG_LOCK_NOT_AVAILABLE = "55P03"  # PostgreSQL's lock_timeout (SQLSTATE)


def _is_busy(exc: BaseException) -> bool:
    """Whether the database said another writer holds the lock: by SQLite's
    result code or PostgreSQL's SQLSTATE (the text only where Python 3.10's
    sqlite3 gives no code)."""
    orig = getattr(exc, "orig", None) or exc
    state = getattr(orig, "sqlstate", None)
    if state is not None:
        return bool(state == _PG_LOCK_NOT_AVAILABLE)
    code = sqlite_code(exc)
    if code is not None:
        return code in (SQLITE_BUSY, SQLITE_LOCKED)
    text = str(orig).lower()  # pragma: no cover - Python 3.10 gives no code
    return "locked" in text or "busy" in text


def _is_readonly(exc: BaseException) -> bool:
    code = sqlite_code(exc)
    if code is not None:
        return code == SQLITE_READONLY
    return "readonly" in str(getattr(exc, "orig", exc)).lower()  # pragma: no cover - 3.10


def is_damage(exc: BaseException) -> bool:
    """Whether SQLite said the file is damaged or is no database."""
    orig = getattr(exc, "orig", None) or exc
    code = sqlite_code(exc)
    if code is not None:
        return code in (SQLITE_CORRUPT, SQLITE_NOTADB, SQLITE_TOOBIG)
    # No code: Python 3.10, or sqlite3's own error for a text value that is
    # not UTF-8 (simindex writes none: the bytes were damaged).
    text = str(orig).lower()
    damage = ("malformed", "not a database", "could not decode to utf-8", "string or blob too big")
    return any(s in text for s in damage)


def describe_db_error(where: Location, exc: BaseException) -> str:
    """One line for a database error, without the SQL or any password."""
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    return f"{where}: {text}"


def db_error(where: Location, exc: BaseException) -> StorageError:
    """The StorageError for a database error: a DamagedIndexError where SQLite
    says the file is damaged, else one line without the SQL or any password."""
    if where.path is not None and is_damage(exc):
        return DamagedIndexError(where.path, describe_db_error(where, exc))
    return StorageError(describe_db_error(where, exc))


class Versions(NamedTuple):
    """What an index is at one moment, read together: the generation (the
    schema cookie on SQLite, which a rebuild moves; a row on PostgreSQL)
    and the changes of its fingerprint table counted by the database
    (dialects.CHANGES). What was read at one Versions is the index while
    the Versions read are the same."""

    generation: int
    changes: int


class Changed(Exception):
    """The index is not what a read was asked under: its generation moved
    (rebuilt or re-laid elsewhere, or its schema changed) or a held
    snapshot was found stale. Never reaches a user: the reader's one loop
    (simindex.view.Views.read) takes the index as it is now and asks again."""

    def __init__(self, generation: int | None = None) -> None:
        super().__init__(generation)
        self.generation = generation  # the one found, where known


def expect(found: int, generation: int | None) -> None:
    """Raise Changed unless a read under `generation` found that generation."""
    if found != generation:
        raise Changed(found)


@dataclass
class Write:
    """One write transaction that counts itself: its connection, the rows it
    wrote for a held snapshot ((id, signed fingerprint) of every key
    written; None: not known, which lets a snapshot go), and once it is
    done the changes counted before and after it."""

    conn: Connection
    rows: list[tuple[int, int]] | None = None
    before: int | None = None
    after: int | None = None


class Backend:
    """The database of one index (a SQLite file, ``:memory:`` or a PostgreSQL schema)."""

    def __init__(
        self,
        where: Location,
        *,
        timeout: float = BUSY_TIMEOUT_S,
        readonly: bool = False,
        immutable: bool = False,
    ) -> None:
        self.where = where
        self.timeout = timeout
        self.readonly = readonly
        self.dialect: Dialect = dialect_for(where)
        url = where.url
        try:
            self.engine = self.dialect.make_engine(
                where, timeout=timeout, readonly=readonly, immutable=immutable
            )
        except NoSuchModuleError as exc:
            raise InvalidArgumentError(
                f"unknown database kind in {where}: {url.drivername}"
            ) from exc
        except ImportError as exc:
            raise StorageError(
                f"the database driver for {url.drivername} is not installed "
                f"({exc.name or exc}){self.dialect.install_hint}"
            ) from exc
        # An in-memory database is one connection: its users take turns, every
        # transaction and statement on it holding ``turns`` (re-entrant: a
        # caller may hold it across several transactions that must not be
        # interleaved with another thread's).
        self.shared_connection = self.dialect.one_connection(where)
        self.turns: contextlib.AbstractContextManager[object] = (
            threading.RLock() if self.shared_connection else contextlib.nullcontext()
        )

    @cached_property
    def caps(self) -> Capabilities:
        """What this database can do, detected once."""
        return self.dialect.capabilities(self.engine)

    @property
    def driver_error(self) -> type[BaseException]:
        return self.engine.dialect.loaded_dbapi.Error

    def error(self, exc: BaseException) -> StorageError:
        return db_error(self.where, exc)

    @contextmanager
    def reading(self) -> Iterator[Connection]:
        """A read transaction (a consistent snapshot under WAL). Errors from
        SQLAlchemy, or from the driver's own cursors used inside it, become
        one StorageError."""
        try:
            with self.turns, self.engine.connect() as conn, conn.begin():
                yield conn
        except (SQLAlchemyError, self.driver_error) as exc:
            raise self.error(exc) from exc

    @contextmanager
    def writing(self, *, alone: bool = False, wait: float | None = None) -> Iterator[Connection]:
        """A write transaction that holds the write lock from its start; all or
        nothing. A writer that holds the lock longer than the timeout (or
        ``wait`` seconds, 0: as good as not at all; on PostgreSQL any lock its
        statements wait for) makes this fail with a StorageError."""
        with self.turns, self._transaction(alone=alone, wait=wait, counted=False) as write:
            yield write.conn

    @contextmanager
    def write(self, *, alone: bool = False) -> Iterator[Write]:
        """A write transaction that counts itself as its last statement
        (Dialect.count_write); once it has committed, ``Write.before`` and
        ``Write.after`` are the changes counted before and after it: where
        they differ by more than this write, someone else wrote too."""
        with self.turns, self._transaction(alone=alone, wait=None, counted=True) as write:
            yield write

    @contextmanager
    def _transaction(self, *, alone: bool, wait: float | None, counted: bool) -> Iterator[Write]:
        where = self.where
        timeout = self.timeout if wait is None else wait
        if self.readonly:
            raise StorageError(f"{where} is open read-only: nothing can be written to it")
        deadline = time.monotonic() + timeout

        def release(conn: Connection) -> None:
            if wait is not None:  # the pool's connections wait the usual time
                with contextlib.suppress(SQLAlchemyError, self.driver_error):
                    self.dialect.lock_wait(conn, self.timeout)
            conn.close()

        # A wait for the lock (SQLite: inside BEGIN IMMEDIATE, retried while
        # busy; PostgreSQL: begin_write's) is told to whoever listens (waits.py).
        with waits.noted(where, timeout) as taken:
            while True:
                try:
                    conn = self.engine.connect()
                except (SQLAlchemyError, self.driver_error) as exc:
                    raise self.error(exc) from exc
                try:
                    conn.execution_options(**{WRITE_OPTION: True})
                    if wait is not None:
                        self.dialect.lock_wait(conn, wait)
                    transaction = conn.begin()
                    break
                except DBAPIError as exc:
                    release(conn)
                    if not _is_busy(exc):
                        raise self.error(exc) from exc
                    if time.monotonic() >= deadline:
                        raise StorageError(
                            f"{where} is locked by another writer: gave up after {timeout:g} s"
                        ) from exc
                    time.sleep(0.05)
                except BaseException:
                    release(conn)
                    raise
            try:
                try:
                    with transaction:
                        before = self.dialect.begin_write(
                            conn, alone=alone, wait=wait, counted=counted
                        )
                        taken()
                        write = Write(conn)
                        yield write
                        if counted:
                            write.before, write.after = self.dialect.count_write(
                                conn, self.caps, before
                            )
                finally:
                    release(conn)
            except DBAPIError as exc:
                if _is_busy(exc):
                    raise StorageError(
                        f"{where} is locked by another writer: gave up after {timeout:g} s"
                    ) from exc
                if _is_readonly(exc):
                    raise StorageError(
                        f"{where} is read-only: nothing can be written to it"
                    ) from exc
                if exc.connection_invalidated:  # (the driver says the connection is gone)
                    raise StorageError(
                        f"{describe_db_error(where, exc)}: the connection was lost during a "
                        "write, which may or may not have been saved; the next call connects "
                        "again (writing the same rows again is safe: a key written twice keeps "
                        "the later one)"
                    ) from exc
                raise self.error(exc) from exc
            except (SQLAlchemyError, self.driver_error) as exc:
                raise self.error(exc) from exc

    def generation(self, conn: Connection) -> int:
        """A number that changes whenever the index is rebuilt or its schema changes."""
        return int(conn.exec_driver_sql(self.dialect.generation_sql).scalar_one())

    def versions(self, conn: Connection) -> Versions:
        """(generation, changes counted), in the caller's transaction; the
        changes read first: where reads are not one snapshot (PostgreSQL's
        READ COMMITTED), a write between shows as a count that what is read
        after it has not seen, which never matches again."""
        changes = self.dialect.changes(conn)
        return Versions(self.generation(conn), changes)

    def no_rebuild_meanwhile(self, conn: Connection) -> None:
        self.dialect.no_rebuild_meanwhile(conn)

    def use_wal(self) -> None:
        """Switch a SQLite index file to WAL (a setting the file keeps)."""
        try:
            with self.turns:
                self.dialect.use_wal(self.engine, self.where)
        except (SQLAlchemyError, self.driver_error) as exc:
            raise self.error(exc) from exc

    def ensure_schema(self, *, create: bool) -> None:
        """Make sure the PostgreSQL schema of ?schema= exists (creating it if asked)."""
        name = self.where.schema
        if name is None:
            return
        with self.reading() as conn:
            found = conn.exec_driver_sql(
                "SELECT 1 FROM pg_namespace WHERE nspname = %(name)s", {"name": name}
            ).first()
        if found is not None:
            return
        if not create:
            raise NoIndexError(f"no index at {self.where} (the database has no schema {name})")
        with self.writing() as conn:
            # CREATE SCHEMA IF NOT EXISTS is not safe against another session
            # making the same schema at once (one fails on pg_namespace's
            # unique key): the makers of one name take turns, and the later
            # finds it there. (The tables are made under the index's own lock.)
            conn.exec_driver_sql(
                "SELECT pg_advisory_xact_lock(hashtext('simindex:schema:' || %(name)s))",
                {"name": name},
            )
            conn.exec_driver_sql(f"CREATE SCHEMA IF NOT EXISTS {name}")

    def compact(self) -> None:
        """Rewrite the file without free pages (VACUUM) and empty the WAL into it."""
        try:
            with self.turns:
                self.dialect.compact(self.engine)
        except (SQLAlchemyError, self.driver_error) as exc:
            raise self.error(exc) from exc

    def dispose(self) -> None:
        self.engine.dispose()

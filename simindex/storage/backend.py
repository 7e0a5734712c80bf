"""One index's database: its engine, its transactions, its errors.

``Backend`` is what the rest of simindex holds: ``reading()`` is a read
transaction (one consistent snapshot under WAL), ``writing()`` a write
transaction that takes the write lock at its start (SQLite's ``BEGIN
IMMEDIATE``, retried while SQLite answers "busy" within the timeout; on
PostgreSQL writers run side by side, except one that changes the schema,
``alone``), and ``write()`` the same, counted for a held snapshot (see
accelerator.py), yielding a ``Write``. Every driver error becomes a
StorageError in ``db_error``, here and nowhere else.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError, NoSuchModuleError, SQLAlchemyError

from simindex.errors import DamagedIndexError, InvalidArgumentError, NotAnIndexError, StorageError
from simindex.storage.dialects import (
    BUSY_TIMEOUT_S,
    WRITE_OPTION,
    Capabilities,
    Dialect,
    dialect_for,
)
from simindex.storage.location import Location

# SQLite's primary result codes for a file that is damaged or is no database.
_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26


def _is_busy(exc: BaseException) -> bool:
    text = str(getattr(exc, "orig", exc)).lower()
    return "locked" in text or "busy" in text or "lock timeout" in text


def _is_damage(exc: BaseException) -> bool:
    orig = getattr(exc, "orig", None) or exc
    code = getattr(orig, "sqlite_errorcode", None)  # Python 3.11+
    if code is not None:
        return code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    # No code: Python 3.10, or sqlite3's own error for a text value that is
    # not UTF-8 (simindex writes none: the bytes were damaged).
    text = str(orig).lower()
    return any(s in text for s in ("malformed", "not a database", "could not decode to utf-8"))


def describe_db_error(where: Location, exc: BaseException) -> str:
    """One line for a database error, without the SQL or any password."""
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    return f"{where}: {text}"


def db_error(where: Location, exc: BaseException) -> StorageError:
    """The StorageError for a database error: a DamagedIndexError where SQLite
    says the file is damaged, else one line without the SQL or any password."""
    if where.path is not None and _is_damage(exc):
        return DamagedIndexError(where.path, describe_db_error(where, exc))
    return StorageError(describe_db_error(where, exc))


@dataclass
class Write:
    """One counted write transaction: its connection, the rows it wrote for a
    held snapshot ((id, signed fingerprint) of every key written; None: not
    known, which lets a snapshot go), and the count it made (SQLite)."""

    conn: Connection
    rows: list[tuple[int, int]] | None = None
    writes: int | None = None


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
            hint = " (pip install 'simindex[postgres]')" if where.postgres else ""
            raise StorageError(
                f"the database driver for {url.drivername} is not installed "
                f"({exc.name or exc}){hint}"
            ) from exc
        # An in-memory database is one connection: its users take turns.
        self.shared_connection = where.path is None and not where.postgres

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
            with self.engine.connect() as conn, conn.begin():
                yield conn
        except (SQLAlchemyError, self.driver_error) as exc:
            raise self.error(exc) from exc

    @contextmanager
    def writing(self, *, alone: bool = False, wait: float | None = None) -> Iterator[Connection]:
        """A write transaction that holds the write lock from its start; all or
        nothing. A writer that holds the lock longer than the timeout (or
        ``wait`` seconds, 0: as good as not at all; on PostgreSQL any lock its
        statements wait for) makes this fail with a StorageError."""
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
                    self.dialect.begin_write(conn, alone=alone, wait=wait)
                    yield conn
            finally:
                release(conn)
        except DBAPIError as exc:
            if _is_busy(exc):
                raise StorageError(
                    f"{where} is locked by another writer: gave up after {timeout:g} s"
                ) from exc
            if "readonly" in str(exc.orig).lower():
                raise StorageError(f"{where} is read-only: nothing can be written to it") from exc
            raise self.error(exc) from exc
        except (SQLAlchemyError, self.driver_error) as exc:
            raise self.error(exc) from exc

    @contextmanager
    def write(self, *, alone: bool = False) -> Iterator[Write]:
        """A write transaction counted as its last statement (SQLite: see
        Dialect.count_write), so that a held snapshot can tell its owner's
        writes from anyone else's; ``Write.writes`` is the count it made."""
        with self.writing(alone=alone) as conn:
            write = Write(conn)
            yield write
            write.writes = self.dialect.count_write(conn, self.caps)

    def schema_version(self, conn: Connection) -> int:
        """A number that changes whenever the index is rebuilt."""
        return int(conn.exec_driver_sql(self.dialect.generation_sql).scalar_one())

    def writes_counted(self, conn: Connection) -> int | None:
        return self.dialect.writes_counted(conn)

    def no_rebuild_meanwhile(self, conn: Connection) -> None:
        self.dialect.no_rebuild_meanwhile(conn)

    def use_wal(self) -> None:
        """Switch a SQLite index file to WAL (a setting the file keeps)."""
        try:
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
            raise NotAnIndexError(f"no index at {self.where} (the database has no schema {name})")
        with self.writing() as conn:
            conn.exec_driver_sql(f"CREATE SCHEMA IF NOT EXISTS {name}")

    def compact(self) -> None:
        """Rewrite the file without free pages (VACUUM) and empty the WAL into it."""
        try:
            self.dialect.compact(self.engine)
        except (SQLAlchemyError, self.driver_error) as exc:
            raise self.error(exc) from exc

    def dispose(self) -> None:
        self.engine.dispose()

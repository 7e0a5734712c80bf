"""Fingerprints <-> database: engines, pragmas, opening and migrating, reads and writes.

Everything that talks SQL lives here (schema.py describes the tables, Alembic
in migrations/ creates them). The statements are SQLAlchemy Core, so they run
on any database SQLAlchemy speaks; SQLite gets its pragmas on every new
connection: WAL for files (readers never wait for a writer), a busy timeout,
``synchronous=NORMAL``, and ``BEGIN IMMEDIATE`` for write transactions so a
writer takes the write lock up front instead of failing half-way.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import (
    URL,
    Connection,
    Engine,
    bindparam,
    create_engine,
    delete,
    event,
    func,
    inspect,
    make_url,
    select,
    union,
)
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from simindex import schema
from simindex.blocks import BlockLayout
from simindex.errors import (
    IndexVersionError,
    InvalidArgumentError,
    NotAnIndexError,
    StorageError,
)
from simindex.fingerprint import BITS, FingerprintConfig

FORMAT_VERSION = 1
# The Alembic revisions this simindex knows, oldest first (tests check them
# against migrations/versions). Kept here so opening an index needs no Alembic.
REVISIONS = ("0001",)
HEAD = REVISIONS[-1]
BUSY_TIMEOUT_S = 30.0
_SQLITE_HEADER = b"SQLite format 3\x00"
_WRITE = "simindex_write"


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("simindex")
    except PackageNotFoundError:
        return "0+checkout"


def migrations_dir() -> Path:
    """Where the Alembic scripts are: inside the installed package, or the checkout's."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "migrations", here.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise StorageError(f"simindex's migrations are missing (looked in {here})")


# --- locations and engines -------------------------------------------------


@dataclass(frozen=True)
class Location:
    url: URL
    path: Path | None  # the file, for a SQLite file database

    def __str__(self) -> str:
        if self.path is not None:
            return str(self.path)
        if self.url.drivername.startswith("sqlite") and not self.url.database:
            return ":memory:"
        return self.url.render_as_string(hide_password=True)


def locate(location: str | os.PathLike[str] | URL) -> Location:
    """A path, ":memory:" or an SQLAlchemy URL, resolved (nothing is opened)."""
    if isinstance(location, URL):
        url = location
    else:
        if not isinstance(location, (str, os.PathLike)):
            raise InvalidArgumentError(
                f"an index location is a path or a URL, not {type(location).__name__}"
            )
        text = os.fspath(location)
        if text in ("", ":memory:"):
            return Location(make_url("sqlite://"), None)
        if "://" in text:
            try:
                url = make_url(text)
            except ArgumentError as exc:
                raise InvalidArgumentError(f"not a database URL: {text!r}") from exc
        else:
            path = Path(text).expanduser().absolute()
            return Location(URL.create("sqlite", database=str(path)), path)
    if url.drivername.split("+")[0] == "sqlite" and url.database not in (None, "", ":memory:"):
        path = Path(url.database).expanduser().absolute()
        return Location(url.set(database=str(path)), path)
    return Location(url, None)


def check_file(where: Location, *, create: bool) -> None:
    """Refuse, before SQLite touches it, a file that cannot be or hold an index."""
    path = where.path
    if path is None:
        return
    if path.is_dir():
        raise InvalidArgumentError(f"{path} is a folder, not an index file")
    if not path.exists():
        if not create:
            raise NotAnIndexError(f"no index at {path}")
        if not path.parent.is_dir():
            raise InvalidArgumentError(f"cannot create {path}: folder {path.parent} does not exist")
        return
    try:
        with path.open("rb") as f:
            header = f.read(len(_SQLITE_HEADER))
    except OSError as exc:
        raise StorageError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if header and header != _SQLITE_HEADER:
        raise NotAnIndexError(
            f"{path} is not a simindex index (not a SQLite database); left untouched"
        )


def _on_sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # Let SQLAlchemy's "begin" event issue BEGIN itself (pysqlite's own
    # implicit transactions skip DDL and cannot take the write lock early).
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        cursor.execute("PRAGMA synchronous = NORMAL")
    finally:
        cursor.close()


def use_wal(engine: Engine, where: Location) -> None:
    """Switch a SQLite index file to WAL (a setting the file keeps).

    Done once the file is known to be an index, never on a file that is
    refused: changing the journal mode rewrites the database header.
    """
    if where.path is None or engine.dialect.name != "sqlite":
        return
    try:
        raw = engine.raw_connection()  # outside any transaction, as the pragma needs
        try:
            cursor = raw.cursor()
            if cursor.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                cursor.execute("PRAGMA journal_mode = WAL")
            cursor.close()
        finally:
            raw.close()
    except (SQLAlchemyError, sqlite3.Error) as exc:
        raise StorageError(describe_db_error(where, exc)) from exc


def _on_sqlite_begin(connection: Connection) -> None:
    write = connection.get_execution_options().get(_WRITE, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def make_engine(where: Location) -> Engine:
    url = where.url
    try:
        if url.drivername.split("+")[0] == "sqlite":
            if where.path is None:  # one shared in-memory database
                engine = create_engine(
                    url, poolclass=StaticPool, connect_args={"check_same_thread": False}
                )
            else:
                engine = create_engine(
                    url, connect_args={"timeout": BUSY_TIMEOUT_S, "check_same_thread": False}
                )
            event.listen(engine, "connect", _on_sqlite_connect)
            event.listen(engine, "begin", _on_sqlite_begin)
            return engine
        return create_engine(url, pool_pre_ping=True)
    except NoSuchModuleError as exc:
        raise InvalidArgumentError(f"unknown database kind in {where}: {url.drivername}") from exc
    except ImportError as exc:
        raise StorageError(
            f"the database driver for {url.drivername} is not installed ({exc.name or exc})"
        ) from exc


def describe_db_error(where: Location, exc: BaseException) -> str:
    """One line for a database error, without the SQL or any password."""
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    return f"{where}: {text}"


@contextmanager
def reading(engine: Engine, where: Location) -> Iterator[Connection]:
    """A read transaction (a consistent snapshot under WAL)."""
    try:
        with engine.connect() as conn, conn.begin():
            yield conn
    except SQLAlchemyError as exc:
        raise StorageError(describe_db_error(where, exc)) from exc


@contextmanager
def writing(engine: Engine, where: Location) -> Iterator[Connection]:
    """A write transaction that holds the write lock from its start; all or nothing."""
    try:
        with engine.connect() as conn:
            conn.execution_options(**{_WRITE: True})
            with conn.begin():
                yield conn
    except DBAPIError as exc:
        raise StorageError(describe_db_error(where, exc)) from exc
    except SQLAlchemyError as exc:
        raise StorageError(describe_db_error(where, exc)) from exc


# --- settings, creation and migration --------------------------------------


@dataclass(frozen=True)
class Settings:
    """What an index stores about itself in simindex_meta."""

    layout: BlockLayout
    config: FingerprintConfig
    format: int = FORMAT_VERSION
    created_by: str = ""

    @property
    def k(self) -> int:
        return self.layout.k

    def rows(self) -> dict[str, str]:
        return {
            "format": str(self.format),
            "bits": str(BITS),
            "k": str(self.layout.k),
            "blocks": json.dumps(list(self.layout.widths)),
            "fingerprint": self.config.to_json(),
            "created_by": self.created_by,
        }


def read_settings(conn: Connection, where: Location) -> tuple[Settings, str] | None:
    """(settings, Alembic revision) of an index, None for an empty database.

    Raises NotAnIndexError for a database that holds something else and
    IndexVersionError for an index written by a newer simindex.
    """
    tables = set(inspect(conn).get_table_names())
    if not tables:
        return None
    if schema.VERSION_TABLE not in tables or schema.META_TABLE not in tables:
        shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
        raise NotAnIndexError(
            f"{where} is a database but not a simindex index (its tables: {shown}); left untouched"
        )
    revision = conn.exec_driver_sql(f"SELECT version_num FROM {schema.VERSION_TABLE}").scalar()
    rows: dict[str, str] = dict(
        conn.exec_driver_sql(f"SELECT name, value FROM {schema.META_TABLE}").all()
    )
    fmt = int(rows.get("format", "0") or 0)
    mine = f"simindex {package_version()} (format {FORMAT_VERSION}, schema revision {HEAD})"
    if fmt > FORMAT_VERSION or revision not in REVISIONS:
        theirs = rows.get("created_by") or "a newer simindex"
        raise IndexVersionError(
            f"{where} was written by {theirs} (format {fmt}, schema revision {revision}); "
            f"this is {mine}: upgrade simindex to open it"
        )
    try:
        settings = Settings(
            layout=BlockLayout.from_widths(json.loads(rows["blocks"])),
            config=FingerprintConfig.from_json(rows["fingerprint"]),
            format=fmt,
            created_by=rows.get("created_by", ""),
        )
    except (KeyError, ValueError, TypeError) as exc:
        raise NotAnIndexError(f"{where}: the index's settings are damaged ({exc})") from exc
    if int(rows.get("k", settings.k)) != settings.k or int(rows.get("bits", BITS)) != BITS:
        raise NotAnIndexError(f"{where}: the index's settings disagree with each other")
    return settings, str(revision)


def upgrade(conn: Connection, n_blocks: int) -> None:
    """Bring the schema to the newest revision, inside the caller's transaction."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.attributes["connection"] = conn
    config.attributes["simindex.n_blocks"] = n_blocks
    command.upgrade(config, "head")


def create(conn: Connection, settings: Settings) -> None:
    """Create an index's tables and record its settings (one transaction)."""
    upgrade(conn, len(settings.layout.widths))
    tables = schema.build(len(settings.layout.widths))
    conn.execute(
        tables.meta.insert(), [{"name": n, "value": v} for n, v in settings.rows().items()]
    )


# --- fingerprint reads and writes ------------------------------------------

Row = tuple[str, int, list[int]]  # key, signed fingerprint, signed block values
_CHUNK = 500  # keys per IN (...) list, well under every database's parameter limit


class Statements:
    """The compiled-once statements of one index."""

    def __init__(self, n_blocks: int) -> None:
        self.tables = schema.build(n_blocks)
        t = self.tables.fingerprints
        self.n_blocks = n_blocks
        self.insert = t.insert()
        self.delete_keys = delete(t).where(t.c.key.in_(bindparam("keys", expanding=True)))
        self.get = select(t.c.fingerprint).where(t.c.key == bindparam("key"))
        self.count = select(func.count()).select_from(t)
        self.scan = select(t.c.key, t.c.fingerprint)
        self.candidates = union(
            *(
                select(t.c.key, t.c.fingerprint).where(
                    t.c[schema.block_column(i)] == bindparam(f"b{i}")
                )
                for i in range(n_blocks)
            )
        )

    def put(self, conn: Connection, rows: Sequence[Row]) -> None:
        """Insert rows, replacing any existing row with the same key."""
        for start in range(0, len(rows), _CHUNK):
            chunk = rows[start : start + _CHUNK]
            conn.execute(self.delete_keys, {"keys": [key for key, _, _ in chunk]})
            conn.execute(
                self.insert,
                [
                    {"key": key, "fingerprint": fp}
                    | {schema.block_column(i): b for i, b in enumerate(blocks)}
                    for key, fp, blocks in chunk
                ],
            )

    def remove(self, conn: Connection, keys: Sequence[str]) -> int:
        removed = 0
        for start in range(0, len(keys), _CHUNK):
            result = conn.execute(self.delete_keys, {"keys": list(keys[start : start + _CHUNK])})
            removed += result.rowcount
        return removed

    def fetch(self, conn: Connection, key: str) -> int | None:
        return conn.execute(self.get, {"key": key}).scalar()

    def size(self, conn: Connection) -> int:
        return int(conn.execute(self.count).scalar_one())

    def by_blocks(self, conn: Connection, blocks: Sequence[int]) -> Iterable[tuple[str, int]]:
        """(key, signed fingerprint) of every row that agrees with one block at least."""
        params = {f"b{i}": b for i, b in enumerate(blocks)}
        return conn.execute(self.candidates, params)

    def everything(self, conn: Connection) -> Iterable[tuple[str, int]]:
        return conn.execute(self.scan)

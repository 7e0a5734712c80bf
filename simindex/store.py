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
import re
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from sqlalchemy import (
    URL,
    BigInteger,
    Column,
    Connection,
    Engine,
    MetaData,
    Table,
    Text,
    and_,
    bindparam,
    create_engine,
    delete,
    event,
    func,
    inspect,
    literal_column,
    make_url,
    or_,
    select,
    union_all,
)
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from simindex import schema
from simindex.blocks import MAX_INDEX_K, BlockLayout, Probe, probes
from simindex.errors import (
    DamagedIndexError,
    IndexVersionError,
    InvalidArgumentError,
    NotAnIndexError,
    StorageError,
)
from simindex.fingerprint import BITS, FingerprintConfig, to_signed

FORMAT_VERSION = 2  # the newest format this simindex reads (see Settings.format)
# The Alembic revisions this simindex knows, oldest first (tests check them
# against migrations/versions). Kept here so opening an index needs no Alembic.
REVISIONS = ("0001",)
HEAD = REVISIONS[-1]
BUSY_TIMEOUT_S = 30.0
MMAP_BYTES = 1 << 40  # address space, not memory (SQLite caps it at its build limit, ~2 GB)
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


# A PostgreSQL schema name simindex accepts for ?schema= (no quoting needed).
_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


@dataclass(frozen=True)
class Location:
    url: URL  # what SQLAlchemy connects to (without simindex's own ?schema=)
    path: Path | None  # the file, for a SQLite file database
    schema: str | None = None  # the PostgreSQL schema holding the index

    @property
    def postgres(self) -> bool:
        return self.url.drivername.split("+")[0] in ("postgresql", "postgres")

    def __str__(self) -> str:
        if self.path is not None:
            return str(self.path)
        if self.url.drivername.startswith("sqlite") and not self.url.database:
            return ":memory:"
        url = self.url
        if self.schema is not None:
            url = url.update_query_dict({"schema": self.schema})
        return url.render_as_string(hide_password=True)


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
    kind = url.drivername.split("+")[0]
    if kind == "sqlite" and url.database not in (None, "", ":memory:"):
        path = Path(url.database).expanduser().absolute()
        return Location(url.set(database=str(path)), path)
    schema_name = url.query.get("schema")
    if schema_name is not None:
        shown = url.render_as_string(hide_password=True)
        if kind not in ("postgresql", "postgres"):
            raise InvalidArgumentError(f"?schema= is for PostgreSQL URLs only, not {shown}")
        if not isinstance(schema_name, str) or not _SCHEMA_NAME.fullmatch(schema_name):
            raise InvalidArgumentError(
                f"?schema= takes one name of lowercase letters, digits and _ "
                f"(at most 63, not starting with a digit), not {schema_name!r}"
            )
        url = url.difference_update_query(["schema"])
    if kind in ("postgresql", "postgres") and url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")  # the driver simindex[postgres] installs
    return Location(url, None, schema_name)


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


class FileAccess(NamedTuple):
    """How a SQLite index file can be opened, from what its file and folder
    allow this process (checked with os.access, so root's override counts)."""

    readonly: bool  # the file, or the folder that keeps its -wal/-shm, is not writable
    immutable: bool  # no -wal/-shm can be kept beside it: read it as a file nobody changes


def file_access(where: Location) -> FileAccess:
    """Whether an existing SQLite index file must be opened read-only, and how.

    In WAL mode SQLite reads through a -shm file beside the database (and
    writes through a -wal). Where the folder is not writable and neither file
    is there, they cannot be made: the file is read as it is, unchanging
    (``immutable``), which is right as long as nobody writes it meanwhile (a
    writer would need to make those files, which a folder nobody may write
    stops). Where they are there (a writer has the index open), SQLite reads
    through them read-only. A file that is not writable itself is opened
    read-only. Anything else opens as asked."""
    path = where.path
    if path is None or not path.is_file():
        return FileAccess(False, False)
    folder_writable = os.access(path.parent, os.W_OK | os.X_OK)
    file_writable = os.access(path, os.W_OK)
    if folder_writable and file_writable:
        return FileAccess(False, False)
    beside = [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm")]
    immutable = not folder_writable and not any(p.exists() for p in beside)
    return FileAccess(True, immutable)


def _on_sqlite_connect(timeout: float) -> Any:
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event issue BEGIN itself (pysqlite's own
        # implicit transactions skip DDL and cannot take the write lock early).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            cursor.execute("PRAGMA synchronous = NORMAL")
            # Read pages through a memory map instead of a read() call each: the
            # lookups of a query touch a few dozen pages scattered over the file.
            cursor.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
            # Let CREATE INDEX sort with helper threads (bulk loads rebuild indexes).
            cursor.execute(f"PRAGMA threads = {min(4, os.cpu_count() or 1)}")
        finally:
            cursor.close()

    return on_connect


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
        raise db_error(where, exc) from exc


def ensure_schema(engine: Engine, where: Location, *, create: bool) -> None:
    """Make sure the PostgreSQL schema of ?schema= exists (creating it if asked)."""
    if where.schema is None:
        return
    with reading(engine, where) as conn:
        found = conn.exec_driver_sql(
            "SELECT 1 FROM pg_namespace WHERE nspname = %(name)s", {"name": where.schema}
        ).first()
    if found is not None:
        return
    if not create:
        raise NotAnIndexError(f"no index at {where} (the database has no schema {where.schema})")
    with writing(engine, where) as conn:
        conn.exec_driver_sql(f"CREATE SCHEMA IF NOT EXISTS {where.schema}")


def _on_sqlite_begin(connection: Connection) -> None:
    write = connection.get_execution_options().get(_WRITE, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def make_engine(
    where: Location,
    *,
    timeout: float = BUSY_TIMEOUT_S,
    readonly: bool = False,
    immutable: bool = False,
) -> Engine:
    """An engine for the index: SQLite gets its pragmas on every connection.

    ``timeout``: how long a writer waits for another writer's lock.
    ``readonly``: open a SQLite file with ``mode=ro`` (every write is refused);
    ``immutable`` too: SQLite then reads it without its -wal/-shm files or
    locks, which is right only for a file nobody writes meanwhile.
    """
    url = where.url
    try:
        if url.drivername.split("+")[0] == "sqlite":
            if where.path is None:  # one shared in-memory database
                engine = create_engine(
                    url, poolclass=StaticPool, connect_args={"check_same_thread": False}
                )
            else:
                if readonly:
                    options = "mode=ro&immutable=1" if immutable else "mode=ro"
                    url = url.set(database=f"file:{where.path}?{options}", query={"uri": "true"})
                # Each thread keeps a connection for reads: no cap on how many.
                engine = create_engine(
                    url,
                    connect_args={"timeout": timeout, "check_same_thread": False},
                    pool_size=5,
                    max_overflow=-1,
                )
            event.listen(engine, "connect", _on_sqlite_connect(timeout))
            event.listen(engine, "begin", _on_sqlite_begin)
            return engine
        if where.postgres:
            return _postgres_engine(where, timeout)
        return create_engine(url, pool_pre_ping=True)
    except NoSuchModuleError as exc:
        raise InvalidArgumentError(f"unknown database kind in {where}: {url.drivername}") from exc
    except ImportError as exc:
        hint = " (pip install 'simindex[postgres]')" if where.postgres else ""
        raise StorageError(
            f"the database driver for {url.drivername} is not installed ({exc.name or exc}){hint}"
        ) from exc


def _postgres_engine(where: Location, timeout: float) -> Engine:
    """A pooled engine for a PostgreSQL server; every connection's search_path
    is the index's schema, so several indexes share one database."""
    args: dict[str, Any] = {"connect_timeout": max(1, min(int(timeout), 30))}
    if where.schema is not None:
        args["options"] = f"-c search_path={where.schema}"
    # Statements a connection runs again and again (the lookup) are prepared
    # by psycopg after their second run: no parsing or planning per query.
    args["prepare_threshold"] = 2
    engine = create_engine(
        where.url,
        connect_args=args,
        pool_size=5,
        max_overflow=20,
        pool_pre_ping=True,
    )
    event.listen(engine, "connect", _on_postgres_connect(timeout))
    return engine


def _on_postgres_connect(timeout: float) -> Any:
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        autocommit = dbapi_connection.autocommit
        dbapi_connection.autocommit = True
        try:
            cursor = dbapi_connection.cursor()
            cursor.execute(f"SET lock_timeout = {int(timeout * 1000)}")
            cursor.close()
        finally:
            dbapi_connection.autocommit = autocommit

    return on_connect


def _is_busy(exc: BaseException) -> bool:
    text = str(getattr(exc, "orig", exc)).lower()
    return "locked" in text or "busy" in text or "lock timeout" in text


# SQLite's primary result codes for a file that is damaged or is no database.
_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26


def _is_damage(exc: BaseException) -> bool:
    orig = getattr(exc, "orig", None) or exc
    code = getattr(orig, "sqlite_errorcode", None)  # Python 3.11+
    if code is not None:
        return code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    text = str(orig).lower()  # pragma: no cover - Python 3.10 gives no code
    return "malformed" in text or "not a database" in text


def db_error(where: Location, exc: BaseException) -> StorageError:
    """The StorageError for a database error: a DamagedIndexError where SQLite
    says the file is damaged, else one line without the SQL or any password."""
    if where.path is not None and _is_damage(exc):
        return DamagedIndexError(where.path, describe_db_error(where, exc))
    return StorageError(describe_db_error(where, exc))


def describe_db_error(where: Location, exc: BaseException) -> str:
    """One line for a database error, without the SQL or any password."""
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    return f"{where}: {text}"


@contextmanager
def reading(engine: Engine, where: Location) -> Iterator[Connection]:
    """A read transaction (a consistent snapshot under WAL).

    Errors from SQLAlchemy, or from the driver's own cursors used inside it,
    become one StorageError."""
    try:
        with engine.connect() as conn, conn.begin():
            yield conn
    except SQLAlchemyError as exc:
        raise db_error(where, exc) from exc
    except engine.dialect.loaded_dbapi.Error as exc:
        raise db_error(where, exc) from exc


# PostgreSQL: every write transaction holds this advisory lock (one per
# schema), shared; creating, upgrading or rebuilding an index holds it alone.
# So a write never runs against a layout a rebuild is replacing meanwhile.
_ADVISORY_KEY = "hashtext('simindex:' || COALESCE(current_schema(), ''))"


def no_rebuild_meanwhile(conn: Connection) -> None:
    """PostgreSQL: hold off creation, upgrades and rebuilds until the caller's
    transaction ends (waiting for one that is running)."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock_shared({_ADVISORY_KEY})")


@contextmanager
def writing(
    engine: Engine, where: Location, *, timeout: float = BUSY_TIMEOUT_S, alone: bool = False
) -> Iterator[Connection]:
    """A write transaction that holds the write lock from its start; all or nothing.

    Waiting for another writer is SQLite's busy timeout; where SQLite still
    answers "busy" before the timeout is up, the start is retried until it is.
    A writer that holds the lock longer makes this fail with a StorageError.
    On PostgreSQL writers run side by side (row locks), except one that
    changes the schema (``alone``): it waits for the others, and they for it.
    """
    if engine.url.query.get("uri") and "mode=ro" in str(engine.url.database):
        raise StorageError(f"{where} is open read-only: nothing can be written to it")
    deadline = time.monotonic() + timeout
    while True:
        conn = engine.connect()
        try:
            conn.execution_options(**{_WRITE: True})
            transaction = conn.begin()
            break
        except DBAPIError as exc:
            conn.close()
            if not _is_busy(exc):
                raise db_error(where, exc) from exc
            if time.monotonic() >= deadline:
                raise StorageError(
                    f"{where} is locked by another writer: gave up after {timeout:g} s"
                ) from exc
            time.sleep(0.05)
        except BaseException:
            conn.close()
            raise
    try:
        with conn, transaction:
            if engine.dialect.name == "postgresql" and alone:
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_ADVISORY_KEY})")
            else:
                no_rebuild_meanwhile(conn)
            yield conn
    except DBAPIError as exc:
        if _is_busy(exc):
            raise StorageError(
                f"{where} is locked by another writer: gave up after {timeout:g} s"
            ) from exc
        if "readonly" in str(exc.orig).lower():
            raise StorageError(f"{where} is read-only: nothing can be written to it") from exc
        raise db_error(where, exc) from exc
    except SQLAlchemyError as exc:
        raise db_error(where, exc) from exc
    except engine.dialect.loaded_dbapi.Error as exc:
        raise db_error(where, exc) from exc


# --- settings, creation and migration --------------------------------------


@dataclass(frozen=True)
class Settings:
    """What an index stores about itself in simindex_meta.

    ``distance`` is the index's k, the distance queries use by default; the
    layout's tables answer up to ``layout.k`` by exact lookups and beyond it
    by probes (a layout of k or fewer blocks). None means ``layout.k``.
    """

    layout: BlockLayout
    config: FingerprintConfig
    created_by: str = ""
    distance: int | None = None

    def __post_init__(self) -> None:
        if self.distance is None:
            object.__setattr__(self, "distance", self.layout.k)

    @property
    def k(self) -> int:
        assert self.distance is not None  # set in __post_init__
        return self.distance

    @property
    def format(self) -> int:
        """2 for an index whose k is above its layout's (probed lookups), which
        a simindex of format 1 would misread; 1 for the others."""
        return 1 if self.k == self.layout.k else 2

    def rows(self) -> dict[str, str]:
        return {
            "format": str(self.format),
            "bits": str(BITS),
            "k": str(self.k),
            "blocks": json.dumps(list(self.layout.widths)),
            "tables": json.dumps([list(t) for t in self.layout.tables]),
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
        layout = BlockLayout.from_stored(json.loads(rows["blocks"]), json.loads(rows["tables"]))
        settings = Settings(
            layout=layout,
            config=FingerprintConfig.from_json(rows["fingerprint"]),
            created_by=rows.get("created_by", ""),
            distance=int(rows.get("k", layout.k)),
        )
    except (KeyError, ValueError, TypeError) as exc:
        raise NotAnIndexError(f"{where}: the index's settings are damaged ({exc})") from exc
    k = settings.k
    if (
        not layout.k <= k <= MAX_INDEX_K
        or (k > layout.k and probes(layout, k) is None)
        or settings.format != fmt
        or int(rows.get("bits", BITS)) != BITS
    ):
        raise NotAnIndexError(f"{where}: the index's settings disagree with each other")
    return settings, str(revision)


def upgrade(conn: Connection, layout: BlockLayout) -> None:
    """Bring the schema to the newest revision, inside the caller's transaction."""
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    config.attributes["connection"] = conn
    config.attributes["simindex.layout"] = {
        "widths": list(layout.widths),
        "tables": [list(t) for t in layout.tables],
    }
    command.upgrade(config, "head")


def create(conn: Connection, settings: Settings) -> None:
    """Create an index's tables and record its settings (one transaction)."""
    upgrade(conn, settings.layout)
    tables = schema.build(settings.layout)
    conn.execute(
        tables.meta.insert(), [{"name": n, "value": v} for n, v in settings.rows().items()]
    )


def write_settings(conn: Connection, settings: Settings) -> None:
    """Replace the stored settings (inside the caller's transaction)."""
    meta = schema.build(settings.layout).meta
    conn.execute(meta.delete())
    conn.execute(meta.insert(), [{"name": n, "value": v} for n, v in settings.rows().items()])


# --- rebuilding ---------------------------------------------------------------

STAGING_TABLE = "simindex_rebuild_staging"  # fingerprints of a rebuild's source
NEXT_TABLE = "simindex_fingerprints_next"  # the new table, until it takes over


def _staging() -> Table:
    return Table(
        STAGING_TABLE,
        MetaData(),
        Column("key", Text, primary_key=True),
        Column("fingerprint", BigInteger, nullable=False),
    )


def start_staging(conn: Connection) -> None:
    conn.exec_driver_sql(f"DROP TABLE IF EXISTS {STAGING_TABLE}")
    _staging().create(conn)


def stage(conn: Connection, keys: Sequence[str], fingerprints: np.ndarray) -> None:
    """Put source fingerprints in the staging table (a later key wins)."""
    table = _staging()
    values = fingerprints.astype(np.uint64, copy=False).view(np.int64).tolist()
    if conn.dialect.name == "sqlite":
        from sqlalchemy.dialects.sqlite import insert
    else:
        from sqlalchemy.dialects.postgresql import insert  # type: ignore[assignment]
    statement = insert(table)
    statement = statement.on_conflict_do_update(
        index_elements=[table.c.key], set_={"fingerprint": statement.excluded.fingerprint}
    )
    conn.execute(
        statement, [{"key": k, "fingerprint": v} for k, v in zip(keys, values, strict=True)]
    )


def swap_in(conn: Connection, settings: Settings, *, from_staging: bool) -> int:
    """Fill a new fingerprint table laid out as `settings` says, from the staging
    table or from the current table, and put it in the current one's place, with
    the new settings: all in the caller's transaction. Returns the rows."""
    layout = settings.layout
    sqlite = conn.dialect.name == "sqlite"
    generation = None if sqlite else schema_version(conn)
    # SQLite lets two tables' constraints share a name; elsewhere the new
    # table's are named after it until the old table is gone.
    new = schema.build(
        layout, name=NEXT_TABLE, lookups=False, own_constraint_names=not sqlite
    ).fingerprints
    conn.exec_driver_sql(f"DROP TABLE IF EXISTS {NEXT_TABLE}")
    new.create(conn)
    source = _staging() if from_staging else schema.build(layout).fingerprints
    fp = source.c.fingerprint
    blocks = [
        fp if mask >> 63 else fp.op(">>")(literal_column(str(shift))).op("&")(mask)
        for shift, mask in layout.spans()
    ]
    columns = ["key", "fingerprint", *(schema.block_column(i) for i in range(len(blocks)))]
    query = select(source.c.key, fp, *blocks)
    if not from_staging:  # keep each row's id, so "first added" survives a re-layout
        columns.insert(0, "id")
        query = select(source.c.id, source.c.key, fp, *blocks)
    conn.execute(new.insert().from_select(columns, query))
    conn.exec_driver_sql(f"DROP TABLE {schema.FINGERPRINT_TABLE}")
    conn.exec_driver_sql(f"ALTER TABLE {NEXT_TABLE} RENAME TO {schema.FINGERPRINT_TABLE}")
    if not sqlite:
        real = schema.FINGERPRINT_TABLE
        pairs = zip(schema.constraint_names(NEXT_TABLE), schema.constraint_names(real), strict=True)
        for old, name in pairs:
            conn.exec_driver_sql(f"ALTER INDEX {old} RENAME TO {name}")
        # Rows kept their ids: the id sequence goes on after the largest.
        conn.exec_driver_sql(
            f"SELECT setval(pg_get_serial_sequence('{real}', 'id'), "
            f"COALESCE((SELECT MAX(id) FROM {real}), 0) + 1, false)"
        )
    for index in schema.build(layout).lookups:
        index.create(conn)
    if from_staging:
        conn.exec_driver_sql(f"DROP TABLE {STAGING_TABLE}")
    write_settings(conn, settings)
    if generation is not None:
        meta = schema.build(layout).meta
        conn.execute(meta.insert(), [{"name": "generation", "value": str(generation + 1)}])
        conn.exec_driver_sql(f"ANALYZE {schema.FINGERPRINT_TABLE}")
    final = schema.build(layout).fingerprints
    return int(conn.execute(select(func.count()).select_from(final)).scalar_one())


# What a lookup reads beside its rows to notice a rebuild made elsewhere:
# SQLite's schema cookie (changes with every change of the schema), or on
# other databases the generation a rebuild counts up in simindex_meta.
_GENERATION = (
    f"CAST(COALESCE((SELECT value FROM {schema.META_TABLE} WHERE name = 'generation'), '0') "
    "AS BIGINT)"
)
SQLITE_COOKIE_SQL = "SELECT schema_version FROM pragma_schema_version"
GENERATION_SQL = f"SELECT {_GENERATION}"
# SQLite: the write transactions of simindex counted in simindex_meta (the
# row is made by the first one), so that a holder of fingerprints in memory
# can tell its own writes (which it applies) from anyone else's.
_CHANGES = f"(SELECT CAST(value AS INTEGER) FROM {schema.META_TABLE} WHERE name = 'changes')"
_COUNT_WRITE_SQL = (
    f"INSERT INTO {schema.META_TABLE} (name, value) VALUES ('changes', '1') "
    "ON CONFLICT (name) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT)"
)
_SQLITE_VERSIONS_SQL = (
    "SELECT (SELECT data_version FROM pragma_data_version), "
    f"(SELECT schema_version FROM pragma_schema_version), COALESCE({_CHANGES}, 0)"
)


def count_write(conn: Connection) -> int | None:
    """SQLite, inside a write transaction: count it; returns the count it makes
    (the one before it is that minus one: the write lock is held). None elsewhere.

    One statement where SQLite has RETURNING (3.35): reading the table again
    in the write transaction cost about 100 us (a single add costs ~170)."""
    if conn.dialect.name != "sqlite":
        return None
    if sqlite3.sqlite_version_info >= (3, 35):
        return int(conn.exec_driver_sql(f"{_COUNT_WRITE_SQL} RETURNING value").scalar_one())
    conn.exec_driver_sql(_COUNT_WRITE_SQL)
    return int(conn.exec_driver_sql(f"SELECT {_CHANGES}").scalar_one())


def writes_counted(conn: Connection) -> int | None:
    """SQLite: the write transactions counted so far (see count_write), read in
    the caller's transaction; None elsewhere."""
    if conn.dialect.name != "sqlite":
        return None
    return int(conn.exec_driver_sql(f"SELECT COALESCE({_CHANGES}, 0)").scalar_one())


def _generation_sql(dialect_name: str) -> str:
    return SQLITE_COOKIE_SQL if dialect_name == "sqlite" else GENERATION_SQL


def schema_version(conn: Connection) -> int:
    """A number that changes whenever the index is rebuilt (see _GENERATION)."""
    return int(conn.exec_driver_sql(_generation_sql(conn.dialect.name)).scalar_one())


# --- fingerprint reads and writes ------------------------------------------

MAX_PROBE_K = 32  # probing past this is never cheaper than reading every row
_CHUNK = 500  # keys per IN (...) list, well under every database's parameter limit
_RETURNED_ROWS = 16  # Store.put: rows written one by one to return their ids
_LOAD_CHUNK = 5000  # rows per executemany
FAST_LOAD_MIN = 20_000  # rows into one transaction before the lookup indexes are set aside


class _Sql:
    """A statement compiled once to the driver's own SQL and parameter style."""

    def __init__(self, statement: Any, dialect: Any, names: Sequence[str]) -> None:
        compiled = statement.compile(dialect=dialect, compile_kwargs={"render_postcompile": True})
        self.text = str(compiled)
        self.positional = bool(compiled.positional)
        order = list(compiled.positiontup or []) if self.positional else list(names)
        index = {name: i for i, name in enumerate(names)}
        self._order = [index[name] for name in order]
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


class _Held:
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


def block_rows(
    keys: Sequence[str], fingerprints: np.ndarray, layout: BlockLayout
) -> list[tuple[Any, ...]]:
    """(key, signed fingerprint, block values...) rows, computed with numpy."""
    fps = fingerprints.astype(np.uint64, copy=False)
    columns = [fps.view(np.int64).tolist()]
    for shift, mask in layout.spans():
        block = (fps >> np.uint64(shift)) & np.uint64(mask)
        columns.append(block.view(np.int64).tolist() if mask >> 63 else block.tolist())
    return list(zip(keys, *columns, strict=True))


def _with_version(rows: list[Any]) -> tuple[list[Any], int]:
    """A lookup's rows, and the schema cookie or generation from the marker row
    (first column -1, the number last) the same statement read with them."""
    marker = rows.pop() if rows and rows[-1][0] == -1 else None
    if marker is None:  # pragma: no cover - UNION ALL keeps its order in practice
        marker = next(r for r in rows if r[0] == -1)
        rows.remove(marker)
    return rows, int(marker[-1])


class Store:
    """The fingerprint table of one index: every statement simindex runs on it.

    Single lookups go straight to the driver (statements compiled once by
    SQLAlchemy for this database) on a connection each thread keeps; writes
    run in SQLAlchemy transactions that take the write lock at their start.
    """

    def __init__(self, engine: Engine, where: Location, layout: BlockLayout) -> None:
        self.engine = engine
        self.where = where
        self.layout = layout
        self.tables = schema.build(layout)
        t = self.tables.fingerprints
        dialect = engine.dialect
        blocks = [schema.block_column(i) for i in range(len(layout.widths))]
        names = ["key", "fingerprint", *blocks]
        self._upsert = _Sql(self._upsert_statement(dialect.name, names), dialect, names)
        self._insert_new = _Sql(
            self._upsert_statement(dialect.name, names, keep=True), dialect, names
        )
        self._replace_by_delete = dialect.name not in ("sqlite", "postgresql")
        # Lookups read (id, fingerprint) from the covering indexes alone; the
        # keys of the few rows within k are read afterwards (rows_by_id).
        lookups = [
            select(t.c.id, t.c.fingerprint).where(
                *(t.c[blocks[b]] == bindparam(f"t{j}_b{b}") for b in table)
            )
            for j, table in enumerate(layout.tables)
        ]
        self._lookup_names = [f"t{j}_b{b}" for j, table in enumerate(layout.tables) for b in table]
        self._lookup = _Sql(union_all(*lookups), dialect, self._lookup_names)
        # Plus the schema cookie or generation, read in the same snapshot.
        self._generation = _generation_sql(dialect.name)
        self._lookup_text = (
            f"{self._lookup.text} UNION ALL {self._generation.replace('SELECT ', 'SELECT -1, ', 1)}"
        )
        # PostgreSQL: the Hamming filter and the keys in the same statement.
        self.matches_on_server = (
            dialect.name == "postgresql"
            and not self._lookup.positional
            and (dialect.server_version_info or (0,)) >= (14,)  # bit_count(bit)
        )
        if self.matches_on_server:
            distance = "bit_count((c.fingerprint # %(query_fp)s::bigint)::bit(64))"
            self._matches_text = (
                f"WITH c AS ({self._lookup.text}), "
                f"m AS (SELECT DISTINCT c.id FROM c WHERE {distance} <= %(query_k)s::int) "
                f"SELECT f.id, f.key, f.fingerprint FROM m JOIN {schema.FINGERPRINT_TABLE} f "
                f"ON f.id = m.id UNION ALL SELECT -1, NULL, {_GENERATION}"
            )
        spans = layout.spans()
        # (shift, mask) of each lookup parameter, in the driver's order.
        ordered = [self._lookup_names[i] for i in self._lookup._order]
        self._lookup_spans = [spans[int(name.rsplit("_b", 1)[1])] for name in ordered]
        self._lookup_signed = max(layout.widths) == BITS  # a single 64-bit block
        self._by_id: dict[int, _Sql] = {}
        self._probe_sql: dict[int, tuple[_Sql, list[Probe]]] = {}
        self._get = _Sql(
            select(t.c.fingerprint).where(t.c.key == bindparam("key")), dialect, ["key"]
        )
        self.delete_keys = delete(t).where(t.c.key.in_(bindparam("keys", expanding=True)))
        self.count = select(func.count()).select_from(t)
        self.scan = select(t.c.id, t.c.key, t.c.fingerprint)
        self._load = _Sql(select(t.c.id, t.c.fingerprint), dialect, [])
        self._max_id = _Sql(select(func.max(t.c.id)), dialect, [])
        self.keys_by_id = select(t.c.id, t.c.key).where(
            t.c.id.in_(bindparam("ids", expanding=True))
        )
        self._local = threading.local()
        # SQLite and PostgreSQL read connections run without a transaction
        # (each statement reads one snapshot); other drivers open one, ended
        # after each read.
        self._autocommit = dialect.name in ("sqlite", "postgresql")
        self._held: list[_Held] = []
        self._held_lock = threading.Lock()
        self._versions_conn: _Held | None = None  # see versions
        self._versions_lock = threading.Lock()
        # The schema cookie under which this layout is the file's (SQLite):
        # a lookup that ran under another cookie may have used a new layout.
        self.valid_for: int | None = None

    def _upsert_statement(self, dialect_name: str, names: list[str], *, keep: bool = False) -> Any:
        t = self.tables.fingerprints
        values: dict[str, Any] = {name: bindparam(name) for name in names}
        insert: Any
        if dialect_name == "sqlite":
            from sqlalchemy.dialects.sqlite import insert
        elif dialect_name == "postgresql":
            from sqlalchemy.dialects.postgresql import insert
        else:  # pragma: no cover - other databases: delete, then insert
            return t.insert().values(values)
        statement = insert(t).values(values)
        if keep:
            return statement.on_conflict_do_nothing(index_elements=[t.c.key])
        return statement.on_conflict_do_update(
            index_elements=[t.c.key],
            set_={name: statement.excluded[name] for name in names if name != "key"},
        )

    # --- the read hot path ---------------------------------------------------

    def _connection(self) -> _Held:
        held: _Held | None = getattr(self._local, "held", None)
        if held is None or held.pid != os.getpid():
            try:
                held = _Held(
                    self.engine.raw_connection(),
                    autocommit=self.engine.dialect.name == "postgresql",
                )
            except SQLAlchemyError as exc:
                raise db_error(self.where, exc) from exc
            self._local.held = held
            with self._held_lock:
                self._held.append(held)
        return held

    def _read(self, sql: str, params: Any) -> list[Any]:
        held = self._connection()
        try:
            held.cursor.execute(sql, params)
            rows: list[Any] = held.cursor.fetchall()
            if not self._autocommit:
                held.raw.rollback()  # end the read's transaction
        except Exception as exc:
            if not self._autocommit:
                try:
                    held.raw.rollback()  # or the connection refuses every later statement
                except Exception:  # noqa: BLE001 - the connection is gone: drop it
                    self._local.held = None
            if isinstance(exc, self.engine.dialect.loaded_dbapi.Error):
                raise db_error(self.where, exc) from exc
            raise
        return rows

    def lookup(self, fingerprint: int) -> tuple[list[tuple[int, int]], int | None]:
        """(id, signed fingerprint) of every row agreeing with the fingerprint
        on all blocks of at least one table (a row may come more than once),
        and the schema cookie or generation the lookup ran under."""
        params = self._lookup_params(fingerprint)
        driver: Any = params
        if not self._lookup.positional:  # named style: _order is the names' order
            driver = dict(zip(self._lookup_names, params, strict=True))
        return _with_version(self._read(self._lookup_text, driver))

    def _lookup_params(self, fingerprint: int) -> tuple[int, ...]:
        """The query's block values, in the lookup's parameter order."""
        params = tuple([(fingerprint >> shift) & mask for shift, mask in self._lookup_spans])
        if self._lookup_signed:
            params = tuple(to_signed(p) for p in params)
        return params

    def lookup_matches(self, fingerprint: int, k: int) -> tuple[list[Any], int | None]:
        """PostgreSQL: (id, key, signed fingerprint) of the rows within k, and the
        generation, in one round trip: the candidates come from the indexes
        alone (index-only scans), the server keeps those within k and only
        then reads their keys."""
        driver = dict(zip(self._lookup_names, self._lookup_params(fingerprint), strict=True))
        driver |= {"query_fp": to_signed(fingerprint), "query_k": k}
        return _with_version(self._read(self._matches_text, driver))

    def can_probe(self, k: int) -> bool:
        """Whether probe_lookup answers k (a few probes), rather than a full scan."""
        if k in self._probe_sql:
            return True
        return k <= MAX_PROBE_K and probes(self.layout, k) is not None

    def probe_lookup(
        self, fingerprint: int, k: int
    ) -> tuple[list[tuple[int, int]], int | None] | None:
        """Like lookup, for a k above the layout's: every row agreeing with one
        of the probes (see blocks.probes) on a table's blocks. None when that
        would take more than blocks.MAX_PROBES lookups."""
        plan = self._probe_sql.get(k)
        if plan is None:
            found = probes(self.layout, k)
            if found is None:
                return None
            plan = self._probe_sql[k] = self._compile_probes(found)
        sql, found = plan
        values = self.layout.blocks(fingerprint)
        unsigned = [(fingerprint >> shift) & mask for shift, mask in self.layout.spans()]
        params: list[int] = []
        for probe in found:
            table = self.layout.tables[probe.table]
            for b, flip in zip(table, probe.flips, strict=True):
                params.append(to_signed(unsigned[b] ^ flip) if flip else values[b])
        return _with_version(self._read(sql.text, sql.params(params)))

    def _compile_probes(self, found: list[Probe]) -> tuple[_Sql, list[Probe]]:
        t = self.tables.fingerprints
        blocks = [schema.block_column(i) for i in range(len(self.layout.widths))]
        names: list[str] = []
        per_table: dict[int, list[Any]] = {}
        for i, probe in enumerate(found):
            table = self.layout.tables[probe.table]
            terms = []
            for b in table:
                names.append(f"p{i}_{b}")
                terms.append(t.c[blocks[b]] == bindparam(names[-1]))
            per_table.setdefault(probe.table, []).append(and_(*terms))
        selects = []
        for j, terms in per_table.items():
            table = self.layout.tables[j]
            if len(table) == 1:  # one column: an IN list, one index seek per value
                column = t.c[blocks[table[0]]]
                values = [term.right for term in terms]
                selects.append(select(t.c.id, t.c.fingerprint).where(column.in_(values)))
            else:  # several: OR of equalities, an index seek per term
                selects.append(select(t.c.id, t.c.fingerprint).where(or_(*terms)))
        sql = _Sql(union_all(*selects), self.engine.dialect, names)
        marker = self._generation.replace("SELECT ", "SELECT -1, ", 1)
        sql.text = f"{sql.text} UNION ALL {marker}"
        return sql, found

    def rows_by_key(self, conn: Connection, keys: Sequence[str]) -> list[tuple[int, int]]:
        """SQLite: (id, signed fingerprint) of the rows of these keys, in the
        caller's transaction (statements written out: this follows every
        write of a thread that holds a snapshot, often of one key)."""
        rows: list[tuple[int, int]] = []
        for start in range(0, len(keys), _CHUNK):
            chunk = tuple(keys[start : start + _CHUNK])
            marks = ", ".join("?" * len(chunk))
            sql = f"SELECT id, fingerprint FROM {schema.FINGERPRINT_TABLE} WHERE key IN ({marks})"
            rows += [(int(i), int(f)) for i, f in conn.exec_driver_sql(sql, chunk)]
        return rows

    def rows_by_id(self, ids: Sequence[int]) -> list[tuple[int, str, int]]:
        """(id, key, signed fingerprint) of the rows with these ids (a few)."""
        sql = self._by_id.get(len(ids))
        if sql is None:
            t = self.tables.fingerprints
            names = [f"id{i}" for i in range(len(ids))]
            statement = select(t.c.id, t.c.key, t.c.fingerprint).where(
                t.c.id.in_([bindparam(n) for n in names])
            )
            sql = self._by_id[len(ids)] = _Sql(statement, self.engine.dialect, names)
        return self._read(sql.text, sql.params(list(ids)))

    def versions(self) -> tuple[int, int, int] | None:
        """(data_version, schema cookie, write transactions counted) in one
        read, or None where the database has no data_version. data_version
        changes when a connection other than the one reading it commits, so
        its values are comparable only on one connection: every thread reads
        it on the same one (the accelerator's snapshot is shared by them)."""
        if self.engine.dialect.name != "sqlite":
            return None
        with self._versions_lock:
            held = self._versions_conn
            if held is None or held.pid != os.getpid():
                try:
                    held = self._versions_conn = _Held(self.engine.raw_connection())
                except SQLAlchemyError as exc:
                    raise db_error(self.where, exc) from exc
                with self._held_lock:
                    self._held.append(held)
            try:
                row = held.cursor.execute(_SQLITE_VERSIONS_SQL, ()).fetchone()
            except self.engine.dialect.loaded_dbapi.Error as exc:
                raise db_error(self.where, exc) from exc
        return int(row[0]), int(row[1]), int(row[2])

    def schema_version(self) -> int:
        """The schema cookie or generation (see _GENERATION), read on this
        thread's connection."""
        return int(self._read(self._generation, ())[0][0])

    def estimated_size(self) -> int:
        """The largest row id: at least the row count, and read in one seek."""
        rows = self._read(self._max_id.text, self._max_id.params([]))
        return int(rows[0][0] or 0)

    def fetch(self, key: str) -> int | None:
        rows = self._read(self._get.text, self._get.params([key]))
        return rows[0][0] if rows else None

    # --- reads in one snapshot ---------------------------------------------

    def size(self, conn: Connection) -> int:
        return int(conn.execute(self.count).scalar_one())

    def everything(self, conn: Connection) -> Iterable[tuple[int, str, int]]:
        return conn.execute(self.scan)  # type: ignore[return-value,unused-ignore]

    def load(self, conn: Connection) -> tuple[np.ndarray, np.ndarray]:
        """(ids, unsigned fingerprints) of every row, as numpy arrays.

        Read through the driver's own cursor, inside the caller's transaction:
        building result rows for a million fingerprints costs far more than
        reading them.
        """
        dbapi = conn.connection.dbapi_connection
        assert dbapi is not None  # an open connection inside a transaction
        cursor = dbapi.cursor()
        try:
            cursor.execute(self._load.text, self._load.params([]))
            parts = []
            while rows := cursor.fetchmany(100_000):
                flat = np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=2 * len(rows))
                parts.append(flat.reshape(-1, 2))
        finally:
            cursor.close()
        if not parts:
            return np.zeros(0, np.int64), np.zeros(0, np.uint64)
        both = np.concatenate(parts)
        return both[:, 0].copy(), both[:, 1].view(np.uint64).copy()

    def keys_for(self, conn: Connection, ids: Iterable[int]) -> dict[int, str]:
        wanted = list(dict.fromkeys(int(i) for i in ids))
        found: dict[int, str] = {}
        for start in range(0, len(wanted), _CHUNK):
            rows = conn.execute(self.keys_by_id, {"ids": wanted[start : start + _CHUNK]})
            found.update((int(i), k) for i, k in rows)
        return found

    # --- writes --------------------------------------------------------------

    def put(
        self,
        conn: Connection,
        keys: Sequence[str],
        fingerprints: np.ndarray,
        *,
        keep: bool,
        written: list[tuple[int, int]] | None = None,
    ) -> int:
        """Insert rows. A key already stored gets the new fingerprint (the later
        one wins), or, with keep, keeps its own. Returns the rows written: with
        keep, the new keys only (a key stored already, or earlier in the same
        chunk, is left as it is and not counted).

        With ``written``, a few rows replacing on SQLite 3.35+ go one by one
        with RETURNING and their (id, signed fingerprint) are appended to it
        (cheaper than reading them back)."""
        rows = block_rows(keys, fingerprints, self.layout)
        if self.engine.dialect.name == "postgresql":
            return self._put_by_copy(conn, rows, keep=keep)
        if keep:
            done = conn.exec_driver_sql(self._insert_new.text, self._insert_new.many(rows))
            return max(0, done.rowcount)
        if self._replace_by_delete:  # pragma: no cover - databases without ON CONFLICT
            conn.execute(self.delete_keys, {"keys": list(keys)})
        if (
            written is not None
            and len(rows) <= _RETURNED_ROWS
            and conn.dialect.name == "sqlite"
            and sqlite3.sqlite_version_info >= (3, 35)
        ):
            text = f"{self._upsert.text} RETURNING id, fingerprint"
            for row in rows:
                found = conn.exec_driver_sql(text, self._upsert.params(row)).one()
                written.append((int(found[0]), int(found[1])))
            return len(rows)
        conn.exec_driver_sql(self._upsert.text, self._upsert.many(rows))
        return len(rows)

    def _temp_table(self, conn: Connection, name: str, columns: list[str]) -> None:
        """An empty temporary table of BIGINT columns (and key TEXT) for this transaction."""
        types = ", ".join(f"{c} TEXT" if c == "key" else f"{c} BIGINT" for c in columns)
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
        columns = ["key", "fingerprint", *blocks]
        load = f"simindex_load_{len(blocks)}"
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
        """PostgreSQL: every (query number, key, signed fingerprint, distance)
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
        server = int(conn.exec_driver_sql("SHOW server_version_num").scalar_one())
        xor = "(q.fingerprint # f.fingerprint)::bit(64)"
        # bit_count(bit) came with PostgreSQL 14; before it, count the 1s in the text.
        distance = (
            f"bit_count({xor})" if server >= 140000 else f"length(replace({xor}::text, '0', ''))"
        )
        parts = []
        for table in self.layout.tables:
            on = " AND ".join(f"f.{blocks[b]} = q.{blocks[b]}" for b in table)
            parts.append(
                f"SELECT q.qid, f.key, f.fingerprint, {distance} AS distance "
                f"FROM {name} q JOIN {schema.FINGERPRINT_TABLE} f ON {on} "
                f"WHERE {distance} <= {int(k)}"
            )
        return list(conn.exec_driver_sql(" UNION ".join(parts)).all())

    def put_stream(
        self,
        conn: Connection,
        chunks: Iterable[tuple[list[str], np.ndarray]],
        *,
        keep: bool = False,
        returned: list[tuple[int, int]] | None = None,
    ) -> tuple[int, int]:
        """Write chunks of (keys, fingerprints) in the caller's transaction;
        returns the rows read and the rows written (see put).

        A load larger than FAST_LOAD_MIN rows and than the table itself sets
        the lookup indexes aside while it writes and rebuilds them at the end
        (all inside the transaction: readers keep seeing the old index).
        With ``returned`` (a list), put appends the (id, signed fingerprint)
        of the rows it could return (see put): all of them when the list
        ends as long as the count returned.
        """
        existing: int | None = None
        set_aside = False
        read = written = 0
        for keys, fps in chunks:
            if not set_aside and read + len(keys) > FAST_LOAD_MIN:
                if existing is None:
                    existing = self.size(conn)
                if read + len(keys) > existing:
                    for index in self.tables.lookups:
                        index.drop(conn)
                    set_aside = True
            written += self.put(conn, keys, fps, keep=keep, written=returned)
            read += len(keys)
        if set_aside:
            for index in self.tables.lookups:
                index.create(conn)
            if conn.dialect.name == "postgresql":  # fresh statistics, or the planner scans
                conn.exec_driver_sql(f"ANALYZE {schema.FINGERPRINT_TABLE}")
        return read, written

    def tidy_after_load(self) -> None:
        """PostgreSQL, after a large load has committed: VACUUM, so that the
        visibility map lets lookups read their (id, fingerprint) from the
        indexes alone (index-only scans) instead of visiting the table."""
        if self.engine.dialect.name != "postgresql":
            return
        held = self._connection()  # autocommit: VACUUM cannot run in a transaction
        try:
            held.cursor.execute(f"VACUUM (ANALYZE) {schema.FINGERPRINT_TABLE}")
        except self.engine.dialect.loaded_dbapi.Error as exc:
            raise db_error(self.where, exc) from exc

    def remove(self, conn: Connection, keys: Sequence[str]) -> int:
        removed = 0
        for start in range(0, len(keys), _CHUNK):
            result = conn.execute(self.delete_keys, {"keys": list(keys[start : start + _CHUNK])})
            removed += result.rowcount
        return removed

    # --- upkeep: check, repair, compact, buckets ----------------------------

    def integrity(self, conn: Connection) -> list[str]:
        """What SQLite's own integrity check finds wrong (nothing: [])."""
        if self.engine.dialect.name != "sqlite":
            return []
        rows = [r[0] for r in conn.exec_driver_sql("PRAGMA integrity_check").fetchall()]
        return [] if rows == ["ok"] else [f"SQLite integrity check: {r}" for r in rows]

    def schema_problems(self, conn: Connection) -> list[str]:
        """Differences between the tables the layout needs and the ones there."""
        problems = []
        found = inspect(conn)
        t = self.tables.fingerprints
        columns = {c["name"] for c in found.get_columns(t.name)}
        for column in t.columns:
            if column.name not in columns:
                problems.append(f"column {column.name} is missing")
        extra = sorted(c for c in columns if c.startswith("block_") and c not in t.columns)
        if extra:
            problems.append(f"block columns the layout does not have: {', '.join(extra)}")
        have = {ix["name"]: ix["column_names"] for ix in found.get_indexes(t.name)}
        for index in self.tables.lookups:
            wanted = [c.name for c in index.columns]
            if index.name not in have:
                problems.append(f"index {index.name} on ({', '.join(wanted)}) is missing")
            elif have[index.name] != wanted:
                problems.append(f"index {index.name} is on the wrong columns")
        return problems

    def missing_lookups(self, conn: Connection) -> list[Any]:
        have = {ix["name"] for ix in inspect(conn).get_indexes(self.tables.fingerprints.name)}
        return [index for index in self.tables.lookups if index.name not in have]

    def bad_blocks(self, conn: Connection) -> list[int]:
        """Ids of the rows whose block columns disagree with their fingerprint."""
        t = self.tables.fingerprints
        blocks = [t.c[schema.block_column(i)] for i in range(len(self.layout.widths))]
        sql = _Sql(select(t.c.id, t.c.fingerprint, *blocks), self.engine.dialect, [])
        dbapi = conn.connection.dbapi_connection
        assert dbapi is not None
        cursor = dbapi.cursor()
        bad: list[int] = []
        try:
            cursor.execute(sql.text, sql.params([]))
            while rows := cursor.fetchmany(100_000):
                width = 2 + len(blocks)
                flat = np.fromiter(chain.from_iterable(rows), np.int64, count=width * len(rows))
                table = flat.reshape(-1, width)
                fps = table[:, 1].view(np.uint64)
                wrong = np.zeros(len(rows), dtype=bool)
                for i, (shift, mask) in enumerate(self.layout.spans()):
                    expected = ((fps >> np.uint64(shift)) & np.uint64(mask)).view(np.int64)
                    wrong |= table[:, 2 + i] != expected
                bad.extend(table[wrong, 0].tolist())
        finally:
            cursor.close()
        return bad

    def repair_blocks(self, conn: Connection, ids: Sequence[int]) -> None:
        """Recompute the block columns of these rows from their fingerprints."""
        t = self.tables.fingerprints
        for start in range(0, len(ids), _CHUNK):
            chunk = list(ids[start : start + _CHUNK])
            rows = conn.execute(
                select(t.c.id, t.c.key, t.c.fingerprint).where(t.c.id.in_(chunk))
            ).all()
            fps = np.array([r[2] for r in rows], dtype=np.int64).view(np.uint64)
            fixed = block_rows([r[1] for r in rows], fps, self.layout)
            names = [schema.block_column(i) for i in range(len(self.layout.widths))]
            conn.execute(
                t.update()
                .where(t.c.id == bindparam("row_id"))
                .values({name: bindparam(name) for name in names}),
                [
                    {"row_id": r[0]} | dict(zip(names, f[2:], strict=True))
                    for r, f in zip(rows, fixed, strict=True)
                ],
            )

    def largest_buckets(self, conn: Connection) -> list[tuple[int, int]]:
        """For each table, (its most common block values' row count, table number)."""
        t = self.tables.fingerprints
        out = []
        for j, table in enumerate(self.layout.tables):
            columns = [t.c[schema.block_column(b)] for b in table]
            statement = (
                select(func.count())
                .select_from(t)
                .group_by(*columns)
                .order_by(func.count().desc())
                .limit(1)
            )
            out.append((int(conn.execute(statement).scalar() or 0), j))
        return out

    def close(self) -> None:
        with self._held_lock:
            held, self._held = self._held, []
        for h in held:
            h.close()
        self._local = threading.local()


def compact(engine: Engine, where: Location) -> None:
    """Rewrite the file without free pages (VACUUM) and empty the WAL into it."""
    if engine.dialect.name != "sqlite":
        return
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        cursor.execute("VACUUM")
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        cursor.close()
    except sqlite3.Error as exc:
        raise db_error(where, exc) from exc
    finally:
        raw.close()

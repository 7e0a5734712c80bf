"""SQLite and PostgreSQL: every difference between the two lives here.

A ``Dialect`` makes its engine (with its pragmas or session settings), says
what the database can do (``Capabilities``, detected once per index and kept),
and gives the few statements that differ: how a rebuild elsewhere is noticed
(SQLite's schema cookie, PostgreSQL's generation row), how every change of
the fingerprint table is counted by the database itself (triggers: per row
on SQLite, per statement on PostgreSQL), how writers keep out of a
rebuild's way (PostgreSQL's advisory locks), the triggers that mark the
rows whose short texts' set keys are due (short_sets.py holds the rule, the
triggers here), the integrity check and compaction (SQLite). Everything
else is portable SQLAlchemy Core, in store.py and short_sets.py.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.pool import StaticPool

from simindex.signature import NBYTES
from simindex.storage import schema
from simindex.storage.location import Location, file_access

BUSY_TIMEOUT_S = 30.0
CACHE_KIB = 64 << 10  # SQLite's page cache a connection, at most (it grows as pages are read)
WRITE_OPTION = "simindex_write"  # execution option of a write transaction's connection

# What a lookup reads beside its rows to notice a rebuild made elsewhere:
# SQLite's schema cookie (changes with every change of the schema), or on
# PostgreSQL the generation a rebuild counts up in simindex_meta.
GENERATION = (
    f"CAST(COALESCE((SELECT value FROM {schema.META_TABLE} WHERE name = 'generation'), '0') "
    "AS BIGINT)"
)
SQLITE_COOKIE_SQL = "SELECT schema_version FROM pragma_schema_version"
GENERATION_SQL = f"SELECT {GENERATION}"
# Every change of the fingerprint table is counted in simindex_meta's
# ``changes`` row, by the database itself (revision 0005): triggers that
# run for every writer, simindex or not, in the writer's transaction. A
# snapshot of the index (held in memory, or stored: stored.py) read at one
# count is the index while the count is the same. simindex's own write
# transactions also count themselves as their last statement (count_write:
# one more), which tells their owner the count before and after they wrote.
_CHANGES = f"(SELECT CAST(value AS BIGINT) FROM {schema.META_TABLE} WHERE name = 'changes')"
_COUNT_SQL = (
    f"INSERT INTO {schema.META_TABLE} (name, value) VALUES ('changes', '1') "
    "ON CONFLICT (name) DO UPDATE "
    f"SET value = CAST(CAST({schema.META_TABLE}.value AS BIGINT) + 1 AS TEXT)"
)
COUNT_SQL = _COUNT_SQL  # one change more (a migration, or triggers made again)
CHANGES = f"COALESCE({_CHANGES}, 0)"  # the changes counted, as a column
CHANGES_SQL = f"SELECT {CHANGES}"
# The triggers' names: one per kind of change (SQLite's run per row).
COUNT_TRIGGERS = {
    "INSERT": "simindex_count_inserts",
    "UPDATE": "simindex_count_updates",
    "DELETE": "simindex_count_deletes",
}
# PostgreSQL: one trigger per statement (TRUNCATE too), a function in the
# index's schema; it leaves to simindex's own writes, which set
# simindex.counted for their transaction, their one count of their own.
COUNT_FUNCTION = "simindex_count_changes"
COUNTED_SETTING = "simindex.counted"
_POSTGRES_COUNT_FUNCTION = f"""
CREATE OR REPLACE FUNCTION {COUNT_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF COALESCE(current_setting('{COUNTED_SETTING}', true), '') <> 'on' THEN
    EXECUTE 'INSERT INTO ' || quote_ident(TG_TABLE_SCHEMA) || '.{schema.META_TABLE} AS m '
      '(name, value) VALUES (''changes'', ''1'') ON CONFLICT (name) DO UPDATE '
      'SET value = CAST(CAST(m.value AS BIGINT) + 1 AS TEXT)';
  END IF;
  RETURN NULL;
END
$$"""
# PostgreSQL: every write transaction holds this advisory lock (one per
# schema), shared; creating, upgrading or rebuilding an index holds it alone.
# So a write never runs against a layout a rebuild is replacing meanwhile.
_ADVISORY_KEY = "hashtext('simindex:' || COALESCE(current_schema(), ''))"

# The keys of signatures (short_sets.py): triggers on the fingerprint table
# put the id of every row written with a signature (NBYTES or longer: a
# short text's set keys, a longer text's band keys), or whose signature or id
# changed, in the due table, and drop the keys and mark of a row deleted.
_KEYS, _DUE, _FP = schema.SET_KEYS_TABLE, schema.SET_KEYS_DUE_TABLE, schema.FINGERPRINT_TABLE
# SQLite: a trigger per kind of change, per row. Its statements must not
# conflict: the conflict policy of the statement that fires a trigger
# overrides theirs (an upsert's would make INSERT OR IGNORE fail), so a row
# already due is not inserted again rather than ignored.
_MARK_NEW = (
    f"INSERT INTO {_DUE} (id) SELECT NEW.id "
    f"WHERE NOT EXISTS (SELECT 1 FROM {_DUE} WHERE id = NEW.id)"
)
_SQLITE_MARKS = {
    "simindex_set_keys_inserted": (
        f"AFTER INSERT ON {_FP} WHEN length(NEW.signature) >= {NBYTES} BEGIN {_MARK_NEW}; END"
    ),
    "simindex_set_keys_updated": (
        f"AFTER UPDATE OF id, signature ON {_FP} "
        f"WHEN length(NEW.signature) >= {NBYTES} OR length(OLD.signature) >= {NBYTES} "
        f"OR NEW.id IS NOT OLD.id BEGIN {_MARK_NEW}; END"
    ),
    "simindex_set_keys_deleted": (
        f"AFTER DELETE ON {_FP} "
        f"BEGIN DELETE FROM {_KEYS} WHERE id = OLD.id; DELETE FROM {_DUE} WHERE id = OLD.id; END"
    ),
}
# SQLite runs a row trigger's program for every row an insert or update
# writes, its WHEN clause false or not: an insert costs about twice as much
# with one. A large load sets these two aside (short_sets_aside) and marks
# what they would have (short_sets.mark_updated, mark_loaded); the delete
# trigger costs an insert nothing and stays.
_SQLITE_MARKS_ASIDE = ("simindex_set_keys_inserted", "simindex_set_keys_updated")
_ASIDE_MAX_ID = 1 << 62  # past it, SQLite may give a new row an id below the largest
# PostgreSQL: statement triggers with transition tables (a COPY of a million
# rows runs one statement, not a million), one function for all.
_MARK_FUNCTION = "simindex_set_keys_mark"
_POSTGRES_MARK_FUNCTION = f"""
CREATE OR REPLACE FUNCTION {_MARK_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  s text := quote_ident(TG_TABLE_SCHEMA);
BEGIN
  IF TG_OP = 'INSERT' THEN
    EXECUTE 'INSERT INTO ' || s || '.{_DUE} (id) SELECT id FROM simindex_new '
      'WHERE octet_length(signature) >= {NBYTES} ON CONFLICT DO NOTHING';
  ELSIF TG_OP = 'UPDATE' THEN
    EXECUTE 'INSERT INTO ' || s || '.{_DUE} (id) SELECT n.id FROM simindex_new n '
      'LEFT JOIN simindex_old o ON o.id = n.id WHERE o.id IS NULL '
      'OR octet_length(n.signature) >= {NBYTES} OR octet_length(o.signature) >= {NBYTES} '
      'ON CONFLICT DO NOTHING';
  ELSIF TG_OP = 'DELETE' THEN
    EXECUTE 'DELETE FROM ' || s || '.{_KEYS} k USING simindex_old o WHERE k.id = o.id';
    EXECUTE 'DELETE FROM ' || s || '.{_DUE} d USING simindex_old o WHERE d.id = o.id';
  ELSE
    EXECUTE 'DELETE FROM ' || s || '.{_KEYS}';
    EXECUTE 'DELETE FROM ' || s || '.{_DUE}';
  END IF;
  RETURN NULL;
END
$$"""
_POSTGRES_MARKS = {
    "simindex_set_keys_inserted": "AFTER INSERT ON {t} REFERENCING NEW TABLE AS simindex_new",
    "simindex_set_keys_updated": (
        "AFTER UPDATE ON {t} REFERENCING OLD TABLE AS simindex_old NEW TABLE AS simindex_new"
    ),
    "simindex_set_keys_deleted": "AFTER DELETE ON {t} REFERENCING OLD TABLE AS simindex_old",
    "simindex_set_keys_truncated": "AFTER TRUNCATE ON {t}",
}


@dataclass(frozen=True)
class Capabilities:
    """What the database of one index can do, detected once when it is opened."""

    can_hold: bool  # a snapshot held in memory can tell it is current (versions_sql)
    returning: bool  # INSERT ... RETURNING (SQLite 3.35+, PostgreSQL)
    server_join: bool  # a batch of queries joined with the index on the server
    bulk_copy: bool  # rows loaded with COPY through a temporary table
    read_autocommit: bool  # a kept read connection is put in autocommit (psycopg)
    server_bit_count: bool  # bit_count(bit) on the server (PostgreSQL 14+)
    vacuum_after_load: bool  # a large load is followed by VACUUM (PostgreSQL)


class Dialect:
    """The database-specific part of storage: one instance per kind."""

    name = ""
    schema_cookie = False  # a rebuild shows in the schema cookie (else a generation row)
    renames_constraints = True  # a table taking another's place renames its constraints
    install_hint = ""  # how to install the driver, where Python has none

    def one_connection(self, where: Location) -> bool:
        """Whether the index is one connection its users take turns on
        (SQLite's in-memory database)."""
        return False

    def make_engine(
        self, where: Location, *, timeout: float, readonly: bool, immutable: bool
    ) -> Engine:
        raise NotImplementedError

    def capabilities(self, engine: Engine) -> Capabilities:
        raise NotImplementedError

    # The number that changes with every rebuild, as a column (the schema
    # cookie or the generation row), and as a statement of one row.
    generation = GENERATION

    @property
    def generation_sql(self) -> str:
        return f"SELECT {self.generation}"

    @property
    def versions_sql(self) -> str:
        """One row: (generation, changes counted), read together."""
        return f"SELECT {self.generation}, {CHANGES}"

    def move_generation(self, conn: Connection) -> None:
        """Move the generation in a migration that changes no table (what
        a process holding the index, of an older simindex, reads its
        settings again after, and refuses the newer revision): PostgreSQL's
        stored generation row (made where missing, in an index), SQLite's
        schema cookie (a table made and dropped)."""
        meta = schema.META_TABLE
        conn.exec_driver_sql(
            f"UPDATE {meta} SET value = CAST(CAST(value AS BIGINT) + 1 AS TEXT) "
            "WHERE name = 'generation'"
        )
        conn.exec_driver_sql(
            f"INSERT INTO {meta} (name, value) SELECT 'generation', '1' "
            f"WHERE EXISTS (SELECT 1 FROM {meta} WHERE name = 'format') "
            f"AND NOT EXISTS (SELECT 1 FROM {meta} WHERE name = 'generation')"
        )

    def matches_sql(self, lookup: str, *, caps: Capabilities) -> str | None:
        """The lookup ``lookup`` (named parameters) with the Hamming filter
        and the matches' rows in one statement, where the server counts bits
        (Store.lookup_matches; parameters query_fp and query_k); else None."""
        return None

    def begin_write(
        self, conn: Connection, *, alone: bool, wait: float | None = None, counted: bool = False
    ) -> int | None:
        """First statements of a write transaction (nothing, or a lock);
        ``wait``: how long its statements may wait for any lock (PostgreSQL;
        SQLite's waits are set before its BEGIN, see lock_wait). ``counted``:
        a write that counts itself (count_write); returns the changes
        counted before it where it must read them now (else None)."""
        return None

    def lock_wait(self, conn: Connection, seconds: float) -> None:
        """How long this connection's next write transaction waits for the
        write lock (SQLite's busy timeout; PostgreSQL's: begin_write)."""

    def bytes_cursor(self, dbapi_connection: Any) -> Any:
        """A driver cursor for reading large binary values (the stored snapshot)."""
        return dbapi_connection.cursor()

    def no_rebuild_meanwhile(self, conn: Connection) -> None:
        """Hold off creation, upgrades and rebuilds until the transaction ends."""

    def count_write(
        self, conn: Connection, caps: Capabilities, before: int | None
    ) -> tuple[int, int]:
        """Count a write transaction of simindex's, as its last statement:
        (changes counted before it, after it). ``before``: what begin_write
        read, or None where the triggers left this transaction's changes
        to this one count (PostgreSQL), so that before is after minus one:
        the counter row's lock is held from here to the commit."""
        if caps.returning:
            after = int(conn.exec_driver_sql(f"{_COUNT_SQL} RETURNING value").scalar_one())
        else:
            conn.exec_driver_sql(_COUNT_SQL)
            after = int(conn.exec_driver_sql(CHANGES_SQL).scalar_one())
        return (after - 1 if before is None else before), after

    def changes(self, conn: Connection) -> int:
        """The changes counted, in the caller's transaction."""
        return int(conn.exec_driver_sql(CHANGES_SQL).scalar_one())

    def count_changes(self, conn: Connection) -> None:
        """Make the triggers that count every change of the fingerprint
        table (revision 0005; a rebuild makes them on its new table)."""
        raise NotImplementedError

    def counting(self, conn: Connection) -> bool:
        """Whether the triggers that count changes are there (and enabled)."""
        raise NotImplementedError

    def counting_aside(self, conn: Connection) -> bool:
        """Inside a large write that counts itself (count_write): set the
        triggers aside until ``count_changes`` makes them again before it
        commits, where they cost that write per row (SQLite); True if so.
        Other writers cannot write meanwhile (the write lock), and readers
        never see the table without them."""
        return False

    # Short texts' set keys (short_sets.py): how the rows due are marked,
    # and how a transaction that makes their keys meets other writers.
    one_writer = False  # write transactions take turns, one at a time (SQLite)
    byte_length = "octet_length"  # the SQL function of a blob's length in bytes

    def mark_short_sets(self, conn: Connection) -> None:
        """Make the triggers that mark the rows whose set keys are due
        (where missing: after a rebuild, in a migration, or dropped by hand)."""
        raise NotImplementedError

    def marking_short_sets(self, conn: Connection) -> bool:
        """Whether every trigger mark_short_sets makes is there (and enabled)."""
        raise NotImplementedError

    def remark_short_sets(self, conn: Connection) -> None:
        """Make the triggers of mark_short_sets again, as this simindex
        writes them (an upgrade whose triggers mark other rows)."""
        self.mark_short_sets(conn)

    def remake_set_keys(self, conn: Connection) -> None:
        """Make the key table as this simindex describes it (schema.py), and
        its triggers again (remark_short_sets), its keys gone: revision
        0011's upgrade, which then makes every key."""
        conn.exec_driver_sql(f"DELETE FROM {_KEYS}")
        self.remark_short_sets(conn)

    def short_sets_aside(self, conn: Connection) -> int | None:
        """Inside a large load (the write lock held, so nobody else writes
        until it commits, and readers never see the table without the
        triggers): set the triggers that mark inserted and updated rows
        aside where they cost the load per row (SQLite). Returns the largest
        id before the load, or None when nothing was set aside (statement
        triggers cost a load little; an index without the triggers)."""
        return None

    def lock_rows(self, select: str) -> str:
        """A SELECT of the rows a write transaction makes something of,
        locking them (and skipping the rows another transaction holds) where
        writers run side by side."""
        return select

    def integrity(self, conn: Connection) -> list[str]:
        """What the database's own integrity check finds wrong (nothing: [])."""
        return []

    def use_wal(self, engine: Engine, where: Location) -> None:
        """Switch a file to write-ahead logging (SQLite files only)."""

    def compact(self, engine: Engine) -> None:
        """Reclaim free space (SQLite's VACUUM; nothing elsewhere)."""

    def tidy_after_load(self, cursor: Any) -> None:
        """After a large load has committed, on an autocommit cursor."""

    def took_over(self, conn: Connection, old_name: str, name: str) -> None:
        """A table built as `old_name` has just been renamed `name` (a rebuild)."""

    def analyze(self, conn: Connection) -> None:
        """Fresh planner statistics after a rebuild or a large load."""

    def insert(self, table: Any) -> Any:
        """An INSERT of this dialect, with ON CONFLICT."""
        raise NotImplementedError


class _Sqlite(Dialect):
    name = "sqlite"
    generation = f"({SQLITE_COOKIE_SQL})"
    schema_cookie = True
    renames_constraints = False  # SQLite lets two tables' constraints share a name

    def one_connection(self, where: Location) -> bool:
        return where.path is None

    def move_generation(self, conn: Connection) -> None:
        conn.exec_driver_sql("CREATE TABLE simindex_generation_moved (moved INTEGER)")
        conn.exec_driver_sql("DROP TABLE simindex_generation_moved")

    def make_engine(
        self, where: Location, *, timeout: float, readonly: bool, immutable: bool
    ) -> Engine:
        url = where.url
        if where.path is None:  # one shared in-memory database
            engine = create_engine(
                url, poolclass=StaticPool, connect_args={"check_same_thread": False}
            )
        else:
            # Read-only where the file or its folder is (SQLite's read-only
            # open); else opened as usual and made to refuse writes (query_only),
            # so that the last connection to close still folds the -wal into the
            # file and removes it and the -shm: a read leaves the folder as it was.
            if readonly and file_access(where).readonly:
                options = "mode=ro&immutable=1" if immutable else "mode=ro"
                url = url.set(database=f"file:{where.path}?{options}", query={"uri": "true"})
            # Each thread keeps a connection for reads: no cap on how many.
            engine = create_engine(
                url,
                connect_args={"timeout": timeout, "check_same_thread": False},
                pool_size=5,
                max_overflow=-1,
            )
        event.listen(engine, "connect", _on_sqlite_connect(timeout, query_only=readonly))
        event.listen(engine, "begin", _on_sqlite_begin)
        return engine

    def capabilities(self, engine: Engine) -> Capabilities:
        return Capabilities(
            can_hold=True,
            returning=sqlite3.sqlite_version_info >= (3, 35),
            server_join=False,
            bulk_copy=False,
            read_autocommit=False,
            server_bit_count=False,
            vacuum_after_load=False,
        )

    def begin_write(
        self, conn: Connection, *, alone: bool, wait: float | None = None, counted: bool = False
    ) -> int | None:
        # The triggers count each row: the count before this write is read
        # now, under the write lock taken by BEGIN IMMEDIATE.
        return self.changes(conn) if counted else None

    def count_changes(self, conn: Connection) -> None:
        table, meta = schema.FINGERPRINT_TABLE, schema.META_TABLE
        for change, name in COUNT_TRIGGERS.items():
            conn.exec_driver_sql(
                f"CREATE TRIGGER IF NOT EXISTS {name} AFTER {change} ON {table} "
                f"BEGIN {_COUNT_SQL.replace(f'{meta}.value', 'value')}; END"
            )

    def counting(self, conn: Connection) -> bool:
        names = ", ".join(f"'{name}'" for name in COUNT_TRIGGERS.values())
        found = conn.exec_driver_sql(
            "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' "
            f"AND tbl_name = '{schema.FINGERPRINT_TABLE}' AND name IN ({names})"
        ).scalar_one()
        return int(found) == len(COUNT_TRIGGERS)

    def counting_aside(self, conn: Connection) -> bool:
        for name in COUNT_TRIGGERS.values():
            conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name}")
        return True

    one_writer = True
    byte_length = "length"

    def mark_short_sets(self, conn: Connection) -> None:
        for name, body in _SQLITE_MARKS.items():
            conn.exec_driver_sql(f"CREATE TRIGGER IF NOT EXISTS {name} {body}")

    def remark_short_sets(self, conn: Connection) -> None:
        for name in _SQLITE_MARKS:
            conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name}")
        self.mark_short_sets(conn)

    def remake_set_keys(self, conn: Connection) -> None:
        # The table WITHOUT ROWID (schema.set_key_tables): made again, empty.
        for name in _SQLITE_MARKS:
            conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name}")
        conn.exec_driver_sql(f"DROP TABLE IF EXISTS {_KEYS}")
        schema.set_key_tables()[0].create(conn)
        self.mark_short_sets(conn)

    def marking_short_sets(self, conn: Connection) -> bool:
        names = ", ".join(f"'{name}'" for name in _SQLITE_MARKS)
        found = conn.exec_driver_sql(
            "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' "
            f"AND tbl_name = '{_FP}' AND name IN ({names})"
        ).scalar_one()
        return int(found) == len(_SQLITE_MARKS)

    def short_sets_aside(self, conn: Connection) -> int | None:
        if not self.marking_short_sets(conn):
            return None
        before = int(conn.exec_driver_sql(f"SELECT COALESCE(MAX(id), 0) FROM {_FP}").scalar_one())
        if before >= _ASIDE_MAX_ID:
            return None
        for name in _SQLITE_MARKS_ASIDE:
            conn.exec_driver_sql(f"DROP TRIGGER {name}")
        return before

    def integrity(self, conn: Connection) -> list[str]:
        rows = [r[0] for r in conn.exec_driver_sql("PRAGMA integrity_check").fetchall()]
        return [] if rows == ["ok"] else [f"SQLite integrity check: {r}" for r in rows]

    def use_wal(self, engine: Engine, where: Location) -> None:
        """Done once the file is known to be an index, never on a file that is
        refused: changing the journal mode rewrites the database header."""
        if where.path is None:
            return
        raw = engine.raw_connection()  # outside any transaction, as the pragma needs
        try:
            cursor = raw.cursor()
            if cursor.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                cursor.execute("PRAGMA journal_mode = WAL")
            cursor.close()
        finally:
            raw.close()

    def lock_wait(self, conn: Connection, seconds: float) -> None:
        # On the driver's connection: a statement through SQLAlchemy would
        # begin the transaction before the caller's BEGIN IMMEDIATE.
        cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        try:
            cursor.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")
        finally:
            cursor.close()

    def compact(self, engine: Engine) -> None:
        raw = engine.raw_connection()
        try:
            cursor = raw.cursor()
            cursor.execute("VACUUM")
            cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            cursor.close()
        finally:
            raw.close()

    def insert(self, table: Any) -> Any:
        from sqlalchemy.dialects.sqlite import insert

        return insert(table)


def _on_sqlite_connect(timeout: float, *, query_only: bool) -> Any:
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event issue BEGIN itself (pysqlite's own
        # implicit transactions skip DDL and cannot take the write lock early).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            cursor.execute("PRAGMA synchronous = NORMAL")
            # Let CREATE INDEX sort with helper threads (bulk loads rebuild indexes).
            cursor.execute(f"PRAGMA threads = {min(4, os.cpu_count() or 1)}")
            # Check each B-tree page's cells as it is read: a page of garbage
            # inside an index otherwise answers a lookup "no such row"
            # without a word (tests/test_damage.py). Pages are read into
            # SQLite's own cache, which checks a page once, when read (a
            # memory map, the default before, checks it each time a query
            # touches it: a probed query took 1.7x as long), and the cache
            # is large enough to keep a million rows' index pages: a probed
            # query at 1M as fast as with the memory map and no check, at 10M
            # about 1.4x (bench/results/experiments/page_checks*.txt).
            cursor.execute("PRAGMA cell_size_check = ON")
            cursor.execute("PRAGMA mmap_size = 0")  # (whatever SQLite's build defaults to)
            cursor.execute(f"PRAGMA cache_size = {-CACHE_KIB}")
            if query_only:
                cursor.execute("PRAGMA query_only = ON")
        except UnicodeDecodeError as exc:
            # SQLite's message quotes a damaged schema's bytes, which sqlite3
            # cannot decode: the error SQLite gave, with its code.
            damaged = sqlite3.DatabaseError("malformed database schema (not UTF-8)")
            damaged.sqlite_errorcode = 11  # type: ignore[attr-defined]  # SQLITE_CORRUPT
            raise damaged from exc
        finally:
            cursor.close()

    return on_connect


def _on_sqlite_begin(connection: Connection) -> None:
    write = connection.get_execution_options().get(WRITE_OPTION, False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


class _Postgres(Dialect):
    name = "postgresql"
    install_hint = " (pip install 'simindex[postgres]')"
    # The generation row, the fingerprint table's own identity (its OID: a
    # table made anew, by pg_restore or a restore by hand, is another
    # generation, whatever the rows restored in simindex_meta say), and
    # how many of its triggers are enabled: where a trigger that counts
    # changes is dropped or disabled (ALTER TABLE ... DISABLE TRIGGER), the
    # generation moves, as SQLite's schema cookie does, and a holder lets
    # go of what it can no longer tell is current (view.py).
    generation = (
        f"(({GENERATION}) * 4294967296 + "
        f"CAST(CAST(COALESCE(to_regclass('{schema.FINGERPRINT_TABLE}'), 0) AS oid) AS BIGINT))"
        f" * 16 + (SELECT LEAST(count(*), 15) FROM pg_trigger "
        f"WHERE tgrelid = to_regclass('{schema.FINGERPRINT_TABLE}') AND tgenabled <> 'D')"
    )

    def make_engine(
        self, where: Location, *, timeout: float, readonly: bool, immutable: bool
    ) -> Engine:
        """A pooled engine; every connection's search_path is the index's
        schema, so several indexes share one database."""
        args: dict[str, Any] = {"connect_timeout": max(1, min(int(timeout), 30))}
        if where.schema is not None:
            args["options"] = f"-c search_path={where.schema}"
        # Statements a connection runs again and again (the lookup) are prepared
        # by psycopg after their second run: no parsing or planning per query.
        args["prepare_threshold"] = 2
        engine = create_engine(
            where.url, connect_args=args, pool_size=5, max_overflow=20, pool_pre_ping=True
        )
        event.listen(engine, "connect", _on_postgres_connect(timeout))
        event.listen(engine, "handle_error", _failed_ping_is_a_disconnect)
        return engine

    def capabilities(self, engine: Engine) -> Capabilities:
        if engine.dialect.server_version_info is None:  # known once connected
            engine.connect().close()
        version = engine.dialect.server_version_info or (0,)
        return Capabilities(
            can_hold=True,  # by the changes counted, at revision 0005 (Store.holds)
            returning=True,  # (its writes go through COPY: Store.put never asks)
            server_join=True,
            bulk_copy=True,
            read_autocommit=True,
            server_bit_count=version >= (14,),
            vacuum_after_load=True,
        )

    def matches_sql(self, lookup: str, *, caps: Capabilities) -> str | None:
        if not caps.server_bit_count:
            return None
        distance = "bit_count((c.fingerprint # %(query_fp)s::bigint)::bit(64))"
        return (
            f"WITH c AS ({lookup}), "
            f"m AS (SELECT DISTINCT c.id FROM c WHERE {distance} <= %(query_k)s::int) "
            f"SELECT f.id, f.key, f.fingerprint, f.signature "
            f"FROM m JOIN {schema.FINGERPRINT_TABLE} f "
            f"ON f.id = m.id UNION ALL SELECT -1, NULL, {self.generation}, NULL"
        )

    def begin_write(
        self, conn: Connection, *, alone: bool, wait: float | None = None, counted: bool = False
    ) -> int | None:
        if wait is not None:  # this transaction only (0 would mean no limit)
            conn.exec_driver_sql(f"SET LOCAL lock_timeout = {max(1, int(wait * 1000))}")
        lock = "pg_advisory_xact_lock" if alone else "pg_advisory_xact_lock_shared"
        # A write that counts itself is left alone by the triggers (one
        # count, however many statements), in the same round trip.
        mine = f", set_config('{COUNTED_SETTING}', 'on', true)" if counted else ""
        conn.exec_driver_sql(f"SELECT {lock}({_ADVISORY_KEY}){mine}")
        return None

    def counting(self, conn: Connection) -> bool:
        found = conn.exec_driver_sql(
            "SELECT count(*) FROM pg_trigger WHERE tgrelid = "
            f"to_regclass('{schema.FINGERPRINT_TABLE}') AND tgname = '{COUNT_FUNCTION}' "
            "AND tgenabled <> 'D'"
        ).scalar_one()
        return int(found) == 1

    def count_changes(self, conn: Connection) -> None:
        conn.exec_driver_sql(_POSTGRES_COUNT_FUNCTION)
        table = schema.FINGERPRINT_TABLE
        conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS {COUNT_FUNCTION} ON {table}")
        conn.exec_driver_sql(
            f"CREATE TRIGGER {COUNT_FUNCTION} AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE "
            f"ON {table} FOR EACH STATEMENT EXECUTE FUNCTION {COUNT_FUNCTION}()"
        )

    def mark_short_sets(self, conn: Connection) -> None:
        conn.exec_driver_sql(_POSTGRES_MARK_FUNCTION)
        for name, body in _POSTGRES_MARKS.items():
            conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS {name} ON {_FP}")
            conn.exec_driver_sql(
                f"CREATE TRIGGER {name} {body.format(t=_FP)} "
                f"FOR EACH STATEMENT EXECUTE FUNCTION {_MARK_FUNCTION}()"
            )

    def marking_short_sets(self, conn: Connection) -> bool:
        names = ", ".join(f"'{name}'" for name in _POSTGRES_MARKS)
        found = conn.exec_driver_sql(
            f"SELECT count(*) FROM pg_trigger WHERE tgrelid = to_regclass('{_FP}') "
            f"AND tgname IN ({names}) AND tgenabled <> 'D'"
        ).scalar_one()
        return int(found) == len(_POSTGRES_MARKS)

    def lock_rows(self, select: str) -> str:
        # A row's keys are never made from a signature another transaction
        # is replacing: that one makes them, or leaves the row due.
        return f"{select} FOR UPDATE SKIP LOCKED"

    def no_rebuild_meanwhile(self, conn: Connection) -> None:
        conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock_shared({_ADVISORY_KEY})")

    def bytes_cursor(self, dbapi_connection: Any) -> Any:
        # psycopg's binary format: BYTEA as its bytes, not hex text to decode.
        return dbapi_connection.cursor(binary=True)

    def tidy_after_load(self, cursor: Any) -> None:
        """VACUUM, so that the visibility map lets lookups read their (id,
        fingerprint) from the indexes alone (index-only scans)."""
        cursor.execute(f"VACUUM (ANALYZE) {schema.FINGERPRINT_TABLE}")

    def took_over(self, conn: Connection, old_name: str, name: str) -> None:
        pairs = zip(schema.constraint_names(old_name), schema.constraint_names(name), strict=True)
        for old, new in pairs:
            conn.exec_driver_sql(f"ALTER INDEX {old} RENAME TO {new}")
        # Rows kept their ids: the id sequence goes on after the largest.
        conn.exec_driver_sql(
            f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), "
            f"COALESCE((SELECT MAX(id) FROM {name}), 0) + 1, false)"
        )

    def analyze(self, conn: Connection) -> None:
        conn.exec_driver_sql(f"ANALYZE {schema.FINGERPRINT_TABLE}")

    def insert(self, table: Any) -> Any:
        from sqlalchemy.dialects.postgresql import insert

        return insert(table)


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


SQLITE = _Sqlite()
POSTGRES = _Postgres()
_BY_NAME = {"sqlite": SQLITE, "postgresql": POSTGRES}


def dialect_for(where: Location) -> Dialect:
    """The dialect of a location (locate has refused every other kind)."""
    return POSTGRES if where.postgres else SQLITE


def dialect_of(conn: Connection) -> Dialect:
    """The dialect of an open connection."""
    return _BY_NAME[conn.dialect.name]


def _failed_ping_is_a_disconnect(context: Any) -> None:
    """A pooled connection whose pre-ping fails in any way is a lost one: the
    pool drops it and connects again (a server that cannot be reached then
    fails that connect, as it should). psycopg's ping of a connection the
    server cut can fail as a ProgrammingError ("can't change 'autocommit'
    now": SQLAlchemy restores autocommit on the broken connection after the
    failed SELECT 1), which SQLAlchemy does not count as a disconnect, so
    the checkout raised it instead of connecting again."""
    if getattr(context, "is_pre_ping", False):  # (SQLAlchemy 2.0.5 and later say)
        context.is_disconnect = True

"""simindex.storage.backend on its own: one index's database, its read and
write transactions, the changes a write counts, and every database error
turned into one StorageError line. On SQLite (in memory and a file) always,
and on PostgreSQL where SIMINDEX_TEST_POSTGRES_URL names one (conftest.py)."""

from __future__ import annotations

import sqlite3
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Connection, text
from sqlalchemy.exc import OperationalError

from simindex import (
    DamagedIndexError,
    InvalidArgumentError,
    NoIndexError,
    StorageError,
    storage,
)
from simindex.blocks import BlockLayout
from simindex.fingerprint import DEFAULT_CONFIG
from simindex.storage.backend import Backend, Versions, db_error, describe_db_error
from simindex.storage.location import Location, locate

SIGNED_BOUNDS = [-(2**63), -(2**63) + 1, -1, 0, 1, 2**63 - 2, 2**63 - 1]


@pytest.fixture(params=["memory", "file", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Location:
    if request.param == "postgres":
        return locate(str(request.getfixturevalue("pg_url")))
    return locate(":memory:" if request.param == "memory" else tmp_path / "ix.db")


@pytest.fixture(params=["file", "postgres"])
def shared(request: pytest.FixtureRequest, tmp_path: Path) -> Location:
    """A database two backends can open at once (not :memory:, one per engine)."""
    if request.param == "postgres":
        return locate(str(request.getfixturevalue("pg_url")))
    return locate(tmp_path / "ix.db")


def opened(where: Location, *, timeout: float = 30.0, readonly: bool = False) -> Backend:
    backend = storage.open_backend(where, timeout=timeout, readonly=readonly)
    backend.ensure_schema(create=True)
    return backend


@pytest.fixture
def backend(where: Location) -> Iterator[Backend]:
    b = opened(where)
    with b.writing(alone=True) as conn:
        conn.exec_driver_sql("CREATE TABLE scratch (n BIGINT)")
    yield b
    b.dispose()


@pytest.fixture
def index_backend(where: Location) -> Iterator[Backend]:
    """A backend over an index's tables (the changes counter among them)."""
    b = opened(where)
    with b.writing(alone=True) as conn:
        storage.create(conn, storage.Settings(layout=BlockLayout.for_k(3), config=DEFAULT_CONFIG))
    yield b
    b.dispose()


def numbers(backend: Backend) -> list[int]:
    with backend.reading() as conn:
        return [int(n) for (n,) in conn.exec_driver_sql("SELECT n FROM scratch ORDER BY n")]


def insert(conn: Connection, values: list[int]) -> None:
    conn.execute(text("INSERT INTO scratch (n) VALUES (:n)"), [{"n": v} for v in values])


# --- transactions --------------------------------------------------------------------------------


def test_a_write_commits_and_every_signed_64_bit_value_round_trips(backend: Backend) -> None:
    with backend.writing() as conn:
        insert(conn, SIGNED_BOUNDS)
    assert numbers(backend) == SIGNED_BOUNDS


def test_a_write_that_fails_leaves_nothing(backend: Backend) -> None:
    with pytest.raises(RuntimeError, match="stop"), backend.writing() as conn:
        insert(conn, [1, 2])
        raise RuntimeError("stop")
    assert numbers(backend) == []


def test_a_database_error_in_a_write_is_one_storage_error_and_leaves_nothing(
    backend: Backend,
) -> None:
    with pytest.raises(StorageError) as caught, backend.writing() as conn:
        insert(conn, [1])
        conn.exec_driver_sql("INSERT INTO no_such_table (n) VALUES (1)")
    message = str(caught.value)
    assert message.startswith(f"{backend.where}: ") and "no_such_table" in message
    assert "\n" not in message and "INSERT" not in message  # one line, no SQL
    assert numbers(backend) == []


def test_a_database_error_in_a_read_is_one_storage_error(backend: Backend) -> None:
    with pytest.raises(StorageError) as caught, backend.reading() as conn:
        conn.exec_driver_sql("SELECT n FROM no_such_table")
    message = str(caught.value)
    assert message.startswith(f"{backend.where}: ") and "no_such_table" in message
    assert "\n" not in message and "SELECT" not in message
    assert not isinstance(caught.value, DamagedIndexError)


def test_an_error_from_the_driver_s_own_cursor_in_a_read_is_a_storage_error(
    backend: Backend,
) -> None:
    with pytest.raises(StorageError, match="no_such_table"), backend.reading() as conn:
        raw = conn.connection.dbapi_connection
        assert raw is not None
        raw.cursor().execute("SELECT n FROM no_such_table")


def test_other_exceptions_pass_through_unchanged(backend: Backend) -> None:
    with pytest.raises(KeyError), backend.reading():
        raise KeyError("mine")
    with pytest.raises(ZeroDivisionError), backend.writing():
        _ = 1 / 0


def test_an_in_memory_database_is_one_connection_every_transaction_shares(
    backend: Backend, where: Location
) -> None:
    assert backend.shared_connection is (where.path is None and not where.postgres)
    with backend.writing() as conn:
        insert(conn, [7])
    assert numbers(backend) == [7]  # the read saw the write: the same database


def test_threads_take_turns_on_an_in_memory_database(backend: Backend, where: Location) -> None:
    """Every transaction on the one shared connection waits for the one
    another thread has open, whichever way it was begun (no "cannot start
    a transaction within a transaction")."""
    if not backend.shared_connection:
        pytest.skip("each transaction has its own connection")
    inside, done = threading.Event(), threading.Event()
    seen: list[object] = []

    def other(way: str) -> None:
        inside.wait(5)
        try:
            if way == "reading":
                with backend.reading() as conn:
                    seen.append(conn.exec_driver_sql("SELECT count(*) FROM scratch").scalar())
            else:
                with backend.writing() as conn:
                    insert(conn, [3])
                seen.append("wrote")
        except Exception as exc:  # noqa: BLE001 - reported below
            seen.append(exc)

    for way in ("reading", "writing"):
        seen.clear()
        inside.clear()
        thread = threading.Thread(target=other, args=(way,))
        thread.start()
        with backend.writing() as conn:
            insert(conn, [1])
            inside.set()
            done.wait(0.2)  # the other thread is at its door meanwhile
            assert seen == []
        thread.join(10)
        assert len(seen) == 1 and not isinstance(seen[0], Exception), (way, seen)


def test_a_read_only_backend_reads_and_refuses_every_write(where: Location) -> None:
    b = opened(where)
    with b.writing() as conn:
        conn.exec_driver_sql("CREATE TABLE scratch (n BIGINT)")
    readonly = opened(where, readonly=True)
    for way in (readonly.writing, readonly.write):
        with pytest.raises(StorageError) as caught, way():
            pytest.fail("a read-only backend began a write")
        assert str(caught.value) == f"{where} is open read-only: nothing can be written to it"
    if where.path is not None or where.postgres:  # (:memory: is another database each)
        assert numbers(readonly) == []
    readonly.dispose()
    b.dispose()


# --- counting writes -----------------------------------------------------------------------------


def test_a_write_counts_itself_from_where_the_last_one_left(index_backend: Backend) -> None:
    seen = []
    for _ in range(3):
        with index_backend.write() as write:
            assert write.rows is None and write.before is None and write.after is None
        assert write.before is not None and write.after == write.before + 1
        seen.append((write.before, write.after))
    assert [b for b, _ in seen[1:]] == [a for _, a in seen[:-1]]  # nobody else wrote
    with index_backend.reading() as conn:
        versions = index_backend.versions(conn)
        assert isinstance(versions, Versions)
        assert versions.changes == seen[-1][1]
        assert versions.generation == index_backend.generation(conn)


def test_an_uncounted_write_moves_neither_count_nor_generation(index_backend: Backend) -> None:
    with index_backend.reading() as conn:
        before = index_backend.versions(conn)
    with index_backend.writing():
        pass
    with index_backend.reading() as conn:
        assert index_backend.versions(conn) == before
    with index_backend.write():
        pass
    with index_backend.reading() as conn:
        after = index_backend.versions(conn)
    assert after == Versions(before.generation, before.changes + 1)


def test_a_counted_write_that_fails_counts_nothing(index_backend: Backend) -> None:
    with index_backend.reading() as conn:
        before = index_backend.versions(conn)
    with pytest.raises(RuntimeError, match="stop"), index_backend.write() as write:
        raise RuntimeError("stop")
    assert write.before is None and write.after is None
    with index_backend.reading() as conn:
        assert index_backend.versions(conn) == before


def test_a_write_through_another_backend_shows_in_the_count(shared: Location) -> None:
    one, other = opened(shared), opened(shared)
    with one.writing(alone=True) as conn:
        storage.create(conn, storage.Settings(layout=BlockLayout.for_k(3), config=DEFAULT_CONFIG))
    with one.write() as first:
        pass
    with other.write() as second:
        pass
    with one.write() as third:
        pass
    assert second.before == first.after and third.before == second.after
    assert first.after is not None and third.after == first.after + 2
    one.dispose()
    other.dispose()


# --- the write lock ------------------------------------------------------------------------------


def test_a_writer_that_will_not_wait_gives_up_at_once(shared: Location) -> None:
    holder, other = opened(shared), opened(shared)
    with holder.writing(alone=True) as conn:
        conn.exec_driver_sql("CREATE TABLE scratch (n BIGINT)")
    with holder.writing(alone=True) as conn:
        insert(conn, [1])
        with pytest.raises(StorageError) as caught, other.writing(wait=0):
            pytest.fail("a second writer began while the first held the lock")
        assert str(caught.value) == f"{shared} is locked by another writer: gave up after 0 s"
    with other.writing() as conn:  # the lock is free again: the usual wait
        insert(conn, [2])
    assert numbers(other) == [1, 2]
    holder.dispose()
    other.dispose()


def test_a_writer_waits_its_timeout_and_no_longer(shared: Location) -> None:
    holder = opened(shared)
    impatient = opened(shared, timeout=0.2)
    with (
        holder.writing(alone=True),
        pytest.raises(StorageError) as caught,
        impatient.writing(),
    ):
        pytest.fail("a second writer began while the first held the lock")
    assert str(caught.value) == f"{shared} is locked by another writer: gave up after 0.2 s"
    with impatient.writing():  # and writes once the lock is free
        pass
    holder.dispose()
    impatient.dispose()


# --- what each database is -----------------------------------------------------------------------


def test_capabilities_are_detected_once(backend: Backend, where: Location) -> None:
    caps = backend.caps
    assert backend.caps is caps
    assert caps.server_join is where.postgres and caps.bulk_copy is where.postgres
    assert caps.can_hold


def test_a_sqlite_file_s_connections_wait_for_a_writer_and_sync_normally(tmp_path: Path) -> None:
    """Every connection to a SQLite file waits the backend's timeout for
    another writer (BUSY_TIMEOUT_S, 30 s, by default, as SimIndex's), again
    after a write that would not wait, and syncs NORMAL (safe with WAL)."""
    backend = opened(locate(tmp_path / "ix.db"), timeout=storage.BUSY_TIMEOUT_S)
    try:
        with backend.writing(wait=0.0) as conn:  # a write that would not wait
            conn.exec_driver_sql("CREATE TABLE scratch (n BIGINT)")
        with backend.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
    finally:
        backend.dispose()


def test_use_wal_switches_a_file_and_leaves_the_rest(backend: Backend, where: Location) -> None:
    backend.use_wal()
    backend.use_wal()  # again: nothing to do
    if where.postgres:
        return
    with backend.reading() as conn:
        mode = conn.exec_driver_sql("PRAGMA journal_mode").scalar_one()
    assert mode == ("wal" if where.path is not None else "memory")


def test_compact_leaves_no_free_pages_and_an_empty_log(backend: Backend, where: Location) -> None:
    backend.use_wal()
    with backend.writing() as conn:
        conn.exec_driver_sql(f"CREATE TABLE bulk (b {'BYTEA' if where.postgres else 'BLOB'})")
        conn.execute(text("INSERT INTO bulk (b) VALUES (:b)"), [{"b": bytes(4000)}] * 200)
        insert(conn, [5])
    with backend.writing() as conn:
        conn.exec_driver_sql("DELETE FROM bulk")
    backend.compact()
    assert numbers(backend) == [5]  # nothing else was lost
    if where.postgres:
        return
    with backend.reading() as conn:
        assert conn.exec_driver_sql("PRAGMA freelist_count").scalar_one() == 0
    if where.path is not None:
        wal = where.path.with_name(where.path.name + "-wal")
        assert not wal.exists() or wal.stat().st_size == 0


def test_ensure_schema_finds_or_makes_a_postgresql_schema(pg_url: str) -> None:
    where = locate(pg_url)
    assert where.schema is not None
    b = storage.open_backend(where)
    with pytest.raises(NoIndexError) as caught:
        b.ensure_schema(create=False)
    assert str(caught.value) == f"no index at {where} (the database has no schema {where.schema})"
    b.ensure_schema(create=True)
    b.ensure_schema(create=False)  # there now
    b.ensure_schema(create=True)  # and made once
    b.dispose()


def test_ensure_schema_asks_nothing_of_sqlite(tmp_path: Path) -> None:
    b = storage.open_backend(locate(tmp_path / "ix.db"))
    b.ensure_schema(create=False)
    assert not (tmp_path / "ix.db").exists()  # nothing was opened
    b.dispose()


def test_an_unknown_driver_is_an_invalid_argument(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        storage.open_backend(locate(f"sqlite+nosuchdriver:///{tmp_path}/ix.db"))
    assert str(caught.value) == (f"unknown database kind in {tmp_path}/ix.db: sqlite+nosuchdriver")


def test_a_driver_not_installed_says_so_without_the_password(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as where it was never installed
    with pytest.raises(StorageError) as caught:
        storage.open_backend(locate("postgresql://user:s3cret@host/db"))
    message = str(caught.value)
    assert message.startswith(
        "the database driver for postgresql+psycopg is not installed (psycopg)"
    )
    assert "simindex[postgres]" in message and "s3cret" not in message


# --- errors --------------------------------------------------------------------------------------


def driver_error(message: str, code: int | None = None) -> sqlite3.DatabaseError:
    exc = sqlite3.DatabaseError(message)
    if code is not None:
        exc.sqlite_errorcode = code  # type: ignore[attr-defined]
    return exc


def test_describe_gives_the_first_line_of_the_driver_s_message(tmp_path: Path) -> None:
    where = locate(tmp_path / "ix.db")
    assert describe_db_error(where, RuntimeError("first\nsecond")) == f"{where}: first"
    assert describe_db_error(where, RuntimeError("  ")) == f"{where}: RuntimeError"
    wrapped = OperationalError("SELECT secret_sql", {"p": 1}, driver_error("no such table: t"))
    assert describe_db_error(where, wrapped) == f"{where}: no such table: t"
    server = locate("postgresql://user:s3cret@host/db")
    shown = describe_db_error(server, RuntimeError("refused"))
    assert shown == "postgresql+psycopg://user:***@host/db: refused"


@pytest.mark.parametrize(
    ("exc", "damaged"),
    [
        (driver_error("file is not a database", 26), True),
        (driver_error("database disk image is malformed", 11), True),
        (driver_error("malformed (extended code)", 11 | 3 << 8), True),
        (driver_error("database is locked", 5), False),
        (driver_error("attempt to write a readonly database", 8), False),
        (driver_error("database disk image is malformed"), True),  # no code: by the text
        (driver_error("file is not a database"), True),
        (driver_error("no such table: x"), False),
        (OperationalError("SELECT 1", {}, driver_error("x", 26)), True),
    ],
)
def test_db_error_calls_a_damaged_file_damaged(
    tmp_path: Path, exc: BaseException, damaged: bool
) -> None:
    where = locate(tmp_path / "ix.db")
    found = db_error(where, exc)
    assert isinstance(found, StorageError)
    assert isinstance(found, DamagedIndexError) is damaged
    if damaged:
        assert isinstance(found, DamagedIndexError) and found.path == tmp_path / "ix.db"
        assert str(found).startswith(describe_db_error(where, exc) + ": the file is damaged")
    else:
        assert str(found) == describe_db_error(where, exc)
    # Only a file can be damaged: elsewhere the same error is a plain StorageError.
    for elsewhere in (locate(":memory:"), locate("postgresql://user@host/db")):
        plain = db_error(elsewhere, exc)
        assert type(plain) is StorageError and str(plain) == describe_db_error(elsewhere, exc)


def test_a_damaged_file_read_through_a_backend_is_damaged(tmp_path: Path) -> None:
    path = tmp_path / "ix.db"
    path.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 32)
    b = storage.open_backend(locate(path))
    with pytest.raises(DamagedIndexError) as caught, b.reading() as conn:
        conn.exec_driver_sql("SELECT count(*) FROM sqlite_master").scalar_one()
    assert caught.value.path == path
    assert str(caught.value).startswith(f"{path}: ")
    b.dispose()


def test_a_read_holds_off_a_rebuild_only_where_the_database_says_so(shared: Location) -> None:
    """no_rebuild_meanwhile: on PostgreSQL a read that asks for it keeps a
    write that must be alone (a rebuild) waiting; on SQLite a read never
    holds a writer up (WAL), so it asks nothing."""
    reader, rebuilder = opened(shared), opened(shared)
    reader.use_wal()
    with reader.reading() as conn:
        reader.no_rebuild_meanwhile(conn)
        if shared.postgres:
            with (
                pytest.raises(StorageError, match="locked by another writer"),
                rebuilder.writing(alone=True, wait=0),
            ):
                pytest.fail("a rebuild began during a read that held it off")
        else:
            with rebuilder.writing(alone=True, wait=0) as other:
                other.exec_driver_sql("CREATE TABLE rebuilt (n BIGINT)")
    with rebuilder.writing(alone=True, wait=0):  # the read is over: nothing holds it off
        pass
    reader.dispose()
    rebuilder.dispose()


def test_a_connection_lost_during_a_write_says_it_may_or_may_not_be_saved(pg_url: str) -> None:
    b = opened(locate(pg_url))
    with pytest.raises(StorageError) as caught, b.writing() as conn:
        conn.exec_driver_sql("SELECT pg_terminate_backend(pg_backend_pid())")
    message = str(caught.value)
    assert message.startswith(f"{b.where}: ") and "\n" not in message
    assert "the connection was lost during a write, which may or may not have been saved" in (
        message
    )
    with b.reading() as conn:  # the next call connects again
        assert conn.exec_driver_sql("SELECT 1").scalar_one() == 1
    b.dispose()

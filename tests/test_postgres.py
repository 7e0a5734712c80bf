"""The index on a PostgreSQL server: what only PostgreSQL has.

The rest of the suite runs on PostgreSQL too (the `index` and `location`
fixtures in conftest.py). These tests, like those, run when
SIMINDEX_TEST_POSTGRES_URL names a database simindex may fill, e.g.

    pip install '.[test,postgres]'
    apt-get install postgresql && pg_ctlcluster 15 main start
    su postgres -c "psql -c \"CREATE ROLE simindex LOGIN PASSWORD 'pw' CREATEDB\""
    su postgres -c "createdb -O simindex simindex_test"
    SIMINDEX_TEST_POSTGRES_URL=postgresql+psycopg://simindex:pw@127.0.0.1/simindex_test pytest

Without it they skip, saying so (with SIMINDEX_REQUIRE_POSTGRES=1, as in CI,
they fail instead). Each test gets a schema of its own (?schema=), dropped after it.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from sqlalchemy import make_url

from simindex import InvalidArgumentError, NotAnIndexError, SimIndex, StorageError
from tests.helpers import brute_force, brute_force_pairs, flip, invoke

from .conftest import postgres_or_skip


def other_schema(url: str, name: str) -> str:
    return url.rsplit("schema=", 1)[0] + f"schema={name}"


@pytest.mark.parametrize(("k", "blocks"), [(3, None), (3, 5), (2, 4), (6, None)])
@pytest.mark.parametrize("n", [300, 30_000])  # 30,000: the bulk path that rebuilds indexes
def test_answers_equal_brute_force(pg_url: str, n: int, k: int, blocks: int | None) -> None:
    rng = random.Random(n + k)
    stored = {f"k{i}": rng.getrandbits(64) for i in range(n)}
    for i in range(50):
        stored[f"near{i}"] = flip(stored[f"k{i}"], rng.randrange(0, k + 2), rng)
    for edge in (0, 1, 2**63 - 1, 2**63, 2**63 + 1, 2**64 - 1):
        stored[f"edge{edge}"] = edge
    with SimIndex(pg_url, k=k, blocks=blocks) as index:
        index.add_fingerprints(stored.items())
        queries = [flip(stored[f"k{i}"], rng.randrange(0, k + 2), rng) for i in range(60)]
        queries += [0, 2**63, 2**64 - 1, 2**63 - 1]
        for q in queries:
            assert index.query(q) == brute_force(stored, q, k)
        expected = [brute_force(stored, q, k) for q in queries * 5]
        assert index.query_many(queries * 5) == expected  # through the indexes
        assert index.query_many(queries * 100)[: len(expected)] == expected  # in one join
        assert index.query_many(queries, k=k + 1) == [
            brute_force(stored, q, k + 1) for q in queries
        ]
        if n <= 1000:  # the pairwise oracle is quadratic
            found = index.duplicates()
            assert [(p.key_a, p.key_b, p.distance) for p in found] == brute_force_pairs(stored, k)
            assert all(p.similarity is None for p in found)  # no signatures: distance alone
        assert index.check().ok and len(index) == len(stored)


def test_two_indexes_in_one_database_do_not_collide(pg_url: str) -> None:
    second = other_schema(pg_url, pg_url.rsplit("schema=", 1)[1] + "_b")
    try:
        with SimIndex(pg_url) as a, SimIndex(second, k=2) as b:
            a.add_fingerprint("x", 1)
            b.add_fingerprint("y", 1)
            assert [m.key for m in a.query(1)] == ["x"] and [m.key for m in b.query(1)] == ["y"]
            assert (a.k, b.k) == (8, 2)
            b.rebuild(k=4)
            assert a.k == 8 and a.check().ok and b.check().ok
    finally:
        from sqlalchemy import create_engine

        engine = create_engine(postgres_or_skip())
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {second.rsplit('=', 1)[1]} CASCADE")
        engine.dispose()


def test_lookup_indexes_carry_the_id_after_a_bulk_load_and_a_rebuild(pg_url: str) -> None:
    from sqlalchemy import create_engine, text

    def definitions() -> list[str]:
        engine = create_engine(postgres_or_skip())
        try:
            with engine.connect() as conn:
                return sorted(
                    conn.execute(
                        text(
                            "SELECT indexdef FROM pg_indexes WHERE schemaname = :s "
                            "AND indexname LIKE 'ix_simindex_fingerprints_t%'"
                        ),
                        {"s": pg_url.rsplit("schema=", 1)[1]},
                    ).scalars()
                )
        finally:
            engine.dispose()

    rng = random.Random(5)
    with SimIndex(pg_url) as index:
        index.add_fingerprints((f"k{i}", rng.getrandbits(64)) for i in range(30_000))
        made = definitions()
        index.rebuild(k=3)
        rebuilt = definitions()
    assert len(made) == 3 and len(rebuilt) == 4  # k = 8: 3 tables; k = 3: 4 blocks, 4 tables
    assert all(d.endswith("INCLUDE (id)") for d in made + rebuilt), made + rebuilt


def test_the_stored_snapshot_is_kept_uncompressed(pg_url: str) -> None:
    from sqlalchemy import create_engine, text

    SimIndex(pg_url).close()
    engine = create_engine(postgres_or_skip())  # the server's catalogue, asked from outside
    try:
        with engine.connect() as conn:
            storage = conn.execute(
                text(
                    "SELECT a.attstorage FROM pg_attribute a "
                    "JOIN pg_class c ON c.oid = a.attrelid "
                    "JOIN pg_namespace n ON n.oid = c.relnamespace "
                    "WHERE n.nspname = :s AND c.relname = 'simindex_snapshot' "
                    "AND a.attname = 'data'"
                ),
                {"s": pg_url.rsplit("schema=", 1)[1]},
            ).scalar_one()
    finally:
        engine.dispose()
    assert storage == "e"  # EXTERNAL: out of line, never compressed


def test_an_index_that_is_not_there_is_not_created_when_told_not_to(pg_url: str) -> None:
    with pytest.raises(NotAnIndexError, match="no index"):
        SimIndex(pg_url, create=False)


@pytest.mark.parametrize("bad", ["Upper", "1abc", "a-b", "x" * 64, "a;drop"])
def test_bad_schema_names_are_refused(bad: str) -> None:
    with pytest.raises(InvalidArgumentError, match="schema"):
        SimIndex(f"postgresql+psycopg://u:secret@127.0.0.1/db?schema={bad}")


def test_passwords_never_show(pg_url: str) -> None:
    password = make_url(pg_url).password
    assert password
    with SimIndex(pg_url) as index:
        index.add("doc", "the quick brown fox jumps over the lazy dog")
        shown = [repr(index), index.location, str(index.stats())]
    result = invoke("stats", pg_url, "--json")
    assert result.exit_code == 0
    shown.append(result.output)
    missing = invoke("stats", other_schema(pg_url, "no_index_here"))  # "create one with: ..."
    assert missing.exit_code == 2 and "no index" in missing.output
    shown.append(missing.output)
    assert all(str(password) not in s and "***" in s for s in shown)


def test_wrong_credentials_unreachable_servers_and_bad_urls_are_one_line(pg_url: str) -> None:
    url = make_url(pg_url)
    cases = {
        "wrong password": url.set(password="not-the-password"),
        "unknown database": url.set(database="no_such_database_here"),
        "nobody listening": url.set(host="127.0.0.1", port=1),
    }
    for what, bad in cases.items():
        text = bad.render_as_string(hide_password=False)
        with pytest.raises(StorageError) as caught:
            SimIndex(text, timeout=2)
        message = str(caught.value)
        assert "\n" not in message and "not-the-password" not in message, what
        result = invoke("stats", text)
        assert result.exit_code == 2 and result.output.count("\n") == 1, (what, result.output)
        assert result.output.startswith("Error:") and "not-the-password" not in result.output


def test_a_missing_driver_is_one_line() -> None:
    """Tried as a new user would: a PostgreSQL URL without `pip install 'simindex[postgres]'`."""
    import subprocess
    import sys

    from .conftest import ROOT

    code = (
        "import sys; sys.modules['psycopg'] = None; sys.modules['psycopg2'] = None\n"
        "sys.argv = ['simindex', 'stats', 'postgresql://u:secretpw@127.0.0.1/db']\n"
        "from simindex.cli import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("Error: ") and done.stderr.count("\n") == 1
    assert "driver" in done.stderr and "secretpw" not in done.stderr


@pytest.mark.parametrize("skip_existing", [False, True])
@pytest.mark.parametrize("with_signatures", [False, True])
def test_a_first_load_copied_straight_in_equals_the_usual_path(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, skip_existing: bool, with_signatures: bool
) -> None:
    """A first load into an empty table COPYs its rows straight in, its unique
    key set aside (Copying.begin_fresh_load): with keys that come twice (in
    one chunk and across chunks), it leaves the rows, their order of ids,
    count, signatures and answers the usual path leaves; the key is unique again afterwards
    (a later add of a stored key replaces it), under the name it had, also
    after a rebuild gave it another."""
    from sqlalchemy import create_engine, text

    from simindex.signature import NBYTES
    from simindex.storage import loading
    from simindex.storage.copying import Copying

    rng = random.Random(8)
    fps = [rng.getrandbits(64) for _ in range(7_000)] + [2**63, 2**64 - 1, 0]
    items: list[tuple[str, ...]] = []
    for i, fp in enumerate(fps):
        key = f"k{i % 6_000}"  # k0..k999 twice: 5,000 rows apart
        sig = rng.randbytes(NBYTES) if with_signatures and i % 3 else None
        items.append((key, fp, sig) if with_signatures else (key, fp))
    items.insert(10, (items[3][0], 12345, *items[3][2:]))  # and once within the first chunk
    second = other_schema(pg_url, pg_url.rsplit("schema=", 1)[1] + "_usual")

    def state(location: str) -> tuple[int, list[tuple[int, str, int, bytes | None]]]:
        engine = create_engine(postgres_or_skip())
        schema_name = location.rsplit("schema=", 1)[1]
        with SimIndex(location) as index:
            written = index.add_fingerprints(items, skip_existing=skip_existing)
            assert index.check().ok
        try:
            with engine.connect() as conn:
                rows = conn.execute(
                    text(
                        f'SELECT id, key, fingerprint, signature FROM "{schema_name}".'
                        "simindex_fingerprints ORDER BY id"
                    )
                ).all()
        finally:
            engine.dispose()
        return written, [(int(i), k, int(f), s and bytes(s)) for i, k, f, s in rows]

    copied = []
    original = Copying.copy_rows
    monkeypatch.setattr(
        Copying,
        "copy_rows",
        lambda self, conn, chunks: copied.append(1) or original(self, conn, chunks),
    )
    fresh = state(pg_url)
    assert copied == [1]
    monkeypatch.setattr(loading, "FRESH_LOAD_MIN", 10**9)
    try:
        usual = state(second)
    finally:
        engine = create_engine(postgres_or_skip())
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {second.rsplit('=', 1)[1]} CASCADE")
        engine.dispose()
    assert copied == [1]
    # The same rows in the same order of ids (their values: each path skips others).
    assert (fresh[0], [r[1:] for r in fresh[1]]) == (usual[0], [r[1:] for r in usual[1]])
    assert len({key for _, key, _, _ in fresh[1]}) == len(fresh[1]) == 6_000
    with SimIndex(pg_url) as index:
        index.add_fingerprint("k5", 12345)
        assert index.get("k5") == 12345 and len(index) == 6_000
        for q in fps[:20]:
            stored = {k: f & (2**64 - 1) for _, k, f, _ in fresh[1]}
            want = brute_force(stored | {"k5": 12345}, q, 8)
            assert sorted(m.key for m in index.query(q, threshold=0)) == sorted(m.key for m in want)
        index.rebuild()
        index.remove_many([f"k{i}" for i in range(6_000)])
        assert index.add_fingerprints(items[:3_000]) == 3_000  # a first load again
        index.add_fingerprint("k1", 1)
        assert len(index) == 2_999 and index.get("k1") == 1


def _cut_connections(url: str) -> int:
    """What a server restart does to an open index: every other session of
    this database is ended by the server (pg_terminate_backend)."""
    from sqlalchemy import create_engine

    engine = create_engine(url.rsplit("?", 1)[0])
    try:
        with engine.begin() as conn:
            return len(
                conn.exec_driver_sql(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                    "AND usename = current_user"
                ).fetchall()
            )
    finally:
        engine.dispose()


@pytest.mark.parametrize("hold", [False, True])
def test_an_open_index_comes_back_after_the_server_drops_its_connections(
    pg_url: str, hold: bool
) -> None:
    """Every call on an open SimIndex works again after the server has cut
    its connections (a restart): a lost kept connection is replaced and the
    read asked once more; the pool checks the others before use."""
    rng = random.Random(9)
    stored = {f"k{i}": rng.getrandbits(64) for i in range(3000)}
    q = stored["k3"] ^ 0b11
    batch = [q] + [rng.getrandbits(64) for _ in range(299)]
    calls = {
        "query": lambda ix: ix.query(q) == brute_force(stored, q, 8),
        "query k=2": lambda ix: ix.query(q, k=2) == brute_force(stored, q, 2),
        "in": lambda ix: "k3" in ix and "nope" not in ix,
        "get": lambda ix: ix.get("k3") == stored["k3"],
        "query_many": lambda ix: ix.query_many(batch) == [brute_force(stored, f, 8) for f in batch],
        "stats": lambda ix: ix.stats()["count"] == len(stored),
        "len": lambda ix: len(ix) == len(stored),
        "duplicates": lambda ix: (
            [(p.key_a, p.key_b, p.distance) for p in ix.duplicates(k=3)]
            == brute_force_pairs(stored, 3)
        ),
    }
    with SimIndex(pg_url, hold=hold) as index:
        index.add_fingerprints(stored.items())
        for name, call in calls.items():
            assert call(index), name
        for name, call in calls.items():  # each call the first after a cut
            assert _cut_connections(pg_url) >= 1
            assert call(index), name
        assert _cut_connections(pg_url) >= 1
        index.add_fingerprint("after", q ^ 1)  # a write, too
        stored["after"] = q ^ 1
        assert index.query(q) == brute_force(stored, q, 8)


@pytest.mark.parametrize("hold", [False, True])
def test_a_pre_ping_that_fails_oddly_connects_again(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, hold: bool
) -> None:
    """A pooled connection the server cut can fail its pre-ping with
    psycopg's ProgrammingError ("can't change 'autocommit' now": SQLAlchemy
    restores autocommit on the broken connection), not an error SQLAlchemy
    counts as a disconnect: the pool connects again instead of raising it
    (seen once in test_an_open_index_comes_back_after_the_server_drops_its_
    connections, under load)."""
    import psycopg
    from sqlalchemy.dialects.postgresql.psycopg import PGDialect_psycopg

    with SimIndex(pg_url, hold=hold) as index:
        index.add_fingerprint("a", 1)
        failed: list[int] = []
        ping = PGDialect_psycopg.do_ping

        def odd_once(self: Any, dbapi_connection: Any) -> bool:
            if not failed:
                failed.append(1)
                raise psycopg.ProgrammingError(
                    "can't change 'autocommit' now: connection in transaction status ACTIVE"
                )
            return bool(ping(self, dbapi_connection))

        monkeypatch.setattr(PGDialect_psycopg, "do_ping", odd_once)
        index.add_fingerprint("b", 3)  # a write's checkout pings first
        assert failed == [1]
        assert index.query(1, k=1) == brute_force({"a": 1, "b": 3}, 1, 1)


def test_a_write_that_loses_its_connection_says_so_and_the_next_one_works(pg_url: str) -> None:
    """A connection cut inside a write: one StorageError that says the write
    may not have been saved; the next write connects again."""
    with SimIndex(pg_url, hold=False) as index:
        index.add_fingerprint("a", 1)

        def cut_then_more() -> Any:
            yield ("b", 2)
            _cut_connections(pg_url)
            yield ("c", 3)

        with pytest.raises(StorageError, match="connection was lost during a write"):
            index.add_fingerprints(cut_then_more(), batch_size=1)
        index.add_fingerprint("d", 4)
        assert index.get("d") == 4 and index.get("a") == 1


def test_concurrent_first_opens_of_a_new_schema_all_succeed(pg_url: str) -> None:
    """Many sessions creating the same new schema at once (CREATE SCHEMA IF
    NOT EXISTS alone fails one of two racing on pg_namespace's unique key):
    40 first opens, 8 at a time, each round a new schema, every one opens
    the one index made and writes into it."""
    import threading

    from sqlalchemy import create_engine

    url = make_url(pg_url)
    base = url.difference_update_query(["schema"])
    name = url.query["schema"]
    errors: list[BaseException] = []
    schemas = [f"{name}_r{r}" for r in range(5)]
    try:
        for schema in schemas:
            where = base.update_query_dict({"schema": schema}).render_as_string(hide_password=False)
            start = threading.Barrier(8)

            def first_open(i: int, where: str = where, start: Any = start) -> None:
                try:
                    start.wait()
                    with SimIndex(where) as index:
                        index.add_fingerprint(f"k{i}", i)
                except BaseException as exc:  # collected: the test says which
                    errors.append(exc)

            threads = [threading.Thread(target=first_open, args=(i,)) for i in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            with SimIndex(where) as index:
                assert len(index) == 8
        assert errors == []
    finally:
        engine = create_engine(base)
        try:
            with engine.begin() as conn:
                for schema in schemas:
                    conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        finally:
            engine.dispose()

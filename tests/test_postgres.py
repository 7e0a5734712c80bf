"""The index on a PostgreSQL server: the same answers as on SQLite.

Runs when SIMINDEX_TEST_POSTGRES_URL names a database simindex may fill, e.g.

    pip install '.[postgres]'
    sudo apt-get install postgresql && sudo pg_ctlcluster 15 main start
    sudo -u postgres psql -c "CREATE ROLE simindex LOGIN PASSWORD 'pw' CREATEDB"
    sudo -u postgres createdb -O simindex simindex_test
    SIMINDEX_TEST_POSTGRES_URL=postgresql+psycopg://simindex:pw@127.0.0.1/simindex_test pytest

Without it these tests are skipped, saying so. Each test starts from an
empty database (it drops simindex's tables first).
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator

import pytest

from simindex import SimIndex, StorageError

from .test_index import brute_force, brute_force_pairs, flip

URL = os.environ.get("SIMINDEX_TEST_POSTGRES_URL", "")
pytestmark = pytest.mark.skipif(
    not URL,
    reason="no PostgreSQL server: set SIMINDEX_TEST_POSTGRES_URL (see tests/test_postgres.py)",
)


@pytest.fixture
def pg_index() -> Iterator[SimIndex]:
    from sqlalchemy import create_engine

    engine = create_engine(URL)
    with engine.begin() as conn:
        for table in ("simindex_fingerprints", "simindex_meta", "simindex_alembic_version"):
            conn.exec_driver_sql(f"DROP TABLE IF EXISTS {table}")
    engine.dispose()
    with SimIndex(URL) as index:
        yield index


@pytest.mark.parametrize("n", [200, 30_000])  # 30,000: the bulk path that rebuilds indexes
def test_postgres_answers_equal_brute_force(pg_index: SimIndex, n: int) -> None:
    rng = random.Random(n)
    stored = {f"k{i}": rng.getrandbits(64) for i in range(n)}
    for i in range(50):
        stored[f"near{i}"] = flip(stored[f"k{i}"], rng.randrange(0, 5), rng)
    for edge in (0, 2**63 - 1, 2**63, 2**64 - 1):
        stored[f"edge{edge}"] = edge
    pg_index.add_fingerprints(stored.items())
    queries = [flip(stored[f"k{i}"], rng.randrange(0, 5), rng) for i in range(60)]
    queries += [0, 2**63, 2**64 - 1]
    for q in queries:
        assert pg_index.query(q) == brute_force(stored, q, 3)
    assert pg_index.query_many(queries * 5) == [brute_force(stored, q, 3) for q in queries * 5]
    if n <= 1000:  # the pairwise oracle is quadratic
        assert [tuple(p) for p in pg_index.duplicates()] == brute_force_pairs(stored, 3)
    assert pg_index.check().ok and len(pg_index) == len(stored)


def test_postgres_api_round_trip(pg_index: SimIndex) -> None:
    fp = pg_index.add("doc", "the quick brown fox jumps over the lazy dog")
    assert pg_index.query("The quick brown fox jumps over the lazy dog!")[0].key == "doc"
    pg_index.add_fingerprint("doc", 5)
    assert pg_index.get("doc") == 5 != fp
    assert pg_index.add_fingerprints([("x", 1), ("x", 2)], skip_existing=True) == 2
    assert pg_index.get("x") == 1
    assert pg_index.remove("doc") and "doc" not in pg_index
    assert "***" in repr(pg_index) and "pw" not in repr(pg_index).split("@")[0].split(":")[-1]
    with pytest.raises(StorageError, match="SQLite"):
        pg_index.rebuild(blocks=5)

"""Alembic owns the schema: empty -> head, agreement with schema.py, and refusals."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine

from simindex import (
    BlockLayout,
    IndexVersionError,
    NotAnIndexError,
    SimIndex,
    StorageError,
    storage,
)
from simindex.signature import longer, mix
from simindex.storage import schema
from tests.helpers import assert_keys_complete, banded_pair


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def script_directory() -> ScriptDirectory:
    config = Config()
    config.set_main_option("script_location", str(storage.migrations_dir()))
    return ScriptDirectory.from_config(config)


def test_known_revisions_are_the_scripts() -> None:
    scripts = script_directory()
    chain = [r.revision for r in reversed(list(scripts.walk_revisions()))]
    assert tuple(chain) == storage.REVISIONS
    assert scripts.get_current_head() == storage.HEAD


@pytest.mark.parametrize(("k", "blocks"), [(0, None), (3, None), (7, None), (3, 5)])
def test_empty_to_head_matches_the_described_schema(
    tmp_path: Path, k: int, blocks: int | None
) -> None:
    path = tmp_path / "x.db"
    SimIndex(path, k=k, blocks=blocks).close()
    engine = create_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"version_table": schema.VERSION_TABLE})
        assert context.get_current_revision() == storage.HEAD
        diff = compare_metadata(context, schema.build(BlockLayout.for_k(k, blocks)).metadata)
    engine.dispose()
    assert diff == []


def test_a_random_file_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are my notes, not a database\n" * 100)
    before = digest(path)
    with pytest.raises(NotAnIndexError, match="not a simindex index"):
        SimIndex(path)
    assert digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.db"]


def test_an_unrelated_sqlite_database_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    con.execute("INSERT INTO users (name) VALUES ('ada')")
    con.commit()
    con.close()
    before = digest(path)
    with pytest.raises(NotAnIndexError, match="users"):
        SimIndex(path)
    assert digest(path) == before


def test_an_index_from_a_newer_simindex_is_refused_naming_both_versions(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    SimIndex(path).close()
    con = sqlite3.connect(path)
    con.execute(f"UPDATE {schema.VERSION_TABLE} SET version_num = '0099'")
    con.execute(f"UPDATE {schema.META_TABLE} SET value = '9' WHERE name = 'format'")
    con.execute(
        f"UPDATE {schema.META_TABLE} SET value = 'simindex 9.0.0' WHERE name = 'created_by'"
    )
    con.commit()
    con.close()
    before = digest(path)
    with pytest.raises(IndexVersionError) as caught:
        SimIndex(path)
    message = str(caught.value)
    assert "simindex 9.0.0" in message and "format 9" in message
    assert f"format {storage.FORMAT_VERSION}" in message and "0099" in message
    assert digest(path) == before


def test_missing_index_is_not_created_when_create_is_false(tmp_path: Path) -> None:
    path = tmp_path / "absent.db"
    with pytest.raises(NotAnIndexError, match="no index"):
        SimIndex(path, create=False)
    assert not path.exists()


def test_a_folder_that_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        SimIndex(tmp_path / "nope" / "x.db")


def test_a_sqlite_url_in_a_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        SimIndex(f"sqlite:///{tmp_path}/nope/x.db")


def test_an_unreachable_database_is_one_clear_error_without_the_password() -> None:
    # Either the driver is missing or nothing listens on port 1: one StorageError.
    with pytest.raises(StorageError) as caught:
        SimIndex("postgresql+psycopg://someone:hunter2@127.0.0.1:1/simindex")
    assert "hunter2" not in str(caught.value) and "\n" not in str(caught.value)


def test_the_migrations_ship_beside_the_package() -> None:
    assert (storage.migrations_dir() / "versions" / "0001_create_index.py").is_file()


def test_revision_0011_makes_band_keys_and_marks_long_rows(tmp_path: Path) -> None:
    """An index of revision 0010 has set keys alone, and triggers that mark
    short rows alone: upgraded, every longer row has its band keys, the
    triggers mark a longer row another program writes, and the copies only
    the band keys find are found as in an index made today."""
    texts: dict[str, str] = {}
    for i in range(12):
        a, b = banded_pair(100 + i)
        texts[f"t{i}"], texts[f"t{i}-copy"] = a, b
    old, new = tmp_path / "old.db", tmp_path / "new.db"
    for path in (old, new):
        with SimIndex(path, hold=False) as index:
            index.add_many(texts.items())
    con = sqlite3.connect(old)
    with con:  # what revision 0010 left: no band keys, short rows marked alone
        con.execute("DROP TABLE simindex_set_keys")  # (with a rowid, as 0007 made it)
        con.execute(
            "CREATE TABLE simindex_set_keys (set_key BIGINT NOT NULL, id BIGINT NOT NULL, "
            "CONSTRAINT pk_simindex_set_keys PRIMARY KEY (set_key, id))"
        )
        con.execute("CREATE INDEX ix_simindex_set_keys_id ON simindex_set_keys (id)")
        for name, when in (
            ("inserted", "AFTER INSERT ON simindex_fingerprints WHEN length(NEW.signature) > 64"),
            (
                "updated",
                "AFTER UPDATE OF id, signature ON simindex_fingerprints WHEN "
                "length(NEW.signature) > 64 OR length(OLD.signature) > 64 OR NEW.id IS NOT OLD.id",
            ),
        ):
            con.execute(f"DROP TRIGGER simindex_set_keys_{name}")
            con.execute(
                f"CREATE TRIGGER simindex_set_keys_{name} {when} BEGIN INSERT INTO "
                "simindex_set_keys_due (id) SELECT NEW.id WHERE NOT EXISTS "
                "(SELECT 1 FROM simindex_set_keys_due WHERE id = NEW.id); END"
            )
        con.execute("UPDATE simindex_alembic_version SET version_num = '0010'")
    con.close()
    with SimIndex(old, hold=False) as upgraded, SimIndex(new, hold=False) as made:
        assert upgraded.stats()["schema_revision"] == storage.HEAD
        assert_keys_complete(str(old), drained=True)
        for path in (old, new):  # the key table WITHOUT ROWID, its index on id
            con = sqlite3.connect(path)
            found = con.execute(
                "SELECT type, sql FROM sqlite_master WHERE tbl_name = 'simindex_set_keys'"
            ).fetchall()
            con.close()
            assert sorted(t for t, _ in found) == ["index", "table"]
            assert any("WITHOUT ROWID" in sql for t, sql in found if t == "table")
        for i in range(12):
            got = upgraded.query(texts[f"t{i}"])
            assert got == made.query(texts[f"t{i}"])
            assert [m.key for m in got if m.distance > 8] == [f"t{i}-copy"]
        assert upgraded.duplicates() == made.duplicates()
    con = sqlite3.connect(old)
    with con:  # another program writes a longer row: marked due
        con.execute("UPDATE simindex_fingerprints SET signature = signature WHERE key = 't0'")
        due = con.execute("SELECT count(*) FROM simindex_set_keys_due").fetchone()[0]
    con.close()
    assert due == 1


def old_band_keys(sig: bytes) -> list[int]:
    """A longer text's band keys as revision 0012 made them: ten runs of six
    bytes (twelve bins), each with its place above its 48 bits, salted, mixed."""
    runs = np.zeros((10, 8), np.uint8)
    runs[:, :6] = np.frombuffer(sig[:60], np.uint8).reshape(10, 6)
    values = runs.view("<u8").ravel() | (np.arange(10, dtype=np.uint64) << np.uint64(48))
    return mix(values + np.uint64(0x9E3779B97F4A7C15)).view(np.int64).tolist()


def test_revision_0013_makes_the_band_keys_of_ten_bins(tmp_path: Path) -> None:
    """An index of revision 0012 keeps a longer text's keys of ten bands of
    twelve bins: upgraded, every row's keys are those of twelve bands of
    ten (the short texts' set keys as they were), and the copies only the
    new bands find are found as in an index made today."""
    texts: dict[str, str] = {"short": "core perl modules", "short-copy": "extra perl modules"}
    for i in range(8):
        a, b = banded_pair(300 + i)
        texts[f"t{i}"], texts[f"t{i}-copy"] = a, b
    old, new = tmp_path / "old.db", tmp_path / "new.db"
    for path in (old, new):
        with SimIndex(path, hold=False) as index:
            index.add_many(texts.items())
    con = sqlite3.connect(old)
    with con:  # what revision 0012 left: the old bands' keys
        rows = con.execute("SELECT id, signature FROM simindex_fingerprints").fetchall()
        for row_id, sig in rows:
            if longer(bytes(sig)):
                con.execute("DELETE FROM simindex_set_keys WHERE id = ?", (row_id,))
                con.executemany(
                    "INSERT INTO simindex_set_keys (set_key, id) VALUES (?, ?)",
                    [(key, row_id) for key in old_band_keys(bytes(sig))],
                )
        con.execute("UPDATE simindex_alembic_version SET version_num = '0012'")
    con.close()
    with pytest.raises(AssertionError):  # (the old keys are not today's)
        assert_keys_complete(str(old), drained=True)
    with SimIndex(old, hold=False) as upgraded, SimIndex(new, hold=False) as made:
        assert upgraded.stats()["schema_revision"] == storage.HEAD
        assert_keys_complete(str(old), drained=True)
        for key in texts:
            assert upgraded.query(texts[key]) == made.query(texts[key])
        for i in range(8):
            got = upgraded.query(texts[f"t{i}"])
            assert [m.key for m in got if m.distance > 8] == [f"t{i}-copy"]
        assert upgraded.duplicates() == made.duplicates()


def test_revision_0009_makes_every_short_texts_keys_again(tmp_path: Path) -> None:
    """An index of revision 0008 has the set keys of the rule of four shared
    units (none for texts of three or four units): upgraded, its keys are
    made again, and every short query answers as an index made today does
    (tests/test_short_sets.py holds those to a brute-force scan), the one-word
    edits of three-word texts found at any distance."""
    words = [f"w{i}" for i in range(400)]
    texts: dict[str, str] = {}
    for i in range(60):
        a, b, c, d = words[4 * i : 4 * i + 4]
        texts[f"t{i}"] = f"{a} {b} {c}"
        texts[f"t{i}-edit"] = f"{a} {b} {d}"  # one word replaced: two shared
    old, new = tmp_path / "old.db", tmp_path / "new.db"
    for path in (old, new):
        with SimIndex(path, hold=False) as index:
            index.add_many(texts.items())
    con = sqlite3.connect(old)
    with con:  # what the rule of four left: no keys for sets under five units
        con.execute("DELETE FROM simindex_set_keys")
        con.execute("UPDATE simindex_alembic_version SET version_num = '0008'")
    con.close()
    with pytest.raises(IndexVersionError, match="revision 0008"):
        SimIndex(old, readonly=True)
    with SimIndex(old, hold=False) as upgraded, SimIndex(new, hold=False) as made:
        assert upgraded.stats()["schema_revision"] == storage.HEAD
        far = 0
        for key, text in texts.items():
            got = upgraded.query(text)
            assert got == made.query(text)
            mate = key[: -len("-edit")] if key.endswith("-edit") else f"{key}-edit"
            found = {m.key: m for m in got}
            assert mate in found, (key, got)
            far += found[mate].distance > 8
        assert far  # some pairs only the set keys find
        assert upgraded.duplicates() == made.duplicates()

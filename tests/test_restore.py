"""Restoring an index from a backup, as docs/operating.md (Restore) shows it.

SQLite: ``simindex restore BACKUP INDEX`` into a file another process has
open (with a -wal and a held snapshot: copying a file over it there damaged
the index), into a damaged file, and what it refuses; its copy gives up on a
stuck writer. PostgreSQL: pg_dump and pg_restore of an index's schema or
tables, with a process holding the index open meanwhile.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import make_url

from simindex import SimIndex, StorageError
from simindex.storage import copy_file
from tests.helpers import ROOT, invoke


def fp(i: int) -> int:
    return i * 0x9E37_79B9_7F4A_7C15 % 2**64


OLD = [(f"k{i}", fp(i)) for i in range(2000)]  # in the backup
NEW = [(f"n{i}", fp(10**6 + i)) for i in range(500)]  # added after it


@pytest.fixture
def backed_up(tmp_path: Path) -> tuple[Path, Path]:
    """(index, backup): the backup holds OLD, the index OLD and NEW since."""
    index, backup = tmp_path / "docs.db", tmp_path / "backup.db"
    with SimIndex(index) as ix:
        ix.add_fingerprints(OLD)
    with SimIndex(index) as ix:  # closed: the file alone is the whole index
        ix.compact()
    shutil.copyfile(index, backup)
    with SimIndex(index) as ix:
        ix.add_fingerprints(NEW)
    return index, backup


def test_restore_into_an_index_another_process_has_open(backed_up: tuple[Path, Path]) -> None:
    index, backup = backed_up
    with SimIndex(index, hold=True) as held:
        held.add_fingerprints([("own", fp(5 * 10**6))])  # its own write: in the -wal
        assert [m.key for m in held.query(fp(10**6 + 7), k=8)] == ["n7"]  # held from here
        assert Path(f"{index}-wal").exists()
        result = subprocess.run(
            [sys.executable, "-m", "simindex", "restore", str(backup), str(index)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout == f"restored {index} from {backup}: 2,000 fingerprints\n"
        assert result.stderr == ""
        # The open index answers from the restored rows at its next call
        assert held.query(fp(10**6 + 7), k=8) == []
        assert [m.key for m in held.query(fp(7), k=8)] == ["k7"]
        assert len(held) == 2000 and held.get("own") is None
        held.add_fingerprints([("after", fp(6 * 10**6))])  # and writes on top of them
    assert invoke("check", index).exit_code == 0
    with SimIndex(index) as ix:
        assert len(ix) == 2001 and ix.get("n7") is None and ix.get("k1999") == fp(1999)


def test_restore_copies_an_index_in_use_into_a_backup(
    backed_up: tuple[Path, Path], tmp_path: Path
) -> None:
    """The other way round: `simindex restore docs.db backup.db` while a
    process writes docs.db gives a whole file, the -wal's commits in it."""
    index, _ = backed_up
    copy = tmp_path / "fresh.db"
    with SimIndex(index) as writer:
        writer.add_fingerprints([("own", fp(5 * 10**6))])
        assert Path(f"{index}-wal").exists()
        assert invoke("restore", index, copy).exit_code == 0
        assert not Path(f"{copy}-wal").exists()  # the file alone is the copy
        with SimIndex(copy, readonly=True) as ix:
            assert len(ix) == 2501 and ix.get("own") == fp(5 * 10**6) and ix.check().ok


def test_restore_with_every_process_stopped(backed_up: tuple[Path, Path]) -> None:
    """The docs' commands when nothing runs: a -wal and -shm left behind (a
    process that ended without closing the index) removed, then the copy."""
    index, backup = backed_up
    ended = (
        "import os, sys; from simindex import SimIndex; ix = SimIndex(sys.argv[1]); "
        "ix.add_fingerprints([('late', 12345)]); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", ended, str(index)], check=True, timeout=120)
    assert Path(f"{index}-wal").stat().st_size > 0 and Path(f"{index}-shm").exists()
    subprocess.run(["rm", "-f", f"{index}-wal", f"{index}-shm"], check=True)
    subprocess.run(["cp", str(backup), str(index)], check=True)
    assert invoke("check", index).exit_code == 0
    with SimIndex(index) as ix:
        assert sorted(ix.items()) == sorted(OLD)


@pytest.mark.parametrize("damage", ["truncated", "header only", "overwritten"])
def test_restore_over_a_damaged_index(backed_up: tuple[Path, Path], damage: str) -> None:
    index, backup = backed_up
    with SimIndex(index) as ix:
        ix.compact()
    data = bytearray(index.read_bytes())
    if damage == "truncated":
        data = data[: len(data) // 3]
    elif damage == "header only":
        data = data[:4096]
    else:
        middle = len(data) // 2
        data[middle : middle + 3 * 4096] = bytes(range(256)) * 48
    index.write_bytes(bytes(data))
    assert invoke("check", index).exit_code == 1
    result = invoke("restore", backup, index, "--json")
    if damage != "overwritten":  # cut short: SQLite writes no page into it
        assert result.exit_code == 2
        assert "too damaged for SQLite to write into" in result.stderr
        assert "with every process using it stopped, remove it and its -wal" in result.stderr
        for path in (index, Path(f"{index}-wal"), Path(f"{index}-shm")):
            path.unlink(missing_ok=True)
        result = invoke("restore", backup, index, "--json")
    assert result.exit_code == 0, result.output
    assert '"fingerprints": 2000' in result.stdout
    assert invoke("check", index).exit_code == 0
    with SimIndex(index) as ix:
        assert sorted(ix.items()) == sorted(OLD)


def test_restore_into_a_new_file(backed_up: tuple[Path, Path], tmp_path: Path) -> None:
    _, backup = backed_up
    result = invoke("restore", backup, tmp_path / "new.db")
    assert result.exit_code == 0 and "2,000 fingerprints" in result.stdout
    with SimIndex(tmp_path / "new.db") as ix:
        assert ix.check().ok and len(ix) == 2000


def test_restore_refusals(backed_up: tuple[Path, Path], tmp_path: Path) -> None:
    index, backup = backed_up
    damaged = tmp_path / "damaged.db"
    data = bytearray(backup.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 3 * 4096] = bytes(range(256)) * 48
    damaged.write_bytes(bytes(data))
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database\n", encoding="utf-8")
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    empty, folder = tmp_path / "empty.txt", tmp_path / "folder"
    empty.touch()
    folder.mkdir()
    cases = {
        "no such file: ": [tmp_path / "missing.db", index],
        "is the index itself": [backup, backup],
        "is not sound (simindex check": [damaged, index],
        "not a SQLite database": [notes, index],
        "but not a simindex index: restore replaces an index only": [backup, other],
        "is not a simindex index (not a SQLite database)": [backup, notes],
        "a PostgreSQL index is restored with pg_restore": [backup, "postgresql://u@h/db"],
        "folder": [backup, tmp_path / "no" / "such.db"],
        "is an empty file, not a simindex index": [backup, empty],
        "backup: no index at": [empty, index],
        "is a folder, not a backup of an index": [folder, index],
    }
    before = {p: p.read_bytes() for p in (index, other, notes, empty)}
    for message, args in cases.items():
        result = invoke("restore", *args)
        assert result.exit_code == 2, (args, result.output)
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), (args, result.stderr)
        assert message in lines[0], (args, lines[0])
    assert {p: p.read_bytes() for p in before} == before
    assert not (tmp_path / "no").exists()


def test_the_copy_gives_up_on_a_stuck_writer(backed_up: tuple[Path, Path]) -> None:
    index, backup = backed_up
    writer = sqlite3.connect(index, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        with pytest.raises(StorageError, match="locked by another writer: gave up after 0.3 s"):
            copy_file(backup, index, timeout=0.3)
        assert time.monotonic() - started < 10
        writer.execute("ROLLBACK")
    finally:
        writer.close()
    with SimIndex(index) as ix:
        assert len(ix) == 2500 and ix.check().ok


# --- PostgreSQL: pg_dump and pg_restore ---------------------------------------


def _pg_tools(base: str) -> tuple[str, dict[str, str]]:
    """The libpq URL (no password: that goes in PGPASSWORD) and environment
    for pg_dump and pg_restore; skips (fails under SIMINDEX_REQUIRE_POSTGRES=1)
    without them."""
    if shutil.which("pg_dump") is None or shutil.which("pg_restore") is None:
        why = "pg_dump and pg_restore (PostgreSQL's client) are not on PATH"
        if os.environ.get("SIMINDEX_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"SIMINDEX_REQUIRE_POSTGRES=1 but {why}")
        pytest.skip(why)
    url = make_url(base)
    env = {**os.environ, "PGPASSWORD": url.password or ""}
    plain = url.set(drivername="postgresql", password=None).difference_update_query(["schema"])
    return plain.render_as_string(hide_password=False), env


@pytest.mark.parametrize("form", ["schema", "tables"])
def test_pg_dump_and_pg_restore(pg_url: str, tmp_path: Path, form: str) -> None:
    """The docs' commands: dump the index's schema (or its simindex_* tables),
    write on, restore; an index open meanwhile reads the restored rows."""
    libpq, env = _pg_tools(pg_url)
    schema = make_url(pg_url).query["schema"]
    assert isinstance(schema, str)
    with SimIndex(pg_url) as ix:
        ix.add_fingerprints(OLD)
    dump = tmp_path / "docs.dump"
    what = f"--schema={schema}" if form == "schema" else f"--table={schema}.simindex_*"
    run = {"env": env, "capture_output": True, "text": True, "timeout": 120}
    done = subprocess.run(
        ["pg_dump", "--format=custom", what, f"--file={dump}", libpq], check=False, **run
    )
    assert done.returncode == 0, done.stderr
    with SimIndex(pg_url, hold=True) as held:
        held.add_fingerprints(NEW)
        assert [m.key for m in held.query(fp(10**6 + 7), k=8)] == ["n7"]
        restore = ["pg_restore", "--clean", "--if-exists", "--single-transaction"]
        done = subprocess.run([*restore, f"--dbname={libpq}", str(dump)], check=False, **run)
        assert done.returncode == 0, done.stderr
        assert held.query(fp(10**6 + 7), k=8) == []
        assert len(held) == 2000 and [m.key for m in held.query(fp(7), k=8)] == ["k7"]
        held.add_fingerprints([("after", fp(6 * 10**6))])  # ids go on from the restored ones
    with SimIndex(pg_url) as ix:
        assert ix.check().ok and len(ix) == 2001 and ix.get("n7") is None


def test_restore_names_the_files_by_their_absolute_paths(
    backed_up: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As every other command names an index: given relative paths, absolute."""
    index, backup = backed_up
    monkeypatch.chdir(index.parent)
    result = invoke("restore", backup.name, "copy.db")
    assert result.exit_code == 0, result.stderr
    assert (
        result.stdout == f"restored {index.parent / 'copy.db'} from {backup}: 2,000 fingerprints\n"
    )


def test_reading_commands_leave_the_folder_as_they_found_it(tmp_path: Path) -> None:
    """A command that only reads (stats, check, overlaps, query, dedup, and
    restore's read of the backup) leaves no -wal or -shm behind: a later
    `simindex add` of the folder would meet them."""
    folder = tmp_path / "demo"
    folder.mkdir()
    index = folder / "x.db"
    assert invoke("add", index, ROOT / "examples" / "news.jsonl", "--overlaps").exit_code == 0
    before = sorted(os.listdir(folder))
    assert before == ["x.db"]
    for args in (
        ["stats", index],
        ["check", index],
        ["overlaps", index, "the library opens at nine on saturdays"],
        ["query", index, "the library opens at nine on saturdays"],
        ["dedup", index],
    ):
        assert invoke(*args).exit_code in (0, 1), args
        assert sorted(os.listdir(folder)) == before, args
    backup = folder / "backup.db"
    shutil.copyfile(index, backup)
    assert invoke("restore", backup, index).exit_code == 0
    assert sorted(os.listdir(folder)) == ["backup.db", "x.db"]

"""Crashes, full disks and read-only files: what an index looks like afterwards.

- Kill: ``simindex add --batch-size 1000`` (and ``add_many(batch_size=1000)``
  in a process of its own) is SIGKILLed at several moments; the index must
  open, pass SQLite's integrity check (and ``SimIndex.check``), and hold a
  whole number of batches: exactly the first m*1000 documents of the corpus,
  each with the right fingerprint. ``--skip-existing`` then finishes the
  import. A one-transaction import killed part-way leaves none of it.
- Disk full: SQLite's ``PRAGMA max_page_count`` (set on the connections the
  index takes from its pool) and, where a mount namespace may be made, a real
  tmpfs filled to the brim: an add raises StorageError and keeps nothing of
  the failed transaction.
- Read-only: a file (or folder) that cannot be written, even by root
  (``chattr +i``: root ignores permission bits), can be opened and queried;
  adding raises StorageError naming the read-only file, and leaves it as it was.

Slow (about 45 s on an idle 2-core machine): run by ``pytest -m slow``.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from simindex import SimIndex, StorageError, simhash

from .conftest import ROOT

pytestmark = pytest.mark.slow

N_DOCS = 30_000
BATCH = 1000
HELPER = Path(__file__).with_name("crash_helper.py")


# --- the corpus ---------------------------------------------------------------


@dataclass(frozen=True)
class Corpus:
    path: Path
    keys: list[str]
    texts: dict[str, str]
    expected: dict[str, int]  # key -> simhash(text), the index's default config
    seconds: float  # an uninterrupted `add --batch-size 1000` of it, start to exit


def make_corpus(path: Path) -> tuple[list[str], dict[str, str]]:
    """N_DOCS short texts: 12 words each from a fixed made-up vocabulary."""
    rng = random.Random(20241130)
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocabulary = [
        "".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(5000)
    ]
    keys, texts = [], {}
    with path.open("w", encoding="utf-8") as f:
        for i in range(N_DOCS):
            key = f"doc-{i:05d}"
            text = " ".join(rng.choices(vocabulary, k=12))
            keys.append(key)
            texts[key] = text
            f.write(json.dumps({"id": key, "text": text}) + "\n")
    assert len(set(texts.values())) == N_DOCS
    return keys, texts


def env() -> dict[str, str]:
    """The checkout's simindex for the helper (cli.py finds it by itself)."""
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def add_command(index: Path, corpus: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        str(ROOT / "cli.py"),
        "add",
        str(index),
        str(corpus),
        "--workers",
        "1",
        "--quiet",
        *extra,
    ]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    folder = tmp_path_factory.mktemp("corpus")
    path = folder / "corpus.jsonl"
    keys, texts = make_corpus(path)
    expected = {key: simhash(texts[key]) for key in keys}
    # One uninterrupted run: the timescale for the kill points, and the
    # content a finished import must have.
    index = folder / "reference.db"
    start = time.monotonic()
    done = subprocess.run(
        add_command(index, path, "--batch-size", str(BATCH)), capture_output=True, text=True
    )
    seconds = time.monotonic() - start
    assert done.returncode == 0, done.stderr
    result = Corpus(path, keys, texts, expected, seconds)
    assert_content(index, result, whole=True)
    print(f"\nuninterrupted add --batch-size {BATCH} of {N_DOCS} documents: {seconds:.2f} s")
    return result


# --- checks -------------------------------------------------------------------


def integrity(path: Path) -> list[str]:
    con = sqlite3.connect(path)
    try:
        return [row[0] for row in con.execute("PRAGMA integrity_check")]
    finally:
        con.close()


def lookup_indexes(path: Path) -> set[str]:
    con = sqlite3.connect(path)
    try:
        rows = con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' "
            "AND tbl_name = 'simindex_fingerprints' AND sql IS NOT NULL"
        )
        return {row[0] for row in rows}
    finally:
        con.close()


@pytest.fixture(scope="module")
def fresh_indexes(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The database indexes a new, default index has on its fingerprint table."""
    path = tmp_path_factory.mktemp("fresh") / "fresh.db"
    SimIndex(path).close()
    names = lookup_indexes(path)
    assert names
    return names


def check_passes(ix: SimIndex) -> None:
    """SimIndex.check() finds nothing wrong."""
    report = ix.check()
    assert report.ok, report.problems


def assert_content(path: Path, corpus: Corpus, *, whole: bool = False) -> int:
    """The index at path opens, is intact and holds whole batches: exactly the
    first m * BATCH documents of the corpus, with their fingerprints. Returns
    how many documents it holds."""
    with SimIndex(path) as ix:
        assert integrity(path) == ["ok"]
        check_passes(ix)
        stored = dict(ix.items())
        assert len(ix) == len(stored)
    count = len(stored)
    assert count % BATCH == 0, f"{count} documents: a batch is half there"
    assert stored.keys() == set(corpus.keys[:count]), "not the first documents of the corpus"
    wrong = [key for key, fp in stored.items() if fp != corpus.expected[key]]
    assert not wrong, f"{len(wrong)} wrong fingerprints, e.g. {wrong[:3]}"
    if whole:
        assert count == N_DOCS
    return count


# --- killing ------------------------------------------------------------------


def committed(path: Path) -> int:
    """Rows committed so far, read by a read-only connection (-1: none to read yet)."""
    if not path.exists():
        return -1
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
    except sqlite3.Error:
        return -1
    try:
        return int(con.execute("SELECT count(*) FROM simindex_fingerprints").fetchone()[0])
    except sqlite3.Error:
        return -1
    finally:
        con.close()


@dataclass
class KillPoint:
    name: str
    when: Callable[[Path, float, Corpus], bool]  # (index, seconds since start, corpus)


def after(fraction: float) -> Callable[[Path, float, Corpus], bool]:
    return lambda _path, elapsed, c: elapsed >= fraction * c.seconds


def at_least(rows: int) -> Callable[[Path, float, Corpus], bool]:
    return lambda path, _elapsed, _c: committed(path) >= rows


_rng = random.Random(7)
BATCHED_KILLS = [
    KillPoint("just after start (0.05 s)", lambda _p, elapsed, _c: elapsed >= 0.05),
    KillPoint("as soon as the index file appears", lambda path, _e, _c: path.exists()),
    *(
        KillPoint(f"at {f:.2f} of an uninterrupted run", after(f))
        for f in sorted(_rng.uniform(0.3, 0.9) for _ in range(2))
    ),
    KillPoint("once 28 batches are committed (late)", at_least(28 * BATCH)),
    KillPoint("once all 30 batches are committed (closing)", at_least(N_DOCS)),
]


def run_and_kill(
    command: list[str], index: Path, point: KillPoint, corpus: Corpus, **kwargs: object
) -> tuple[float, bool]:
    """Start command, SIGKILL it (and its process group) at the kill point.

    Returns (seconds from start to kill, whether it had finished first)."""
    proc = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, whatever it starts dies with it
        **kwargs,  # type: ignore[arg-type]
    )
    start = time.monotonic()
    try:
        while proc.poll() is None and not point.when(index, time.monotonic() - start, corpus):
            time.sleep(0.002)
            if time.monotonic() - start > 60:
                raise AssertionError("the process never reached the kill point")
    finally:
        finished = proc.poll() is not None
        if not finished:
            os.killpg(proc.pid, signal.SIGKILL)
        elapsed = time.monotonic() - start
        _, err = proc.communicate()
    # (It may also have exited between the last look and the kill.)
    assert proc.returncode in (0, -signal.SIGKILL), err.decode()
    return elapsed, proc.returncode == 0


def report(what: str, point: KillPoint, elapsed: float, finished: bool, count: int) -> None:
    state = "finished before the kill" if finished else f"killed at {elapsed:.2f} s"
    print(f"\n{what}: {point.name}: {state}; {count // BATCH} batches kept ({count} documents)")


@pytest.mark.parametrize("point", BATCHED_KILLS, ids=lambda p: p.name)
def test_cli_import_killed_keeps_whole_batches_and_resumes(
    tmp_path: Path, corpus: Corpus, fresh_indexes: set[str], point: KillPoint
) -> None:
    index = tmp_path / "index.db"
    command = add_command(index, corpus.path, "--batch-size", str(BATCH))
    elapsed, finished = run_and_kill(command, index, point, corpus)
    count = assert_content(index, corpus)
    assert lookup_indexes(index) == fresh_indexes
    report("CLI --batch-size", point, elapsed, finished, count)
    if point.name.startswith("once all"):
        assert count == N_DOCS

    resumed = subprocess.run(command + ["--skip-existing"], capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert f"({N_DOCS} in all)" in resumed.stdout
    assert_content(index, corpus, whole=True)


def test_resume_killed_too(tmp_path: Path, corpus: Corpus) -> None:
    """Killed, resumed with --skip-existing, killed again, resumed to the end."""
    index = tmp_path / "index.db"
    command = add_command(index, corpus.path, "--batch-size", str(BATCH))
    counts = []
    for point, extra in (
        (KillPoint("once 3 batches are committed", at_least(3 * BATCH)), []),
        (
            KillPoint("resume, once 12 batches are committed", at_least(12 * BATCH)),
            ["--skip-existing"],
        ),
    ):
        elapsed, finished = run_and_kill(command + extra, index, point, corpus)
        counts.append(assert_content(index, corpus))
        report("CLI --batch-size", point, elapsed, finished, counts[-1])
    assert 3 * BATCH <= counts[0] <= counts[1] and counts[1] >= 12 * BATCH
    resumed = subprocess.run(command + ["--skip-existing"], capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert_content(index, corpus, whole=True)


API_KILLS = [
    KillPoint("once 5 batches are committed", at_least(5 * BATCH)),
    KillPoint("once 20 batches are committed", at_least(20 * BATCH)),
]


@pytest.mark.parametrize("point", API_KILLS, ids=lambda p: p.name)
def test_add_many_killed_keeps_whole_batches_and_resumes(
    tmp_path: Path, corpus: Corpus, point: KillPoint
) -> None:
    index = tmp_path / "index.db"
    command = [sys.executable, str(HELPER), "api-add", str(index), str(corpus.path), str(BATCH)]
    elapsed, finished = run_and_kill(command, index, point, corpus, env=env())
    count = assert_content(index, corpus)
    report("add_many(batch_size=1000)", point, elapsed, finished, count)
    assert count >= int(point.name.split()[1]) * BATCH

    def docs() -> Iterator[tuple[str, str]]:
        for key in corpus.keys:
            yield key, corpus.texts[key]

    with SimIndex(index) as ix:  # what it writes is what the crash left out
        assert ix.add_many(docs(), batch_size=BATCH, skip_existing=True) == N_DOCS - count
    assert_content(index, corpus, whole=True)


def file_over(suffix: str, size: int) -> Callable[[Path, float, Corpus], bool]:
    def over(path: Path, _elapsed: float, _c: Corpus) -> bool:
        try:
            return path.with_name(path.name + suffix).stat().st_size > size
        except FileNotFoundError:
            return False

    return over


# Watching the files of a one-transaction import of the corpus: the WAL stays
# empty while the first rows fit in SQLite's page cache, then grows as pages
# spill (the lookup indexes are dropped, rows written, indexes rebuilt), jumps
# to ~4 MB at the commit, and is copied into the index file on close.
ONE_TRANSACTION_KILLS = [
    KillPoint("once the transaction spills to the WAL", file_over("-wal", 0)),
    KillPoint("once the WAL passes 1 MB", file_over("-wal", 1 << 20)),
    KillPoint("once the WAL passes 2 MB (the commit)", file_over("-wal", 2 << 20)),
    KillPoint("once the index file passes 1 MB (checkpoint on close)", file_over("", 1 << 20)),
]


@pytest.mark.parametrize("point", ONE_TRANSACTION_KILLS, ids=lambda p: p.name)
def test_one_transaction_import_killed_keeps_all_or_nothing(
    tmp_path: Path, corpus: Corpus, fresh_indexes: set[str], point: KillPoint
) -> None:
    """No --batch-size: 30,000 rows into an empty index is a bulk load (the
    lookup indexes are dropped and rebuilt inside the transaction)."""
    index = tmp_path / "index.db"
    elapsed, finished = run_and_kill(add_command(index, corpus.path), index, point, corpus)
    count = assert_content(index, corpus)
    report("CLI, one transaction", point, elapsed, finished, count)
    assert count in (0, N_DOCS)
    assert lookup_indexes(index) == fresh_indexes  # the dropped ones came back
    with SimIndex(index) as ix:  # and it takes writes
        ix.add("after-the-kill", "one more document after the kill")
        assert ix.query("one more document after the kill")[0].key == "after-the-kill"


# --- disk full ----------------------------------------------------------------


def page_count(path: Path) -> int:
    con = sqlite3.connect(path)
    try:
        return int(con.execute("PRAGMA page_count").fetchone()[0])
    finally:
        con.close()


def room_for_batches(folder: Path, corpus: Corpus, batches: int) -> int:
    """The pages `batches` batches of the corpus take in a new index (measured
    on a scratch one: rows, their lookup indexes and short texts' set keys)."""
    scratch = folder / "scratch.db"
    with SimIndex(scratch) as ix:
        empty = page_count(scratch)
        ix.add_many(docs_of(corpus, 0, BATCH))
    return batches * (page_count(scratch) - empty)


@contextlib.contextmanager
def full_past(pages: int) -> Iterator[None]:
    """While it lasts, the SQLite databases this process uses are "full" past
    `pages` pages.

    max_page_count is a setting of each connection, so it is set every time
    a pool hands out a connection ("checkout" also reaches the connections a
    pool already holds, which "connect" would not): every pool's, as
    crash_helper.py's page-limit does for a command, so an index's too.
    """
    from sqlalchemy import event
    from sqlalchemy.pool import Pool

    def on_checkout(dbapi_connection: object, _record: object, _proxy: object) -> None:
        if isinstance(dbapi_connection, sqlite3.Connection):
            dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")

    event.listen(Pool, "checkout", on_checkout)
    try:
        yield
    finally:
        event.remove(Pool, "checkout", on_checkout)


def docs_of(corpus: Corpus, start: int, stop: int) -> list[tuple[str, str]]:
    return [(key, corpus.texts[key]) for key in corpus.keys[start:stop]]


@pytest.mark.parametrize("size", [5000, 25_000], ids=["rows-kept-indexed", "bulk-load"])
def test_disk_full_one_transaction_changes_nothing(
    tmp_path: Path, corpus: Corpus, fresh_indexes: set[str], size: int
) -> None:
    """25,000 rows into a 1,000-row index is a bulk load: its lookup indexes
    are dropped before the database fills up, and must be back afterwards."""
    path = tmp_path / "index.db"
    with SimIndex(path) as ix:
        ix.add_many(docs_of(corpus, 0, BATCH))
    before_bytes = path.read_bytes()
    with SimIndex(path) as ix, full_past(page_count(path)):
        before = dict(ix.items())
        with pytest.raises(StorageError, match="full"):
            ix.add_many(docs_of(corpus, BATCH, BATCH + size))
        assert dict(ix.items()) == before
        check_passes(ix)
        with pytest.raises(StorageError, match="full"):  # still full, still nothing kept
            ix.add_many(docs_of(corpus, BATCH, BATCH + size))
    assert integrity(path) == ["ok"]
    assert lookup_indexes(path) == fresh_indexes
    assert path.read_bytes() == before_bytes
    assert assert_content(path, corpus) == BATCH


def test_disk_full_in_batches_keeps_whole_batches_and_resumes(
    tmp_path: Path, corpus: Corpus
) -> None:
    path = tmp_path / "index.db"
    SimIndex(path).close()
    with (
        SimIndex(path) as ix,
        full_past(page_count(path) + room_for_batches(tmp_path, corpus, 3)),
        pytest.raises(StorageError, match="full"),
    ):
        ix.add_many(docs_of(corpus, 0, N_DOCS), batch_size=BATCH)
    count = assert_content(path, corpus)
    assert 0 < count < N_DOCS
    print(f"\nmax_page_count, add_many(batch_size={BATCH}): {count // BATCH} batches kept")
    with SimIndex(path) as ix:  # space again: resume
        ix.add_many(docs_of(corpus, 0, N_DOCS), batch_size=BATCH, skip_existing=True)
    assert_content(path, corpus, whole=True)


def test_disk_full_cli_reports_it(tmp_path: Path, corpus: Corpus) -> None:
    path = tmp_path / "index.db"
    SimIndex(path).close()
    pages = page_count(path) + room_for_batches(tmp_path, corpus, 3)
    args = ["add", str(path), str(corpus.path), "--batch-size", str(BATCH), "--workers", "1"]
    done = subprocess.run(
        [sys.executable, str(HELPER), "page-limit", str(pages), *args],
        capture_output=True,
        text=True,
        env=env(),
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "full" in lines[0], done.stderr
    count = assert_content(path, corpus)
    assert 0 < count < N_DOCS


def can_mount_tmpfs(folder: Path) -> bool:
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        return False
    probe = subprocess.run(
        [unshare, "-m", "--propagation", "private", "mount", "-t", "tmpfs", "tmpfs", str(folder)],
        capture_output=True,
    )
    return probe.returncode == 0


def test_real_disk_full_on_a_small_tmpfs(tmp_path: Path, corpus: Corpus) -> None:
    """A real ENOSPC: a 64 MB tmpfs in a private mount namespace (gone with
    the process: room for the whole corpus once freed), filled by a file
    until ~3 MB are left."""
    folder = tmp_path / "mnt"
    folder.mkdir()
    if not can_mount_tmpfs(folder):
        pytest.skip("cannot mount a tmpfs in a private mount namespace here")
    script = (
        f"mount -t tmpfs -o size=64m tmpfs '{folder}' && "
        f"exec '{sys.executable}' '{HELPER}' enospc '{folder}' '{corpus.path}'"
    )
    done = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        env=env(),
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    print(f"\nreal disk full: {seen}")
    for name in ("batched", "one_transaction"):
        result = seen[name]
        assert result["error"] and result["error"].startswith("StorageError"), result
        assert "full" in result["error"], result
        assert result["prefix"] and result["count"] % BATCH == 0, result
        assert result.get("check", [True, []])[0], result
    assert seen["batched"]["count"] > BATCH  # some batches fit in the room left
    assert seen["one_transaction"]["unchanged"]
    assert seen["integrity_full"] == ["ok"]
    assert seen["after_freeing"]["count"] == N_DOCS
    assert seen["integrity_after"] == ["ok"]


# --- read-only ----------------------------------------------------------------


@contextlib.contextmanager
def unwritable(path: Path) -> Iterator[None]:
    """Make a file or folder unwritable, for root too.

    Permission bits do not stop root, so as root the file also gets the
    immutable attribute (chattr +i; ext4, xfs, btrfs, tmpfs). Skips the test
    where neither works."""
    mode = path.stat().st_mode & 0o7777
    chattr = shutil.which("chattr")
    immutable = False
    path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        if os.geteuid() == 0:
            if chattr is None:
                pytest.skip("running as root (which ignores permission bits) without chattr")
            done = subprocess.run([chattr, "+i", str(path)], capture_output=True, text=True)
            if done.returncode != 0:
                pytest.skip(f"running as root and chattr +i failed: {done.stderr.strip()}")
            immutable = True
        # Check that it worked.
        try:
            if path.is_dir():
                (path / "probe").touch()
                (path / "probe").unlink()
            else:
                with path.open("r+b"):
                    pass
        except PermissionError:
            pass
        else:
            pytest.skip(f"could not make {path} read-only here")
        yield
    finally:
        if immutable:
            subprocess.run([chattr, "-i", str(path)], check=True)  # type: ignore[list-item]
        path.chmod(mode)


@pytest.fixture
def small_index(tmp_path: Path, corpus: Corpus) -> Path:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = folder / "index.db"
    with SimIndex(path) as ix:
        ix.add_many(docs_of(corpus, 0, 200))
    assert sorted(p.name for p in folder.iterdir()) == ["index.db"]  # WAL folded in on close
    return path


def use_read_only(path: Path, corpus: Corpus, **options: object) -> None:
    """Open, query (API and CLI), then fail to write (API and CLI)."""
    key = corpus.keys[7]
    with SimIndex(path, **options) as ix:  # type: ignore[arg-type]
        assert len(ix) == 200
        assert ix.query(corpus.texts[key])[0].key == key
        assert ix.get(key) == corpus.expected[key]
        with pytest.raises(StorageError, match="read-only"):
            ix.add("new", "a new document that cannot be written")
        with pytest.raises(StorageError, match="read-only"):
            ix.add_many(docs_of(corpus, 200, 400), batch_size=50)
        with pytest.raises(StorageError, match="read-only"):
            ix.remove(key)
        assert len(ix) == 200
    if options:
        return
    cli = [sys.executable, str(ROOT / "cli.py")]
    found = subprocess.run(
        [*cli, "query", str(path), corpus.texts[key]], capture_output=True, text=True
    )
    assert found.returncode == 0, found.stderr
    assert key in found.stdout
    refused = subprocess.run(
        [*cli, "add", str(path), "--text", "a new document", "--key", "new"],
        capture_output=True,
        text=True,
    )
    assert refused.returncode == 2
    assert refused.stderr.startswith("Error: ") and "read-only" in refused.stderr, refused.stderr


@pytest.mark.parametrize(
    "what",
    [
        "file",
        "folder",  # SQLite cannot keep -wal/-shm beside it: opened read-only, immutable
        "file and folder",
    ],
)
def test_read_only_index_opens_and_refuses_writes(
    small_index: Path, corpus: Corpus, what: str
) -> None:
    folder = small_index.parent
    before = small_index.read_bytes()
    with contextlib.ExitStack() as stack:
        if "file" in what:
            stack.enter_context(unwritable(small_index))
        if "folder" in what:
            stack.enter_context(unwritable(folder))
        use_read_only(small_index, corpus)
    assert small_index.read_bytes() == before
    assert integrity(small_index) == ["ok"]
    with SimIndex(small_index) as ix:  # writable again: whatever was left behind is harmless
        ix.add("new", "a new document, now that it can be written")
        assert len(ix) == 201
        check_passes(ix)


@pytest.mark.parametrize(
    "folder_writable",
    [
        True,
        False,
    ],
    ids=["writable-folder", "read-only-folder"],
)
def test_readonly_option_refuses_writes(
    small_index: Path, corpus: Corpus, folder_writable: bool
) -> None:
    assert "readonly" in inspect.signature(SimIndex).parameters, "SimIndex(readonly=) is missing"
    before = small_index.read_bytes()
    with contextlib.ExitStack() as stack:
        if not folder_writable:
            stack.enter_context(unwritable(small_index.parent))
        use_read_only(small_index, corpus, readonly=True)
    assert small_index.read_bytes() == before

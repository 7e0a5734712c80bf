"""A damaged index file: every read answers as the undamaged file did, or raises DamagedIndexError.

A compacted index of 4,000 documents gets 1,500 bytes of garbage at one
offset (tests/damage_helper.py); duplicates(), clusters(), query_many (a
batch read into memory), get of every key and ``simindex dedup`` must then
give the undamaged index's answers (checked against brute force) or
DamagedIndexError (the CLI: exit 2 and one ``Error:`` line), never another
answer, a KeyError or a traceback. The fast suite tries a few offsets (the
ones that gave a KeyError, a UnicodeDecodeError or a wrong batch before the
reads were checked: storage/consistency.py); every 997th byte of the file
(every eighth of those in the key table's pages) is the slow test. The unit
tests of consistency.py's checks come first.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

from simindex import DamagedIndexError, SimIndex, planner
from simindex.fingerprint import DEFAULT_CONFIG
from simindex.signature import NBYTES, fingerprint_and_signature
from simindex.storage import Location, consistency, locate
from tests.damage_helper import Truth, brute_force, build, damage, documents, outcomes
from tests.helpers import banded_pair, oracle

ROWS = 4000
STEP = 997  # the slow sweep: an offset every STEP bytes (no page boundary twice; see sweep)
HEADER = 100  # SQLite's file header: garbage there is no SQLite file at all


# --- the checks, on rows as a read gives them ----------------------------------------


@pytest.fixture
def file_location(tmp_path: Path) -> Location:
    return locate(tmp_path / "ix.db")


def test_fingerprints_read_must_have_ids_once_each(file_location: Location) -> None:
    fps = np.array([0x1234_0000_0000_0001, 0xABCD_0000_0000_0002], dtype=np.uint64)
    read = np.stack([np.array([1, 2]), fps.view(np.int64)], axis=1)
    ids, got = consistency.fingerprints(file_location, read)
    assert ids.tolist() == [1, 2] and got.tolist() == fps.tolist()
    for ids_read, message in (([1, 0], "disagree with their block columns"), ([2, 2], "twice")):
        with pytest.raises(DamagedIndexError, match=message):
            consistency.fingerprints(file_location, np.stack([ids_read, read[:, 1]], axis=1))
    spans = [(48, 0xFFFF)]
    blocks = (fps >> np.uint64(48)).astype(np.int64)
    consistency.blocks_agree(file_location, np.stack([read[:, 0], read[:, 1], blocks], 1), spans)
    with pytest.raises(DamagedIndexError, match="id 2 has block columns"):
        wrong = np.stack([read[:, 0], read[:, 1], blocks + np.array([0, 1])], 1)
        consistency.blocks_agree(file_location, wrong, spans)


@pytest.mark.parametrize("k", [0, 3, 8])
def test_a_block_column_that_disagrees_is_met_by_every_whole_read(db_path: Path, k: int) -> None:
    """The database checks each row's block columns against its fingerprint
    as every row is read (consistency.checked_id), whatever the layout."""
    with SimIndex(db_path, k=k) as ix:
        ix.add_many(documents(50))
        assert ix.duplicates() == brute_force(documents(50), k, ix.threshold)
        column = f"block_{len(ix.layout.widths) - 1}"
    with sqlite3.connect(db_path) as conn:
        conn.execute(f"UPDATE simindex_fingerprints SET {column} = {column} + 1 WHERE key = 'd7'")
    conn.close()
    with SimIndex(db_path, create=False) as ix:
        # (a batch large beside the index reads every row, and so meets it;
        # a smaller one probes, and reads the rows only once the time its
        # probes took says so: the machine's speed, not this test, decides)
        batch = ["t"] * planner.BATCH_MIN
        for read in (ix.duplicates, ix.clusters, lambda: ix.query_many(batch, k=8)):
            with pytest.raises(DamagedIndexError, match="1 fingerprints read disagree"):
                read()


@pytest.mark.parametrize("hold", [False, True])
def test_a_whole_read_finds_copies_by_bands_without_the_key_table(
    db_path: Path, hold: bool
) -> None:
    """A batch read in memory, and a held snapshot, pair longer texts by the
    band keys of the signatures they read (Snapshot.meeting), not from the
    key table, whose pages no whole read reads: key rows lost (here deleted,
    as a damaged page would lose them) lose such a read no copy."""
    pairs = [banded_pair(seed) for seed in range(3)]
    docs = documents(200) + [(f"b{i}", b) for i, (_, b) in enumerate(pairs)]
    stored = {key: fingerprint_and_signature(text, DEFAULT_CONFIG) for key, text in docs}
    with SimIndex(db_path) as ix:
        ix.add_many(docs)
    with sqlite3.connect(db_path) as conn:
        conn.execute("DELETE FROM simindex_set_keys")
    conn.close()
    batch = [a for a, _ in pairs] * (planner.BATCH_MIN // 3 + 1)
    with SimIndex(db_path, create=False, hold=hold) as ix:
        for _ in range(2):  # (with hold=True, the second from the snapshot held)
            got = ix.query_many(batch)
            assert got == [oracle(stored, text) for text in batch]
            assert all(any(m.key.startswith("b") and m.distance > 8 for m in g) for g in got)


@pytest.mark.parametrize(
    "value", ["x" * 70, bytes(NBYTES) + bytes(600) + b"\x03"], ids=["text", "middle set too long"]
)
def test_all_pairs_refuse_a_stored_value_that_is_no_signature(db_path: Path, value: object) -> None:
    """duplicates() reads every row with a signature to pair them by keys:
    a value that is no signature there (text another program stored, a
    middle set longer than any) is damage, not a row without one."""
    with SimIndex(db_path) as ix:
        ix.add_many(documents(20))
    with sqlite3.connect(db_path) as conn:
        conn.execute("UPDATE simindex_fingerprints SET signature = ? WHERE id = 1", (value,))
    conn.close()
    with SimIndex(db_path, create=False) as ix, pytest.raises(DamagedIndexError, match="id 1 "):
        ix.duplicates(k=0)


@pytest.mark.parametrize("hold", [False, True])
def test_a_query_refuses_a_candidate_whose_signature_is_no_signature(
    db_path: Path, hold: bool
) -> None:
    """A short text's set with two bytes more is no signature: a query that
    finds its row reports damage, not a judgement of bytes of no form."""
    with SimIndex(db_path) as ix:
        ix.add_many([("a", "alpha beta gamma delta"), ("b", "one two three four five")])
    with sqlite3.connect(db_path) as conn:
        (signature,) = conn.execute(
            "SELECT signature FROM simindex_fingerprints WHERE key = 'a'"
        ).fetchone()
        conn.execute(
            "UPDATE simindex_fingerprints SET signature = ? WHERE key = 'a'",
            (bytes(signature) + b"\0\0",),
        )
    conn.close()
    with SimIndex(db_path, create=False, hold=hold) as ix:
        with pytest.raises(DamagedIndexError, match="not a signature"):
            ix.query("alpha beta gamma epsilon")
        report = ix.check()  # (check names the row; --repair cannot mend it)
        assert not report.ok
        said = "1 rows hold a stored value that is not a signature (ids 1)"
        assert any(said in problem for problem in report.problems)


def test_a_stored_number_that_is_no_integer_is_damage(file_location: Location) -> None:
    assert consistency.table(file_location, [(1, 2), (3, 4)], 2).tolist() == [[1, 2], [3, 4]]
    for row in [(1, "text"), (1, b"blob"), (1, None)]:
        with pytest.raises(DamagedIndexError, match="not an integer"):
            consistency.table(file_location, [(3, 4), row], 2)


def test_rows_read_by_id_must_be_the_rows_asked_for(tmp_path: Path) -> None:
    where = locate(tmp_path / "ix.db")
    signature = bytes(NBYTES)
    good = [(1, "a", -5, signature), (2, "b", 7, None)]
    assert consistency.rows(where, good, {1: -5, 2: 7}) == {1: ("a", signature), 2: ("b", None)}
    cases = {
        "no row has id 2": ([good[0]], {1: -5, 2: 7}),
        "another fingerprint": ([(1, "a", -6, signature)], {1: -5}),
        "key that is not text": ([(1, b"a", -5, signature)], {1: -5}),
        "stored value that is not a signature": ([(1, "a", -5, b"short")], {1: -5}),
        "not one asked for": ([(3, "c", 1, None)], {1: -5}),
    }
    for message, (found, wanted) in cases.items():
        with pytest.raises(DamagedIndexError, match=message):
            consistency.rows(where, found, wanted)
    # PostgreSQL reads each statement at its own moment: a row removed or
    # replaced between two is a write, not damage (the types still must hold).
    server = locate("postgresql://user@host/db")
    assert consistency.rows(server, [(1, "a", -6, signature)], {1: -5, 2: 7}) == {
        1: ("a", signature)
    }
    with pytest.raises(DamagedIndexError, match="key that is not text"):
        consistency.rows(server, [(1, None, -5, None)], {1: -5})


def test_signatures_read_must_be_signatures_of_rows_read(file_location: Location) -> None:
    words, present, *_ = consistency.signature_words(file_location, [bytes(NBYTES)] * 2)
    assert present.all() and words.shape[0] == 2
    for blob in (b"short", "text" * 16):
        with pytest.raises(DamagedIndexError, match="not a signature"):
            consistency.signature_words(file_location, [bytes(NBYTES), blob])
    with pytest.raises(DamagedIndexError, match="id 9 has a signature"):
        consistency.all_known(file_location, np.array([4, 9]), np.array([True, False]))


# --- damaged files --------------------------------------------------------------------


@pytest.fixture(scope="module")
def docs() -> list[tuple[str, str]]:
    return documents(ROWS)


@pytest.fixture(scope="module", params=["rows", "stored snapshot"])
def healthy(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    docs: list[tuple[str, str]],
) -> tuple[Path, Truth]:
    """The compacted index (and, for "stored snapshot", its snapshot stored
    in it: batches read that instead of the rows) and its answers."""
    path = tmp_path_factory.mktemp("healthy") / "ix.db"
    return path, build(path, docs, stored=request.param == "stored snapshot")


def sweep(path: Path) -> list[int]:
    """Every STEP-th byte of the file at ``path``, but on the pages of the
    key table and its index on id only every eighth of those: two thirds of
    the file, which no whole read reads (a query of the database reads a
    few of their pages), and with every offset a quarter of an hour."""
    keyed: set[int] = set()
    page = 1
    try:
        with closing(sqlite3.connect(path)) as conn:
            page = conn.execute("PRAGMA page_size").fetchone()[0]
            found = conn.execute(
                "SELECT pageno FROM dbstat WHERE name IN (?, ?)",
                ("simindex_set_keys", "ix_simindex_set_keys_id"),
            )
            keyed = {number for (number,) in found}
    except sqlite3.OperationalError:  # a SQLite without dbstat: every offset
        pass
    offsets = range(0, path.stat().st_size, STEP)
    return [at for i, at in enumerate(offsets) if i % 8 == 0 or at // page + 1 not in keyed]


def allowed(at: int, found: dict[str, str]) -> bool:
    """Each read gave the undamaged answer or DamagedIndexError; with the
    file header overwritten (no SQLite file at all) NotAnIndexError too."""
    fine = {"same", "damaged"} | ({"NotAnIndexError", "error"} if at < HEADER else set())
    return set(found.values()) <= fine


def try_offsets(
    healthy: tuple[Path, Truth], docs: list[tuple[str, str]], tmp_path: Path, offsets: list[int]
) -> dict[int, dict[str, str]]:
    path, truth = healthy
    data = path.read_bytes()
    seen = {}
    for at in offsets:
        if at >= len(data):
            continue
        copy = tmp_path / f"copy{at}.db"
        copy.write_bytes(damage(data, at))
        seen[at] = outcomes(copy, truth, docs)
        for leftover in tmp_path.glob(f"copy{at}.db*"):
            leftover.unlink()
    return seen


# Before the checks: 3,988 (the schema page) raised UnicodeDecodeError;
# 120,000 and 267,196 (the lookup index read whole) a KeyError from
# duplicates() and a traceback from dedup; 49,850 and 119,640 (fingerprint
# table pages) a batch from the stored snapshot that lacked matches, and
# 227,316 one with a similarity from a signature overwritten in place;
# 304,085 (a record's length made huge) SQLite's "string or blob too big",
# a StorageError that did not say the file is damaged; 1,277,157 (the stored
# snapshot's file: a part's value made an integer) a TypeError from a batch.
SAMPLE = [3988, 49_850, 119_640, 120_000, 227_316, 267_196, 304_085, 400_000, 700_000]
# 786,633 (a page of the unique index on key, once the band keys' table
# lay before it) made get() answer None for 43 stored keys until SQLite
# checked each page's cells as it read it (PRAGMA cell_size_check).
SAMPLE += [1_277_157, 786_633]


def test_a_few_damaged_offsets_answer_right_or_raise(
    healthy: tuple[Path, Truth], docs: list[tuple[str, str]], tmp_path: Path
) -> None:
    seen = try_offsets(healthy, docs, tmp_path, SAMPLE)
    wrong = {at: found for at, found in seen.items() if not allowed(at, found)}
    assert not wrong, wrong
    assert any("damaged" in found.values() for found in seen.values())


@pytest.mark.slow
def test_every_damaged_offset_answers_right_or_raises(
    healthy: tuple[Path, Truth], docs: list[tuple[str, str]], tmp_path: Path
) -> None:
    seen = try_offsets(healthy, docs, tmp_path, sweep(healthy[0]))
    wrong = {at: found for at, found in seen.items() if not allowed(at, found)}
    assert not wrong, wrong


def test_an_undamaged_index_raises_nothing_after_its_own_writes(tmp_path: Path) -> None:
    """What the checks read back (a held row missing, or with another
    fingerprint) is what the owner's removes and replaces leave too: those
    are no damage, and the answers are a fresh reader's."""
    path = tmp_path / "ix.db"
    docs = documents(300)
    base = docs[0][1]
    copies = [(f"copy{i}", f"{base} extra{i}") for i in range(4)]
    with SimIndex(path, hold=True) as ix:
        ix.add_many(docs + copies)
        before = ix.query(base)  # and from now on held in memory
        assert len(before) >= 4
        ix.remove("copy0")
        ix.remove_many(["copy1"])
        ix.add("copy2", "a text that is nothing like the others at all")  # the same id
        with SimIndex(path, create=False, hold=False) as fresh:
            assert ix.query(base) == fresh.query(base) != before
            assert ix.query_many([base] * 20) == fresh.query_many([base] * 20)
            assert ix.duplicates() == fresh.duplicates()


@pytest.mark.parametrize("blocks", [4, 6])
def test_a_rebuild_elsewhere_is_no_damage(tmp_path: Path, blocks: int) -> None:
    """A reader whose layout a rebuild elsewhere replaced reads block columns
    of another layout (of other widths, or fewer): not damage. Its whole
    reads check only under its own layout, and answer as a fresh reader."""
    path = tmp_path / "ix.db"
    docs = documents(300)
    with SimIndex(path, k=3, blocks=5, hold=True) as reader, SimIndex(path) as other:
        reader.add_many(docs)
        reader.query(docs[0][1], k=4)  # a held snapshot too (under the old layout)
        other.rebuild(blocks=blocks)
        with SimIndex(path, create=False) as fresh:
            assert reader.duplicates(k=8) == fresh.duplicates(k=8)
            assert reader.clusters(k=8) == fresh.clusters(k=8)
            batch = [text for _, text in docs[:50]] * 4
            assert reader.query_many(batch, k=8) == fresh.query_many(batch, k=8)
            assert reader.query(docs[1][1]) == fresh.query(docs[1][1])

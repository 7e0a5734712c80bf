"""The second stage: candidates within k verified by their signatures.

Every way of answering (the block lookups, probes, a held snapshot, a batch
read into memory, the server's join, a full scan) is checked against a
brute-force oracle over every stored (fingerprint, signature): a stored
document matches a query when it is within k and, where both have a
signature, their similarity reaches the threshold.
"""

from __future__ import annotations

import math
import random
import sqlite3
import struct
import warnings
from pathlib import Path

import numpy as np
import pytest

from simindex import (
    ConfigMismatchError,
    FullScanWarning,
    IndexVersionError,
    InvalidArgumentError,
    Match,
    SimIndex,
    accelerator,
    dedup_stream,
    storage,
)
from simindex.fingerprint import DEFAULT_CONFIG, hamming
from simindex.signature import (
    DEFAULT_THRESHOLD,
    NAME,
    NBYTES,
    fingerprint_and_signature,
    similarity,
    threshold_for,
)
from tests.helpers import error, keys_meet

_VOCAB = [a + b + c for a in "bdfgklmnprstvz" for b in "aeiouy" for c in "mnrstlk"]
Stored = dict[str, tuple[int, bytes | None]]


def passage(rng: random.Random, words: int) -> str:
    return " ".join(rng.choices(_VOCAB, k=words)) + "."


def edited(text: str, share: float, rng: random.Random) -> str:
    """share of the words replaced by words from the whole vocabulary."""
    w = text.split()
    for i in rng.sample(range(len(w)), round(share * len(w))):
        w[i] = rng.choice(_VOCAB)
    return " ".join(w)


def corpus(seed: int = 3) -> dict[str, str]:
    """Passages, copies of them edited from 2% to 60% (so some copies are
    within k of their original but no longer similar enough), and a few
    texts that share most of their words in another order."""
    rng = random.Random(seed)
    texts: dict[str, str] = {}
    for i in range(40):
        base = passage(rng, rng.randint(30, 150))
        texts[f"p{i}"] = base
        for j, share in enumerate((0.02, 0.1, 0.3, 0.45, 0.6)):
            texts[f"p{i}-e{j}"] = edited(base, share, rng)
    # Short texts (their sets kept exactly: one word apart is a copy), each
    # with one word replaced, one inserted, and two replaced.
    for i in range(30):
        words = rng.sample(_VOCAB, rng.randint(4, 14))
        texts[f"s{i}"] = " ".join(words)
        one = list(words)
        one[rng.randrange(len(one))] = rng.choice(_VOCAB)
        texts[f"s{i}-r1"] = " ".join(one)
        texts[f"s{i}-i1"] = " ".join([*words, rng.choice(_VOCAB)])
        for at in rng.sample(range(len(one)), 2):
            one[at] = rng.choice(_VOCAB)
        texts[f"s{i}-r2"] = " ".join(one)
    return texts


def oracle(
    stored: Stored, fp: int, sig: bytes | None, k: int, threshold: float, *, sets: bool = True
) -> list[Match]:
    """Every stored row within k, or (``sets``: an index of revision 0007 on)
    a short text one unit apart at any distance, verified at the threshold."""
    found = []
    for key, (other, other_sig) in stored.items():
        d = hamming(fp, other)
        if d > k and not (sets and threshold > 0 and keys_meet(sig, other_sig)):
            continue
        estimate = None if sig is None or other_sig is None else similarity(sig, other_sig)
        if estimate is not None and estimate < threshold:
            continue
        found.append(Match(key, d, other, estimate))
    return sorted(found, key=lambda m: (m.distance, m.key))


def load(index: SimIndex, texts: dict[str, str], unsigned: int = 20) -> Stored:
    """Add the texts (the first `unsigned` of them as bare fingerprints, so
    rows without a signature are in the mix too); what is stored."""
    stored: Stored = {}
    items = list(texts.items())
    bare = [(key, index.fingerprint(text)) for key, text in items[:unsigned]]
    index.add_fingerprints(bare)
    stored.update((key, (fp, None)) for key, fp in bare)
    index.add_many(items[unsigned:])
    for key, text in items[unsigned:]:
        stored[key] = fingerprint_and_signature(text, index.config)
    return stored


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    return corpus()


def test_the_corpus_has_candidates_the_signatures_reject(texts: dict[str, str]) -> None:
    """Otherwise the oracle tests below could not tell verification from none."""
    marks = {key: fingerprint_and_signature(t, DEFAULT_CONFIG) for key, t in texts.items()}
    rejected = kept = 0
    for i in range(40):
        fp, sig = marks[f"p{i}"]
        for j in range(5):
            other, other_sig = marks[f"p{i}-e{j}"]
            if hamming(fp, other) <= 12:
                if similarity(sig, other_sig) < DEFAULT_THRESHOLD:
                    rejected += 1
                else:
                    kept += 1
    assert rejected >= 10 and kept >= 40
    short = {0: 0, 1: 0}  # one word apart: a copy by the exact rule, whatever the estimate
    for i in range(30):
        fp, sig = marks[f"s{i}"]
        for copy in ("r1", "i1"):
            other, other_sig = marks[f"s{i}-{copy}"]
            if similarity(sig, other_sig) >= DEFAULT_THRESHOLD:
                short[similarity(sig[:64], other_sig[:64]) >= DEFAULT_THRESHOLD] += 1
    assert short[0] >= 10  # ... which the sketch alone would have rejected


@pytest.mark.filterwarnings("ignore::simindex.FullScanWarning")  # k = 12 on PostgreSQL
@pytest.mark.parametrize("threshold", [None, 0.0, 0.5, 0.95])
def test_queries_equal_brute_force(
    index: SimIndex, texts: dict[str, str], threshold: float | None
) -> None:
    stored = load(index, texts)
    at = index.threshold if threshold is None else threshold
    rng = random.Random(5)
    queries = [*rng.sample(sorted(texts), 25), "fresh"]
    query_texts = [texts.get(q) or passage(rng, 80) for q in queries]
    for k in (2, 3, 8, 12):  # 2: exact lookups (on PostgreSQL, matched by the server)
        for text in query_texts:
            fp, sig = fingerprint_and_signature(text, index.config)
            assert index.query(text, k=k, threshold=threshold) == oracle(stored, fp, sig, k, at)
            # By fingerprint: distance alone, whatever the threshold.
            assert index.query(fp, k=k, threshold=threshold) == oracle(stored, fp, None, k, at)
        # A small batch (lookups) and a large one (read into memory, or the
        # server's join), each query as query() answers it.
        many = query_texts * 10  # 260 queries: past planner.BATCH_MIN
        for batch in (query_texts[:5], many):
            got = index.query_many(batch, k=k, threshold=threshold)
            want = [
                oracle(stored, *fingerprint_and_signature(t, index.config), k, at) for t in batch
            ]
            assert got == want


def test_a_held_snapshot_and_a_full_scan_verify_too(
    db_path: Path, texts: dict[str, str], hold: None
) -> None:
    with SimIndex(db_path, hold=True) as index:
        stored = load(index, texts)
        for key in ("p1", "p2-e3", "p7-e4"):
            fp, sig = fingerprint_and_signature(texts[key], index.config)
            assert index.query(texts[key]) == oracle(stored, fp, sig, 8, DEFAULT_THRESHOLD)
        assert index.stats()["held_in_memory_bytes"] > 0
        # Written since the read: applied to the snapshot, verified like the rest.
        index.add("late", texts["p1-e1"])
        stored["late"] = fingerprint_and_signature(texts["p1-e1"], index.config)
        fp, sig = stored["late"]
        assert index.query(texts["p1-e1"]) == oracle(stored, fp, sig, 8, DEFAULT_THRESHOLD)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FullScanWarning)
            assert index.query(texts["p3"], k=30) == oracle(
                stored, *fingerprint_and_signature(texts["p3"], index.config), 30, DEFAULT_THRESHOLD
            )


@pytest.mark.parametrize("threshold", [None, 0.0, 0.5, 0.95])
def test_a_held_snapshot_verifies_in_memory_as_the_rows_do(
    db_path: Path, texts: dict[str, str], threshold: float | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The held signatures drop candidates before their rows are read: every
    answer still equals brute force, single and batched, after this object
    replaced rows (their held signatures are stale), wrote rows without
    signatures and removed some, and after the writes are merged in. (That
    the snapshot holds the signatures and takes these writes without being
    read again: test_accelerator.py.)"""
    rng = random.Random(11)
    with SimIndex(db_path, hold=True) as index:
        stored = load(index, texts)
        at = index.threshold if threshold is None else threshold
        keys = sorted(texts)
        queries = [texts[q] for q in rng.sample(keys, 30)] + [passage(rng, 60)]

        def check() -> None:
            marks = [fingerprint_and_signature(t, index.config) for t in queries]
            want = [oracle(stored, fp, sig, 8, at) for fp, sig in marks]
            assert [index.query(t, threshold=threshold) for t in queries] == want
            assert index.query_many(queries[:5], threshold=threshold) == want[:5]  # one by one
            assert index.query_many(queries, threshold=threshold) == want
            assert index.query_many(queries * 9, threshold=threshold) == want * 9

        check()
        assert index.held
        # Replaced (the same ids, new texts: the held signatures are stale),
        # signatures dropped, rows removed: all through this object.
        for key in rng.sample(keys, 12):
            other = texts[rng.choice(keys)]
            index.add(key, other)
            stored[key] = fingerprint_and_signature(other, index.config)
        for key in rng.sample(keys, 5):
            fp = index.fingerprint(texts[key])
            index.add_fingerprint(key, fp)
            stored[key] = (fp, None)
        gone = rng.sample(keys, 5)
        index.remove_many(gone)
        for key in gone:
            stored.pop(key)
        assert index.held
        check()
        # Any row added since the read now has the next query merge the added
        # rows into the snapshot first (see Reader._in_memory): from then on,
        # answered from the merged snapshot.
        monkeypatch.setattr(accelerator, "ADDED_MAX", 0)
        check()


def brute_pairs(stored: Stored, k: int, at: float) -> list[tuple[str, str, int, float | None]]:
    """Every pair of stored rows as duplicates() must give them, each pair
    judged alone: within k or meeting by their keys, and, where both have a
    signature, at least as similar as the pair needs (threshold_for)."""
    keys = list(stored)
    want = []
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            (fa, sa), (fb, sb) = stored[a], stored[b]
            d = hamming(fa, fb)
            estimate = None if sa is None or sb is None else similarity(sa, sb)
            near = d <= k or (at > 0 and keys_meet(sa, sb))
            if near and (estimate is None or estimate >= threshold_for(at, sa, sb)):
                want.append((*sorted((a, b)), d, estimate))
    return sorted(want, key=lambda p: (p[2], p[0], p[1]))


@pytest.mark.parametrize("threshold", [None, 0.0, 0.9])
def test_duplicates_and_clusters_equal_brute_force(
    texts: dict[str, str], threshold: float | None
) -> None:
    with SimIndex() as index:
        stored = load(index, texts)
        at = index.threshold if threshold is None else threshold
        keys = list(stored)  # in the order they were added
        want = brute_pairs(stored, index.k, at)
        assert [tuple(p) for p in index.duplicates(threshold=threshold)] == want
        # Clusters: the leader rule over those pairs, in the order of adding.
        pairs = {frozenset(p[:2]) for p in want}
        leaders: dict[str, list[str]] = {}
        for key in keys:
            home = next((c for c in leaders if frozenset((c, key)) in pairs), None)
            if home is None:
                leaders[key] = [key]
            else:
                leaders[home].append(key)
        groups = index.clusters(threshold=threshold)
        assert {c.canonical: sorted(m for m, _ in c.members) for c in groups} == {
            lead: sorted(m) for lead, m in leaders.items() if len(m) > 1
        }
        for c in groups:  # every member a near-duplicate of its canonical one
            assert c.members[0] == (c.canonical, 0)
            for key, d in c.members[1:]:
                assert frozenset((c.canonical, key)) in pairs
                assert d == hamming(stored[c.canonical][0], stored[key][0])


@pytest.mark.parametrize("at_once", [1 << 18, 1])
def test_duplicates_of_copies_repeats_and_every_kind_equal_brute_force(
    monkeypatch: pytest.MonkeyPatch, at_once: int
) -> None:
    """All pairs judged at once (reader: the pairs within k, those of set
    keys and of band keys; the band pairs in pieces, or a pair at a time)
    against each pair judged alone: short, middle
    and longer texts, English and Chinese (the lower threshold of two
    longer texts of CJK characters), copies with edits that move them past
    k, texts stored three times (a group of one fingerprint), rows of a
    fingerprint alone."""
    from simindex import reader

    monkeypatch.setattr(reader, "_JUDGED_AT_ONCE", at_once)
    rng = random.Random(11)
    vocab = [f"w{n}" for n in range(400)]
    han = [chr(0x4E00 + n) for n in range(300)]
    texts: dict[str, str] = {}
    for n in range(40):
        units = han if n % 4 == 3 else vocab
        size = rng.choice([3, 5, 12, 40, 120, 300])
        base = [rng.choice(units) for _ in range(size)]
        join = "" if units is han else " "
        texts[f"d{n}"] = join.join(base)
        for c in range(rng.choice([1, 2, 3])):
            copy = list(base)
            for _ in range(rng.choice([0, 1, size // 12, size // 6])):
                copy[rng.randrange(size)] = rng.choice(units)
            texts[f"d{n}c{c}"] = join.join(copy)
    with SimIndex() as index:
        stored = load(index, texts, unsigned=6)
        for threshold in (None, 0.6, 0.9):
            at = index.threshold if threshold is None else threshold
            want = brute_pairs(stored, index.k, at)
            assert [tuple(p) for p in index.duplicates(threshold=threshold)] == want
            assert len(want) > 40 and any(p[2] > index.k for p in want)


def test_two_sets_of_the_same_units_pair_at_any_threshold() -> None:
    """A short text kept in its text's order and a row of the same units
    stored sorted (as rows written before the order was kept are) are as
    similar as 1: all pairs finds them at a threshold above 15/17 too,
    however few their units (a filter of sets one unit apart must not
    drop them)."""
    text = "甲乙丙丁戊己庚辛壬"
    with SimIndex() as index:
        fa, sa = fingerprint_and_signature(text, index.config)
        fb, sb = fingerprint_and_signature(text[::-1], index.config)
        units = sorted(struct.unpack_from(f"<{len(text)}I", sb, NBYTES))
        sorted_b = sb[:NBYTES] + struct.pack(f"<{len(units)}I", *units)
        assert similarity(sa, sorted_b) == 1.0 and hamming(fa, fb) > index.k
        index.add_fingerprints([("a", fa, sa), ("b", fb, sorted_b)])
        found = index.duplicates(threshold=0.9)
        assert [(p.key_a, p.key_b, p.similarity) for p in found] == [("a", "b", 1.0)]


def test_keys_shared_by_many_are_paired_once_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """reader._sharing: every pair of owners sharing a key, once, against
    brute force; with what it holds dropped of repeats whenever it has
    doubled (a few times in all, not once a step: hundreds of rows under
    one key took minutes when it sorted everything again at every step)."""
    from simindex import reader

    rng = np.random.default_rng(3)
    n = 400
    keys = np.concatenate([np.zeros(n, np.int64), rng.integers(0, 50, 3 * n)])
    owner = np.concatenate([np.arange(n), rng.integers(0, n, 3 * n)])
    want = sorted(
        {(min(a, b), max(a, b)) for key in set(keys.tolist()) for a in owner[keys == key].tolist()
         for b in owner[keys == key].tolist() if a != b}
    )  # fmt: skip
    monkeypatch.setattr(reader, "_SHARED_AT_ONCE", 64)
    calls = []
    distinct = reader._distinct
    monkeypatch.setattr(reader, "_distinct", lambda x: calls.append(1) or distinct(x))
    a, b = reader._sharing(keys, owner, n)
    assert list(zip(a.tolist(), b.tolist(), strict=True)) == want
    assert 3 <= len(calls) <= 2 * math.log2(len(want) / 64) + 2


def test_clusters_do_not_chain() -> None:
    """b is a near copy of a and of c, but a and c are too unlike: c does not
    join a's cluster through b (single linkage would put all three together)."""
    rng = random.Random(9)
    words = rng.choices(_VOCAB, k=200)
    a = " ".join(words[:160])
    b = " ".join(words[20:180])
    c = " ".join(words[40:200])
    with SimIndex(k=15) as index:
        index.add_many([("a", a), ("b", b), ("c", c)])
        ja, jb, jc = (index.signature(t) for t in (a, b, c))
        assert similarity(ja, jb) >= 0.75 and similarity(jb, jc) >= 0.75 > similarity(ja, jc)
        pairs = index.duplicates(threshold=0.75)
        assert {(p.key_a, p.key_b) for p in pairs} == {("a", "b"), ("b", "c")}
        assert [c.members for c in index.clusters(threshold=0.75)] == [
            [("a", 0), ("b", hamming(index.fingerprint(a), index.fingerprint(b)))]
        ]


def test_the_threshold_is_stored_and_checked(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    with SimIndex(path, threshold=0.7) as index:
        assert index.threshold == 0.7
        assert index.stats()["threshold"] == 0.7
    with SimIndex(path) as index:
        assert index.threshold == 0.7
    with pytest.raises(ConfigMismatchError, match="threshold 0.7"):
        SimIndex(path, threshold=0.9)
    with SimIndex(path) as index:
        index.rebuild(threshold=0.9)
        assert index.threshold == 0.9
    with SimIndex(path, threshold=0.9) as index:
        assert index.threshold == 0.9
    for bad in (-0.1, 1.5, float("nan"), "0.8", True):
        with pytest.raises(InvalidArgumentError, match="threshold"):
            SimIndex(threshold=bad)  # type: ignore[arg-type]
        with SimIndex() as index, pytest.raises(InvalidArgumentError, match="threshold"):
            index.query("some words", threshold=bad)  # type: ignore[arg-type]


def test_signatures_given_with_fingerprints_and_bad_ones(texts: dict[str, str]) -> None:
    with SimIndex() as index:
        fp, sig = fingerprint_and_signature(texts["p0"], index.config)
        index.add_fingerprints([("a", fp, sig), ("b", fp), ("c", fp, None)])
        index.add_fingerprint("d", fp, sig)
        got = {m.key: m.similarity for m in index.query(texts["p0"])}
        assert got == {"a": 1.0, "b": None, "c": None, "d": 1.0}
        assert index.stats()["without_signature"] == 2
        for bad in (b"short", "x" * 64, 7):
            with pytest.raises(InvalidArgumentError, match="signature"):
                index.add_fingerprints([("e", fp, bad)])  # type: ignore[list-item]
        assert "e" not in index


def test_dedup_stream_verifies() -> None:
    """c is within k of a but too unlike it: kept at the default threshold,
    dropped by distance alone."""
    rng = random.Random(4)
    base = passage(rng, 120)
    fa, sa = fingerprint_and_signature(base, DEFAULT_CONFIG)
    for _ in range(200):  # a half-rewritten copy that the fingerprint alone calls a duplicate
        far = edited(base, 0.45, rng)
        fc, sc = fingerprint_and_signature(far, DEFAULT_CONFIG)
        if hamming(fa, fc) <= 12:
            break
    assert hamming(fa, fc) <= 12 and similarity(sa, sc) < DEFAULT_THRESHOLD
    k = max(hamming(fa, fc), 3)
    docs = [("a", base), ("b", edited(base, 0.02, rng)), ("c", far)]
    run = list(dedup_stream(docs, k=k, workers=1))
    assert [(d.key, d.kept) for d in run] == [("a", True), ("b", False), ("c", True)]
    assert run[1].similarity is not None and run[1].similarity >= DEFAULT_THRESHOLD
    alone = list(dedup_stream(docs, k=k, threshold=0, workers=1))
    assert [(d.kept, d.duplicate_of) for d in alone] == [(True, None), (False, "a"), (False, "a")]
    with pytest.raises(InvalidArgumentError, match="threshold"):
        dedup_stream(docs, threshold=2)


# --- an index made before signatures (revision 0001) ---------------------------------------


def make_revision_1(location: str | Path, texts: dict[str, str]) -> dict[str, int]:
    """An index as simindex wrote it before revision 0002 (no signature column,
    no threshold in its settings), on SQLite or PostgreSQL."""
    import numpy as np
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import text

    from simindex.blocks import BlockLayout
    from simindex.fingerprint import simhash
    from simindex.storage.sql import block_rows

    layout = BlockLayout.for_k(8)
    settings = storage.Settings(layout=layout, config=DEFAULT_CONFIG, created_by="old", distance=8)
    fps = {key: simhash(t, DEFAULT_CONFIG) for key, t in texts.items()}
    blocks = [f"block_{i}" for i in range(len(layout.widths))]
    rows = block_rows(list(fps), np.array(list(fps.values()), dtype=np.uint64), layout)
    backend = storage.open_backend(storage.locate(location))
    try:
        backend.ensure_schema(create=True)
        with backend.writing(alone=True) as conn:
            config = Config()
            config.set_main_option("script_location", str(storage.migrations_dir()))
            config.attributes["connection"] = conn
            config.attributes["simindex.layout"] = {
                "widths": list(layout.widths),
                "tables": [list(t) for t in layout.tables],
            }
            command.upgrade(config, "0001")
            meta = settings.rows()
            del meta["threshold"], meta["signature"]
            conn.execute(
                text("INSERT INTO simindex_meta (name, value) VALUES (:n, :v)"),
                [{"n": n, "v": v} for n, v in meta.items()],
            )
            names = ["key", "fingerprint", *blocks]
            conn.execute(
                text(
                    f"INSERT INTO simindex_fingerprints ({', '.join(names)}) "
                    f"VALUES ({', '.join(':' + n for n in names)})"
                ),
                [dict(zip(names, r, strict=True)) for r in rows],
            )
    finally:
        backend.dispose()
    return fps


def test_an_older_postgresql_index_is_refused_read_only_then_upgraded(
    pg_url: str, texts: dict[str, str]
) -> None:
    """Opened read-only, a revision-0001 index on PostgreSQL is refused with
    how to upgrade it, untouched; opened for writing it is upgraded in place,
    and then answers every way read-only (exact lookups and the server join,
    its rows without signatures matched by distance alone)."""
    some = dict(list(texts.items())[:60])
    fps = make_revision_1(pg_url, some)
    bare: Stored = {k: (f, None) for k, f in fps.items()}
    with pytest.raises(IndexVersionError, match="open it once for writing to upgrade it"):
        SimIndex(pg_url, readonly=True)
    with SimIndex(pg_url) as index:  # for writing: upgraded, the threshold recorded
        assert index.stats()["schema_revision"] == storage.HEAD
        assert index.threshold == 0.8
    with SimIndex(pg_url, readonly=True) as index:
        assert index.check().ok
        for k in (2, 8):  # exact lookups (matched by the server), probes
            assert index.query(some["p0"], k=k) == oracle(bare, fps["p0"], None, k, 0)
        batch = [some[key] for key in list(some)[:10]] * 30  # 300: the server's join at k = 2
        want = [oracle(bare, index.fingerprint(t), None, 2, 0) for t in batch]
        assert index.query_many(batch, k=2) == want


def test_an_older_index_upgrades_in_place_and_is_verified_once_rebuilt(
    tmp_path: Path, texts: dict[str, str]
) -> None:
    path = tmp_path / "old.db"
    some = dict(list(texts.items())[:60])
    fps = make_revision_1(path, some)
    # Read-only: refused with how to upgrade it (the CLI too), the file untouched.
    with pytest.raises(IndexVersionError, match=r"check INDEX --repair"):
        SimIndex(path, readonly=True)
    error("stats", path, contains=("older simindex (schema revision 0001", "--repair"))
    assert sqlite3.connect(path).execute(
        "SELECT version_num FROM simindex_alembic_version"
    ).fetchone() == ("0001",)
    # Opened for writing: upgraded in place, the rows kept, still unsigned.
    with SimIndex(path) as index:
        info = index.stats()
        assert (info["schema_revision"], info["without_signature"], info["count"]) == (
            storage.HEAD,
            60,
            60,
        )
        assert index.threshold == 0.8  # what revision 0002 records, not today's default
        # every row by distance alone (no signatures yet)
        fp = fps["p0"]
        assert index.query(some["p0"]) == oracle(
            {k: (f, None) for k, f in fps.items()}, fp, None, 8, 0
        )
    # The upgrade recorded the threshold it verifies at: a later default does not move it.
    meta = dict(sqlite3.connect(path).execute("SELECT name, value FROM simindex_meta").fetchall())
    assert (meta["threshold"], meta["signature"]) == ("0.8", NAME)
    with SimIndex(path) as index:
        assert any("no verification signature" in w for w in info["warnings"])
        assert {m.key for m in index.query(some["p0"])} == {
            k for k, f in fps.items() if hamming(f, fps["p0"]) <= 8
        }
        # New rows get signatures; rebuilt from the texts, every row has one.
        index.add("new", some["p0"])
        assert index.stats()["without_signature"] == 60
        index.rebuild(some.items())
        assert index.stats()["without_signature"] == 0
        stored = {k: fingerprint_and_signature(t, index.config) for k, t in some.items()}
        fp, sig = stored["p0"]
        assert index.query(some["p0"]) == oracle(stored, fp, sig, 8, index.threshold)


def test_an_index_of_sketches_alone_is_read_and_upgraded(
    tmp_path: Path, texts: dict[str, str]
) -> None:
    """An index of revision 0005 (signatures the sketch alone): refused
    read-only; opened to write, it names the signatures it now stores, its
    rows read as they are (short texts estimated, a query's exact set unused
    against them), and a row written since is compared exactly with a query."""
    path = tmp_path / "old.db"
    short = {k: t for k, t in texts.items() if k.startswith("s")}
    with SimIndex(path) as index:
        index.add_many(short.items())
    con = sqlite3.connect(path)
    with con:  # what a simindex before revision 0006 wrote: the sketches alone
        rows = con.execute("SELECT id, signature FROM simindex_fingerprints").fetchall()
        con.executemany(
            "UPDATE simindex_fingerprints SET signature = ? WHERE id = ?",
            [(sig[:64], row_id) for row_id, sig in rows],
        )
        con.execute("UPDATE simindex_alembic_version SET version_num = '0005'")
        con.execute("UPDATE simindex_meta SET value = 'minhash128x4/1' WHERE name = 'signature'")
    con.close()
    old = {
        k: (fp, sig[:64])
        for k, (fp, sig) in (
            (k, fingerprint_and_signature(t, DEFAULT_CONFIG)) for k, t in short.items()
        )
    }
    query = short["s1-r1"]
    fp, sig = fingerprint_and_signature(query, DEFAULT_CONFIG)
    with pytest.raises(IndexVersionError, match="schema revision 0005"):
        SimIndex(path, readonly=True)
    with SimIndex(path) as index:
        assert index.stats()["schema_revision"] == storage.HEAD
        assert index.stats()["signature"] == NAME
        # the rows of before read as they are: sketches, estimated
        assert index.query(query, k=12) == oracle(old, fp, sig, 12, DEFAULT_THRESHOLD)
        index.add("s1", short["s1"])  # written again: its set kept exactly
        old["s1"] = fingerprint_and_signature(short["s1"], DEFAULT_CONFIG)
        got = index.query(query, k=12)
        assert got == oracle(old, fp, sig, 12, DEFAULT_THRESHOLD)
        assert "s1" in {m.key for m in got}  # one word apart: a copy
    meta = dict(sqlite3.connect(path).execute("SELECT name, value FROM simindex_meta").fetchall())
    assert meta["signature"] == NAME


def test_a_fingerprint_replacing_a_text_clears_its_signature(index: SimIndex) -> None:
    """The old signature belonged to the old text: a key given a bare
    fingerprint (or a new text) is verified by what it has now."""
    text = "the signature of this text must not outlive it " * 3
    index.add_many([("a", text), ("b", text)])
    index.add_fingerprint("a", index.fingerprint(text))  # one at a time (RETURNING on SQLite)
    index.add_fingerprints([("b", index.fingerprint(text))] * 2)  # a batch, a key twice
    assert index.stats()["without_signature"] == 2
    assert [m.similarity for m in index.query(text)] == [None, None]
    index.add_fingerprints([("a", index.fingerprint(text), index.signature(text))])
    assert {m.key: m.similarity for m in index.query(text)} == {"a": 1.0, "b": None}
    index.add_fingerprints([("b", 5)], skip_existing=True)  # kept as it was
    assert index.get("b") == index.fingerprint(text)

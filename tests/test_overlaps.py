"""Partial duplicates (SimIndex.overlaps, simindex overlaps): passages against
a plain-Python oracle, the index against brute force over every stored text,
every kind of write, a reopened index, an index without passages, an outside
writer, and the command."""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import xxhash

from simindex import (
    DEFAULT_CONFIG,
    ConfigMismatchError,
    EmptyTextError,
    IndexVersionError,
    InvalidArgumentError,
    SimIndex,
    storage,
)
from simindex.errors import PassagesNotKeptError, StalePassagesError
from simindex.fingerprint import prepare, to_signed
from simindex.passages import CJK_WEIGHT, SHINGLE_WEIGHT, WINDOW, WORD_WEIGHT, passages
from simindex.results import Overlap
from simindex.signature import units
from simindex.storage.migrate import PASSAGES_FROM
from simindex.tokenize import has_cjk
from tests.helpers import error, invoke, ok, ok_json

WORDS = " ".join(
    (
        "licence copyright software permission granted free charge person obtaining copy",
        "documentation files deal without restriction including limitation rights use",
        "modify merge publish distribute sublicense sell the of and to in a is warranty",
    )
).split()
HANZI = list("的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会")


def random_text(rng: random.Random, length: int, chinese: float = 0.0) -> str:
    out = []
    for _ in range(length):
        if rng.random() < chinese:
            out.append("".join(rng.choice(HANZI) for _ in range(rng.randint(1, 4))))
        else:
            out.append(rng.choice(WORDS))
    return " ".join(out)


# --- passages against a plain-Python oracle --------------------------------------

M = 1 << 64
P = 0x9E3779B97F4A7C15
SEED = 0x243F6A8885A308D3


def _mix(x: int) -> int:
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) % M
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) % M
    return x ^ (x >> 31)


def naive_passages(text: str, window: int = WINDOW) -> list[int]:
    """What simindex.passages documents, one shingle and one window at a time."""
    found = units(prepare(text, DEFAULT_CONFIG))
    hashes = [xxhash.xxh64_intdigest(u.encode("utf-8", "surrogatepass")) for u in found]
    weights = [CJK_WEIGHT if len(u) == 1 and has_cjk(u) else WORD_WEIGHT for u in found]
    bounds = []
    for i in range(len(found)):
        total, j = 0, i
        while j < len(found) and total < SHINGLE_WEIGHT:
            total += weights[j]
            j += 1
        if total >= SHINGLE_WEIGHT:
            bounds.append((i, j))
    if not bounds and found:
        bounds = [(0, len(found))]
    values = [
        _mix((sum(hashes[t] * pow(P, t - i, M) for t in range(i, j)) % M) ^ SEED) for i, j in bounds
    ]
    if not values:
        return []
    if len(values) <= window:
        kept = {min(values)}
    else:
        kept = {min(values[i : i + window]) for i in range(len(values) - window + 1)}
    return sorted(to_signed(v) for v in kept)


@pytest.mark.parametrize("chinese", [0.0, 0.5, 1.0])
@pytest.mark.parametrize("window", [1, 3, WINDOW, 9])
def test_passages_are_what_the_module_says(chinese: float, window: int) -> None:
    rng = random.Random(f"{chinese}-{window}")
    for length in [0, 1, 2, 4, 5, 6, 9, 17, 40, 130]:
        text = random_text(rng, length, chinese)
        got = passages(text, DEFAULT_CONFIG, window=window).tolist()
        assert got == naive_passages(text, window), (length, text)


def test_a_passage_is_shingled_alike_wherever_it_stands() -> None:
    rng = random.Random(5)
    inner = random_text(rng, 60, 0.3)
    alone = set(passages(inner, DEFAULT_CONFIG).tolist())
    around = f"{random_text(rng, 50)} {inner} {random_text(rng, 70, 1.0)}"
    assert alone <= set(passages(around, DEFAULT_CONFIG).tolist())  # every window is one of its


# --- the index against brute force ---------------------------------------------


def oracle(stored: dict[str, str], query: str, threshold: float) -> list[Overlap]:
    """Every stored text's passages made in Python, the shares by set arithmetic."""
    q = set(passages(query, DEFAULT_CONFIG).tolist())
    out = []
    for key, text in stored.items():
        d = set(passages(text, DEFAULT_CONFIG).tolist())
        shared = len(q & d)
        if shared and max(shared / len(q), shared / len(d)) >= threshold:
            out.append(Overlap(key, shared / len(q), shared / len(d)))
    return sorted(out, key=lambda o: (-max(o.query_share, o.stored_share), o.key))


def corpus(rng: random.Random, n: int) -> dict[str, str]:
    """Texts of many lengths and scripts, many holding a passage of an earlier one."""
    texts: dict[str, str] = {}
    for i in range(n):
        chinese = rng.choice([0.0, 0.0, 0.3, 1.0])
        text = random_text(rng, rng.choice([1, 3, 8, 30, 120, 400]), chinese)
        if texts and rng.random() < 0.5:
            other = rng.choice(list(texts.values())).split()
            a = rng.randrange(len(other))
            piece = " ".join(other[a : a + rng.randint(5, 200)])
            text = f"{random_text(rng, rng.randint(0, 80))} {piece} {text}"
        texts[f"doc-{i}"] = text
    return texts


def queries(rng: random.Random, texts: dict[str, str]) -> Iterator[str]:
    values = list(texts.values())
    for _ in range(12):
        words = rng.choice(values).split()
        a = rng.randrange(len(words))
        yield " ".join(words[a : a + rng.randint(1, 150)])  # a passage of a stored text
        yield f"{rng.choice(values)} {random_text(rng, rng.randint(0, 300), 0.2)}"
        yield random_text(rng, rng.randint(1, 200), rng.choice([0.0, 1.0]))


@pytest.fixture(params=["file", "memory", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_url"))
    return str(tmp_path / "x.db") if request.param == "file" else ":memory:"


def test_overlaps_is_brute_force(location: str) -> None:
    rng = random.Random(1)
    texts = corpus(rng, 60)
    with SimIndex(location, overlaps=True) as index:
        index.add_many(texts.items())
        for query in queries(rng, texts):
            for threshold in (0.0, 0.5, 0.8, 1.0):
                assert index.overlaps(query, threshold=threshold) == oracle(
                    texts, query, threshold
                ), query
        query = next(queries(rng, texts))
        assert index.overlaps(query, threshold=0.0, limit=3) == oracle(texts, query, 0.0)[:3]


def test_a_text_inside_a_stored_one_and_a_stored_one_inside_it() -> None:
    rng = random.Random(2)
    licence = random_text(rng, 200)
    with SimIndex(overlaps=True) as index:
        index.add("long", f"{random_text(rng, 2000)} {licence} {random_text(rng, 1000)}")
        index.add("short", licence)
        found = {o.key: o for o in index.overlaps(licence)}
        assert found["long"].query_share == 1.0 and found["long"].stored_share < 0.2
        assert found["short"] == Overlap("short", 1.0, 1.0)
        whole = index.overlaps(f"preface {random_text(rng, 500)} {licence} end")
        assert [o.key for o in whole] == ["short"] and whole[0].stored_share == 1.0


def test_every_write_keeps_them_right(location: str) -> None:
    rng = random.Random(3)
    texts = corpus(rng, 40)
    stored: dict[str, str] = {}
    with SimIndex(location, overlaps=True) as index:

        def same() -> None:
            for query in list(queries(rng, texts))[:6]:
                assert index.overlaps(query, threshold=0.0) == oracle(stored, query, 0.0)
            # Nothing left behind by a replaced or removed key.
            kept = index.stats()["overlaps"]
            assert kept["documents"] == len(stored) and kept["current"]
            assert kept["hashes"] == sum(len(passages(t, DEFAULT_CONFIG)) for t in stored.values())

        items = list(texts.items())
        index.add_many(items[:20], batch_size=7)
        stored.update(items[:20])
        same()
        # A key twice in one call: the later text (the first with skip_existing).
        index.add_many([("doc-0", texts["doc-30"]), ("doc-0", texts["doc-31"])])
        stored["doc-0"] = texts["doc-31"]
        index.add_many([("doc-1", texts["doc-32"]), ("new", texts["doc-33"])], skip_existing=True)
        index.add_many([("new2", texts["doc-34"]), ("new2", texts["doc-35"])], skip_existing=True)
        stored |= {"new": texts["doc-33"], "new2": texts["doc-34"]}
        same()
        index.add("doc-2", texts["doc-36"])  # replaced: its old passages go
        stored["doc-2"] = texts["doc-36"]
        assert index.remove_many(["doc-3", "doc-4", "absent"]) == 2
        del stored["doc-3"], stored["doc-4"]
        same()
        assert index.overlaps(texts["doc-3"], threshold=0.0) == oracle(stored, texts["doc-3"], 0)
        index.rebuild(k=3)  # laid out anew: the passages stay
        same()
        index.rebuild(items[20:])  # from the texts: made anew
        stored = dict(items[20:])
        same()


def test_a_large_load_sets_the_counting_aside_and_stays_right(location: str) -> None:
    # More rows than Store.put_stream counts one by one (COUNT_ASIDE_MIN); on
    # PostgreSQL a first load COPYed in, its passages written after the rows.
    docs = [(f"k{i}", f"note {i} for {i % 7} days said the clerk") for i in range(5_100)]
    with SimIndex(location, overlaps=True) as index:
        index.add_many(docs)
        got = index.overlaps("note 17 for 3 days said the clerk")
        assert got[0] == Overlap("k17", 1.0, 1.0)


def test_a_reopened_index_keeps_them_and_another_process_writes_are_seen(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    rng = random.Random(4)
    texts = corpus(rng, 20)
    with SimIndex(path, overlaps=True) as index:
        index.add_many(texts.items())
    with SimIndex(path) as index, SimIndex(path) as other:
        assert index.passages and other.passages
        other.add("late", texts["doc-5"])  # simindex's own write elsewhere: counted and kept
        texts["late"] = texts["doc-5"]
        query = texts["doc-5"]
        assert index.overlaps(query, threshold=0.0) == oracle(texts, query, 0.0)
    with SimIndex(path, readonly=True) as index:
        assert index.overlaps(query, threshold=0.0) == oracle(texts, query, 0.0)
    with pytest.raises(ConfigMismatchError, match="keeps passages"):
        SimIndex(path, overlaps=False)


def test_an_index_without_them(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    with SimIndex(path) as index:
        index.add("a", "the quick brown fox jumps over the lazy dog")
        assert not index.passages and index.stats()["overlaps"] is None
        with pytest.raises(PassagesNotKeptError, match="keeps no passages"):
            index.overlaps("the quick brown fox")
        with pytest.raises(InvalidArgumentError, match="from the texts"):
            index.rebuild(overlaps=True)  # no texts to make them from
    with pytest.raises(ConfigMismatchError, match="does not keep passages"):
        SimIndex(path, overlaps=True)
    with SimIndex(path) as index:
        index.rebuild([("a", "the quick brown fox jumps over the lazy dog")], overlaps=True)
        assert index.passages
        # (a passage shorter than WINDOW shingles may choose another hash: whole here)
        assert index.overlaps("the quick brown fox jumps over the lazy dog")[0].key == "a"
        index.rebuild([("a", "the quick brown fox")], overlaps=False)
        with pytest.raises(PassagesNotKeptError):
            index.overlaps("the quick brown fox")


def test_fingerprints_alone_are_refused_and_nothing_is_written() -> None:
    with SimIndex(overlaps=True) as index:
        index.add("a", "one two three four five six")
        made = (index.fingerprint("x y z"), index.signature("x y z"))
        with pytest.raises(InvalidArgumentError, match="item 2 has no text"):
            index.add_fingerprints([("b", *made, "x y z"), ("c", *made)])
        with pytest.raises(InvalidArgumentError, match="no text"):
            index.add_fingerprint("d", 12345)
        with pytest.raises(InvalidArgumentError, match="no text"):
            index.rebuild(fingerprints=[("a", 1)])
        assert sorted(k for k, _ in index.items()) == ["a"]
        assert index.overlaps("one two three four five six") == [Overlap("a", 1.0, 1.0)]


def test_what_overlaps_refuses() -> None:
    with SimIndex(overlaps=True) as index:
        index.add("a", "one two three")
        with pytest.raises(EmptyTextError):
            index.overlaps(" ... ")
        for threshold in (-0.1, 1.5, "0.8"):
            with pytest.raises(InvalidArgumentError):
                index.overlaps("one", threshold=threshold)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError):
            index.overlaps("one", limit=0)
        with pytest.raises(InvalidArgumentError):
            index.overlaps(b"one")  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError):
            SimIndex(overlaps="yes")  # type: ignore[arg-type]


# --- another program's writes ---------------------------------------------------


def test_a_row_written_by_another_program_makes_them_stale_until_a_rebuild(
    tmp_path: Path,
) -> None:
    path = tmp_path / "x.db"
    texts = {"a": "the quick brown fox jumps over the lazy dog", "b": "lorem ipsum dolor sit amet"}
    with SimIndex(path, overlaps=True) as index:
        index.add_many(texts.items())
        kept = index.stats()["overlaps"]
        assert kept["documents"] == 2 and kept["hashes"] >= 2 and kept["current"] is True
        row = sqlite3.connect(path)
        with row:  # a row with no passages, by plain SQL
            row.execute(
                "INSERT INTO simindex_fingerprints (key, fingerprint, block_0, block_1, block_2) "
                "VALUES ('outside', 7, 0, 0, 7)"
            )
        row.close()
        with pytest.raises(StalePassagesError, match="another program") as caught:
            index.overlaps(texts["a"])
        assert index.stats()["overlaps"]["current"] is False
        assert any("passages" in w for w in index.stats()["warnings"])
        assert caught.value.changes > (caught.value.stamp or 0)
        index.add("c", "a text added after the outside row")  # does not make them right
        with pytest.raises(StalePassagesError):
            index.overlaps(texts["a"])
        index.rebuild({**texts, "outside": "the lazy dog sleeps"}.items())
        assert [o.key for o in index.overlaps(texts["a"])] == ["a"]
        assert index.overlaps("the lazy dog sleeps")[0].key == "outside"


def test_an_index_of_the_revision_before_is_upgraded_without_passages(tmp_path: Path) -> None:
    before = storage.REVISIONS[storage.REVISIONS.index(PASSAGES_FROM) - 1]
    path = tmp_path / "old.db"
    with SimIndex(path) as index:
        index.add("a", "the quick brown fox jumps over the lazy dog")
    con = sqlite3.connect(path)
    with con:  # what a simindex before the passages' revision wrote
        for table in ("simindex_passages", "simindex_passage_hashes", "simindex_passage_docs"):
            con.execute(f"DROP TABLE {table}")
        con.execute(f"UPDATE simindex_alembic_version SET version_num = '{before}'")
    con.close()
    with pytest.raises(IndexVersionError, match=f"schema revision {before}"):
        SimIndex(path, readonly=True)  # not read as it is
    with SimIndex(path) as index:  # upgraded: the tables, and no passages until a rebuild
        assert index.stats()["schema_revision"] == storage.HEAD and not index.passages
        with pytest.raises(PassagesNotKeptError):
            index.overlaps("the quick brown fox jumps over the lazy dog")
        index.rebuild([("a", "the quick brown fox jumps over the lazy dog")], overlaps=True)
        assert index.overlaps("the quick brown fox jumps over the lazy dog")[0].key == "a"


def test_check_compares_the_passages_with_the_rows(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    with SimIndex(path, overlaps=True) as index:
        index.add_many([("a", "one two three four five six"), ("b", "seven eight nine ten")])
        assert index.check().ok
    con = sqlite3.connect(path)
    with con:  # damage no write of simindex's or anyone's counted makes
        con.execute(
            "DELETE FROM simindex_passages WHERE doc = "
            "(SELECT doc FROM simindex_passage_docs WHERE key = 'a')"
        )
        con.execute("UPDATE simindex_passage_docs SET key = 'gone' WHERE key = 'b'")
    con.close()
    with SimIndex(path) as index:
        report = index.check()
        assert not report.ok
        assert any("1 documents have no passages" in p for p in report.problems)
        assert any("passages of 1 keys that are not stored" in p for p in report.problems)
        assert any("where the documents count" in p for p in report.problems)


def test_the_revision_and_its_settings(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    SimIndex(path, overlaps=True).close()
    con = sqlite3.connect(path)
    meta = dict(con.execute("SELECT name, value FROM simindex_meta").fetchall())
    revision = con.execute("SELECT version_num FROM simindex_alembic_version").fetchone()[0]
    con.close()
    assert revision == storage.HEAD and revision >= PASSAGES_FROM
    assert meta["passages"] == "1" and meta["passages_at"] == meta.get("changes", "0")


# --- the command ------------------------------------------------------------------


def test_the_command(tmp_path: Path) -> None:
    rng = random.Random(6)
    licence = random_text(rng, 150)
    index = tmp_path / "x.db"
    ok("init", index, "--overlaps")
    (tmp_path / "long.txt").write_text(f"{random_text(rng, 900)}\n{licence}\n", encoding="utf-8")
    (tmp_path / "other.txt").write_text(random_text(rng, 300), encoding="utf-8")
    ok("add", index, tmp_path / "long.txt", tmp_path / "other.txt", "-q")
    ok("add", index, "--text", licence, "--key", "tab\there\nline")
    result = ok("overlaps", index, licence)
    lines = result.stdout.splitlines()  # the larger share, then the key
    assert len(lines) == 2
    assert lines[0].startswith("1.000\t0.") and lines[0].endswith("long.txt")
    assert lines[1] == "1.000\t1.000\ttab\\there\\nline"
    found = ok_json("overlaps", index, "--file", "-", "--threshold", "0.9", input=licence)
    assert found["threshold"] == 0.9
    assert found["overlaps"][1] == {
        "key": "tab\there\nline",
        "query_share": 1.0,
        "stored_share": 1.0,
    }
    assert len(ok_json("overlaps", index, licence, "--limit", "1")["overlaps"]) == 1
    assert invoke("overlaps", index, "nothing like it at all").exit_code == 1
    nothing = invoke("overlaps", index, "nothing like it at all", "--json")
    assert nothing.exit_code == 1 and json.loads(nothing.stdout)["overlaps"] == []
    error("overlaps", index, contains=("exactly one of",))
    error("overlaps", index, "x", "--threshold", "2", contains=("--threshold",))
    error("overlaps", index, " ... ", contains=("no word",))
    plain = tmp_path / "plain.db"
    ok("init", plain)
    error("overlaps", plain, licence, contains=("keeps no passages", "--overlaps"))
    error("rebuild", plain, "--overlaps", contains=("give SOURCES",))
    ok("rebuild", plain, tmp_path / "long.txt", "--overlaps", "-q")
    assert ok_json("overlaps", plain, licence)["overlaps"][0]["key"].endswith("long.txt")
    assert ok_json("init", plain)["overlaps"] is True

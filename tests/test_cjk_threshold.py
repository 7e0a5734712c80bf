"""Longer texts of CJK characters are judged at their own threshold.

A text of more than 15 distinct units, more than half of them CJK
characters, keeps a byte CJK after its sketch (simindex/signature.py), and
two such texts are judged at characters_threshold of the threshold asked:
the same share of edits, counted in characters. Every way of asking
(queries one by one, many, held in memory, duplicates(), dedup_stream)
answers as the brute-force oracle of tests/helpers.py, whose rule
(``needed``) is written out from those words.
"""

from __future__ import annotations

import random
import sqlite3
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from simindex import IndexVersionError, SimIndex, storage
from simindex.blocks import DEFAULT_K
from simindex.explain import explain
from simindex.fingerprint import DEFAULT_CONFIG
from simindex.signature import (
    CJK,
    DEFAULT_THRESHOLD,
    MIDDLE_CJK,
    NAME,
    NBYTES,
    characters_threshold,
    fingerprint_and_signature,
    of_characters,
    one_pass,
    signature,
    similarity,
    threshold_for,
    thresholds_for,
)
from simindex.storage import stored as stored_module
from tests.helpers import (
    assert_dedup_is_oracle,
    longer_text,
    needed,
    oracle,
    pairs_oracle,
    stored_of,
)

CHARS = (
    "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学"
    "对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面"
)


def chinese(rng: random.Random, n: int) -> list[str]:
    return [rng.choice(CHARS) for _ in range(n)]


def edited(text: list[str], share: float, rng: random.Random) -> str:
    out = list(text)
    for at in rng.sample(range(len(out)), max(1, round(share * len(out)))):
        out[at] = rng.choice(CHARS)
    return "".join(out)


def corpus(seed: int, n: int) -> dict[str, str]:
    """n Chinese texts of 40-90 characters, each with copies 3-20% of their
    characters replaced; and English texts of as many words, edited alike."""
    rng = random.Random(seed)
    texts: dict[str, str] = {}
    vocab = [f"w{i}" for i in range(400)]
    for i in range(n):
        own = chinese(rng, rng.randint(40, 90))
        texts[f"z{i}"] = "".join(own)
        for c in range(3):
            texts[f"z{i}-{c}"] = edited(own, rng.uniform(0.03, 0.2), rng)
        words = [rng.choice(vocab) for _ in range(rng.randint(40, 90))]
        texts[f"e{i}"] = " ".join(words)
        copy = list(words)
        for at in rng.sample(range(len(words)), len(words) // 8):
            copy[at] = rng.choice(vocab)
        texts[f"e{i}-0"] = " ".join(copy)
    return texts


def test_the_threshold_for_characters() -> None:
    """0 and 1 stay, the rest is lower and in the same order; the default
    asks about 0.75 of two texts of CJK characters."""
    assert characters_threshold(0.0) == 0.0 and characters_threshold(1.0) == 1.0
    steps = [t / 100 for t in range(1, 100)]
    lowered = [characters_threshold(t) for t in steps]
    assert all(0 <= x < t for x, t in zip(lowered, steps, strict=True))
    assert lowered == sorted(lowered)
    assert round(characters_threshold(DEFAULT_THRESHOLD), 2) == 0.75
    grid = np.linspace(0.0, 1.0, 1001)  # (arrays: the same floats as one at a time)
    assert thresholds_for(grid, True).tolist() == [characters_threshold(t) for t in grid.tolist()]
    for t in (0.0, 0.3, DEFAULT_THRESHOLD, 1.0):
        a, b = bytes(NBYTES) + bytes((CJK,)), bytes(NBYTES)
        assert threshold_for(t, a, a) == needed(t, a, a) == characters_threshold(t)
        assert threshold_for(t, a, b) == needed(t, a, b) == t


def test_which_texts_say_they_are_of_characters() -> None:
    """More than half of more than 15 distinct units CJK characters: the
    byte; a short CJK text keeps its ordered set instead; English with a
    few CJK characters, or half of them, does not; every route the same."""
    rng = random.Random(1)
    han = "".join(chinese(rng, 60))
    words = " ".join(f"w{i}" for i in range(20))
    cases = {
        han: True,
        "先保存再关闭": False,  # short: its units in order
        words: False,
        words + " 中文": False,
    }
    # At the edge: n distinct characters beside 20 distinct words.
    distinct = list(dict.fromkeys(CHARS))
    for n in (19, 20, 21, 22):
        cases[words + " " + "".join(distinct[:n])] = n > 20
    for text, want in cases.items():
        fp, sig = fingerprint_and_signature(text, DEFAULT_CONFIG)
        assert of_characters(sig) is want, text
        assert (fp, sig) == one_pass(text, DEFAULT_CONFIG)
        assert sig == signature(text, DEFAULT_CONFIG)
        assert not want or (sig[-1] == MIDDLE_CJK and len(sig) % 2)  # (16-256 units)


def test_every_way_of_asking_judges_characters_at_their_threshold(location: str) -> None:
    """Queries (one by one, many, held), duplicates() and dedup_stream
    equal the brute-force oracle on Chinese and English texts and their
    edits; and the lower threshold decides some of the Chinese pairs."""
    texts = corpus(3, 25)
    half = dict(list(texts.items())[::2])
    stored = stored_of(half)
    queries = list(texts.values())
    with SimIndex(location, hold=False) as index:
        index.add_many(half.items())
        for text in queries:
            assert index.query(text) == oracle(stored, text)
        assert index.query_many(queries[:40]) == [oracle(stored, t) for t in queries[:40]]
    with SimIndex(location, hold=True) as index:
        assert index.query_many(queries) == [oracle(stored, t) for t in queries]
        assert index.query(queries[1]) == oracle(stored, queries[1])
    everything = stored_of(texts)
    want = pairs_oracle(everything)
    with SimIndex() as index:
        index.add_many(texts.items())
        assert [tuple(p) for p in index.duplicates()] == want
    lower = characters_threshold(DEFAULT_THRESHOLD)
    decided = [p for p in want if lower <= p[3] < DEFAULT_THRESHOLD]
    assert decided and all(p[0].startswith("z") for p in decided)
    assert_dedup_is_oracle(texts)


def test_held_rows_keep_their_script_through_own_writes_and_the_stored_snapshot(
    location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A holder's own writes of Chinese texts (held apart, then merged) and
    a snapshot stored by one holder and read by the next keep each row's
    byte: every answer equals the oracle on what is stored."""
    monkeypatch.setattr(stored_module, "STORE_MIN_ROWS", 0)
    texts = corpus(11, 20)
    items = list(texts.items())
    first, later = dict(items[::2]), dict(items[1::2])
    queries = list(texts.values())
    with SimIndex(location, hold=True) as index:
        index.add_many(first.items())
        assert index.query_many(queries) == [oracle(stored_of(first), t) for t in queries]
        index.add_many(later.items())  # the holder's own writes
        stored = stored_of(texts)
        assert index.query_many(queries) == [oracle(stored, t) for t in queries]
        for text in queries[:10]:
            assert index.query(text) == oracle(stored, text)
    with SimIndex(location, hold=True) as index:  # (the stored snapshot, where it was stored)
        assert index.query_many(queries) == [oracle(stored, t) for t in queries]
        assert [tuple(p) for p in index.duplicates()] == pairs_oracle(stored)


def test_explain_says_which_threshold_applied() -> None:
    rng = random.Random(7)
    for _ in range(1000):  # two Chinese texts whose similarity lies between the two thresholds
        own = chinese(rng, 80)
        a, b = "".join(own), edited(own, rng.uniform(0.05, 0.15), rng)
        sim = similarity(signature(a, DEFAULT_CONFIG), signature(b, DEFAULT_CONFIG))
        if characters_threshold(DEFAULT_THRESHOLD) <= sim < DEFAULT_THRESHOLD:
            break
    else:
        pytest.fail("no pair between the two thresholds was drawn")
    e = explain(a, b, k=DEFAULT_K, threshold=DEFAULT_THRESHOLD)
    assert e.verified and e.threshold == DEFAULT_THRESHOLD
    assert e.needed == e.threshold_needed == characters_threshold(DEFAULT_THRESHOLD)
    assert "threshold 0.7492 (for two texts of CJK characters; 0.78 asked)" in e.verdict()
    assert e.to_dict()["threshold"] == DEFAULT_THRESHOLD
    assert e.to_dict()["threshold_needed"] == characters_threshold(DEFAULT_THRESHOLD)
    english = explain("a b c d e f g h i j k l m n o p q", "a b c d e f g h i j k l m n o p r", k=8)
    assert english.needed is None and "asked" not in english.verdict()


def test_an_index_of_the_revision_before_is_upgraded(tmp_path: Path) -> None:
    """An index of revision 0011 (longer texts' sketches alone): refused
    read-only; opened to write, its signatures are named anew, its rows
    read as they are (a Chinese row without the byte judged at the
    threshold asked), a row written since with the byte."""
    path = tmp_path / "old.db"
    texts = corpus(5, 4)
    with SimIndex(path) as index:
        index.add_many(texts.items())
    con = sqlite3.connect(path)
    with con:  # what revision 0011 wrote: the sketch alone
        rows = con.execute("SELECT id, signature FROM simindex_fingerprints").fetchall()
        for row_id, sig in rows:
            if len(sig) > NBYTES and longer_text(bytes(sig)):  # (a middle set too: 0014's)
                con.execute(
                    "UPDATE simindex_fingerprints SET signature = ? WHERE id = ?",
                    (bytes(sig[:NBYTES]), row_id),
                )
        con.execute("UPDATE simindex_alembic_version SET version_num = '0011'")
        con.execute(
            "UPDATE simindex_meta SET value = 'minhash128x4/1+set15+order' WHERE name = 'signature'"
        )
    con.close()
    with pytest.raises(IndexVersionError, match="schema revision 0011"):
        SimIndex(path, readonly=True)
    by_key = dict(sqlite3.connect(path).execute("SELECT key, signature FROM simindex_fingerprints"))
    stored = {
        key: (fingerprint_and_signature(t, DEFAULT_CONFIG)[0], bytes(by_key[key]))
        for key, t in texts.items()
    }
    assert not any(of_characters(s) for _, s in stored.values())
    with SimIndex(path) as index:
        info = index.stats()
        assert (info["schema_revision"], info["signature"]) == (storage.HEAD, NAME)
        for text in texts.values():
            assert index.query(text) == oracle(stored, text)
        index.add("z0", texts["z0"])  # written again: with the byte
        stored["z0"] = fingerprint_and_signature(texts["z0"], DEFAULT_CONFIG)
        assert of_characters(stored["z0"][1])
        for text in texts.values():
            assert index.query(text) == oracle(stored, text)


def test_explain_never_shows_a_similarity_under_an_equal_threshold() -> None:
    """The similarity and the threshold with as many decimals as tell them
    apart, the threshold asked as given."""
    base = explain("a b c d e f g h i j k l m n o p q", "a b c d e f g h i j k l m n o p r", k=8)
    lower = characters_threshold(0.78)
    cases = {
        (0.775, 0.78, None): "similarity 0.775 < threshold 0.78",
        (0.95, 0.805, None): "similarity 0.95 >= threshold 0.805",
        (0.7812, 0.78, None): "similarity 0.781 >= threshold 0.78",
        (0.78, 0.78, None): "similarity 0.78 >= threshold 0.78",
        (0.5, 1e-05, None): "similarity 0.50 >= threshold 1e-05",
        (0.7491, 0.78, lower): "similarity 0.7491 < threshold 0.7492 "
        "(for two texts of CJK characters; 0.78 asked)",
        (0.76, 0.78, lower): "similarity 0.76 >= threshold 0.7492 "
        "(for two texts of CJK characters; 0.78 asked)",
    }
    for (sim, threshold, lowered), want in cases.items():
        e = replace(base, similarity=sim, threshold=threshold, needed=lowered)
        assert e.judged() == want, e.judged()
    assert replace(base, similarity=None).judged() == "no similarity (a side has no signature)"

"""Texts of 16 to 256 distinct units keep their set of 16-bit unit hashes
(signature.MIDDLE_UNITS): the form, the rule of two such sets (their
Jaccard), written out here from their words, and every way of comparing
them held to it."""

from __future__ import annotations

import random
import sqlite3
import struct
from pathlib import Path

import numpy as np
import pytest
import xxhash

from simindex import IndexVersionError, SimIndex, reader, storage
from simindex import signature as sig
from simindex.fingerprint import DEFAULT_CONFIG, prepare
from simindex.matching import Verify, unverified, within
from simindex.planner import Way
from simindex.signature import DEFAULT_THRESHOLD
from simindex.snapshot import Snapshot
from simindex.storage import stored as stored_module
from simindex.storage.store import Store
from tests.helpers import oracle, pairs_oracle

_VOCAB = [f"{a}{b}{c}{d}" for a in "bdfgk" for b in "aeiou" for c in "lmnrst" for d in "aeo"]
_HAN = (
    "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自"
    "着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用"
    "主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回"
    "二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被"
    "走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万"
    "市眼体别处总才场师书"
)


def units16(text: str) -> frozenset[int]:
    """The rule's words: the top 16 bits of each distinct unit's xxh64 (a
    word, or a CJK character), as a set."""
    units = sig.units(prepare(text, DEFAULT_CONFIG))
    return frozenset(xxhash.xxh64_intdigest(u.encode()) >> 48 for u in units)


def words(rng: random.Random, distinct: int) -> str:
    return " ".join(rng.sample(_VOCAB, distinct))


@pytest.mark.parametrize("distinct", [15, 16, 17, 100, 255, 256, 257, 400])
def test_a_middle_length_text_keeps_its_16_bit_set(distinct: int) -> None:
    text = words(random.Random(distinct), distinct)
    made = sig.signature(text, DEFAULT_CONFIG)
    assert sig.fingerprint_and_signature(text, DEFAULT_CONFIG)[1] == made
    assert sig.is_signature(made)
    middle = sig.middle_set(made)
    if distinct <= sig.SMALL or distinct > sig.MIDDLE_UNITS:
        assert middle is None
        assert len(made) == sig.NBYTES or distinct <= sig.SMALL
        return
    assert middle == units16(text)
    assert made[-1] == sig.MIDDLE and not sig.of_characters(made) and sig.longer(made)
    values = struct.unpack_from(f"<{(len(made) - sig.NBYTES) // 2}H", made, sig.NBYTES)
    assert list(values) == sorted(units16(text))


def test_a_middle_set_of_cjk_characters_says_so() -> None:
    rng = random.Random(3)
    text = "".join(rng.sample(_HAN, 120))
    made = sig.signature(text, DEFAULT_CONFIG)
    assert made[-1] == sig.MIDDLE_CJK and sig.of_characters(made) and sig.longer(made)
    assert sig.middle_set(made) == units16(text)
    mixed = text[:40] + " " + words(rng, 60)  # (40 characters of 100 units: words' rule)
    other = sig.signature(mixed, DEFAULT_CONFIG)
    assert other[-1] == sig.MIDDLE and not sig.of_characters(other)
    assert sig.threshold_for(0.78, made, made) == sig.characters_threshold(0.78)
    assert sig.threshold_for(0.78, made, other) == 0.78


@pytest.mark.parametrize(("rows", "values"), [(256, 1 << 22), (3, 500), (1, 1)])
def test_two_middle_sets_are_compared_by_their_jaccard(
    monkeypatch: pytest.MonkeyPatch, rows: int, values: int
) -> None:
    """The similarity of two middle sets is the Jaccard of their 16-bit sets
    (the oracle: units16 of the texts), both ways, by similarity_to, by
    middle_similarities many at once (the same floats; with a few sets
    marked or values looked up at a time, a set's pairs cut across pieces)
    and by meets where a band is equal; a middle set against a sketch
    without one is estimated."""
    monkeypatch.setattr(sig, "_MARKED_ROWS", rows)
    monkeypatch.setattr(sig, "_LOOKED_UP", values)
    rng = random.Random(7)
    texts = []
    for _ in range(60):
        base = rng.sample(_VOCAB, rng.randint(16, 256))
        copy = list(base)
        for _ in range(rng.choice([0, 1, 3, 10, 40])):
            copy[rng.randrange(len(copy))] = rng.choice(_VOCAB)
        texts += [" ".join(base), " ".join(copy)]
    sigs = [sig.signature(t, DEFAULT_CONFIG) for t in texts]
    pairs = [(i, i + 1) for i in range(0, len(texts), 2)]
    pairs += [(rng.randrange(len(texts)), rng.randrange(len(texts))) for _ in range(200)]
    pairs += [(5, b) for b in range(0, len(texts), 7)]  # (one set's many pairs)
    middle = sig.middle_many(sigs)
    i = np.array([a for a, _ in pairs])
    j = np.array([b for _, b in pairs])
    many = sig.middle_similarities(middle, i, middle, j)
    for (a, b), got in zip(pairs, many.tolist(), strict=True):
        ua, ub = units16(texts[a]), units16(texts[b])
        want = len(ua & ub) / len(ua | ub)
        assert sig.similarity(sigs[a], sigs[b]) == sig.similarity(sigs[b], sigs[a]) == want
        assert sig.similarity_to(sigs[a])(sigs[b]) == want == got
        if sig.bands_meet(sigs[a], sigs[b]):
            assert sig.meets(sigs[a], sigs[b]) == want
    sketch = sigs[0][: sig.NBYTES]
    assert sig.similarity(sigs[1], sketch) == sig.similarity(sigs[1][: sig.NBYTES], sketch)
    assert sig.similarity_to(sketch)(sigs[1]) == sig.similarity(sketch, sigs[1][: sig.NBYTES])
    assert {round(x, 1) for x in many.tolist()} >= {1.0, 0.0}


def test_held_sketches_leave_two_middle_sets_to_their_rows() -> None:
    """as_words holds a middle set's sketch (its band keys), marks it and
    holds its map (matching.unverified judges two such rows by a bound of
    their sets, any other pair of longer texts by the sketches)."""
    rng = random.Random(11)
    a = sig.signature(words(rng, 100), DEFAULT_CONFIG)
    b = sig.signature(words(rng, 100), DEFAULT_CONFIG)
    long = sig.signature(" ".join(_VOCAB), DEFAULT_CONFIG)
    short = sig.signature("one two three", DEFAULT_CONFIG)
    held = sig.as_words([a, b, long, short, None])
    assert held.present.tolist() == [True, True, True, False, False]
    assert held.middle.tolist() == [True, True, False, False, False]
    assert held.words[0].astype("<u8").tobytes() == a[: sig.NBYTES]


@pytest.mark.parametrize(
    "value",
    [
        bytes(sig.NBYTES) + struct.pack("<2H", 2, 1) + b"\x03",  # not increasing
        bytes(sig.NBYTES) + struct.pack("<2H", 1, 1) + b"\x04",  # a value twice
        bytes(sig.NBYTES) + struct.pack("<257H", *range(257)) + b"\x03",  # too many
        bytes(sig.NBYTES) + struct.pack("<2H", 1, 2) + b"\x05",  # no such byte
        bytes(sig.NBYTES) + b"\x03",  # no value
    ],
)
def test_a_middle_set_out_of_form_is_no_signature(value: bytes) -> None:
    assert not sig.is_signature(value)


def test_a_middle_set_in_form_is_a_signature() -> None:
    for byte in (sig.MIDDLE, sig.MIDDLE_CJK):
        value = bytes(sig.NBYTES) + struct.pack("<256H", *range(256)) + bytes((byte,))
        assert sig.is_signature(value) and sig.middle_set(value) == frozenset(range(256))
        assert sig.exact_set(value) is None and sig.keys_of_sets([value])[0].size == 0
        assert sig.keys_of_bands([value])[0].size == sig.BANDS


def test_an_index_of_the_revision_before_is_upgraded(tmp_path: Path) -> None:
    """An index of revision 0013 (a text of 16-256 units: its sketch alone,
    or with the byte CJK): refused read-only; opened to write, its
    signatures are named anew and its rows read as they are (estimated),
    every answer the brute force's; a row written since keeps its set."""
    rng = random.Random(21)
    texts: dict[str, str] = {}
    for i in range(12):
        base = rng.sample(_VOCAB, rng.randint(40, 200))
        copy = list(base)
        for at in rng.sample(range(len(copy)), len(copy) // 10):
            copy[at] = rng.choice(_VOCAB)
        texts[f"e{i}"], texts[f"e{i}-copy"] = " ".join(base), " ".join(copy)
        han = rng.sample(_HAN, 80)
        texts[f"z{i}"] = "".join(han)
        han[rng.randrange(80)] = rng.choice(_HAN)
        texts[f"z{i}-copy"] = "".join(han)
    path = tmp_path / "old.db"
    with SimIndex(path) as index:
        index.add_many(texts.items())
    con = sqlite3.connect(path)
    with con:  # what revision 0013 wrote: no middle set
        rows = con.execute("SELECT id, signature FROM simindex_fingerprints").fetchall()
        for row_id, made in rows:
            if sig.middle_set(bytes(made)) is not None:
                before = bytes(made[: sig.NBYTES]) + (
                    b"\x02" if made[-1] == sig.MIDDLE_CJK else b""
                )
                con.execute(
                    "UPDATE simindex_fingerprints SET signature = ? WHERE id = ?", (before, row_id)
                )
        con.execute("UPDATE simindex_alembic_version SET version_num = '0013'")
        con.execute(
            "UPDATE simindex_meta SET value = ? WHERE name = 'signature'", (sig.CJK_SKETCHES,)
        )
    con.close()
    with pytest.raises(IndexVersionError, match="schema revision 0013"):
        SimIndex(path, readonly=True)
    by_key = dict(sqlite3.connect(path).execute("SELECT key, signature FROM simindex_fingerprints"))
    stored = {
        key: (sig.fingerprint_and_signature(t, DEFAULT_CONFIG)[0], bytes(by_key[key]))
        for key, t in texts.items()
    }
    assert not any(sig.middle_set(s) for _, s in stored.values())
    with SimIndex(path) as index:
        info = index.stats()
        assert (info["schema_revision"], info["signature"]) == (storage.HEAD, sig.NAME)
        for text in texts.values():
            assert index.query(text) == oracle(stored, text)
        for key in ("e0", "z0"):  # written again: with their sets
            index.add(key, texts[key])
            stored[key] = sig.fingerprint_and_signature(texts[key], DEFAULT_CONFIG)
            assert sig.middle_set(stored[key][1]) is not None
        for text in texts.values():
            assert index.query(text) == oracle(stored, text)
        assert [tuple(p) for p in index.duplicates()] == pairs_oracle(stored)


def test_the_held_prefilter_judges_two_middle_sets_by_a_bound_of_their_sets() -> None:
    """matching.unverified, two middle sets: by the bound of their sets the
    held maps give (never under their Jaccard), not by the sketches. Equal
    sets behind sketches that disagree: kept, and within, on the row, finds
    the copy; another set behind the same sketch: not read. A middle set
    beside a sketch alone: by the estimate, as on its row."""
    rng = random.Random(23)
    made = sig.signature(words(rng, 120), DEFAULT_CONFIG)
    scrambled = bytes(rng.getrandbits(8) for _ in range(sig.NBYTES)) + made[sig.NBYTES :]
    other = sig.signature(words(rng, 120), DEFAULT_CONFIG)
    dressed = made[: sig.NBYTES] + other[sig.NBYTES :]  # (its sketch: the query's own)
    alone = scrambled[: sig.NBYTES]
    assert sig.similarity(made, scrambled) == 1.0 > 0.3 > sig.similarity(made, alone)
    assert sig.similarity(made, dressed) < 0.3 < sig.similarity(made[: sig.NBYTES], dressed)
    held = sig.as_words([scrambled, alone, dressed])
    check = Verify(made, DEFAULT_THRESHOLD)
    keep = unverified(np.array([0, 0, 0]), np.array([0, 1, 2]), [check], held)
    assert keep.tolist() == [True, False, False]
    rows = [(1, "copy", 0, scrambled), (2, "alone", 0, alone), (3, "dressed", 0, dressed)]
    assert [m.key for m in within(rows, 0, 0, check)] == ["copy"]


def test_the_bound_of_two_middle_sets_is_never_under_their_jaccard() -> None:
    """signature.middle_bounds against the Jaccard, on sets of 1 to 256
    values drawn from few (bits shared by chance) and many, near copies
    and not: never under it (for equal sets, 1 or more: bits shared by
    chance make the held set look smaller)."""
    rng = random.Random(29)
    sigs = []
    for _ in range(300):
        pool = rng.choice([300, 2000, 65536])
        a = rng.sample(range(pool), rng.randint(1, 256))
        b = list(a) if rng.random() < 0.5 else rng.sample(range(pool), rng.randint(1, 256))
        for _ in range(rng.choice([0, 1, 5, 30])):
            b[rng.randrange(len(b))] = rng.randrange(pool)
        for values in (a, b):
            ordered = sorted(set(values))
            sigs.append(bytes(sig.NBYTES) + struct.pack(f"<{len(ordered)}H", *ordered) + b"\x03")
    sets = sig.middle_many(sigs)
    maps = sig.as_words(sigs).maps
    i = np.arange(0, len(sigs), 2)
    bounds = sig.middle_bounds(sig.middle_layers(sets), i, maps, i + 1).tolist()
    for n, bound in zip(i.tolist(), bounds, strict=True):
        a_set, b_set = (
            set(struct.unpack_from(f"<{(len(s) - 65) // 2}H", s, 64)) for s in sigs[n : n + 2]
        )
        exact = len(a_set & b_set) / len(a_set | b_set)  # (written out: the sets' Jaccard)
        assert sig.similarity(sigs[n], sigs[n + 1]) == exact
        assert bound >= exact
        if sigs[n] == sigs[n + 1]:
            assert bound >= exact == 1.0
    assert sum(b < 0.5 for b in bounds) > 50  # (it prunes)


@pytest.mark.parametrize("written", ["another signature", "none"])
def test_a_held_batch_raced_by_a_write_answers_as_the_index_is_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, written: str
) -> None:
    """A held query_many reads its candidates' rows after it found its
    snapshot current; another process rewrites a middle-set row (the same
    fingerprint) just before they are read. The snapshot holds that row's
    sketch, not its set, so it cannot answer as the index was: it asks
    again, and answers as the index is now (before, the row was judged by
    the held sketch's estimate: neither state's answer)."""
    rng = random.Random(3)
    for _ in range(10_000):  # a copy the set finds and the sketch's estimate would not
        base = rng.sample(_VOCAB, 100)
        copy = list(base)
        for at in rng.sample(range(100), 9):
            copy[at] = rng.choice(_VOCAB)
        a, b = " ".join(base), " ".join(copy)
        (fa, sa), (fb, sb) = (sig.fingerprint_and_signature(t, DEFAULT_CONFIG) for t in (a, b))
        near = bin(fa ^ fb).count("1") <= 8
        if near and sig.similarity(sa, sb) >= DEFAULT_THRESHOLD > sig.similarity(sa[:64], sb[:64]):
            break
    else:
        pytest.fail("no such copy was drawn")
    path = tmp_path / "raced.db"
    filler = {f"f{i}": words(rng, 40) for i in range(30)}
    with SimIndex(path) as index:
        index.add("stored", a)
        index.add_many(filler.items())
    now = sb if written == "another signature" else None
    read = Store.rows_by_id
    raced: list[bool] = []

    def rows_by_id(self: Store, ids: list[int]) -> object:
        if not raced:
            raced.append(True)
            with SimIndex(path, hold=False) as other:
                other.add_fingerprint("stored", fa, now)
        return read(self, ids)

    with SimIndex(path, hold=True) as index:
        queries = [b] * 20 + list(filler.values())
        index.query_many(queries)  # (the snapshot read)
        monkeypatch.setattr(Store, "rows_by_id", rows_by_id)
        got = index.query_many(queries)[0]
    assert raced
    assert got == oracle({"stored": (fa, now)}, b)


def test_a_middle_row_damaged_under_a_current_snapshot_is_judged_as_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stored snapshot still current (the count put back) beside a
    middle-set row whose sketch was overwritten: a batch read in memory,
    held or not, answers once, the row judged as read (damage no read
    notices), never asking again for ever."""
    monkeypatch.setattr(stored_module, "STORE_MIN_ROWS", 1)
    rng = random.Random(1)
    texts = [words(rng, 40) for _ in range(60)]
    path = tmp_path / "damaged.db"
    with SimIndex(path, hold=True) as index:
        index.add_many((f"k{i}", t) for i, t in enumerate(texts))
        index.query_many(texts[:30])  # (read in, and stored)
    con = sqlite3.connect(path)
    with con:
        (changes,) = con.execute(
            "SELECT value FROM simindex_meta WHERE name = 'changes'"
        ).fetchone()
        made, row_id = con.execute(
            "SELECT signature, id FROM simindex_fingerprints WHERE key = 'k0'"
        ).fetchone()
        damaged = bytes([made[0] ^ 1]) + bytes(made[1:])
        con.execute(
            "UPDATE simindex_fingerprints SET signature = ? WHERE id = ?", (damaged, row_id)
        )
        con.execute("UPDATE simindex_meta SET value = ? WHERE name = 'changes'", (changes,))
    con.close()
    asked: list[bool] = []
    as_held = Snapshot.as_held

    def judged(self: Snapshot, positions: np.ndarray, rows: dict) -> bool:
        made = as_held(self, positions, rows)
        asked.append(made)
        assert len(asked) < 20, "asked again and again"
        return made

    monkeypatch.setattr(Snapshot, "as_held", judged)
    monkeypatch.setattr(reader, "plan_batch", lambda *_, **__: Way.READ)  # (read in memory)
    seen = []
    for hold in (False, True, None):
        asked.clear()
        with SimIndex(path, hold=hold) as index:
            assert [m.key for m in index.query_many(texts[:30])[0]] == ["k0"]
        assert len(asked) <= 1  # (answered once: the row as read)
        seen += asked
    assert False in seen  # (a snapshot met the damaged row)


@pytest.mark.parametrize(
    "maps",
    [("<u1", [4, 64]), ("<u4", [4, 16]), ("<u8", [4, 3]), ("<u8", [4]), ("<i8", [4, 8])],
)
def test_a_stored_snapshot_with_maps_of_another_shape_is_not_read(maps: tuple) -> None:
    header = {
        "rows": 4,
        "arrays": {
            "ids": ("<i8", [4], "x"),
            "fps": ("<u8", [4], "x"),
            "words": ("<u8", [4, sig.WORDS], "x"),
            "present": ("|b1", [4], "x"),
            "characters": ("|b1", [4], "x"),
            "middle": ("|b1", [4], "x"),
            "maps": (*maps, "x"),
        },
    }
    assert stored_module._shapes(header) is None
    header["arrays"]["maps"] = ("<u8", [4, sig.MAP_WORDS], "x")
    assert stored_module._shapes(header) is not None


def test_a_value_that_is_no_bytes_has_no_form() -> None:
    """Text another program stored where a signature goes is no signature
    to every reader, not an error of one."""
    for value in ["x" * 65, "x" * 70, "x" * 64, 7, None]:
        assert sig.form(value) == sig.NO_FORM
        assert not sig.longer(value) and not sig.of_characters(value)

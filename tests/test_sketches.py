"""bench/experiments/sketches.py: every verification signature measured when
one was chosen (the kept one, simindex.signature's, is tested in
test_signature.py too)."""

from __future__ import annotations

import math
import random
import sys

import numpy as np
import pytest

from simindex import EmptyTextError, InvalidArgumentError
from simindex.fingerprint import features, simhash

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "bench" / "experiments"))
import sketches as sig  # noqa: E402

_VOCAB = [a + b + c + d for a in "bdfgklmnprst" for b in "aeiou" for c in "mnrst" for d in "aio"]


def corpus() -> list[str]:
    """Forty passages of 60-200 made-up words drawn from 900 (unrelated passages
    share a few words): the same on every machine and in every checkout."""
    rng = random.Random(11)
    return [" ".join(rng.choices(_VOCAB, k=rng.randint(60, 200))) + "." for _ in range(40)]


def edited(text: str, frac: float, rng: random.Random) -> str:
    """frac of the words replaced by other words of the text."""
    w = text.split()
    for i in rng.sample(range(len(w)), round(frac * len(w))):
        w[i] = rng.choice(w) + "x"
    return " ".join(w)


ALL = list(sig.SIGNATURES.values())


def weighted_cosine(a: dict[str, int], b: dict[str, int]) -> float:
    dot = sum(w * b.get(f, 0) for f, w in a.items())
    return dot / math.sqrt(sum(w * w for w in a.values()) * sum(w * w for w in b.values()))


def test_units_drop_punctuation_and_cjk_spacing_and_keep_stop_words() -> None:
    assert sig.units("The cat, the HAT!") == ["the", "cat", "the", "hat"]
    assert (
        sig.units("你好　世界！　　呼噜。") == sig.units("你好，世界　呼噜") == list("你好世界呼噜")
    )
    assert sig.units("中文 and ｗｏｒｄｓ") == ["中", "文", "and", "words"]


def test_shingle_hashes_are_ordered_and_short_texts_make_one() -> None:
    a = sig.shingle_hashes(["a", "b", "c", "d"])
    assert len(a) == 2 and a[0] != a[1]
    assert sig.shingle_hashes(["c", "b", "a", "d"])[0] != a[0]  # order matters
    assert len(sig.shingle_hashes(["a", "b"])) == 1
    assert len(sig.shingle_hashes([])) == 0
    with pytest.raises(EmptyTextError):
        sig.text_hashes("!!! ...")
    with pytest.raises(InvalidArgumentError):
        sig.shingle_hashes(["a"], n=0)


def test_hashes_are_fixed_values() -> None:
    """The same in every process and on every machine: a stored signature must not move."""
    h = sig.text_hashes("the quick brown fox jumps over the lazy dog")
    assert int(h[0]) == int(sig.text_hashes("The quick, brown fox")[0])
    assert sig.SIGNATURES["minhash128x4/3"].of("the quick brown fox jumps").hex() == (
        sig.SIGNATURES["minhash128x4/3"].of("The QUICK brown fox; jumps.").hex()
    )


@pytest.mark.parametrize("s", ALL, ids=lambda s: s.name)
def test_signature_size_determinism_identity(s: sig.Signature) -> None:
    text = " ".join(corpus()[:3])
    a = s.of(text)
    assert a == s.of(text)
    assert len(a) == s.nbytes
    assert s.similarity(a, a) == pytest.approx(1.0)
    assert s.similarity(a, s.of(text.upper().replace(".", " ;"))) == pytest.approx(1.0)


@pytest.mark.parametrize("s", ALL, ids=lambda s: s.name)
def test_unrelated_texts_are_near_zero(s: sig.Signature) -> None:
    texts = corpus()
    rng = random.Random(3)
    sims = []
    for _ in range(30):
        a, b = rng.sample(texts, 2)
        sims.append(s.similarity(s.of(a), s.of(b)))
    assert float(np.median(sims)) < 0.2


@pytest.mark.parametrize("s", ALL, ids=lambda s: s.name)
def test_similarity_falls_as_edits_grow(s: sig.Signature) -> None:
    rng = random.Random(5)
    text = " ".join(corpus()[:4])
    base = s.of(text)
    means = []
    for frac in (0.02, 0.1, 0.3, 0.6):
        means.append(np.mean([s.similarity(base, s.of(edited(text, frac, rng))) for _ in range(5)]))
    assert means == sorted(means, reverse=True)
    assert means[0] > 0.8
    assert means[-1] < (0.5 if s.n == 1 else 0.3)  # words, not shingles: more survive


@pytest.mark.parametrize("s", ALL, ids=lambda s: s.name)
def test_estimate_is_close_to_the_exact_similarity(s: sig.Signature) -> None:
    """Over random pairs (a passage and an edited copy), the mean error is a few
    points and no estimate is far off. A B-bit Simhash's estimate of a cosine
    has a standard deviation of up to about 0.5 pi / sqrt(B) (0.14 at 128 bits),
    a K-bin MinHash's of the Jaccard about 0.5 / sqrt(K)."""
    rng = random.Random(7)
    texts = corpus()
    errors = []
    for _ in range(40):
        text = rng.choice(texts)
        other = edited(text, rng.uniform(0.0, 0.5), rng)
        ha, hb = sig.text_hashes(text, s.n, s.units), sig.text_hashes(other, s.n, s.units)
        if s.estimates == "tf-cosine":
            exact = weighted_cosine(features(text), features(other))
        elif s.estimates == "jaccard":
            exact = sig.exact_jaccard(ha, hb)
        else:
            exact = sig.exact_cosine(ha, hb)
        errors.append(abs(s.similarity(s.of(text), s.of(other)) - exact))
    if "cosine" in s.estimates:  # a Simhash of B bits
        bits = 8 * s.nbytes
        mean, worst = 1.3 / math.sqrt(bits), 5 / math.sqrt(bits)
    else:
        mean, worst = 0.06, 0.2
    assert float(np.mean(errors)) < mean
    assert max(errors) < worst


def test_hybrid_is_exact_for_small_texts_and_compares_small_with_large() -> None:
    s = sig.SIGNATURES["hybrid128x4/3"]
    a, b = "one two three four five six", "one two three four five seven"
    ha, hb = sig.text_hashes(a), sig.text_hashes(b)
    assert len(s.make(ha)) == 4 * 4  # four shingles, kept exactly
    assert s.similarity(s.make(ha), s.make(hb)) == pytest.approx(sig.exact_jaccard(ha, hb))
    large = " ".join(corpus()[:2])
    small_in_large = " ".join(large.split()[:12])
    got = s.similarity(s.of(small_in_large), s.of(large))
    assert 0.0 <= got < 0.3  # a small part of a large text: low Jaccard, computed through sketches


def test_minhash_densification_fills_every_bin() -> None:
    values = sig.minhash_values(np.array([1 << 31, 5], dtype=np.uint32), bins=128, bits=8)
    assert len(values) == 128 and set(values.tolist()) <= {0, 5}
    with pytest.raises(InvalidArgumentError):
        sig.minhash_values(np.zeros(3, np.uint32), bins=100, bits=4)


def test_exact_similarities() -> None:
    a, b = np.array([1, 2, 3, 4], np.uint64), np.array([3, 4, 5, 6, 7, 8], np.uint64)
    assert sig.exact_jaccard(a, b) == pytest.approx(2 / 8)
    assert sig.exact_cosine(a, b) == pytest.approx(2 / (24**0.5))
    assert sig.exact_containment(a, b) == pytest.approx(2 / 4)


MIXED = [
    "你好　世界！　　呼噜。 and some English words, the end",
    "簡體中文與简体中文，一二三四五六七八九十。",
    "the the the and of",  # stop words only: the fingerprint keeps them
    "Straße ｆｕｌｌ-width don’t",
]


@pytest.mark.parametrize("s", ALL, ids=lambda s: s.name)
def test_one_pass_gives_the_fingerprint_and_the_signature(s: sig.Signature) -> None:
    for text in [*corpus()[:5], *MIXED]:
        fp, got = sig.fingerprint_and_signature(text, s)
        assert fp == simhash(text)
        assert got == s.of(text)
    with pytest.raises(EmptyTextError):
        sig.fingerprint_and_signature("...", s)

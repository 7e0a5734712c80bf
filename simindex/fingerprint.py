"""Features to a 64-bit Simhash fingerprint (Charikar 2002), and Hamming distance.

Each feature is hashed to 64 bits with xxh64 (seed 0, UTF-8 bytes), so a
fingerprint is the same in every process, run, machine and Python version.
Each bit of the fingerprint is 1 where the weighted votes of the features
(+w where the feature's hash has a 1, -w where it has a 0) sum to more than 0.
Weights are whole numbers and the sums are exact, so no rounding can flip a bit.
With ``script="simplified"`` the fingerprint of a Traditional text also
depends on OpenCC's t2s tables (see prepare), which its releases revise
(1.4.0, 1.4.1 and 1.4.2 convert a 336,000-character sample alike).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from functools import cache
from typing import Any

import numpy as np
import xxhash

from simindex.errors import EmptyTextError, InvalidArgumentError
from simindex.tokenize import (
    CJK_MODES,
    PIECE_CHARS,
    fold_cjk_gaps,
    has_cjk,
    nfkc,
    shingle_counts,
    stopwords,
    words,
)

BITS = 64
MAX_FINGERPRINT = (1 << BITS) - 1
_SIGN = 1 << (BITS - 1)
_CHUNK = 1 << 16  # features summed per step: bounds memory for huge texts

WEIGHTINGS = ("tf", "sublinear", "binary")
CJK_GAPS = ("kept", "folded")
SCRIPTS = ("as-is", "simplified")


@dataclass(frozen=True)
class FingerprintConfig:
    """How a text becomes a fingerprint. An index stores the one it was built with.

    - ``ngram``: 1 for word unigrams, n > 1 for word n-gram shingles.
    - ``weighting``: ``"tf"`` (term frequency), ``"sublinear"`` (1 + ln tf,
      in fixed point) or ``"binary"`` (every distinct feature weighs 1).
    - ``stopwords``: drop the shipped English and Chinese stop words.
    - ``tokenizer``: version of the tokenisation rules, raised when they change.
    - ``cjk``: how Chinese and Japanese runs become tokens: ``"words"`` (jieba
      words) or ``"chars"`` (each character and each character bigram; no
      dictionary, several times faster, and the same whatever jieba version is
      installed).
    - ``cjk_gaps``: ``"kept"``, or ``"folded"``: punctuation and whitespace
      between two CJK characters dropped before tokenising, so that
      "你好，世界" reads as "你好世界" (whitespace alone is dropped either way).
    - ``script``: ``"as-is"``, or ``"simplified"``: Han text converted from
      Traditional to Simplified characters (OpenCC's t2s) before tokenising,
      so that the two scripts of a text agree.

    ``prepare`` applies the last two. The field defaults are the behaviour of
    the first release, so a configuration stored without a newer field loads
    as it was built. New indexes use DEFAULT_CONFIG (bench/quality.py measures
    the choice).
    """

    ngram: int = 1
    weighting: str = "tf"
    stopwords: bool = True
    tokenizer: int = 1
    cjk: str = "words"
    cjk_gaps: str = "kept"
    script: str = "as-is"

    def __post_init__(self) -> None:
        if (
            isinstance(self.ngram, bool)
            or not isinstance(self.ngram, int)
            or not 1 <= self.ngram <= 8
        ):
            raise InvalidArgumentError(
                f"ngram must be a whole number from 1 to 8, not {self.ngram!r}"
            )
        if self.weighting not in WEIGHTINGS:
            raise InvalidArgumentError(
                f"weighting must be one of {', '.join(WEIGHTINGS)}, not {self.weighting!r}"
            )
        if not isinstance(self.stopwords, bool):
            raise InvalidArgumentError(f"stopwords must be true or false, not {self.stopwords!r}")
        if self.cjk not in CJK_MODES:
            raise InvalidArgumentError(
                f"cjk must be one of {', '.join(CJK_MODES)}, not {self.cjk!r}"
            )
        if self.cjk_gaps not in CJK_GAPS:
            raise InvalidArgumentError(
                f"cjk_gaps must be one of {', '.join(CJK_GAPS)}, not {self.cjk_gaps!r}"
            )
        if self.script not in SCRIPTS:
            raise InvalidArgumentError(
                f"script must be one of {', '.join(SCRIPTS)}, not {self.script!r}"
            )
        if self.tokenizer != 1:
            raise InvalidArgumentError(
                f"tokenizer version {self.tokenizer!r} is not known to this simindex (it knows 1)"
            )

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FingerprintConfig:
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise InvalidArgumentError(
                f"unknown fingerprint option(s): {', '.join(sorted(map(repr, unknown)))}"
            )
        return cls(**data)

    @classmethod
    def from_json(cls, text: str) -> FingerprintConfig:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise InvalidArgumentError("a fingerprint configuration is a JSON object")
        return cls.from_dict(data)

    def describe(self) -> str:
        kind = "word unigrams" if self.ngram == 1 else f"word {self.ngram}-gram shingles"
        stop = "stop words dropped" if self.stopwords else "stop words kept"
        cjk = "CJK as characters and bigrams" if self.cjk == "chars" else "CJK as jieba words"
        parts = [kind, f"{self.weighting} weights", stop, cjk]
        # Named when on, so an older configuration is described as it was.
        if self.cjk_gaps == "folded":
            parts.append("punctuation between CJK characters dropped")
        if self.script == "simplified":
            parts.append("Traditional Chinese read as Simplified")
        return ", ".join(parts)


# New indexes. bench/quality.py (see bench/README.md), at the default k = 8,
# seeds 1-3: tf weights find 93-95% of the edited copies with every negative
# kind's false positives at or under 1%, where sublinear weights find 90-92%
# (89.5% in Chinese at one seed) and 72% of the natural English pairs against
# tf's 89%; CJK read as characters and bigrams is as good as jieba words or
# better, and about four times faster. Chinese normalisation
# (docs/decisions/verification-signatures.md, "Chinese normalisation"): with
# t2s every Traditional copy is found (6% without), and with the gaps folded
# a copy that differs only in punctuation and spacing lands at distance 0
# (the default without it finds 99% of those; folding costs 3 points of the
# 10% edits at k = 8).
DEFAULT_CONFIG = FingerprintConfig(
    weighting="tf", cjk="chars", cjk_gaps="folded", script="simplified"
)


@cache
def _t2s() -> Callable[[str], str]:
    """OpenCC's Traditional-to-Simplified conversion, built once per process."""
    try:
        import opencc
    except ImportError as exc:
        raise ImportError(
            "script='simplified' converts Traditional Chinese to Simplified with OpenCC, "
            "and the opencc package is not installed (pip install 'opencc>=1.4')"
        ) from exc
    # Named, not left to the default, so that a release changing it cannot
    # move stored fingerprints (the extra table maps rare characters).
    converter = opencc.OpenCC("t2s", include_tofu_risk_dictionaries=True)
    convert: Callable[[str], str] = converter.convert
    return convert


_SURROGATES = re.compile("([\ud800-\udfff]+)")
_T2S_ROUNDS = 4


def to_simplified(text: str) -> str:
    """Traditional characters made Simplified (OpenCC t2s), repeated until the
    text no longer changes, so that converting is idempotent (t2s turns a few
    phrases into ones it converts again: 蕭乾 -> 萧乾 -> 萧干; on a People's
    Daily sample, 13 characters of 1.9 million). Lone surrogates, which
    OpenCC cannot read, are kept where they are."""
    convert = _t2s()
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        parts = _SURROGATES.split(text)  # odd positions: the surrogates
        return "".join(p if i % 2 else to_simplified(p) for i, p in enumerate(parts))
    for _ in range(_T2S_ROUNDS):
        converted = convert(text)
        if converted == text:
            break
        text = converted
    return text


def prepare(text: str, config: FingerprintConfig) -> str:
    """The text as the configuration reads it, before tokenising: with
    ``cjk_gaps="folded"`` punctuation and whitespace between two CJK
    characters dropped (see tokenize.fold_cjk_gaps), then with
    ``script="simplified"`` Traditional characters made Simplified (see
    to_simplified). A text with either option is first NFKC-normalised
    (tokenising normalises it anyway, and then finds it done), so that a
    compatibility form of a character (a Kangxi radical from a PDF, say) is
    kept and converted as the character rather than folded as a symbol.

    Folding comes first so that two texts that differ only in punctuation
    are the same text when converted, and so that preparing is idempotent
    (``prepare(prepare(t, c), c) == prepare(t, c)``): t2s maps characters to
    characters, so it makes no new gap. The text itself when neither option
    is on or it has no CJK character (one scan in C: English pays nothing).
    """
    if config.script == "as-is" and config.cjk_gaps == "kept":
        return text
    if text.isascii() or not has_cjk(text):
        return text
    text = nfkc(text)
    if config.cjk_gaps == "folded":
        text = fold_cjk_gaps(text)
    if config.script == "simplified":
        text = to_simplified(text)
    return text


def features(text: str, config: FingerprintConfig = DEFAULT_CONFIG) -> Counter[str]:
    """The weighted features of a text: feature -> whole-number weight. The
    one definition of what a fingerprint reads: simhash() and the one-pass
    signature.fingerprint_and_signature both take their features from here
    (the latter through features_of_tokens, from the tokens it has counted)."""
    prepared = prepare(text, config)
    if config.ngram == 1 and len(prepared) <= PIECE_CHARS:
        return features_of_tokens(Counter(words(prepared, config.cjk)), config)
    counts = shingle_counts(prepared, config.ngram, drop_stopwords=config.stopwords, cjk=config.cjk)
    return weighted(counts, config)


def features_of_tokens(tokens: Counter[str], config: FingerprintConfig) -> Counter[str]:
    """A prepared text's features, from the counts of its word tokens
    (tokenize.words with ``config.cjk``; word unigrams, ``config.ngram == 1``):
    its content words (every token, when all are stop words or stop words
    are kept), weighted."""
    if config.ngram != 1:
        raise ValueError("features_of_tokens reads word unigrams (ngram=1)")
    if config.stopwords:
        stop = stopwords()
        content = Counter({t: c for t, c in tokens.items() if t not in stop})
        if content:
            tokens = content
    return weighted(tokens, config)


def weighted(counts: Counter[str], config: FingerprintConfig) -> Counter[str]:
    """Features' weights from their counts, by ``config.weighting``."""
    if config.weighting == "binary":
        return Counter(dict.fromkeys(counts, 1))
    if config.weighting == "sublinear":
        # 1 + ln(tf) in fixed point (1/256), so sums stay exact integers.
        return Counter({f: round(256 * (1 + math.log(c))) for f, c in counts.items()})
    return counts


_xxh64 = xxhash.xxh64_intdigest


def feature_hash(feature: str) -> int:
    """The 64-bit hash of one feature: xxh64, seed 0, over its UTF-8 bytes."""
    return _xxh64(feature.encode("utf-8", "surrogatepass"))


def simhash_weighted(weighted: Mapping[str, int] | Iterable[tuple[str, int]]) -> int:
    """The Simhash of weighted features. Raises EmptyTextError when there are none."""
    items = list(weighted.items()) if isinstance(weighted, Mapping) else list(weighted)
    if not items:
        raise EmptyTextError("the text has no word features (it is empty or only punctuation)")
    hashes = np.array([_xxh64(f.encode("utf-8", "surrogatepass")) for f, _ in items], "<u8")
    return simhash_of_hashes(hashes, np.array([w for _, w in items], dtype=np.float64))


def simhash_of_hashes(hashes: np.ndarray, weights: np.ndarray) -> int:
    """The Simhash vote, the one every fingerprint is made by: bit j is 1
    where the weights of the features whose hash has bit j set outweigh the
    others'. ``hashes``: the features' 64-bit hashes (feature_hash);
    ``weights``: theirs, as floats (whole numbers: their sums are exact,
    so the chunks change nothing)."""
    votes = np.zeros(BITS, dtype=np.float64)
    total = 0.0
    for start in range(0, len(hashes), _CHUNK):
        chunk = hashes[start : start + _CHUNK].astype("<u8", copy=False)
        weight = weights[start : start + _CHUNK]
        # bits[i, j] is bit j of feature i's hash (little-endian bytes, bits low first).
        bits = np.unpackbits(chunk.view(np.uint8).reshape(-1, 8), axis=1, bitorder="little")
        votes += weight @ bits
        total += float(weight.sum())
    # The signed vote of bit j is (votes_j) - (total - votes_j); the bit is 1 where it is > 0.
    positive = 2 * votes > total
    return int(np.packbits(positive, bitorder="little").view("<u8")[0])


def simhash(text: str, config: FingerprintConfig = DEFAULT_CONFIG) -> int:
    """The 64-bit Simhash of a text, an int in [0, 2**64).

    Raises EmptyTextError when the text has no word at all (empty, whitespace
    or punctuation only). A text of stop words only is fingerprinted from them.
    """
    if not isinstance(text, str):
        raise InvalidArgumentError(f"text must be a str, not {type(text).__name__}")
    return simhash_weighted(features(text, config))


def hamming(a: int, b: int) -> int:
    """The number of bits in which two fingerprints differ."""
    return (a ^ b).bit_count()


def check_fingerprint(value: object) -> int:
    """Return value if it is a fingerprint (an int in [0, 2**64)), else raise."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_FINGERPRINT:
        raise InvalidArgumentError(f"a fingerprint is an int in [0, 2**64), not {value!r}")
    return value


def to_signed(value: int) -> int:
    """Map an unsigned 64-bit value to the signed one a BIGINT column stores.

    [0, 2**63) is unchanged; [2**63, 2**64) maps to [-2**63, 0) (two's complement).
    """
    return value - (1 << BITS) if value & _SIGN else value


def to_unsigned(value: int) -> int:
    """The inverse of to_signed."""
    return value & MAX_FINGERPRINT

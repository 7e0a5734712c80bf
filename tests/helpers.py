"""Helpers the test modules share that are not fixtures (those live in
conftest.py): the brute-force oracles, the CLI runner's checks, a few texts,
and the command prefix that runs a child process as an ordinary user.

Test modules import from here (``from tests.helpers import ...``), never from
one another (tests/test_structure.py checks it)."""

from __future__ import annotations

import json
import os
import random
import shutil
import struct
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine
from typer.testing import CliRunner, Result

from simindex import Match, SimIndex, dedup_stream, hamming
from simindex.cli import app
from simindex.fingerprint import DEFAULT_CONFIG
from simindex.signature import (
    CHARACTERS_AN_EDIT,
    DEFAULT_THRESHOLD,
    NBYTES,
    fingerprint_and_signature,
    keys_of_one,
    similarity,
)
from simindex.storage import locate

ROOT = Path(__file__).resolve().parent.parent

# --- oracles -----------------------------------------------------------------------------------


def brute_force(stored: dict[str, int], query: int, k: int) -> list[Match]:
    """The oracle: compare the query with every stored fingerprint."""
    found = [Match(key, hamming(fp, query), fp) for key, fp in stored.items()]
    return sorted((m for m in found if m.distance <= k), key=lambda m: (m.distance, m.key))


def brute_force_pairs(stored: dict[str, int], k: int) -> list[tuple[str, str, int]]:
    """Every pair of keys (a < b) within distance k, by distance, then keys."""
    keys = sorted(stored)
    pairs = [
        (a, b, hamming(stored[a], stored[b]))
        for i, a in enumerate(keys)
        for b in keys[i + 1 :]
        if hamming(stored[a], stored[b]) <= k
    ]
    return sorted(pairs, key=lambda p: (p[2], p[0], p[1]))


def flip(value: int, bits: int, rng: random.Random) -> int:
    """value with `bits` distinct bits of its 64 flipped (distance exactly `bits`)."""
    for position in rng.sample(range(64), bits):
        value ^= 1 << position
    return value


# --- the command line --------------------------------------------------------------------------

RUNNER = CliRunner()

T1 = (
    "The Riverside branch library will change its opening hours from the first Monday "
    "of next month, opening at nine in the morning instead of ten on weekdays."
)
T2 = (
    "Route fourteen buses will follow a temporary diversion for six weeks while repairs "
    "are carried out on the Kingsford Road bridge near the hospital stop."
)
T3 = (
    "A new bakery has opened on Mill Street in the shop that used to sell picture "
    "frames; the owners bake sourdough loaves and cinnamon buns every morning."
)
T4 = (
    "The school summer fair raised money for new playground equipment, with a tombola, "
    "a cake stall and a dog show judged by the headteacher on the field."
)


def invoke(*args: Any, input: str | bytes | None = None) -> Result:
    """Run the CLI in-process; fail loudly if it raised something unexpected.

    CliRunner turns an uncaught exception into exit code 1, which would look
    like "query found nothing": so any exception other than SystemExit fails.
    """
    result = RUNNER.invoke(app, [str(a) for a in args], input=input)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        shown = "".join(traceback.format_exception(*result.exc_info)) if result.exc_info else ""
        raise AssertionError(
            f"simindex {' '.join(map(str, args))} raised {result.exception!r}\n{shown}"
        )
    assert "Traceback" not in result.output
    return result


def describe(result: Result) -> str:
    return f"exit {result.exit_code}\nstdout: {result.stdout!r}\nstderr: {result.stderr!r}"


def ok(*args: Any, input: str | bytes | None = None) -> Result:
    result = invoke(*args, input=input)
    assert result.exit_code == 0, describe(result)
    return result


def ok_json(*args: Any, input: str | bytes | None = None) -> Any:
    return json.loads(ok(*args, "--json", input=input).stdout)


def error(*args: Any, input: str | bytes | None = None, contains: tuple[str, ...] = ()) -> str:
    """Run a command that must fail: exit 2, one ``Error:`` line, nothing on stdout."""
    result = invoke(*args, input=input)
    assert result.exit_code == 2, describe(result)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), describe(result)
    assert result.stdout == "", describe(result)
    for part in contains:
        assert part in lines[0], f"{part!r} not in {lines[0]!r}"
    return lines[0]


def contents(path: Path) -> dict[str, int]:
    """Every key and fingerprint of an index (opened without creating it)."""
    with SimIndex(path, create=False) as ix:
        items = dict(ix.items())
        assert len(ix) == len(items)
        return items


# --- an ordinary user --------------------------------------------------------------------------


def unprivileged() -> list[str]:
    """The command prefix that runs a child as an ordinary user would."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        if os.environ.get("SIMINDEX_REQUIRE_UNPRIVILEGED"):
            pytest.fail("setpriv (util-linux) is needed to drop root's capabilities")
        pytest.skip("running as root without setpriv: cannot drop root's permission override")
    return [setpriv, "--bounding-set=-all", "--inh-caps=-all", "--"]


def short_and_close(a: bytes | None, b: bytes | None) -> bool:
    """Both signatures keep their sets, which differ by at most one unit among
    at least two shared, written out here from the rule's words; two kept in
    their texts' order (a byte of 1 after the hashes): at most one unit
    added, dropped or replaced in place (an edit distance of at most 1)."""
    if a is None or b is None or len(a) < NBYTES + 4 or len(b) < NBYTES + 4:
        return False
    if longer_text(a) or longer_text(b):  # (a middle set: a longer text's)
        return False
    ua = struct.unpack_from(f"<{(len(a) - NBYTES) // 4}I", a, NBYTES)
    ub = struct.unpack_from(f"<{(len(b) - NBYTES) // 4}I", b, NBYTES)
    sa, sb = set(ua), set(ub)
    shared = len(sa & sb)
    if (len(a) - NBYTES) % 4 == 1 and (len(b) - NBYTES) % 4 == 1:
        return shared >= 2 and edit_distance(ua, ub) <= 1
    return shared >= 2 and len(sa - sb) <= 1 and len(sb - sa) <= 1


def bands_equal(a: bytes | None, b: bytes | None) -> bool:
    """Both signatures are longer texts' (longer_text: no short text's set),
    and one of the twelve runs of five
    bytes (ten bins) at the start of their sketches is the same in both,
    written out here from the rule's words."""
    if a is None or b is None or not (longer_text(a) and longer_text(b)):
        return False
    return any(a[5 * i : 5 * i + 5] == b[5 * i : 5 * i + 5] for i in range(12))


def longer_text(signature: bytes) -> bool:
    """A longer text's signature (more than 15 units), written out from the
    form's words: the sketch; the sketch and a byte of 2 (most of the text's
    units CJK characters); or the sketch, 16-bit hashes and a byte of 3 or 4
    (a middle set: an odd length; a short set in order ends in 1)."""
    return (
        len(signature) == NBYTES
        or (len(signature) == NBYTES + 1 and signature[-1] == 2)
        or (len(signature) % 2 == 1 and signature[-1] in (3, 4))
    )


def needed(threshold: float, a: bytes | None, b: bytes | None) -> float:
    """The similarity a pair needs, written out here from the rule's words:
    the threshold asked, or for two longer texts of CJK characters (a byte
    of 2 after both sketches) the Jaccard of the same share of edits, an
    edit changing CHARACTERS_AN_EDIT units: e = (1 - t) / (1 + t), then
    (1 - c e) / (1 + c e) (0 and 1 as they are)."""
    chars = [
        s is not None and ((len(s) == NBYTES + 1 and s[-1] == 2) or (len(s) % 2 and s[-1] == 4))
        for s in (a, b)
    ]
    if not all(chars) or threshold in (0.0, 1.0):
        return threshold
    e = CHARACTERS_AN_EDIT * (1 - threshold) / (1 + threshold)
    return max(0.0, (1 - e) / (1 + e))


def banded_pair(seed: int = 0, k: int = 8, words: int = 120) -> tuple[str, str]:
    """Two texts of random words, the second with a twelfth of its words
    replaced, whose fingerprints are more than k apart while one band of
    their sketches is equal and their similarity reaches the default
    threshold: a copy only the band keys find (drawn until one is)."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(3000)]
    while True:
        a = [rng.choice(vocab) for _ in range(words)]
        b = list(a)
        for at in rng.sample(range(words), words // 12):
            b[at] = rng.choice(vocab)
        (fa, sa), (fb, sb) = (
            fingerprint_and_signature(" ".join(t), DEFAULT_CONFIG) for t in (a, b)
        )
        if hamming(fa, fb) > k and bands_equal(sa, sb) and similarity(sa, sb) >= DEFAULT_THRESHOLD:
            return " ".join(a), " ".join(b)


def keys_meet(a: bytes | None, b: bytes | None) -> bool:
    """The pairs found at any fingerprint distance: short texts one unit
    apart (short_and_close), longer texts with a band equal (bands_equal)."""
    return short_and_close(a, b) or bands_equal(a, b)


def edit_distance(a: Sequence[object], b: Sequence[object]) -> int:
    """Levenshtein's distance (one added, dropped or replaced: one), by the table."""
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        previous, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, previous + (x != y))
    return row[-1]


def in_order(a: Sequence[object], b: Sequence[object]) -> int:
    """The longest common subsequence's length, by the table."""
    row = [0] * (len(b) + 1)
    for x in a:
        previous = 0
        for j, y in enumerate(b, 1):
            previous, row[j] = row[j], previous + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


@contextmanager
def raw(location: str) -> Iterator[Any]:
    """A driver connection that is not simindex (sqlite3, or psycopg in the
    index's schema), committing at the end."""
    where = locate(location)
    if where.path is not None:
        import sqlite3

        conn = sqlite3.connect(where.path)
        try:
            with conn:
                yield conn.cursor()
        finally:
            conn.close()
        return
    engine = create_engine(where.url)
    try:
        with engine.begin() as sa_conn:
            sa_conn.exec_driver_sql(f"SET search_path TO {where.schema}")
            driver = sa_conn.connection.dbapi_connection
            assert driver is not None
            yield driver.cursor()
    finally:
        engine.dispose()


# --- the compiled paths ------------------------------------------------------------------------


# Short texts' set keys (tests/test_short_sets.py, tests/test_short_order.py)

Stored = dict[str, tuple[int, "bytes | None"]]


def oracle(
    stored: Stored,
    text: str,
    k: int = 8,
    threshold: float = DEFAULT_THRESHOLD,
    *,
    sets: bool = True,
) -> list[Match]:
    """Brute force: within k, or (``sets``) short and one unit apart or a
    band equal (keys_meet); verified."""
    fp, sig = fingerprint_and_signature(text, DEFAULT_CONFIG)
    found = []
    for key, (other, other_sig) in stored.items():
        d = hamming(fp, other)
        close = sets and threshold > 0 and keys_meet(sig, other_sig)
        if d > k and not close:
            continue
        estimate = None if other_sig is None else similarity(sig, other_sig)
        if estimate is None or estimate >= needed(threshold, sig, other_sig):
            found.append(Match(key, d, other, estimate))
    return sorted(found, key=lambda m: (m.distance, m.key))


def pairs_oracle(
    stored: Stored, k: int = 8, threshold: float = DEFAULT_THRESHOLD
) -> list[tuple[str, str, int, float]]:
    """Brute force of duplicates(): every pair of signed rows within k, or
    whose keys meet (keys_meet), verified; (key a, key b, distance,
    similarity), a < b, in duplicates()' order."""
    keys = list(stored)
    want = []
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            (fa, sa), (fb, sb) = stored[a], stored[b]
            assert sa is not None and sb is not None  # (texts: every row signed)
            d = hamming(fa, fb)
            estimate = similarity(sa, sb)
            close = d <= k or (threshold > 0 and keys_meet(sa, sb))
            if close and estimate >= needed(threshold, sa, sb):
                want.append((*sorted((a, b)), d, estimate))
    return sorted(want, key=lambda p: (p[2], p[0], p[1]))


def assert_dedup_is_oracle(texts: dict[str, str]) -> None:
    """dedup_stream names, for each text in order, the nearest kept one the
    oracle finds among those kept before it (None: kept)."""
    everything = stored_of(texts)
    kept: list[str] = []
    for decision in dedup_stream(texts.items(), workers=1):
        found = oracle({k: everything[k] for k in kept}, texts[decision.key])
        assert decision.duplicate_of == (found[0].key if found else None)
        if decision.kept:
            kept.append(decision.key)


def stored_of(texts: dict[str, str]) -> Stored:
    return {k: fingerprint_and_signature(t, DEFAULT_CONFIG) for k, t in texts.items()}


def set_key_tables(location: str) -> tuple[set[tuple[int, int]], set[int], dict[int, bytes | None]]:
    """(set key, id) stored, the ids due, and every row's signature by id."""
    with raw(location) as cur:
        cur.execute("SELECT set_key, id FROM simindex_set_keys")
        keys = {(int(k), int(i)) for k, i in cur.fetchall()}
        cur.execute("SELECT id FROM simindex_set_keys_due")
        due = {int(r[0]) for r in cur.fetchall()}
        cur.execute("SELECT id, signature FROM simindex_fingerprints")
        rows = {int(i): None if s is None else bytes(s) for i, s in cur.fetchall()}
    return keys, due, rows


def assert_keys_complete(location: str, *, drained: bool) -> None:
    """Every row's keys are stored or the row is due (and, ``drained``,
    none is due and no key is left of a row gone or changed)."""
    keys, due, rows = set_key_tables(location)
    want = {(k, i) for i, sig in rows.items() if sig is not None for k in keys_of_one(sig)}
    missing = {(k, i) for k, i in want - keys if i not in due}
    assert not missing
    if drained:
        assert not due
        assert keys == want


def compiled_or_skip() -> None:
    """For a test of the compiled code itself (simindex.compiling's loader):
    skips where SIMINDEX_COMPILED=never forces the numpy and Python paths
    for the run, and where numba is not installed - there it fails instead
    under SIMINDEX_REQUIRE_NUMBA=1 (CI) or SIMINDEX_COMPILED=always, so the
    compiled code is never untested where it is asked for."""
    import importlib.util

    from simindex import compiling

    if os.environ.get(compiling.ENVIRONMENT) == "never":
        pytest.skip(f"{compiling.ENVIRONMENT}=never: the compiled code is not used in this run")
    if importlib.util.find_spec("numba") is None:
        if os.environ.get("SIMINDEX_REQUIRE_NUMBA") == "1":
            pytest.fail("SIMINDEX_REQUIRE_NUMBA=1 but numba is not installed")
        if os.environ.get(compiling.ENVIRONMENT) == "always":
            pytest.fail(f"{compiling.ENVIRONMENT}=always but numba is not installed")
        pytest.skip("numba is not installed (pip install '.[fast]')")

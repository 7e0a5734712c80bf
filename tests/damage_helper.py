"""Damaged copies of an index, and what simindex answers from each (tests/test_damage.py).

An index of a few thousand documents (a third of them lightly edited copies
of earlier ones) is built and compacted; a copy of its file then gets bytes
overwritten at one offset, and every read that matters is asked of the copy:
``duplicates()``, ``clusters()``, ``query_many`` (a batch read in memory),
``get`` of every key, and ``simindex dedup``. Each gives "same" (the answer of
the undamaged index, itself checked against brute force), "damaged" (a
DamagedIndexError; the CLI: exit 2 and one ``Error:`` line) or something
that should never be: "WRONG", an exception that is not simindex's, a
traceback.

    python tests/damage_helper.py [--rows N] [--width W] [--step S] [--stored] [OFFSET...]

prints one line per offset tried (every S bytes across the file by default,
S = 997) and a count of each kind of line; ``--stored`` stores the snapshot
in the index before it is damaged (a hold=True query, with storing allowed
for a small index).
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script
    sys.path.insert(0, str(ROOT))

from simindex import DamagedIndexError, SimIndex, SimIndexError  # noqa: E402
from simindex.fingerprint import DEFAULT_CONFIG  # noqa: E402
from simindex.pairs import leader_clusters  # noqa: E402
from simindex.results import Cluster, Pair  # noqa: E402
from simindex.signature import fingerprint_and_signature, similarity  # noqa: E402
from tests.helpers import keys_meet  # noqa: E402

WIDTH = 1500  # bytes overwritten at each offset (as the report did)
QUERIES = 300  # a batch that query_many answers in memory


def documents(rows: int, seed: int = 5) -> list[tuple[str, str]]:
    """(key, text) of ``rows`` documents: words drawn at random, and about a
    third of them copies of an earlier one with up to three words changed."""
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(3000)]
    docs: list[tuple[str, str]] = []
    for i in range(rows):
        if i > 10 and rng.random() < 0.3:
            words = docs[rng.randrange(len(docs))][1].split()
            for _ in range(rng.randrange(4)):
                words[rng.randrange(len(words))] = rng.choice(vocabulary)
        else:
            words = [rng.choice(vocabulary) for _ in range(rng.randrange(20, 60))]
        docs.append((f"d{i}", " ".join(words)))
    return docs


def queries(docs: list[tuple[str, str]]) -> list[str]:
    """QUERIES texts: stored ones, with a word changed in every other one."""
    rng = random.Random(11)
    out = []
    for i in range(QUERIES):
        words = docs[rng.randrange(len(docs))][1].split()
        if i % 2:
            words[0] = "changed"
        out.append(" ".join(words))
    return out


@dataclass
class Truth:
    """What the undamaged index answers (each checked against brute force)."""

    duplicates: list[Pair]
    clusters: list[Cluster]
    batch: list[Any]
    fingerprints: dict[str, int]
    dedup_output: str


def brute_force(docs: list[tuple[str, str]], k: int, threshold: float) -> list[Pair]:
    """Every pair within k, or whose keys meet (tests.helpers.keys_meet),
    whose signatures are at least threshold similar, by comparing every
    document with every other."""
    marked = [fingerprint_and_signature(text, DEFAULT_CONFIG) for _, text in docs]
    fps = np.array([fp for fp, _ in marked], dtype=np.uint64)
    pairs = []
    for i in range(len(docs)):
        distance = np.bitwise_count(fps[i + 1 :] ^ fps[i])
        meet = [threshold > 0 and keys_meet(marked[i][1], sig) for _, sig in marked[i + 1 :]]
        for j in (np.flatnonzero((distance <= k) | np.array(meet, bool)) + i + 1).tolist():
            estimate = similarity(marked[i][1], marked[j][1])
            if estimate >= threshold:
                a, b = sorted((docs[i][0], docs[j][0]))
                pairs.append(Pair(a, b, int(distance[j - i - 1]), estimate))
    pairs.sort(key=lambda p: (p.distance, p.key_a, p.key_b))
    return pairs


def build(path: Path, docs: list[tuple[str, str]], *, stored: bool = False) -> Truth:
    """Build and compact the index (storing its snapshot too with ``stored``);
    what it answers, checked against brute force."""
    from simindex.cli import app
    from simindex.storage import stored as stored_module

    with SimIndex(path) as ix:
        ix.add_many(docs)
        ix.compact()
    if stored:
        was = stored_module.STORE_MIN_ROWS
        stored_module.STORE_MIN_ROWS = 1
        try:
            with SimIndex(path, create=False, hold=True) as ix:
                ix.query(docs[0][1])
                assert ix._store.snapshots.current()  # noqa: SLF001 - the state a test sets up
        finally:
            stored_module.STORE_MIN_ROWS = was
    with SimIndex(path, create=False) as ix:
        duplicates = ix.duplicates()
        truth = Truth(
            duplicates,
            ix.clusters(),
            ix.query_many(queries(docs)),
            dict(ix.items()),
            _cli(app, ["dedup", str(path)]).stdout,
        )
        assert duplicates == brute_force(docs, ix.k, ix.threshold)
    order = {key: i for i, (key, _) in enumerate(docs)}
    keys = [key for key, _ in docs]
    by_position = leader_clusters(
        (min(order[p.key_a], order[p.key_b]), max(order[p.key_a], order[p.key_b]))
        for p in truth.duplicates
    )
    distance = {frozenset((p.key_a, p.key_b)): p.distance for p in truth.duplicates}
    clusters = []
    for group in by_position:
        lead = keys[group[0]]
        members = sorted(
            ((keys[i], distance[frozenset((lead, keys[i]))]) for i in group[1:]),
            key=lambda m: (m[1], m[0]),
        )
        clusters.append(Cluster(lead, [(lead, 0), *members]))
    clusters.sort(key=lambda c: (-len(c.members), c.canonical))
    assert truth.clusters == clusters
    return truth


def damage(data: bytes, at: int, width: int = WIDTH) -> bytes:
    """The file with ``width`` bytes of garbage (seeded by the offset) from ``at``."""
    damaged = bytearray(data)
    end = min(len(data), at + width)
    damaged[at:end] = random.Random(at).randbytes(end - at)
    return bytes(damaged)


def _cli(app: Any, args: list[str]) -> Any:
    from typer.testing import CliRunner

    return CliRunner().invoke(app, args)


def _api(path: Path, operation: Callable[[SimIndex], Any], expected: Any) -> str:
    try:
        with SimIndex(path, create=False) as ix:
            got = operation(ix)
    except DamagedIndexError:
        return "damaged"
    except SimIndexError as exc:
        return type(exc).__name__
    except Exception as exc:  # noqa: BLE001 - what should never be: reported
        return f"raised {type(exc).__name__}: {str(exc)[:40]}"
    return "same" if got == expected else "WRONG"


def outcomes(path: Path, truth: Truth, docs: list[tuple[str, str]]) -> dict[str, str]:
    """What each read gives on the (damaged) index at path."""
    from simindex.cli import app

    batch = queries(docs)
    keys = list(truth.fingerprints)
    found = {
        "duplicates": _api(path, lambda ix: ix.duplicates(), truth.duplicates),
        "clusters": _api(path, lambda ix: ix.clusters(), truth.clusters),
        "query_many": _api(path, lambda ix: ix.query_many(batch), truth.batch),
        "get": _api(path, lambda ix: {key: ix.get(key) for key in keys}, truth.fingerprints),
    }
    result = _cli(app, ["dedup", str(path)])
    lines = result.stderr.splitlines()
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        found["dedup"] = f"traceback {type(result.exception).__name__}"
    elif result.exit_code == 0:
        found["dedup"] = "same" if result.stdout == truth.dedup_output else "WRONG"
    elif result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("Error: "):
        found["dedup"] = "damaged" if "the file is damaged" in lines[0] else "error"
    else:
        found["dedup"] = f"exit {result.exit_code}, {len(lines)} lines"
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("offsets", nargs="*", type=int)
    parser.add_argument("--rows", type=int, default=4000)
    parser.add_argument("--width", type=int, default=WIDTH)
    parser.add_argument("--step", type=int, default=997)
    parser.add_argument("--stored", action="store_true")
    parser.add_argument("--dir", type=Path, default=Path("/tmp"))
    args = parser.parse_args()
    folder = args.dir / f"damage-{args.rows}{'-stored' if args.stored else ''}"
    folder.mkdir(parents=True, exist_ok=True)
    healthy = folder / "healthy.db"
    for old in folder.glob("*.db*"):
        old.unlink()
    docs = documents(args.rows)
    truth = build(healthy, docs, stored=args.stored)
    data = healthy.read_bytes()
    print(f"{healthy}: {len(data)} bytes, {len(truth.duplicates)} pairs", flush=True)
    counts: Counter[str] = Counter()
    for at in args.offsets or range(0, len(data), args.step):
        copy = folder / "copy.db"
        for old in folder.glob("copy.db*"):
            old.unlink()
        copy.write_bytes(damage(data, at, args.width))
        found = outcomes(copy, truth, docs)
        line = " ".join(f"{name}={what}" for name, what in found.items())
        counts[line] += 1
        print(f"{at:>9} {line}", flush=True)
    print("\ncount  outcome")
    for line, count in counts.most_common():
        print(f"{count:>5}  {line}")


if __name__ == "__main__":
    main()

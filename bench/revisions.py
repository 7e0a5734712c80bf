"""Two revisions of simindex, the same workload, one run: medians and head/base.

    python bench/revisions.py --base REV [--head REV|WORKTREE] [--n 1000000]
                              [--queries 2000] [--repeats 3] [--stream 1000]
    python bench/revisions.py --base HEAD~1 --n 100000   # a quick run (under half a minute)
    python bench/revisions.py --base main --json         # JSON on stdout, no results file
    python bench/revisions.py --base main --no-save      # print only (else
                                                         # bench/results/revisions.txt)

For a change that must keep simindex's speed (or better it). Each revision is
checked out with `git worktree add --detach` in a temporary folder. The default
head, WORKTREE, is this checkout's working tree as it is, uncommitted and
untracked files included: HEAD checked out, then the changed files copied over
it when the run starts, so edits made during the run do not leak into it. Every
measurement runs in a child process with PYTHONPATH set to one tree, so each
imports its own simindex with this interpreter's packages. Each child checks
where simindex came from. The children take turns, one round of every workload
each, base, head, base, head, ..., so the box's noise hits both alike. The trees
are removed at the end, after an error or Ctrl-C too.

The data comes from random.Random(--seed) and is written once, so both
revisions get the same data. There are N random 64-bit fingerprints (about half
with the top bit set), and every 100th is a planted near-duplicate of an
earlier one at distance 1..8. There are Q queries, half planted (a stored
fingerprint with 0..8 bits flipped) and half random. The stream is --stream
new fingerprints, a quarter of them near stored ones. Per round and revision:

  bulk add        add_fingerprints of all N into a new file (default k): fps/s
  query           query() one at a time, after 200 untimed: p50 and p90 in us
                  (k = 3 on an index made with k=3, the default k on the
                  round's new file, from the database (hold=False), then held
                  in memory (hold=True), whose first query is its own row)
  query_many      one call over the Q queries on a newly opened index, with the
                  default hold (default k) and on the k=3 index: q/s
  duplicates()    on the k=3 index and on the default-k one: s
  query then add  the stream, query() then add_fingerprint() each (default
                  hold, the round's new file): mean us a document (p90 beside)
  texts           add_many of --texts made-up passages (80-300 words, a Zipf law
                  over 5,000 words) into a new file: docs/s, and its bytes a
                  text after VACUUM; then query(text) one at a time over Q/4
                  texts (half 5%-edited copies of stored ones), from the
                  database (hold=False) and held: p50 us. Text queries are
                  verified by signatures since those were added, and find
                  copies by band keys since those were, so those rows may
                  differ in answers (they say whether they do)
  short texts     the same with T/4 made-up short texts (4-12 words of the same
                  law), queries with one word of a stored one replaced (answers
                  differ from before set keys, by design), and duplicates() (s)
                  of the file (the longer texts' is left out: their fingerprints
                  crowd within k of each other, a minute and gigabytes)

The k=3 index is built once per revision and reused. The bulk-add file is new
each round and is the one the default-k rows use. Each figure is the median
over the rounds (over the queries within a round for p50/p90). `head/base` is
in the row's unit; the column after it says which way is better. `spread` is
the larger of the two revisions' (max - min) / median over the rounds, a
measure of the noise. Each workload's answers are hashed: sorted match lists,
pairs, or the keys and fingerprints stored. A row's last column (same
answers) says yes when head's hash equals base's, and the last line says
`same answers: yes` when every row does. If a row differs, or a revision's
answers change from round to round, the exit status is 1 and no results file
is written. A row a revision cannot run (no `hold=` before 2be8981, say)
says so. Progress goes to stderr, the table to stdout and (see common.py)
bench/results/revisions.txt. The default N=1,000,000 with three rounds should
take a few minutes on a 2-core box, most of it in the six bulk adds and in
duplicates() at k=8.
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # common.py, never simindex

from common import (  # noqa: E402
    ROOT,
    cpu_model,
    load_average,
    log,
    output_options,
    percentile,
    print_json,
    save_output,
)

FLIPS = 8  # planted near-duplicates and planted queries: up to this many bits flipped
WARM = 200  # untimed queries before each single-query row

# (name, label, unit, better): the rows, in the order printed. A {k} in a label
# is replaced by the default k of the revisions.
ROWS = [
    ("bulk_add", "bulk add of N (add_fingerprints)", "fps/s", "higher"),
    ("query_k3_db", "query, k=3, database (hold=False)", "us", "lower"),
    ("query_kd_db", "query, k={k}, database (hold=False)", "us", "lower"),
    ("hold_load", "query, k={k}, hold=True: first query (reads in)", "ms", "lower"),
    ("query_kd_held", "query, k={k}, held (hold=True)", "us", "lower"),
    ("query_many_kd", "query_many(Q), k={k}, default hold", "q/s", "higher"),
    ("query_many_k3", "query_many(Q), k=3", "q/s", "higher"),
    ("duplicates_k3", "duplicates(), k=3", "s", "lower"),
    ("duplicates_kd", "duplicates(), k={k}", "s", "lower"),
    ("stream", "query then add_fingerprint, mean a document", "us", "lower"),
    ("text_add", "add_many of T texts (fingerprint, signature)", "doc/s", "higher"),
    ("text_bytes", "file size a text (after VACUUM)", "B", "lower"),
    ("text_query_db", "query(text), k={k}, database (hold=False)", "us", "lower"),
    ("text_query_held", "query(text), k={k}, held (hold=True)", "us", "lower"),
    ("short_add", "add_many of T/4 short texts (4-12 words)", "doc/s", "higher"),
    ("short_bytes", "file size a short text (after VACUUM)", "B", "lower"),
    ("short_pairs", "duplicates() of the T/4 short texts", "s", "lower"),
    ("short_query_db", "query(short text), database (hold=False)", "us", "lower"),
    ("short_query_held", "query(short text), held (hold=True)", "us", "lower"),
]
# Rows whose answers may differ between revisions by design: a text query is
# verified by signatures since those were added (the row says whether they differ).
# A short text also finds those one word apart at any distance since set keys,
# a longer one those with a band of its sketch equal since band keys.
MAY_DIFFER = {
    "text_query_db",
    "text_query_held",
    "short_query_db",
    "short_query_held",
    "short_pairs",
}
VOCAB = 5000  # made-up words of the texts, drawn by a Zipf law
TEXT_WORDS = (80, 300)
SHORT_WORDS = (4, 12)


def digest(value: object) -> str:
    return hashlib.sha256(repr(value).encode()).hexdigest()[:16]


# --- the child: one round of every workload, on the simindex on PYTHONPATH ---


def matches_digest(results: Iterable[Iterable[Any]]) -> str:
    return digest([sorted((m.key, m.distance) for m in found) for found in results])


def unlink(path: Path) -> None:
    """Remove an SQLite file and its journal files."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def layout_of(index: Any) -> str:
    return index.layout.describe() if hasattr(index.layout, "describe") else str(index.layout)


class Child:
    """One revision's round, in its own process: the rows, each measured with
    that revision's simindex (what it lacks is noted, not faked)."""

    NO_HOLD = "this revision has no hold= (its default is used)"

    def __init__(self, spec: dict[str, Any], SimIndex: Any) -> None:  # noqa: N803
        self.SimIndex = SimIndex
        params = inspect.signature(SimIndex).parameters
        self.has_hold = "hold" in params
        self.has_query_many = hasattr(SimIndex, "query_many")
        self.has_duplicates = hasattr(SimIndex, "duplicates")
        data = np.load(spec["data"])
        self.fps = data["fps"].tolist()
        self.queries = data["queries"].tolist()
        self.stream = data["stream"].tolist()
        self.items = [(f"k{i}", fp) for i, fp in enumerate(self.fps)]
        self.texts = json.loads(Path(spec["texts"]).read_text())
        self.work = Path(spec["work"])
        self.fresh = self.work / "round.db"  # the bulk add's file: the default-k rows use it
        self.k3 = self.work / "k3.db"  # the k=3 index, built once per revision
        self.rows: dict[str, dict[str, Any]] = {}
        self.meta: dict[str, Any] = {}

    def opened(self, path: Path, hold: bool | None | str = "default", **kw: Any) -> Any:
        if hold != "default" and self.has_hold:
            kw["hold"] = hold
        return self.SimIndex(path, **kw)

    def single(self, index: Any, queries: list, note: str | None = None) -> dict[str, Any]:
        """Single queries one at a time after WARM untimed: median and P90 us."""
        for q in queries[:WARM]:  # the page cache, the statements, in-memory tables
            index.query(q)
        times, found = [], []
        clock = time.perf_counter
        for q in queries:
            start = clock()
            got = index.query(q)
            times.append(clock() - start)
            found.append(got)
        out = {
            "value": statistics.median(times) * 1e6,
            "p90": percentile(times, 0.9) * 1e6,
            "answers": matches_digest(found),
        }
        if note is not None:
            out["note"] = note
        return out

    def bulk_add(self) -> None:
        """1. bulk add into a new file (default k)."""
        unlink(self.fresh)
        index = self.SimIndex(self.fresh)
        start = time.perf_counter()
        index.add_fingerprints(self.items)
        took = time.perf_counter() - start
        self.meta["default_k"] = index.k
        self.meta["layout"] = layout_of(index)
        stored = sorted(index.items())
        index.close()
        self.rows["bulk_add"] = {"value": len(self.items) / took, "answers": digest(stored)}

    def build_k3(self) -> None:
        """The k=3 index, built once per revision (untimed)."""
        if not self.k3.exists():
            log(f"  building the k=3 index of {len(self.items):,} (once per revision, untimed)")
            with self.SimIndex(self.k3, k=3) as index:
                index.add_fingerprints(self.items)
        with self.SimIndex(self.k3) as index:
            self.meta["k3_layout"] = layout_of(index)

    def queries_from_database(self) -> None:
        """2, 3. single queries from the database."""
        note = "" if self.has_hold else self.NO_HOLD
        with self.opened(self.k3, hold=False) as index:
            self.rows["query_k3_db"] = self.single(index, self.queries, note)
        with self.opened(self.fresh, hold=False) as index:
            self.rows["query_kd_db"] = self.single(index, self.queries, note)

    def queries_held(self) -> None:
        """4. held in memory; the first query reads the index in."""
        if not self.has_hold:
            self.rows["hold_load"] = self.rows["query_kd_held"] = {
                "value": None,
                "note": "no hold=",
            }
            return
        with self.opened(self.fresh, hold=True) as index:
            start = time.perf_counter()
            first = index.query(self.queries[0])
            self.rows["hold_load"] = {
                "value": (time.perf_counter() - start) * 1e3,
                "answers": matches_digest([first]),
            }
            self.rows["query_kd_held"] = self.single(index, self.queries, "")

    def query_many(self) -> None:
        """5. query_many, one call on a newly opened index."""
        for name, path in (("query_many_kd", self.fresh), ("query_many_k3", self.k3)):
            if not self.has_query_many:
                self.rows[name] = {"value": None, "note": "no query_many"}
                continue
            with self.SimIndex(path) as index:
                start = time.perf_counter()
                found = index.query_many(self.queries)
                took = time.perf_counter() - start
            self.rows[name] = {"value": len(self.queries) / took, "answers": matches_digest(found)}

    def duplicates(self) -> None:
        """6. every pair within k."""
        for name, path in (("duplicates_k3", self.k3), ("duplicates_kd", self.fresh)):
            if not self.has_duplicates:
                self.rows[name] = {"value": None, "note": "no duplicates()"}
                continue
            with self.SimIndex(path) as index:
                start = time.perf_counter()
                pairs = index.duplicates()
                took = time.perf_counter() - start
            self.rows[name] = {
                "value": took,
                "answers": digest(sorted((*sorted((p.key_a, p.key_b)), p.distance) for p in pairs)),
            }

    def texts_rows(self) -> None:
        """8. texts: add_many (fingerprints and, where the revision makes them,
        signatures), the file's bytes a text, query(text) one at a time from
        the database and held."""
        self._corpus_rows("text", self.texts["stored"], self.texts["queries"], size=True)

    def short_rows(self) -> None:
        """9. short texts: the same."""
        self._corpus_rows("short", self.texts["short"], self.texts["short_queries"], size=True)

    def _corpus_rows(
        self, name: str, stored: list[str], queries: list[str], *, size: bool = False
    ) -> None:
        path = self.work / f"{name}.db"
        unlink(path)
        with self.SimIndex(path) as index:
            start = time.perf_counter()
            index.add_many((f"{name}{i}", t) for i, t in enumerate(stored))
            took = time.perf_counter() - start
            self.rows[f"{name}_add"] = {
                "value": len(stored) / took,
                "answers": digest(sorted(index.items())),
            }
        if size:
            con = sqlite3.connect(path)
            con.execute("VACUUM")
            con.close()
            self.rows[f"{name}_bytes"] = {
                "value": path.stat().st_size / len(stored),
                "answers": "-",
            }
        with self.opened(path, hold=False) as index:
            self.rows[f"{name}_query_db"] = self.single(index, queries)
            if name == "short":  # (the texts' fingerprints crowd within k: about a minute)
                start = time.perf_counter()
                pairs = index.duplicates()
                self.rows[f"{name}_pairs"] = {
                    "value": time.perf_counter() - start,
                    "answers": digest([tuple(p) for p in pairs]),
                }
        if self.has_hold:
            with self.opened(path, hold=True) as index:
                self.rows[f"{name}_query_held"] = self.single(index, queries)
        else:
            self.rows[f"{name}_query_held"] = {"value": None, "note": "no hold="}
        unlink(path)

    def query_then_add(self) -> None:
        """7. query, then add, document by document (default hold)."""
        with self.SimIndex(self.fresh) as index:
            times, found = [], []
            clock = time.perf_counter
            for i, fp in enumerate(self.stream):
                start = clock()
                got = index.query(fp)
                index.add_fingerprint(f"s{i}", fp)
                times.append(clock() - start)
                found.append(got)
            size = len(index)
        self.rows["stream"] = {
            "value": statistics.fmean(times) * 1e6,
            "p90": percentile(times, 0.9) * 1e6,
            "answers": digest((matches_digest(found), size)),
        }
        unlink(self.fresh)


def child(spec_file: str) -> int:
    spec = json.loads(Path(spec_file).read_text())
    tree = Path(spec["tree"]).resolve()
    import simindex
    from simindex import SimIndex

    where = Path(simindex.__file__).resolve()
    if tree not in where.parents:
        raise SystemExit(f"simindex was imported from {where}, not from {tree}")
    run = Child(spec, SimIndex)
    run.bulk_add()
    run.build_k3()
    run.queries_from_database()
    run.queries_held()
    run.query_many()
    run.duplicates()
    run.texts_rows()
    run.short_rows()
    run.query_then_add()
    meta = {
        "simindex": str(where),
        "default_k": run.meta["default_k"],
        "layout": run.meta["layout"],
        "k3_layout": run.meta["k3_layout"],
        "hold": run.has_hold,
        "sqlite": sqlite3.sqlite_version,
        "numpy": np.__version__,
    }
    Path(spec["out"]).write_text(json.dumps({"meta": meta, "rows": run.rows}))
    return 0


# --- the parent: trees, data, rounds, the table ---


def git(*args: str, cwd: Path = ROOT) -> str:
    """Run git; a held lock (someone else's commit) is retried a few times."""
    for attempt in range(10):
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
        if out.returncode == 0:
            return out.stdout.strip()
        if ".lock" not in out.stderr or attempt == 9:
            raise RuntimeError(f"git {' '.join(args)}: {out.stderr.strip()}")
        time.sleep(1)
    raise AssertionError("unreachable")


class Trees:
    """The worktrees of a run, removed on exit whatever happens."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.paths: list[Path] = []

    def add(self, name: str, rev: str, overlay: bool) -> Path:
        path = self.folder / name
        self.paths.append(path)
        git("worktree", "add", "--detach", "--quiet", str(path), rev)
        if overlay:  # the working tree as it is: changed and untracked files on top
            changed = git("diff", "--name-only", "-z", "HEAD").split("\0")
            untracked = git("ls-files", "--others", "--exclude-standard", "-z").split("\0")
            for rel in filter(None, changed + untracked):
                source, target = ROOT / rel, path / rel
                if source.is_file():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(source, target)
                elif not source.exists():
                    target.unlink(missing_ok=True)  # deleted in the working tree
        return path

    def remove(self) -> None:
        for path in self.paths:
            try:
                git("worktree", "remove", "--force", str(path))
            except RuntimeError as err:
                log(f"warning: {err}")
        self.paths = []
        try:
            git("worktree", "prune")
        except RuntimeError as err:
            log(f"warning: {err}")


def flipped(fp: int, bits: int, rng: random.Random) -> int:
    for bit in rng.sample(range(64), bits):
        fp ^= 1 << bit
    return fp


def make_data(path: Path, args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    fps: list[int] = []
    for i in range(args.n):
        if i >= 100 and i % 100 == 0:  # 1% planted, at distance 1..FLIPS
            fps.append(flipped(fps[rng.randrange(i)], rng.randint(1, FLIPS), rng))
        else:
            fps.append(rng.getrandbits(64))
    queries = [
        flipped(fps[rng.randrange(args.n)], rng.randint(0, FLIPS), rng)
        if i % 2 == 0
        else rng.getrandbits(64)
        for i in range(args.queries)
    ]
    stream = [
        flipped(fps[rng.randrange(args.n)], rng.randint(1, FLIPS), rng)
        if i % 4 == 0
        else rng.getrandbits(64)
        for i in range(args.stream)
    ]
    np.savez(
        path,
        fps=np.array(fps, dtype=np.uint64),
        queries=np.array(queries, dtype=np.uint64),
        stream=np.array(stream, dtype=np.uint64),
    )
    # Texts: T passages of made-up words (a Zipf law over VOCAB), and Q/4
    # queries: half copies of stored passages with 5% of their words
    # replaced, half new passages.
    letters = "bcdfghjklmnprstvwz"
    vocab = sorted(
        {"".join(rng.choices(letters + "aeiou" * 3, k=rng.randint(3, 9))) for _ in range(VOCAB)}
    )
    weights = [1 / (r + 1) for r in range(len(vocab))]

    def passage() -> list[str]:
        return rng.choices(vocab, weights, k=rng.randint(*TEXT_WORDS))

    stored = [" ".join(passage()) + "." for _ in range(args.texts)]
    text_queries = []
    for i in range(max(1, args.queries // 4)):
        if i % 2:
            text_queries.append(" ".join(passage()) + ".")
            continue
        words = stored[rng.randrange(len(stored))].rstrip(".").split()
        for j in rng.sample(range(len(words)), len(words) // 20):
            words[j] = rng.choices(vocab, weights)[0]
        text_queries.append(" ".join(words) + ".")
    # Short texts: T/4 of 4-12 words, and Q/4 queries: half one word of a
    # stored one replaced, half new.
    short = [
        " ".join(rng.choices(vocab, weights, k=rng.randint(*SHORT_WORDS)))
        for _ in range(max(1, args.texts // 4))
    ]
    short_queries = []
    for i in range(max(1, args.queries // 4)):
        words = rng.choices(vocab, weights, k=rng.randint(*SHORT_WORDS))
        if not i % 2:
            words = short[rng.randrange(len(short))].split()
            words[rng.randrange(len(words))] = rng.choices(vocab, weights)[0]
        short_queries.append(" ".join(words))
    data = {
        "stored": stored,
        "queries": text_queries,
        "short": short,
        "short_queries": short_queries,
    }
    Path(f"{path}.texts.json").write_text(json.dumps(data))


def versions() -> dict[str, str]:
    found = {
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "numpy": np.__version__,
    }
    try:
        import sqlalchemy

        found["sqlalchemy"] = sqlalchemy.__version__
    except ImportError:
        pass
    return found


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        try:
            return child(sys.argv[2])
        except KeyboardInterrupt:  # the parent says so
            return 130
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the revision compared against (git rev)")
    ap.add_argument(
        "--head",
        default="WORKTREE",
        help="the revision measured: a git rev, or WORKTREE (default): this checkout's "
        "working tree, uncommitted changes included",
    )
    ap.add_argument("--n", type=int, default=1_000_000, help="fingerprints (default 1,000,000)")
    ap.add_argument("--queries", type=int, default=2000, help="queries (default 2,000)")
    ap.add_argument("--repeats", type=int, default=3, help="rounds per revision (default 3)")
    ap.add_argument(
        "--stream", type=int, default=1000, help="query-then-add documents (default 1,000)"
    )
    ap.add_argument("--texts", type=int, default=20_000, help="texts (default 20,000)")
    ap.add_argument("--seed", type=int, default=20240901)
    ap.add_argument("--json", action="store_true", help="JSON on stdout instead of the table")
    output_options(ap)
    args = ap.parse_args()
    if min(args.n, args.queries, args.repeats, args.stream, args.texts) < 1:
        ap.error("--n, --queries, --repeats, --stream and --texts must be at least 1")

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)  # through the finally clauses that clean up

    signal.signal(signal.SIGTERM, stop)
    try:
        return save_output("revisions", args, lambda: measure(args))
    except KeyboardInterrupt:
        log("interrupted (the worktrees are removed)")
        return 130
    except RuntimeError as err:  # git, or a child that failed (its traceback is above)
        log(f"Error: {err}")
        return 1


def resolve(rev: str) -> tuple[str, str]:
    """(full sha, git describe) of a revision."""
    try:
        sha = git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except RuntimeError:
        raise SystemExit(f"Error: {rev!r} is not a revision of {ROOT}") from None
    return sha, git("describe", "--always", sha)


def run_child(tree: Path, work: Path, data: Path, args: argparse.Namespace) -> dict[str, Any]:
    spec, out = work / "spec.json", work / "out.json"
    out.unlink(missing_ok=True)
    spec.write_text(
        json.dumps(
            {
                "tree": str(tree),
                "work": str(work),
                "data": str(data),
                "texts": f"{data}.texts.json",
                "out": str(out),
            }
        )
    )
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--child", str(spec)],
        cwd=tree,
        env=env,
        stdout=sys.stderr,  # anything it prints is progress, not the table
    )
    try:
        status = proc.wait()
    finally:
        if proc.poll() is None:  # interrupted: stop our child, by its pid
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    if status != 0:
        raise RuntimeError(f"the child for {tree.name} exited with status {status}")
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def measure(args: argparse.Namespace) -> int:
    started = time.monotonic()
    load = load_average()
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    base_sha, base_name = resolve(args.base)
    if args.head == "WORKTREE":
        head_sha = git("rev-parse", "HEAD")
        dirty = git("describe", "--always", "--dirty")
        changed = len(
            [
                line
                for line in git("status", "--porcelain", "--untracked-files=all").splitlines()
                if line
            ]
        )
        head_name = f"{dirty} (working tree of {ROOT}, {changed} changed or untracked files)"
    else:
        head_sha, head_name = resolve(args.head)
    sides = {"base": (base_sha, base_name), "head": (head_sha, head_name)}
    results: dict[str, list[dict[str, Any]]] = {"base": [], "head": []}
    folder = Path(tempfile.mkdtemp(prefix="simindex-revisions-"))
    trees = Trees(folder)
    try:
        tree = {
            "base": trees.add("base", base_sha, overlay=False),
            "head": trees.add("head", head_sha, overlay=args.head == "WORKTREE"),
        }
        work = {side: folder / f"work-{side}" for side in sides}
        for path in work.values():
            path.mkdir()
        data = folder / "data.npz"
        log(f"data: {args.n:,} fingerprints, {args.queries:,} queries, {args.stream:,} stream")
        make_data(data, args)
        for r in range(args.repeats):
            for side in ("base", "head"):
                log(f"round {r + 1}/{args.repeats}: {side} ({sides[side][1]})")
                t0 = time.monotonic()
                results[side].append(run_child(tree[side], work[side], data, args))
                log(f"  {time.monotonic() - t0:.1f} s")
    finally:
        trees.remove()
        shutil.rmtree(folder, ignore_errors=True)
    elapsed = time.monotonic() - started
    return report(args, sides, results, date=date, load=load, elapsed=elapsed)


def summarise(rounds: list[dict[str, Any]], name: str) -> dict[str, Any]:
    got = [r["rows"][name] for r in rounds]
    values = [g["value"] for g in got if g.get("value") is not None]
    p90s = [g["p90"] for g in got if g.get("p90") is not None]
    answers = {g.get("answers") for g in got}
    notes = sorted({g["note"] for g in got if g.get("note")})
    median = statistics.median(values) if len(values) == len(got) else None
    return {
        "median": median,
        "p90": statistics.median(p90s) if p90s and len(p90s) == len(got) else None,
        "rounds": values,
        "spread": (max(values) - min(values)) / median if median else None,
        "answers": answers.pop() if len(answers) == 1 else "varies between rounds",
        "note": "; ".join(notes),
    }


def fmt(value: float | None, unit: str) -> str:
    """Three significant figures at least, thousands separated."""
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if value >= 0.001 else f"{value:.2e}"


def report(
    args: argparse.Namespace,
    sides: dict[str, tuple[str, str]],
    results: dict[str, list[dict[str, Any]]],
    *,
    date: str,
    load: str,
    elapsed: float,
) -> int:
    meta = {side: results[side][0]["meta"] for side in sides}
    kb, kh = meta["base"]["default_k"], meta["head"]["default_k"]
    k_label = str(kb) if kb == kh else f"default (base {kb}, head {kh})"
    rows = []
    for name, label, unit, better in ROWS:
        base, head = summarise(results["base"], name), summarise(results["head"], name)
        ratio = (
            head["median"] / base["median"]
            if base["median"] and head["median"] is not None
            else None
        )
        if base["median"] is None or head["median"] is None:
            same = None
        else:
            same = base["answers"] == head["answers"] and "varies" not in str(base["answers"])
        spreads = [s["spread"] for s in (base, head) if s["spread"] is not None]
        rows.append(
            {
                "name": name,
                "label": label.format(k=k_label),
                "unit": unit,
                "better": better,
                "base": base,
                "head": head,
                "ratio": ratio,
                "spread": max(spreads) if spreads and args.repeats > 1 else None,
                "same_answers": same,
            }
        )
    ok = all(r["same_answers"] is not False or r["name"] in MAY_DIFFER for r in rows)
    info = {
        "date": date,
        "base": {"rev": sides["base"][0], "describe": sides["base"][1], **meta["base"]},
        "head": {"rev": sides["head"][0], "describe": sides["head"][1], **meta["head"]},
        "machine": {"nproc": os.cpu_count(), "cpu": cpu_model(), "load_at_start": load},
        "versions": versions(),
        "n": args.n,
        "queries": args.queries,
        "stream": args.stream,
        "repeats": args.repeats,
        "seed": args.seed,
        "seconds": round(elapsed, 1),
        "same_answers": ok,
        "rows": rows,
    }
    if args.json:
        print_json(info)
        return 0 if ok else 1
    v = info["versions"]
    print("simindex revisions: the same workload on two revisions, in one run")
    print(f"date {date}   nproc {os.cpu_count()}   {cpu_model()}   load at start {load}")
    print(
        f"Python {v['python']}   SQLite {v['sqlite']}   numpy {v['numpy']}"
        + (f"   SQLAlchemy {v['sqlalchemy']}" if "sqlalchemy" in v else "")
    )
    for side in ("base", "head"):
        m = meta[side]
        print(
            f"{side} {sides[side][1]}: default k={m['default_k']}, {m['layout']}; "
            f"k=3: {m['k3_layout']}" + ("" if m["hold"] else "; no hold=")
        )
    print(
        f"N={args.n:,} random fingerprints (1% planted at 1..{FLIPS} bits), Q={args.queries:,} "
        f"queries (half planted, 0..{FLIPS} bits flipped), {args.stream:,} query-then-add "
        f"documents; {args.texts:,} texts of {TEXT_WORDS[0]}-{TEXT_WORDS[1]} words and "
        f"{max(1, args.queries // 4):,} text queries (half 5%-edited copies); "
        f"{args.repeats} round(s) per revision, base and head taking turns"
    )
    print()
    width = max(len(r["label"]) for r in rows)
    print(
        f"{'workload':<{width}}  {'unit':<5} {'base':>10} {'head':>10} {'head/base':>9} "
        f"{'better':<9} {'base p90':>9} {'head p90':>9} {'spread':>6}  same answers"
    )
    print("-" * (width + 92))
    for r in rows:
        base, head = r["base"], r["head"]
        ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "-"
        spread = f"{r['spread']:.0%}" if r["spread"] is not None else "-"
        same = {True: "yes", False: "no", None: "-"}[r["same_answers"]]
        if r["name"] in MAY_DIFFER and r["same_answers"] is False:
            same = "no (may differ: verification)"
        notes = "; ".join(
            f"{side}: {s['note']}" for side, s in (("base", base), ("head", head)) if s["note"]
        )
        print(
            f"{r['label']:<{width}}  {r['unit']:<5} {fmt(base['median'], r['unit']):>10} "
            f"{fmt(head['median'], r['unit']):>10} {ratio:>9} "
            f"{'<1' if r['better'] == 'lower' else '>1':<9} "
            f"{fmt(base['p90'], r['unit']):>9} {fmt(head['p90'], r['unit']):>9} {spread:>6}  "
            f"{same}" + (f"  ({notes})" if notes else "")
        )
    print()
    print(
        "head/base: head's median over base's, in the row's unit; better: which side of 1 "
        "means head is faster (<1 for times, >1 for rates)."
    )
    print(
        "p50 latencies (the query rows) and the mean (query then add); p90: over the queries "
        "of a round, median over the rounds; spread: the larger (max-min)/median over the "
        "rounds of the two revisions (noise)."
    )
    differ = [
        r["label"] for r in rows if r["same_answers"] is False and r["name"] not in MAY_DIFFER
    ]
    if differ:
        print(f"same answers: no ({len(differ)} rows differ: {'; '.join(differ)})")
    else:
        print(
            "same answers: yes (every row that must: the same matches, pairs and rows on "
            "both; the text-query rows are verified by signatures and may differ)"
        )
    print(f"{elapsed:.0f} s for the whole run")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

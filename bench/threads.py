#!/usr/bin/env python
"""The threads of one process sharing one held index: 8 threads asking
single queries with hold=True beside 1 thread, in fresh processes.

    python bench/threads.py              # N=1,000,000, 8 threads x 200 queries (about 2 minutes)
    python bench/threads.py --quick      # N=50,000: a smoke run (no results file)
    python bench/threads.py --threads 4  # another count

Data: bench/holding.py's (N random fingerprints, every 100th planted, about
half with the top bit set; queries half planted within 8 bits, half
random), in a SQLite file made with the defaults (k = 8). Each row is one
fresh process (so its memory is its own): it opens the file with
SimIndex(hold=True), starts T threads at once (a barrier) and each asks its
Q queries one by one; the row gives the wall time from the barrier until
the last thread is done, the process's resident memory after minus before
opening (anonymous, RssAnon: its own; and file-backed, RssFile: the index
file's pages SQLite maps, shared with the page cache, each connection's
mapping counted apart), the reads of the index into memory (of its rows, or of the
stored snapshot: counted where the store makes them), and the bytes held.
Each configuration runs with nothing stored (the stored snapshot emptied
first: the rows are read) and with the snapshot stored (storage/stored.py).
The 1-thread row asks the same number of queries a thread: the T-thread
row's time over it is what T threads cost beside one, on a machine of
`nproc` cores. Every answer is checked against numpy brute force (exit 1
if one differs).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from common import forget_stored, log, output_options, save_output  # noqa: E402
from data import make_data  # noqa: E402

from simindex import SimIndex  # noqa: E402

K = 8


def rss() -> tuple[int, int]:
    """This process's resident memory in bytes (Linux): anonymous (its own)
    and file-backed (pages of the index file SQLite maps, which the page
    cache shares; each connection's mapping counts apart)."""
    found = {}
    with open("/proc/self/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("RssAnon", "RssFile"):
                found[name] = int(value.split()[0]) * 1024
    return found["RssAnon"], found["RssFile"]


def child(path: str, data: str, threads: int, per: int) -> int:
    """One row, in this process: prints its figures as JSON."""
    from simindex.storage import store, stored

    arrays = np.load(data)
    fps, queries = arrays["fps"], arrays["queries"][: threads * per]
    want = [sorted(np.flatnonzero(np.bitwise_count(fps ^ q) <= K).tolist()) for q in queries]
    del fps
    reads = []
    for cls, kind in ((store.Store, "rows"), (stored.StoredSnapshot, "stored")):
        original = cls.load

        def counted(
            *a: object, _original: object = original, _kind: str = kind, **kw: object
        ) -> object:
            got = _original(*a, **kw)  # type: ignore[operator]
            if got is not None:  # StoredSnapshot.load: None when nothing current is stored
                reads.append(_kind)
            return got

        setattr(cls, "load", counted)  # noqa: B010 - a method of either class
    before = rss()
    wrong: list[int] = []
    with SimIndex(path, hold=True) as index:
        start = threading.Barrier(threads + 1)

        def work(part: int) -> None:
            start.wait()
            for i in range(part * per, (part + 1) * per):
                got = sorted(int(m.key) for m in index.query(int(queries[i])))
                if got != want[i]:
                    wrong.append(i)

        pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
        for t in pool:
            t.start()
        start.wait()
        began = time.perf_counter()
        for t in pool:
            t.join()
        wall = time.perf_counter() - began
        held = index.stats()["held_in_memory_bytes"]
    after = rss()
    print(
        json.dumps(
            {
                "wall": wall,
                "anon": after[0] - before[0],
                "file": after[1] - before[1],
                "reads": len(reads),
                "read_kinds": sorted(set(reads)),
                "held": held,
                "wrong": len(wrong),
            }
        )
    )
    return 0


def measure(args: argparse.Namespace) -> int:
    n = 50_000 if args.quick else args.n
    threads, per = args.threads, args.queries
    fps, queries = make_data(n, max(threads * per, 2), seed=7)
    with tempfile.TemporaryDirectory(prefix="bench-threads-") as scratch:
        path = str(Path(scratch) / "index.db")
        data = str(Path(scratch) / "data.npz")
        np.savez(data, fps=fps, queries=queries)
        log(f"building {n:,} fingerprints")
        with SimIndex(path) as index:
            index.add_fingerprints((str(i), int(fp)) for i, fp in enumerate(fps.tolist()))
        rows = []
        for stored in (False, True):
            for count in (1, threads):
                if not stored:
                    forget_stored(path)
                log(f"{count} thread(s), {'stored' if stored else 'nothing stored'}")
                out = subprocess.run(
                    [sys.executable, __file__, "--child", path, data, str(count), str(per)],
                    capture_output=True,
                    text=True,
                    env={**os.environ, "PYTHONHASHSEED": "0"},
                )
                if out.returncode:
                    log(out.stderr)
                    return 1
                rows.append((stored, count, json.loads(out.stdout.strip().splitlines()[-1])))
    print(
        f"{n:,} fingerprints, k = {K}, SimIndex(hold=True) on SQLite; each thread asks "
        f"{per} single queries (half planted, half random); {os.cpu_count()} cores\n"
    )
    head = f"{'':16} {'threads':>7} {'wall s':>7} {'x 1 thread':>10} {'+anon MB':>8} "
    print(head + f"{'+file MB':>8} {'held MB':>8} {'reads':>5}  read")
    bad = 0
    for stored, count, r in rows:
        one = next(x for s, c, x in rows if s == stored and c == 1)
        label = "stored" if stored else "nothing stored"
        print(
            f"{label:16} {count:7d} {r['wall']:7.2f} {r['wall'] / one['wall']:10.2f} "
            f"{r['anon'] / 1e6:8.0f} {r['file'] / 1e6:8.0f} {r['held'] / 1e6:8.0f} "
            f"{r['reads']:5d}  {', '.join(r['read_kinds']) or '-'}"
        )
        bad += r["wrong"]
    print(
        "\n+anon: memory of the process's own (the snapshot held, the queries' work); "
        "+file: pages of the index file mapped (each thread's connection maps its own)"
    )
    print(
        f"x 1 thread: the wall time over the 1-thread row's (the same queries a thread; "
        f"{threads} threads ask {threads}x the queries); answers checked: "
        f"{'all equal brute force' if not bad else f'{bad} differ'}"
    )
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        path, data, threads, per = argv[1:5]
        return child(path, data, int(threads), int(per))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="N=50,000: a smoke run")
    ap.add_argument("--n", type=int, default=1_000_000, help="fingerprints (default 1,000,000)")
    ap.add_argument("--threads", type=int, default=8, help="threads (default 8)")
    ap.add_argument("--queries", type=int, default=200, help="queries a thread (default 200)")
    output_options(ap)
    args = ap.parse_args(argv)
    return save_output("threads", args, lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())

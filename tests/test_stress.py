"""Stress: many processes, and many threads, on one index at once.

Slow, so it runs with ``pytest -m slow`` (.ci/run does). The multi-process
test works for SIMINDEX_STRESS_SECONDS (default 10) after its processes have
started; the thread tests for 30% of that (at least 2 s) each.

What is checked, and why it holds while others write:

- Every process exits 0: no exception escaped (no "database is locked"), and
  no result broke an invariant (tests/stress_worker.py checks each result on
  its own, and against keys stored before the start that nobody changes).
- The logs replayed give the final content: every acknowledged add present
  with its fingerprint, every acknowledged remove gone, nothing else (see
  ``stress_worker.allowed_final`` for the rule on keys several writers share).
- Once quiet, every query equals a brute-force filter over ``items()``;
  ``SimIndex.check()`` and SQLite's ``PRAGMA integrity_check`` find nothing.
"""

from __future__ import annotations

import inspect
import json
import os
import random
import sqlite3
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import simindex
from simindex import SimIndex

from .stress_worker import (
    MemoryLog,
    Reader,
    Writer,
    acknowledged,
    allowed_final,
    final_problems,
    flip,
    make_plan,
    parse_log,
)

pytestmark = pytest.mark.slow

SECONDS = float(os.environ.get("SIMINDEX_STRESS_SECONDS", "10"))
WRITERS = 4
READERS = 4
WORKER = Path(__file__).with_name("stress_worker.py")


def child_env() -> dict[str, str]:
    """The environment for a worker: it imports the simindex this test imports."""
    env = dict(os.environ)
    here = str(Path(simindex.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
    return env


def start(args: list[str], out: Path) -> subprocess.Popen[bytes]:
    """A worker process, its output to OUT.out and OUT.err."""
    with out.with_suffix(".out").open("wb") as stdout, out.with_suffix(".err").open("wb") as stderr:
        return subprocess.Popen(
            [sys.executable, str(WORKER), *args], stdout=stdout, stderr=stderr, env=child_env()
        )


def tail(path: Path, lines: int = 15) -> str:
    text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
    return "\n".join(text.splitlines()[-lines:])


def last_json(path: Path) -> dict[str, Any]:
    for line in reversed(path.read_text(encoding="utf-8", errors="replace").splitlines()):
        if line.startswith("{"):
            return dict(json.loads(line))
    return {}


def quiet_problems(index: SimIndex, seed: int) -> list[str]:
    """With nobody writing, query() and query_many() (300+ queries: in memory)
    equal a brute-force filter over items()."""
    rng = random.Random(seed)
    content = list(index.items())
    keys = [k for k, _ in content]
    stored = np.array([fp for _, fp in content], dtype=np.uint64)
    k = index.k
    queries = [fp for _, fp in rng.sample(content, min(200, len(content)))]
    queries += [flip(rng, rng.choice(queries), rng.randint(1, k + 1)) for _ in range(200)]
    queries += [rng.getrandbits(64) for _ in range(20)]

    def brute(q: int) -> list[tuple[str, int, int]]:
        d = np.bitwise_count(stored ^ np.uint64(q))
        found = [(keys[i], int(d[i]), int(stored[i])) for i in np.nonzero(d <= k)[0]]
        return sorted(found, key=lambda m: (m[1], m[0]))

    problems = []
    many = index.query_many(queries)
    for i, q in enumerate(queries):
        want = brute(q)
        if [(m.key, m.distance, m.fingerprint) for m in many[i]] != want:
            problems.append(f"query_many, query {q:#x}: {many[i]} != brute force {want}")
        if i % 3 == 0 and [m[:3] for m in index.query(q)] != want:
            problems.append(f"query({q:#x}): {index.query(q)} != brute force {want}")
    return problems[:20]


def check_problems(index: SimIndex) -> list[str]:
    """What SimIndex.check() finds wrong."""
    report = index.check()
    return [] if report.ok else [f"check(): {p}" for p in report.problems] or ["check(): not ok"]


def integrity_problems(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        rows = db.execute("PRAGMA integrity_check").fetchall()
    db.close()
    return [] if rows == [("ok",)] else [f"PRAGMA integrity_check: {r[0]}" for r in rows]


def test_writer_and_reader_processes_on_one_index(tmp_path: Path, location: str) -> None:
    """On a SQLite file, and on a PostgreSQL server (`location` runs both)."""
    path = location
    plan = make_plan(path, seconds=SECONDS, writers=WRITERS)
    plan["go"] = str(tmp_path / "go")
    with SimIndex(path) as index:  # the fixed keys: stored first, never written again
        index.add_fingerprints(plan["fixed"].items())
    (tmp_path / "plan.json").write_text(json.dumps(plan), encoding="utf-8")

    names = [f"writer{n}" for n in range(WRITERS)] + [f"reader{n}" for n in range(READERS)]
    procs: dict[str, subprocess.Popen[bytes]] = {}
    try:
        for name in names:
            role, n = name[:6], name[6:]
            log = str(tmp_path / f"{name}.jsonl") if role == "writer" else "-"
            procs[name] = start([role, n, str(tmp_path / "plan.json"), log], tmp_path / name)
        # All open the index, then start together.
        deadline = time.monotonic() + 120
        while not all(Path(f"{plan['go']}.ready.{name}").exists() for name in names):
            if time.monotonic() > deadline or any(p.poll() is not None for p in procs.values()):
                break
            time.sleep(0.01)
        Path(plan["go"]).touch()
        began = time.monotonic()
        hung = []
        for name, proc in procs.items():
            try:
                proc.wait(timeout=max(1.0, began + SECONDS + 120 - time.monotonic()))
            except subprocess.TimeoutExpired:
                hung.append(name)
                proc.kill()
                proc.wait()
        elapsed = time.monotonic() - began
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    problems = [f"{name} did not finish within {SECONDS + 120:.0f} s: killed" for name in hung]
    for name, proc in procs.items():
        if proc.returncode != 0:
            err = tail((tmp_path / name).with_suffix(".err"))
            problems.append(f"{name} exited {proc.returncode}:\n{err}")

    logs = {
        n: parse_log((tmp_path / f"writer{n}.jsonl").read_text(encoding="utf-8").splitlines(True))
        for n in range(WRITERS)
        if (tmp_path / f"writer{n}.jsonl").exists()
    }
    acked = sum(acknowledged(ops) for ops in logs.values())
    reads = sum(
        sum(last_json((tmp_path / f"reader{n}").with_suffix(".out")).get("counts", {}).values())
        for n in range(READERS)
    )
    summary = (
        f"{len(procs)} processes ({WRITERS} writers, {READERS} readers) for {SECONDS:g} s "
        f"({elapsed:.1f} s with the end): {acked} writes acknowledged ({acked / SECONDS:.0f}/s), "
        f"{reads} reads checked ({reads / SECONDS:.0f}/s)"
    )
    print(summary)
    for name in names:
        report = last_json((tmp_path / name).with_suffix(".out"))
        extra = (
            f", {report['in_memory_batches']} in memory" if "in_memory_batches" in report else ""
        )
        print(f"  {name}: {report.get('counts')}{extra}")

    with SimIndex(path) as index:
        content = dict(index.items())
        problems += final_problems(content, allowed_final(logs), plan["fixed"])
        problems += quiet_problems(index, plan["seed"])
        problems += check_problems(index)
    if not path.startswith("postgresql"):
        problems += integrity_problems(Path(path))
    assert not problems, summary + "\n" + "\n".join(problems[:40])
    assert acked > 0 and reads > 0, summary


@pytest.mark.parametrize("where", ["file", "memory"])
@pytest.mark.filterwarnings("ignore::simindex.FullScanWarning")  # catch_warnings is per process
def test_threads_share_one_index(tmp_path: Path, where: str) -> None:
    seconds = max(2.0, SECONDS * 0.3)
    threads = 8
    location = str(tmp_path / "index.db") if where == "file" else ":memory:"
    plan = make_plan(location, seconds=seconds, writers=threads, own=60, contested=12)
    logs = {n: MemoryLog() for n in range(threads)}
    errors: list[str] = []
    workers: list[tuple[Writer, Reader]] = []
    barrier = threading.Barrier(threads)

    with SimIndex(location) as index:
        index.add_fingerprints(plan["fixed"].items())
        for text in plan["texts"]:  # load jieba now, not on the clock
            index.fingerprint(text)

        def work(n: int) -> None:
            rng = random.Random(f"thread-{n}")
            writer = Writer(index, plan, n, rng, logs[n])
            reader = Reader(index, plan, rng)
            workers.append((writer, reader))
            try:
                barrier.wait(timeout=30)
                deadline = time.monotonic() + seconds
                while time.monotonic() < deadline:
                    if rng.random() < 0.5:
                        writer.step()
                    else:
                        reader.step()
            except BaseException:  # noqa: BLE001 - reported below
                errors.append(f"thread {n}:\n{traceback.format_exc()}")

        pool = [threading.Thread(target=work, args=(n,), daemon=True) for n in range(threads)]
        for t in pool:
            t.start()
        for t in pool:
            t.join(timeout=seconds + 120)
        hung = [t.name for t in pool if t.is_alive()]
        writes = sum(sum(w.acked.values()) for w, _ in workers)
        reads = sum(sum(r.done.values()) for _, r in workers)
        summary = (
            f"{threads} threads on one {where} SimIndex for {seconds:g} s: "
            f"{writes} writes ({writes / seconds:.0f}/s), {reads} reads ({reads / seconds:.0f}/s)"
        )
        print(summary)
        assert not hung, f"{summary}: threads still running: {hung}"
        assert not errors, summary + "\n" + "\n".join(errors[:4])

        replayed = {n: parse_log(log.lines) for n, log in logs.items()}
        problems = final_problems(dict(index.items()), allowed_final(replayed), plan["fixed"])
        problems += quiet_problems(index, plan["seed"])
        problems += check_problems(index)
    if where == "file":
        problems += integrity_problems(Path(location))
    assert not problems, summary + "\n" + "\n".join(problems[:40])


LOCK_TIMEOUT = 1.0
# Well past LOCK_TIMEOUT, well short of the 30 s default: what tells "gave up
# after its timeout" from "waited the default" on a machine however loaded.
GAVE_UP_BY = 15.0


def test_a_writer_behind_a_stuck_lock_fails_after_its_timeout(tmp_path: Path) -> None:
    """Another process holds the write lock and never lets go: a SimIndex in a
    subprocess still opens and reads (they do not wait for the lock: they
    answer while it is held), and a write fails with StorageError about the
    lock once its timeout has passed (it does not hang)."""
    assert "timeout" in inspect.signature(SimIndex).parameters, "SimIndex(timeout=) is missing"
    path = tmp_path / "index.db"
    with SimIndex(path) as index:
        index.add_fingerprint("fixed-0", 7)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps({"path": str(path), "timeout": LOCK_TIMEOUT}), encoding="utf-8")
    out = tmp_path / "stuck.out"

    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    proc = start(["stuck", "0", str(plan_file), "-"], tmp_path / "stuck")
    try:
        deadline = time.monotonic() + 120
        while '"ready"' not in (out.read_text() if out.exists() else ""):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the worker did not open the index:\n{tail(out.with_suffix('.err'))}")
            time.sleep(0.01)
        try:
            proc.wait(timeout=GAVE_UP_BY)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail(
                f"the write still waited {GAVE_UP_BY:g} s after it started, "
                f"asked to give up after {LOCK_TIMEOUT:g} s"
            )
    finally:
        holder.execute("ROLLBACK")
        holder.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    ready = json.loads(out.read_text().splitlines()[0])
    report = last_json(out)
    assert proc.returncode == 0, tail(out.with_suffix(".err"))
    assert ready["reads"] == [1, 7, 1]  # answered while the lock was held (WAL)
    assert report["error"] == "StorageError" and report["storage_error"], report
    assert "lock" in report["message"].lower(), report
    assert 0.5 * LOCK_TIMEOUT <= report["elapsed"] < GAVE_UP_BY, report
    with SimIndex(path) as index:  # the lock is gone, and the failed write left nothing
        assert "stuck-key" not in index
        index.add_fingerprint("after", 1)
        assert index.get("after") == 1

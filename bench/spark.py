#!/usr/bin/env python
"""simindex.spark.near_duplicates in local mode beside SimIndex.duplicates(),
on the same fingerprints, in the same run.

    python bench/spark.py              # 200,000 fingerprints, 3 runs (a few minutes)
    python bench/spark.py --quick      # 20,000, 1 run: a smoke run (prints only)
    python bench/spark.py --n 1000000  # another size
    python bench/spark.py --n 1000000,10000000 --runs 1   # how the time grows (about 40 minutes)
    python bench/spark.py --no-save    # print only (else bench/results/spark.txt)
    python bench/spark.py --signatures # rows with signatures, verified on both sides

Rows: N random 64-bit fingerprints with the top bit set, 1% of them planted
near-duplicates of another row (0-8 bits flipped), no signatures (pairs by
distance alone, so both sides do the same work), k = 8 (the default). With
--signatures (results in bench/results/spark-signatures.txt), each row has
a 64-byte signature (random; a planted copy's its source's with 4 bytes
changed), and both sides verify the pairs at the default threshold.

- `SimIndex.duplicates()`: an in-memory index (":memory:") holding the rows
  (add_fingerprints, not timed), then duplicates(8): read and paired in
  memory (pairs.pairs_within), medians of R runs;
- `near_duplicates`: the same rows, written to a Parquet file (pyarrow, not
  timed) and read back as a cached DataFrame in local[M] (default local[2];
  shuffle partitions: N / 100,000, at least 8; driver memory 4g),
  near_duplicates(k=8, pair_on=...) and a count of its pairs, each way
  (pair_on="executors": the shuffle; "driver": collected and paired in the
  driver's memory), medians of R runs; the SparkSession's start is reported
  apart (once a run, not in the medians), and the shuffle written by one
  executors run (Spark's own stage metrics, read from its status API) per
  fingerprint.

Every way must find the same pairs (checked: the run fails otherwise).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from common import log, output_options, save_output  # noqa: E402

from simindex import SimIndex, compiled  # noqa: E402
from simindex.fingerprint import to_signed  # noqa: E402
from simindex.pairs import pairs_plan, prefix_mask, visit_flips  # noqa: E402

WAYS = ("executors", "driver")  # near_duplicates' pair_on, timed each


def rows(n: int, seed: int = 1, signatures: bool = False) -> list[tuple]:
    """(key, fingerprint) rows, or (key, fingerprint, signature) with
    ``signatures``: 64 random bytes a row, a planted copy's its source's
    with 4 bytes (at most 8 of 128 bins) changed, so it verifies at the
    default threshold (the fingerprints are the same either way)."""
    rng = random.Random(seed)
    sig_rng = random.Random(seed + 1)
    planted = n // 100
    fps = [rng.getrandbits(63) | 1 << 63 for _ in range(n - planted)]
    sigs = [sig_rng.randbytes(64) for _ in fps] if signatures else []
    for _ in range(planted):
        source = rng.randrange(len(fps))  # (as rng.choice draws it)
        fp = fps[source]
        for bit in rng.sample(range(64), rng.randrange(9)):
            fp ^= 1 << bit
        fps.append(fp)
        if signatures:
            sig = bytearray(sigs[source])
            for at in sig_rng.sample(range(64), 4):
                sig[at] ^= 1 + sig_rng.randrange(255)
            sigs.append(bytes(sig))
    if signatures:
        paired = zip(fps, sigs, strict=True)
        return [(f"doc-{i:08d}", fp, sig) for i, (fp, sig) in enumerate(paired)]
    return [(f"doc-{i:08d}", fp) for i, fp in enumerate(fps)]


def shuffle_bytes(spark: object, since: int) -> int:
    """Shuffle bytes written by the stages after stage id `since`, from Spark's status API."""
    url = spark.sparkContext.uiWebUrl  # type: ignore[attr-defined]
    app = spark.sparkContext.applicationId  # type: ignore[attr-defined]
    with urllib.request.urlopen(f"{url}/api/v1/applications/{app}/stages") as reply:
        stages = json.load(reply)
    return sum(s.get("shuffleWriteBytes", 0) for s in stages if s["stageId"] > since)


def last_stage(spark: object) -> int:
    url = spark.sparkContext.uiWebUrl  # type: ignore[attr-defined]
    app = spark.sparkContext.applicationId  # type: ignore[attr-defined]
    with urllib.request.urlopen(f"{url}/api/v1/applications/{app}/stages") as reply:
        stages = json.load(reply)
    return max((s["stageId"] for s in stages), default=-1)


def local_run(
    n: int, runs: int, k: int, folder: Path, signatures: bool = False
) -> tuple[list[float], list, Path]:
    """SimIndex.duplicates() times and pairs on n rows; the rows as Parquet in folder."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = rows(n, signatures=signatures)
    table = folder / f"rows-{n}.parquet"
    columns = {
        "key": [row[0] for row in data],
        "fingerprint": pa.array([to_signed(row[1]) for row in data], pa.int64()),
        "position": pa.array(range(n), pa.int64()),
    }
    if signatures:
        columns["signature"] = pa.array([row[2] for row in data], pa.binary())
    pq.write_table(pa.table(columns), table)
    with SimIndex(":memory:") as index:
        index.add_fingerprints(data)
        del data
        local = []
        for _ in range(runs):
            start = time.perf_counter()
            want = index.duplicates(k)
            local.append(time.perf_counter() - start)
    expected = sorted((p.key_a, p.key_b, p.distance) for p in want)
    return local, expected, table


def measure(args: argparse.Namespace) -> int:
    sizes = [20_000] if args.quick else args.n
    runs = 1 if args.quick else args.runs
    k = 8
    scratch = tempfile.TemporaryDirectory(prefix="bench-spark-")
    spark = None
    session = 0.0
    medians: list[tuple[int, float, dict[str, float]]] = []
    fast = compiled.kernels() is not None
    print(
        "compiled loops (numba): "
        + (
            "installed: duplicates() pairs with them where priced cheaper, loading them "
            "included (pairs._chosen), near_duplicates' groups always"
            if fast
            else "not installed: both pair with numpy"
        )
        + "\n"
    )
    for n in sizes:
        plan = pairs_plan(n, k)
        print(
            f"{n:,} random fingerprints ({n // 100:,} planted near-duplicates), k = {k}, "
            + (
                "signatures (64 random bytes; a copy's 4 bytes from its source's); "
                if args.signatures
                else "no signatures; "
            )
            + f"plan: {len(plan.masks)} tables, radius {plan.radius}, "
            f"{sum(len(f) - 1 for f in plan.flips)} probes a row"
        )
        local, expected, table = local_run(n, runs, k, Path(scratch.name), args.signatures)
        print(f"SimIndex.duplicates(): {len(expected):,} pairs")
        partitions = max(8, n // 100_000)
        if spark is None:
            start = time.perf_counter()
            from pyspark.sql import SparkSession

            spark = (
                SparkSession.builder.master(args.master)
                .appName("bench spark")
                .config("spark.sql.shuffle.partitions", str(partitions))
                .config("spark.ui.showConsoleProgress", "false")
                .config("spark.driver.memory", "4g")
                .getOrCreate()
            )
            spark.sparkContext.setLogLevel("ERROR")
            spark.range(1).count()
            session = time.perf_counter() - start
        spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
        from simindex.spark import near_duplicates
        from simindex.spark._pairs import HISTOGRAM_BITS, group_bits

        tasks = spark.sparkContext.defaultParallelism
        sent = 0.0
        for t, m in enumerate(plan.masks):  # the groups uniform fingerprints get
            high = min(HISTOGRAM_BITS, m.bit_count())
            uniform = np.full(1 << high, n >> high, dtype=np.int64)
            bits = group_bits(n, plan, t, tasks, uniform)
            sent += 1 + len(visit_flips(plan, t, prefix_mask(m, bits))) / 2
        print(f"shuffle partitions: {partitions}; rows sent a fingerprint (expected): {sent:.1f}")
        df = spark.read.parquet(str(table)).cache()
        df.count()
        timings: dict[str, list[float]] = {}
        shuffled = 0
        for where in WAYS:
            timings[where] = []
            for run in range(runs):
                before = last_stage(spark)
                start = time.perf_counter()
                pairs = near_duplicates(df, k=k, pair_on=where)
                got = pairs.count()
                timings[where].append(time.perf_counter() - start)
                if run == 0:
                    if where == "executors":
                        time.sleep(2)  # the status API hears of finished stages a moment later
                        shuffled = shuffle_bytes(spark, before)
                    found = sorted((r.key_a, r.key_b, r.distance) for r in pairs.collect())
                    if found != expected:
                        log(f"near_duplicates (pair_on={where}) and SimIndex.duplicates() differ")
                        return 1
                if got != len(expected):
                    log(f"near_duplicates found {got} pairs, not {len(expected)}")
                    return 1
        df.unpersist()
        table.unlink()
        s = statistics.median(local)
        d = {where: statistics.median(times) for where, times in timings.items()}
        medians.append((n, s, d))
        print(f"same pairs: yes ({len(expected):,}), both ways\n")
        print(f"{'':44} {'median s':>9} {'runs':>5} {'fps/s':>10}")
        print(f"{'SimIndex.duplicates() in memory':44} {s:9.2f} {runs:5d} {n / s:10,.0f}")
        for where in WAYS:
            name = f"near_duplicates, {args.master}, pair_on={where}"
            print(f"{name:44} {d[where]:9.2f} {runs:5d} {n / d[where]:10,.0f}")
        print()
        for where in WAYS:
            print(
                f"ratio: near_duplicates(pair_on={where}) takes {d[where] / s:.1f}x "
                "SimIndex.duplicates() on this machine"
            )
        print(
            f"shuffle written by one near_duplicates(pair_on=executors) run: "
            f"{shuffled / 1e6:,.0f} MB, {shuffled / n:,.0f} bytes a fingerprint"
        )
        print(
            f"runs (s): SimIndex {[round(x, 2) for x in local]}, "
            + ", ".join(f"{w} {[round(x, 2) for x in timings[w]]}" for w in WAYS)
            + "\n"
        )
    if spark is not None:
        spark.stop()
    scratch.cleanup()
    print(f"SparkSession start (apart, once): {session:.1f} s")
    for (n0, s0, d0), (n1, s1, d1) in zip(medians, medians[1:], strict=False):
        print(
            f"from {n0:,} to {n1:,} ({n1 / n0:.0f}x the rows): SimIndex.duplicates() "
            f"{s1 / s0:.1f}x the time, "
            + ", ".join(f"pair_on={w} {d1[w] / d0[w]:.1f}x" for w in WAYS)
        )
    return 0


def sizes(text: str) -> list[int]:
    try:
        values = [int(x.replace("_", "")) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"sizes are whole numbers, comma-separated: {text!r}"
        ) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"sizes are at least 1: {text!r}")
    return values


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="20,000 fingerprints, 1 run: a smoke run")
    ap.add_argument(
        "--n",
        type=sizes,
        default=[200_000],
        help="fingerprints, or sizes comma-separated, each measured in turn (default 200,000)",
    )
    ap.add_argument("--runs", type=int, default=3, help="runs of each (default 3)")
    ap.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    ap.add_argument(
        "--signatures",
        action="store_true",
        help="rows with signatures, verified on both sides (results: spark-signatures.txt)",
    )
    output_options(ap)
    args = ap.parse_args(argv)
    name = "spark-signatures" if args.signatures else "spark"
    return save_output(name, args, lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())

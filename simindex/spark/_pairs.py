"""Every near-duplicate pair of a DataFrame of fingerprints: in the driver's
memory while they fit there (see "On the driver" below), else by a
block-keyed shuffle.

The plan is the library's own (``pairs.pairs_plan``, priced for one thread,
which the driver computes once: ``SimIndex.duplicates`` prices a table's
probes shared by its threads, so on a machine of several CPUs its plan may
differ from this one; both are exact): tables of one block each, every table looked up with each
value within ``radius`` bits of a row's (the plan's flips), a pair kept only
by the first table whose bits it agrees on within the radius
(``pairs.pairs_within``'s rule). So every pair within k is found, once.

The shuffle is priced by the rows it sends, not the pairs it finds. A table's
rows are cut into groups by the highest few bits of its block (group_bits:
the fewest that keep the largest group, visitors included, within
GROUP_ROWS rows, reckoned from a count of the rows of each value of the
block's highest 16 bits, so fingerprints whose high bits are skewed get more
group bits, and that make at least four groups a task), and each group is
paired in one task, in memory,
by ``pairs.group_pairs``. A row goes to its own group and *visits* the groups
whose bits are within the radius of its own (``pairs.visit_flips``), only
those whose differing bits' highest is clear in its own (so two groups meet
once); in a group, home rows pair within the radius on the block's other
bits, a visitor h bits away within radius - h. At k = 8 on a million rows a
row is sent 7.5 times (2 group bits a table, on two cores; 34.5 at ten
million) where one row a probe sent about 360 (bench/results/spark.txt),
and the candidates, tens of millions, never leave the task that finds them.

On the driver: a corpus whose fingerprints and pairs fit in the driver's
memory (about 70 bytes a row there, 40 a pair; "auto": up to DRIVER_ROWS
rows while a sample prices the pairs at most DRIVER_PAIRS) is paired there
instead: its (row, fingerprint) columns are collected, each Arrow
batch as two byte strings, paired by pairs.pairs_within as SimIndex's
duplicates() pairs them (compiled where numba is installed and that is
priced cheaper), and the
candidates go back as a DataFrame to the same verification. It sends 16
bytes a row once where the shuffle sends 7.5 rows a fingerprint at a
million and 34.5 at ten million (bench/results/spark.txt has both ways).
The shuffle remains for corpora past one machine's memory, and for those
whose copies make more pairs than the driver should hold.

Skew: many rows with one block value (boilerplate, templates, copies) make
one bucket, and a bucket's pairs would all land on one task. A bucket of more
than ``bucket_limit`` rows is *big*: its rows leave the groups and go to
a salted one of their own. For a big bucket B of c rows, its neighbourhood
N(B) is every row whose value is within the radius of B's (B itself, and the
buckets its probes reach: found by a broadcast join on those values). B is
cut into ceil(c / limit) sub-buckets and N(B) into ceil(|N(B)| / limit), each
row by a hash of its row number; every sub-bucket of B is joined with every
sub-bucket of N(B) (each row is copied once per sub-bucket on the other
side), so no task compares more than about limit x limit rows. A pair of two
big buckets is compared by the one with the smaller value. At most _MAX_BIG
buckets are big (their list and neighbourhoods go through the driver): past
that the limit rises to the size of the _MAX_BIG-th largest.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import reduce
from math import ceil
from typing import TYPE_CHECKING, Any

from simindex.blocks import DEFAULT_K, MAX_INDEX_K, check_k
from simindex.errors import InvalidArgumentError
from simindex.fingerprint import to_signed, to_unsigned
from simindex.pairs import group_pairs, pairs_plan, pairs_within, prefix_mask, visit_flips
from simindex.signature import (
    DEFAULT_THRESHOLD,
    NBYTES,
    check_threshold,
    is_signature,
    keys_of,
    meets,
    similarity,
    threshold_for,
)
from simindex.spark._fingerprints import check_columns, check_order
from simindex.tables import Plan

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame

PAIR_ON = ("auto", "driver", "executors")
# "auto" pairs on the driver up to this many rows: about 70 bytes a row
# there (the rows and fingerprints collected, 16 bytes, and the compiled
# pairing's 41 beside them: bench/results/growth.txt), 2.3 GB at 2**25;
# without numba on the driver a quarter of it (numpy's pairing holds
# 130-180 bytes a row).
DRIVER_ROWS = 1 << 25
# ... and while a sample says the pairs within k, which the driver holds
# (20 bytes each, twice), are at most this many: a corpus of many copies of
# a few texts has pairs in the square of its copies, and goes to the
# shuffle, which splits big buckets across tasks.
DRIVER_PAIRS = 1 << 25
SAMPLE_ROWS = 1 << 17  # rows of the sample that estimates the pairs
# Candidate pairs found on the driver up to this many are broadcast to the
# rows for their keys and signatures (_verified), so the rows are not
# shuffled: about 25 bytes a pair in the broadcast (100 MB at 2**22).
BROADCAST_PAIRS = 1 << 22
BUCKET_LIMIT = 2048  # rows a bucket may have before it is split (see the module's docstring)
_MAX_BIG = 1000  # big buckets at most (their list is built on the driver)
GROUP_ROWS = 1 << 22  # rows a group is expected to hold at most (see group_bits)
HISTOGRAM_BITS = 16  # the highest bits of each block counted to size the groups
SCHEMA = "key_a string, key_b string, distance int, similarity double"


def near_duplicates(
    fps: DataFrame,
    *,
    k: int | None = None,
    threshold: float | None = None,
    bucket_limit: int | None = None,
    blocks: int | None = None,
    pair_on: str = "auto",
) -> DataFrame:
    """Every pair of rows within Hamming distance k (default DEFAULT_K, up to
    15) whose signatures, where both rows have one, are at least
    ``threshold`` similar (default DEFAULT_THRESHOLD; 0: distance alone), as
    (key_a, key_b, distance int, similarity double): exactly the pairs
    ``SimIndex.duplicates()`` gives for the same rows, key_a < key_b, the
    similarity NULL where a side has no signature. With a threshold above
    0, also the pairs at any distance whose signatures meet
    (signature.meets: short texts one unit apart, longer texts with one band
    of the sketch equal), found by their keys (signature.keys_of) and
    verified at the threshold alike.

    ``fps``: (key, fingerprint long[, signature binary][, position long]), as
    ``fingerprints`` makes it (keys unique; rows with a NULL fingerprint are
    left out). ``position`` numbers the rows when present (unique), else
    they are numbered here. ``bucket_limit`` (default BUCKET_LIMIT): rows a
    block bucket may have before it is split across tasks (see the module's
    docstring). ``blocks`` forces the plan's number of blocks, as
    ``pairs_plan``'s does (tests: a probed plan at a small n). ``pair_on``:
    where the fingerprints are paired (see the module's text, "On the
    driver"): ``"driver"``, collected there and paired in memory
    (pairs.pairs_within, compiled where numba is installed and priced
    cheaper); ``"executors"``,
    by the shuffle; ``"auto"`` (the default), the driver up to DRIVER_ROWS
    rows (a quarter of it without numba there) while a sample of
    SAMPLE_ROWS rows prices the pairs within k at most DRIVER_PAIRS. The
    same pairs either way. Runs its jobs
    when called (a count, the big buckets, the pairs) and returns the pairs
    checkpointed; ``fps`` is read several times, so cache it if it is
    costly to compute.
    """
    distance = DEFAULT_K if k is None else check_k(k, limit=MAX_INDEX_K)
    at = DEFAULT_THRESHOLD if threshold is None else check_threshold(threshold)
    limit = BUCKET_LIMIT if bucket_limit is None else bucket_limit
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidArgumentError(f"bucket_limit is a whole number of at least 1, not {limit!r}")
    if blocks is not None and (
        isinstance(blocks, bool) or not isinstance(blocks, int) or not 1 <= blocks <= 16
    ):
        raise InvalidArgumentError(f"blocks is a whole number from 1 to 16, not {blocks!r}")
    if pair_on not in PAIR_ON:
        raise InvalidArgumentError(f"pair_on is one of {', '.join(PAIR_ON)}, not {pair_on!r}")
    check_columns(fps, "key", "fingerprint")
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    if "position" in fps.columns:
        check_order(fps.where(F.col("fingerprint").isNotNull()), "position")
    rows = _numbered(fps).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        n = rows.count()
        plan = pairs_plan(max(n, 1), distance, blocks=blocks)
        driver = pair_on == "driver" or (
            pair_on == "auto" and _fits_driver(rows.select("row", "fp"), n, distance)
        )
        if driver:
            found = _driver_pairs(rows.select("row", "fp"), distance, plan if blocks else None)
        else:
            found = _pair_rows(rows.select("row", "fp"), plan, distance, limit, n)
        found = found.select("row_a", "row_b", "distance", F.lit(False).alias("beyond"))
        if at > 0 and "signature" in fps.columns:  # signatures that meet, at any distance
            found = found.unionByName(_keyed_pairs(rows, distance))
        few = False
        if driver:  # the candidates counted: few are broadcast to the rows (_verified)
            found = found.localCheckpoint(eager=True)
            few = found.count() <= BROADCAST_PAIRS
        return _verified(found, rows, at, broadcast=few).localCheckpoint(eager=True)
    finally:
        rows.unpersist()


def _fits_driver(slim: DataFrame, n: int, k: int) -> bool:
    """Whether "auto" pairs on the driver (see DRIVER_ROWS, DRIVER_PAIRS): a
    uniform sample of about SAMPLE_ROWS rows (all of them, up to that) is
    collected and its pairs within k counted, scaled by the square of n over
    its rows (a pair is in the sample when both its rows are). The pairs
    are listed only once the rows sharing a table's block exactly (copies,
    templates) are priced within an eighth of DRIVER_PAIRS, so a sample of
    copies is not paired to find out that it has too many pairs."""
    if n > DRIVER_ROWS >> 2:  # numba's import is paid only where it decides
        from simindex import compiled

        if compiled.kernels() is None or n > DRIVER_ROWS:
            return False
    if n <= 1:
        return True
    sample = slim if n <= SAMPLE_ROWS else slim.sample(fraction=SAMPLE_ROWS / n, seed=n)
    _, fps = _collected(sample)
    if len(fps) < 2:
        return True
    import numpy as np

    scale = (n / len(fps)) ** 2
    for mask in pairs_plan(len(fps), k).masks:
        _, counts = np.unique(fps & np.uint64(mask), return_counts=True)
        shared = int((counts * (counts - 1) // 2).sum())
        if shared * scale > DRIVER_PAIRS / 8:
            return False
    return len(pairs_within(fps, k)[0]) * scale <= DRIVER_PAIRS


def _collected(slim: DataFrame) -> tuple[Any, Any]:
    """(rows int64, fps uint64) of (row, fp) collected on the driver (each
    Arrow batch of a task as two byte strings, so a row costs no Python object)."""
    import numpy as np

    parts: list[tuple[bytes, bytes]] = [
        (r["rows"], r["fps"])
        for r in slim.mapInArrow(_as_bytes, "rows binary, fps binary").toLocalIterator()
    ]
    empty = [(b"", b"")]
    rows = np.concatenate([np.frombuffer(r, np.int64) for r, _ in parts or empty])
    fps = np.concatenate([np.frombuffer(f, np.uint64) for _, f in parts or empty])
    return rows, fps


def _driver_pairs(slim: DataFrame, k: int, plan: Plan | None) -> DataFrame:
    """(row_a, row_b, distance) of every pair within k, each once: the rows
    and fingerprints collected on the driver (_collected) and paired in
    memory by pairs.pairs_within (its own plan for the count, unless ``plan``)."""
    import numpy as np
    import pyarrow as pa

    rows, fps = _collected(slim)
    a, b, d = pairs_within(fps, k, plan=plan)
    found = pa.table(
        {
            "row_a": pa.array(rows[a], pa.int64()),
            "row_b": pa.array(rows[b], pa.int64()),
            "distance": pa.array(d.astype(np.int32), pa.int32()),
        }
    )
    return slim.sparkSession.createDataFrame(found)


def _as_bytes(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(rows, fps): an Arrow batch of (row, fp) as two byte strings of int64s."""
    import numpy as np
    import pyarrow as pa

    for batch in batches:
        rows = batch.column("row").to_numpy(zero_copy_only=False).astype(np.int64)
        fps = batch.column("fp").to_numpy(zero_copy_only=False).astype(np.int64)
        yield pa.RecordBatch.from_arrays(
            [pa.array([rows.tobytes()], pa.binary()), pa.array([fps.tobytes()], pa.binary())],
            names=["rows", "fps"],
        )


def _numbered(fps: DataFrame) -> DataFrame:
    """(row, key, fp, signature) of the rows with a fingerprint."""
    from pyspark.sql import functions as F

    signature = F.col("signature") if "signature" in fps.columns else F.lit(None)
    row = F.col("position") if "position" in fps.columns else F.monotonically_increasing_id()
    return fps.where(F.col("fingerprint").isNotNull()).select(
        row.cast("long").alias("row"),
        F.col("key").cast("string").alias("key"),
        F.col("fingerprint").cast("long").alias("fp"),
        signature.cast("binary").alias("signature"),
    )


def _lit(value: int) -> Column:
    """An unsigned 64-bit value as Spark's signed long literal."""
    from pyspark.sql import functions as F

    return F.lit(to_signed(value)).cast("long")


def _pair_rows(slim: DataFrame, plan: Plan, k: int, limit: int, n: int) -> DataFrame:
    """(row_a, row_b, distance) of every pair within k, each once."""
    from pyspark.sql import functions as F

    spark = slim.sparkSession
    tables = reduce(
        lambda x, y: x.unionByName(y),
        [
            slim.select(
                F.lit(t).alias("t"), (F.col("fp").bitwiseAND(_lit(mask))).alias("v"), "row", "fp"
            )
            for t, mask in enumerate(plan.masks)
        ],
    )
    counts = (
        tables.groupBy("t", "v")
        .count()
        .where(F.col("count") > limit)
        .orderBy(F.col("count").desc())
        .limit(_MAX_BIG + 1)
        .collect()
    )
    if len(counts) > _MAX_BIG:
        limit = counts[_MAX_BIG]["count"]
        counts = [c for c in counts if c["count"] > limit]
    big = [(int(c["t"]), int(c["v"])) for c in counts]
    small = tables
    if big:
        big_df = spark.createDataFrame(big, "t int, v long")
        small = tables.join(F.broadcast(big_df), ["t", "v"], "left_anti")
    tasks = spark.sparkContext.defaultParallelism
    found = _grouped_pairs(small, plan, k, n, tasks, _histograms(small, plan))
    if not big:
        return found
    dist = F.bit_count(F.col("fp_a").bitwiseXOR(F.col("fp_b")))
    big_found = (
        _big_pairs(tables, plan, big, [c["count"] for c in counts], limit)
        .withColumn("distance", dist.cast("int"))
        .where((F.col("distance") <= k) & _first_table(plan))
        .select("row_a", "row_b", "distance")
    )
    return found.unionByName(big_found)


def group_bits(n: int, plan: Plan, t: int, tasks: int, counts: Any = None) -> int:
    """The bits of table t's groups (see the module's docstring): the fewest
    (the fewest rows sent) that keep a group within GROUP_ROWS rows and make
    at least four groups a task. A group's rows are reckoned from ``counts``
    when given (the rows of each value of the block's highest
    min(HISTOGRAM_BITS, width) bits, a numpy array: the largest group,
    visitors included), else as if the fingerprints were uniform; past the
    histogram's bits, uniform from there."""
    mask = plan.masks[t]
    width = mask.bit_count()
    high = -1 if counts is None else _log2(len(counts))
    scale = 1.0  # past the histogram: its largest group over a uniform one's rows
    if counts is not None and high < width:
        uniform = n * (1 + len(visit_flips(plan, t, prefix_mask(mask, high))) / 2) / 2**high
        scale = largest_group(counts, plan, t, high) / max(uniform, 1.0)
    for bits in range(width + 1):
        if len(plan.masks) << bits < 4 * tasks:  # too few groups
            continue
        if bits <= high:
            if largest_group(counts, plan, t, bits) <= GROUP_ROWS:
                return bits
            continue
        copies = 1 + len(visit_flips(plan, t, prefix_mask(mask, bits))) / 2
        if scale * n * copies / 2**bits <= GROUP_ROWS:
            return bits
    return width


def _log2(size: int) -> int:
    return size.bit_length() - 1


def _low(mask: int) -> int:
    """The position of a mask's lowest bit (0 for no bits)."""
    return (mask & -mask).bit_length() - 1 if mask else 0


def largest_group(counts: Any, plan: Plan, t: int, bits: int) -> int:
    """The rows of table t's largest group of ``bits`` bits (its home rows and
    its visitors), from ``counts`` (see group_bits)."""
    import numpy as np

    high = _log2(len(counts))
    home = np.asarray(counts, dtype=np.int64).reshape(1 << bits, 1 << (high - bits)).sum(axis=1)
    prefix = prefix_mask(plan.masks[t], bits)
    shift = _low(prefix)
    groups = np.arange(1 << bits)
    rows = home.copy()
    for flip in visit_flips(plan, t, prefix):
        f = flip >> shift
        senders = groups ^ f
        sends = (senders & _top(f)) == 0  # the side whose prefix has the flip's top bit clear
        rows[groups[sends]] += home[senders[sends]]
    return int(rows.max()) if len(rows) else 0


def _top(flip: int) -> int:
    return 1 << (flip.bit_length() - 1)


def _histograms(small: DataFrame, plan: Plan) -> list[Any]:
    """Per table, the rows of each value of its block's highest
    min(HISTOGRAM_BITS, width) bits (numpy arrays; one job, a few counts a
    value reach the driver)."""
    import numpy as np
    from pyspark.sql import functions as F

    parts = []
    for t, mask in enumerate(plan.masks):
        top = prefix_mask(mask, min(HISTOGRAM_BITS, mask.bit_count()))
        shift = _low(top)
        value = F.shiftrightunsigned(F.col("v").bitwiseAND(_lit(top)), shift)
        parts.append(small.where(F.col("t") == t).select("t", value.alias("p")))
    counted = reduce(lambda x, y: x.unionByName(y), parts).groupBy("t", "p").count().collect()
    counts = [np.zeros(1 << min(HISTOGRAM_BITS, m.bit_count()), dtype=np.int64) for m in plan.masks]
    for row in counted:
        counts[int(row["t"])][int(row["p"])] = int(row["count"])
    return counts


def _grouped_pairs(
    small: DataFrame, plan: Plan, k: int, n: int, tasks: int, counts: list[Any]
) -> DataFrame:
    """(row_a, row_b, distance) of every pair within k of the rows of small
    buckets: each row sent to its group of every table and to the groups it
    visits, each group paired in one task (pairs.group_pairs)."""
    from pyspark.sql import functions as F

    prefixes = [
        prefix_mask(m, group_bits(n, plan, t, tasks, counts[t])) for t, m in enumerate(plan.masks)
    ]
    for prefix in prefixes:  # a group's value must fit beside the table's number (below)
        shift = _low(prefix)
        if (prefix >> shift).bit_length() > 32:
            raise ValueError(f"a group of more than 32 bits ({prefix:#x}) cannot be numbered")
    parts = []
    for t, prefix in enumerate(prefixes):
        shift = _low(prefix)
        rows = small.where(F.col("t") == t)

        def group_of(v: Column, t: int = t, shift: int = shift) -> Column:
            return F.shiftrightunsigned(v, shift).bitwiseOR(F.lit(t << 32).cast("long"))

        own = F.col("v").bitwiseAND(_lit(prefix))
        parts.append(rows.select(group_of(own).alias("g"), "row", "fp"))
        flips = visit_flips(plan, t, prefix)
        if flips:
            visits = F.array(
                *[F.struct(_lit(f).alias("flip"), _lit(_top(f)).alias("top")) for f in flips]
            )
            parts.append(
                rows.select("v", "row", "fp", F.inline(visits))
                .where(F.col("v").bitwiseAND(F.col("top")) == 0)
                .select(group_of(own.bitwiseXOR(F.col("flip"))).alias("g"), "row", "fp")
            )
    sent = reduce(lambda x, y: x.unionByName(y), parts)
    return sent.groupBy("g").applyInArrow(
        _pair_group(plan, k, prefixes), "row_a long, row_b long, distance int"
    )


def _pair_group(plan: Plan, k: int, prefixes: list[int]) -> Any:
    def pair(key: tuple[Any, ...], table: pa.Table) -> pa.Table:
        import numpy as np
        import pyarrow as pa

        g = int(key[0].as_py())
        t = g >> 32
        prefix = prefixes[t]
        shift = _low(prefix)
        rows = table.column("row").to_numpy()
        fps = table.column("fp").to_numpy().view(np.uint64)
        a, b, d = group_pairs(fps, k, plan, t, prefix, (g & 0xFFFF_FFFF) << shift)
        return pa.table(
            {
                "row_a": pa.array(rows[a], pa.int64()),
                "row_b": pa.array(rows[b], pa.int64()),
                "distance": pa.array(d, pa.int32()),
            }
        )

    return pair


def _big_pairs(
    tables: DataFrame, plan: Plan, big: list[tuple[int, int]], sizes: list[int], limit: int
) -> DataFrame:
    """(t, row_a, fp_a, row_b, fp_b) of every pair with a row in a big bucket
    found through its table: each big bucket's sub-buckets joined with its
    neighbourhood's (see the module's docstring)."""
    from pyspark.sql import functions as F

    spark = tables.sparkSession
    near = [(t, to_signed(to_unsigned(v) ^ flip), v) for t, v in big for flip in plan.flips[t]]
    near_df = spark.createDataFrame(near, "t int, v long, vb long")
    hood = tables.join(F.broadcast(near_df), ["t", "v"])  # t, v, row, fp, vb
    hood_sizes = {
        (int(r["t"]), int(r["vb"])): int(r["count"])
        for r in hood.groupBy("t", "vb").count().collect()
    }
    split = [
        (t, v, ceil(c / limit), ceil(hood_sizes[t, v] / limit))
        for (t, v), c in zip(big, sizes, strict=True)
    ]
    split_df = F.broadcast(spark.createDataFrame(split, "t int, vb long, sa int, sb int"))
    big_df = F.broadcast(
        spark.createDataFrame(big, "t int, v long").withColumn("b_big", F.lit(True))
    )
    left = (
        tables.withColumnRenamed("v", "vb")
        .join(split_df, ["t", "vb"])
        .select(
            "t",
            "vb",
            F.pmod(F.xxhash64("row"), F.col("sa")).cast("int").alias("i"),
            F.explode(F.sequence(F.lit(0), F.col("sb") - 1)).alias("j"),
            F.col("row").alias("row_a"),
            F.col("fp").alias("fp_a"),
        )
    )
    right = (
        hood.join(split_df, ["t", "vb"])
        .join(big_df, ["t", "v"], "left")
        .select(
            "t",
            "vb",
            F.explode(F.sequence(F.lit(0), F.col("sa") - 1)).alias("i"),
            F.pmod(F.xxhash64("row"), F.col("sb")).cast("int").alias("j"),
            F.col("row").alias("row_b"),
            F.col("fp").alias("fp_b"),
            F.col("v").alias("v_b"),
            "b_big",
        )
    )
    same = F.col("v_b") == F.col("vb")
    owned = (F.col("v_b") != F.col("vb")) & (F.col("b_big").isNull() | (F.col("v_b") > F.col("vb")))
    return (
        left.join(right.hint("merge"), ["t", "vb", "i", "j"])
        .where((same & (F.col("row_a") < F.col("row_b"))) | owned)
        .select("t", "row_a", "fp_a", "row_b", "fp_b")
    )


def _first_table(plan: Plan) -> Column:
    """Whether table t is the first whose bits the pair agrees on within the radius."""
    from pyspark.sql import functions as F

    xor = F.col("fp_a").bitwiseXOR(F.col("fp_b"))
    rule: Any = None
    for t in range(1, len(plan.masks)):
        later = reduce(
            lambda x, y: x & y,
            [F.bit_count(xor.bitwiseAND(_lit(m))) > plan.radius for m in plan.masks[:t]],
        )
        rule = F.when(F.col("t") == t, later) if rule is None else rule.when(F.col("t") == t, later)
    return F.lit(True) if rule is None else rule.otherwise(F.lit(True))


def _verified(
    found: DataFrame, rows: DataFrame, threshold: float, *, broadcast: bool = False
) -> DataFrame:
    """The pairs with their keys, similarity and threshold applied (see
    near_duplicates). The pairs meet their rows' keys and signatures by
    sort-merge joins (every row shuffled, twice), or with ``broadcast`` (at
    most BROADCAST_PAIRS pairs) by broadcasting the pairs to the rows, which
    are scanned where they are and not shuffled: each side's keys and
    signatures join the pairs, and the two halves, a row a pair, are joined."""
    from pyspark.sql import functions as F

    side_a = rows.select(
        F.col("row").alias("row_a"), F.col("key").alias("ka"), F.col("signature").alias("sig_a")
    )
    side_b = rows.select(
        F.col("row").alias("row_b"), F.col("key").alias("kb"), F.col("signature").alias("sig_b")
    )
    if broadcast:  # each side's rows meet the pairs where they are; the two halves, pair-sized
        half_a = side_a.join(F.broadcast(found), "row_a")
        half_b = side_b.join(F.broadcast(found.select("row_a", "row_b")), "row_b")
        keyed = half_a.join(half_b, ["row_a", "row_b"])
    else:
        keyed = found.join(side_a.hint("merge"), "row_a").join(side_b.hint("merge"), "row_b")
    ordered = keyed.select(
        F.least("ka", "kb").alias("key_a"),
        F.greatest("ka", "kb").alias("key_b"),
        "distance",
        "sig_a",
        "sig_b",
        "beyond",
    )
    return ordered.mapInArrow(_similar(threshold), SCHEMA)


def _keyed_pairs(rows: DataFrame, k: int) -> DataFrame:
    """(row_a, row_b, distance, beyond) of the rows farther apart than k
    that share a key (signature.keys_of: a short text's set keys, a longer
    text's band keys): the candidates at any distance, which _similar judges
    by the rule (signature.meets). The rows are joined as groups of one key
    and fingerprint (_keyed_candidates), so a key thousands of equal texts
    share costs one group, not the square of its rows."""
    from pyspark.sql import functions as F

    pairs = (
        _keyed_candidates(rows, k)
        .select(F.explode("rows_a").alias("x"), "rows_b", "distance")
        .select("x", F.explode("rows_b").alias("y"), "distance")
    )
    return (
        pairs.select(
            F.least("x", "y").alias("row_a"), F.greatest("x", "y").alias("row_b"), "distance"
        )
        .distinct()
        .select("row_a", "row_b", "distance", F.lit(True).alias("beyond"))
    )


def _keyed_candidates(rows: DataFrame, k: int) -> DataFrame:
    """(rows_a, rows_b, distance): the groups of rows sharing a key whose
    fingerprints are farther apart than k. A group is the rows of one key
    and one fingerprint (rows of one fingerprint are never beyond k of each
    other), so the join grows with the distinct fingerprints of a key."""
    from pyspark.sql import functions as F

    with_signature = rows.where(F.length("signature") >= NBYTES).select("row", "fp", "signature")
    keyed = with_signature.mapInArrow(_explode_keys, "sig_key long, row long, fp long")
    groups = keyed.groupBy("sig_key", "fp").agg(F.collect_list("row").alias("rows"))
    a = groups.select("sig_key", F.col("fp").alias("fp_a"), F.col("rows").alias("rows_a"))
    b = groups.select("sig_key", F.col("fp").alias("fp_b"), F.col("rows").alias("rows_b"))
    distance = F.bit_count(F.col("fp_a").bitwiseXOR(F.col("fp_b"))).cast("int")
    return (
        a.join(b, "sig_key")
        .where(F.col("fp_a") < F.col("fp_b"))
        .select("rows_a", "rows_b", distance.alias("distance"))
        .where(F.col("distance") > k)
    )


def _explode_keys(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """(sig_key, row, fp): a row once for each of its keys (signature.keys_of)."""
    import numpy as np
    import pyarrow as pa

    for batch in batches:
        signatures = [s if is_signature(s) else None for s in batch.column("signature").to_pylist()]
        keys, owner = keys_of(signatures)
        rows = np.asarray(batch.column("row").to_numpy(zero_copy_only=False))[owner]
        fps = np.asarray(batch.column("fp").to_numpy(zero_copy_only=False))[owner]
        yield pa.RecordBatch.from_arrays(
            [pa.array(keys, pa.int64()), pa.array(rows, pa.int64()), pa.array(fps, pa.int64())],
            names=["sig_key", "row", "fp"],
        )


def _similar(threshold: float) -> Any:
    def compute(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        schema = pa.schema(
            [
                ("key_a", pa.string()),
                ("key_b", pa.string()),
                ("distance", pa.int32()),
                ("similarity", pa.float64()),
            ]
        )
        for batch in batches:
            keep: list[bool] = []
            estimates: list[float | None] = []
            sigs = zip(
                batch.column("sig_a").to_pylist(),
                batch.column("sig_b").to_pylist(),
                batch.column("beyond").to_pylist(),
                strict=True,
            )
            for sig_a, sig_b, beyond in sigs:
                estimate = None if sig_a is None or sig_b is None else similarity(sig_a, sig_b)
                if beyond and meets(sig_a, sig_b) is None:
                    estimate = None  # (dropped: a key shared by chance)
                    keep.append(False)
                else:
                    needed = threshold_for(threshold, sig_a, sig_b)
                    keep.append(estimate is None or estimate >= needed)
                estimates.append(estimate)
            mask = pa.array(keep, pa.bool_())
            out = pa.RecordBatch.from_arrays(
                [
                    batch.column("key_a"),
                    batch.column("key_b"),
                    batch.column("distance"),
                    pa.array(estimates, pa.float64()),
                ],
                schema=schema,
            )
            yield out.filter(mask)

    return compute

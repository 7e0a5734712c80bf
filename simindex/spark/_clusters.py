"""Clusters of near-duplicate pairs by the leader rule, with DataFrame operations.

``SimIndex.clusters()`` (pairs.leader_clusters) walks the documents in add
order: each joins the cluster of the first *leader* it is paired with, else
leads one of its own. So a document is a leader exactly when none of its
earlier neighbours is a leader, and a follower's canonical document is its
smallest leader neighbour (it has an earlier one, and any later one comes
after it). The leaders are the greedy independent set in that order: no
fixed number of rounds decides it in general (a chain of versions, each
a copy of the one before, decides one link a round), so it is computed in
rounds that each settle what the last one allows, on the driver once small:

- at the start every document without an earlier neighbour is a leader;
- each round, every undecided document with a leader among its earlier
  neighbours becomes a follower, and every one whose earlier neighbours are
  all followers becomes a leader (one join and one aggregation over the
  links still open, those into an undecided document);
- once at most ``local_limit`` links are open, they are collected and the
  rest is decided on the driver, in order (the undecided documents' own
  graph: a decided follower changes nothing, a decided leader is known);
- after ``max_rounds`` rounds with more links than that still open, it stops
  with an error saying so (raise either).

Each round's state is checkpointed (``checkpoint`` when the SparkContext has
a checkpoint directory, else ``localCheckpoint``), so lineage stays one round
long however many rounds run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simindex.errors import InvalidArgumentError
from simindex.spark._fingerprints import check_columns, check_order

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

LOCAL_LIMIT = 2_000_000  # open links decided on the driver (about 100 MB of Python ints)
MAX_ROUNDS = 100
_UNDECIDED, _LEADER, _FOLLOWER = 0, 1, 2
SCHEMA = "key string, canonical string, distance int"


def clusters(
    pairs: DataFrame,
    fps: DataFrame,
    *,
    order_col: str = "position",
    local_limit: int = LOCAL_LIMIT,
    max_rounds: int = MAX_ROUNDS,
) -> DataFrame:
    """(key, canonical, distance) for every document in a cluster of two or
    more, by the rule of ``SimIndex.clusters()``: in the order of
    ``order_col`` (the ``position`` ``fingerprints`` gives, standing for an
    index's add order), each document joins the cluster of the first
    canonical document it is paired with, else starts its own; so every
    member is a near-duplicate of its canonical one (no chains). The
    canonical document's own row has itself as canonical and distance 0;
    a member's, its distance to the canonical one.

    ``pairs``: (key_a, key_b, distance) as ``near_duplicates`` gives them;
    ``fps``: (key, order_col) with one row a key. ``local_limit`` and
    ``max_rounds``: see the module's docstring. Runs its jobs when called.
    """
    for name, value in (("local_limit", local_limit), ("max_rounds", max_rounds)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidArgumentError(f"{name} is a whole number of at least 0, not {value!r}")
    check_columns(pairs, "key_a", "key_b", "distance")
    check_columns(fps, "key", order_col)
    check_order(fps, order_col)
    from pyspark.sql import functions as F

    spark = pairs.sparkSession
    order = fps.select("key", F.col(order_col).cast("long").alias("node"))
    by_a = order.select(F.col("key").alias("key_a"), F.col("node").alias("na"))
    by_b = order.select(F.col("key").alias("key_b"), F.col("node").alias("nb"))
    joined = pairs.join(by_a, "key_a").join(by_b, "key_b")
    links = _frozen(
        joined.select(
            F.least("na", "nb").alias("u"),
            F.greatest("na", "nb").alias("v"),
            F.col("distance").cast("int").alias("distance"),
        )
    )
    nodes = links.select(F.col("u").alias("node")).union(links.select(F.col("v").alias("node")))
    later = links.select(F.col("v").alias("node"), F.lit(_UNDECIDED).alias("s")).distinct()
    status = _frozen(
        nodes.distinct()
        .join(later, "node", "left")
        .select("node", F.coalesce("s", F.lit(_LEADER)).alias("s"))
    )
    open_links = links.select("u", "v")
    rounds = 0
    while True:
        count = open_links.join(_undecided(status, "v"), "v").count()
        if count <= local_limit:
            break
        if rounds == max_rounds:
            raise InvalidArgumentError(
                f"clusters: {count} links still undecided after {max_rounds} rounds "
                f"(more than local_limit={local_limit}): raise max_rounds or local_limit"
            )
        status = _round(open_links.join(_undecided(status, "v"), "v"), status)
        open_links = _frozen(open_links.join(_undecided(status, "v"), "v"))
        rounds += 1
    status = _finish(open_links.join(_undecided(status, "v"), "v"), status, spark)
    return _members(links, status, order)


def _frozen(df: DataFrame) -> DataFrame:
    """The DataFrame computed now, its lineage cut (see the module's docstring)."""
    if df.sparkSession.sparkContext.getCheckpointDir():
        return df.checkpoint(eager=True)
    return df.localCheckpoint(eager=True)


def _undecided(status: DataFrame, name: str) -> DataFrame:
    from pyspark.sql import functions as F

    return status.where(F.col("s") == _UNDECIDED).select(F.col("node").alias(name))


def _round(open_links: DataFrame, status: DataFrame) -> DataFrame:
    """The status after one round (see the module's docstring)."""
    from pyspark.sql import functions as F

    earlier = status.select(F.col("node").alias("u"), F.col("s").alias("su"))
    votes = (
        open_links.join(earlier, "u")
        .groupBy("v")
        .agg(
            F.max((F.col("su") == _LEADER).cast("int")).alias("led"),
            F.min((F.col("su") == _FOLLOWER).cast("int")).alias("free"),
        )
    )
    decided = votes.select(
        F.col("v").alias("node"),
        F.when(F.col("led") == 1, _FOLLOWER)
        .when(F.col("free") == 1, _LEADER)
        .otherwise(_UNDECIDED)
        .alias("new"),
    )
    return _frozen(
        status.join(decided, "node", "left").select(
            "node", F.coalesce("new", "s").cast("int").alias("s")
        )
    )


def _finish(open_links: DataFrame, status: DataFrame, spark: object) -> DataFrame:
    """The status with the undecided documents decided on the driver, in order."""
    from pyspark.sql import functions as F

    earlier = status.select(F.col("node").alias("u"), F.col("s").alias("su"))
    rows = open_links.join(earlier, "u").select("u", "v", "su").collect()
    if not rows:
        return status
    before: dict[int, list[int]] = {}
    state: dict[int, int] = {}
    for u, v, su in rows:
        before.setdefault(v, []).append(u)
        if su != _UNDECIDED:
            state[u] = su
    for v in sorted(before):  # every earlier neighbour is decided by now
        led = any(state[u] == _LEADER for u in before[v])
        state[v] = _FOLLOWER if led else _LEADER
    decided = status.sparkSession.createDataFrame(
        [(v, state[v]) for v in before], "node long, new int"
    )
    return _frozen(
        status.join(F.broadcast(decided), "node", "left").select(
            "node", F.coalesce("new", "s").cast("int").alias("s")
        )
    )


def _members(links: DataFrame, status: DataFrame, order: DataFrame) -> DataFrame:
    """(key, canonical, distance): each follower with its smallest leader
    neighbour, and each leader that has a follower with itself."""
    from pyspark.sql import functions as F

    leaders = status.where(F.col("s") == _LEADER).select("node")
    followers = status.where(F.col("s") == _FOLLOWER).select("node")
    both_ways = links.select(
        F.col("u").alias("node"), F.col("v").alias("other"), "distance"
    ).unionByName(links.select(F.col("v").alias("node"), F.col("u").alias("other"), "distance"))
    home = (
        both_ways.join(followers, "node")
        .join(leaders.select(F.col("node").alias("other")), "other")
        .groupBy("node")
        .agg(F.min(F.struct("other", "distance")).alias("best"))
        .select(
            "node", F.col("best.other").alias("leader"), F.col("best.distance").alias("distance")
        )
    )
    heads = home.select(F.col("leader").alias("node")).distinct()
    heads = heads.select("node", F.col("node").alias("leader"), F.lit(0).alias("distance"))
    keys = order.select(F.col("node"), F.col("key"))
    leader_keys = order.select(F.col("node").alias("leader"), F.col("key").alias("canonical"))
    return (
        home.unionByName(heads)
        .join(keys, "node")
        .join(leader_keys, "leader")
        .select("key", "canonical", F.col("distance").cast("int").alias("distance"))
    )

"""How to answer: one place that picks the way for query, query_many and duplicates.

A pure decision from what is known (the layout, k, the batch's size, what
the database can do, whether a snapshot is held, the index's size when a
large batch needs it); no reading, no writing. SimIndex then carries the
plan out, and every way gives the same answers (tested against brute force).

The ways:

- HELD: the snapshot held in memory (accelerator.py) answers (probed k only:
  an exact lookup costs a few seeks, always cheaper from the database).
- LOOKUP: the block indexes, query by query (exact for k up to the layout's,
  probes a few bits away above it, up to blocks.MAX_PROBES lookups).
- JOIN: one join of the whole batch with the index on the server (PostgreSQL,
  k up to the layout's, a batch of BATCH_MIN or more).
- READ: read every fingerprint once and match the batch in memory: for a
  batch large beside the index (its lookups would cost more than reading), or
  a k past what lookups answer.
- SCAN: a single query past what lookups answer compares every row (and says
  so with a FullScanWarning).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

from simindex.blocks import BlockLayout
from simindex.costs import READ_US_PER_ROW, lookup_cost

BATCH_MIN = 256  # a batch this large may be joined on the server or read into memory


class Way(Enum):
    HELD = "held"
    LOOKUP = "lookup"
    JOIN = "join"
    READ = "read"
    SCAN = "scan"


def plan_query(layout: BlockLayout, k: int, *, held: bool, can_probe: bool) -> Way:
    """The way to answer one query at distance k (``held``: a current
    snapshot is held; ``can_probe``: the layout's probes answer k)."""
    if k <= layout.k:
        return Way.LOOKUP
    if held:
        return Way.HELD
    return Way.LOOKUP if can_probe else Way.SCAN


def plan_batch(
    layout: BlockLayout,
    k: int,
    queries: int,
    *,
    held: bool,
    can_probe: bool,
    server_join: bool,
    snapshot: bool,
    size: Callable[[], int],
) -> Way:
    """The way to answer a batch of `queries` at distance k. ``snapshot``: a
    snapshot is held (current or not: a batch rereads a stale one); ``size``:
    the index's size, asked only for a large batch (one seek)."""
    probed = k > layout.k
    if probed and held:
        return Way.HELD
    if not probed and server_join and queries >= BATCH_MIN:
        return Way.JOIN
    if probed and not can_probe:
        return Way.READ
    if queries < BATCH_MIN:
        return Way.LOOKUP
    if snapshot:
        return Way.READ
    rows = size()
    cost = lookup_cost(layout, k, rows)
    if cost is not None and queries * cost[2] >= READ_US_PER_ROW * rows:
        return Way.READ
    return Way.LOOKUP

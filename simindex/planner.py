"""How to answer: one place that picks the way for query, query_many and duplicates.

A pure decision from what is known (the layout, k, the batch's size, what
the database can do, whether a snapshot is held, the index's size when a
large batch needs it); no reading, no writing. The Reader (reader.py) then
carries the plan out, and every way gives the same answers (tested against
brute force).

The ways:

- LOOKUP: the block indexes for a k up to the layout's, then the rows of
  the candidates within k by id.
- MATCH: the same in one statement where the server keeps the rows within
  k itself (PostgreSQL's bit_count).
- PROBE: a k above the layout's: probes a few bits away from the query's
  blocks (up to blocks.MAX_PROBES lookups), then the rows by id.
- HELD: the snapshot held in memory (accelerator.py) answers (probed k only:
  an exact lookup costs a few seeks, always cheaper from the database); a
  single query reads its rows in the statement that confirms the snapshot
  is current.
- JOIN: one join of the whole batch with the index on the server (PostgreSQL,
  k up to the layout's, a batch of BATCH_MIN or more).
- READ: read every fingerprint once and match the batch in memory: for a
  batch large beside the index (its lookups would cost more than reading), or
  a k past what lookups answer.
- SCAN: a single query past what lookups answer compares every row (and says
  so with a FullScanWarning).

A batch answered by lookups is LOOKUP, MATCH or PROBE query by query.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

from simindex.blocks import BlockLayout
from simindex.costs import READ_US_PER_ROW, lookup_cost

BATCH_MIN = 256  # a batch this large may be joined on the server or read into memory


class Way(Enum):
    LOOKUP = "lookup"
    MATCH = "match"
    PROBE = "probe"
    HELD = "held"
    JOIN = "join"
    READ = "read"
    SCAN = "scan"


def _looked_up(layout: BlockLayout, k: int, server_matches: bool) -> Way:
    if k > layout.k:
        return Way.PROBE
    return Way.MATCH if server_matches else Way.LOOKUP


def plan_query(
    layout: BlockLayout, k: int, *, held: bool, can_probe: bool, server_matches: bool = False
) -> Way:
    """The way to answer one query at distance k (``held``: a snapshot is
    held that can be confirmed current; ``can_probe``: the layout's probes
    answer k; ``server_matches``: the server keeps the rows within k)."""
    if k <= layout.k:
        return _looked_up(layout, k, server_matches)
    if held:
        return Way.HELD
    return Way.PROBE if can_probe else Way.SCAN


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
    server_matches: bool = False,
) -> Way:
    """The way to answer a batch of `queries` at distance k. ``held``: a
    current snapshot is held; ``snapshot``: one is held, current or not (a
    batch rereads a stale one); ``size``: the index's size, asked only for a
    large batch (one seek)."""
    probed = k > layout.k
    if probed and held:
        return Way.HELD
    if not probed and server_join and queries >= BATCH_MIN:
        return Way.JOIN
    if probed and not can_probe:
        return Way.READ
    looked_up = _looked_up(layout, k, server_matches)
    if queries < BATCH_MIN:
        return looked_up
    if snapshot:
        return Way.READ
    rows = size()
    cost = lookup_cost(layout, k, rows)
    if cost is not None and queries * cost[2] >= READ_US_PER_ROW * rows:
        return Way.READ
    return looked_up

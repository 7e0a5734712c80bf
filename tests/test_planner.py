"""The planner: which way each query or batch is answered (no database)."""

from __future__ import annotations

import pytest

from simindex.blocks import BlockLayout
from simindex.planner import BATCH_MIN, Way, plan_batch, plan_query

K3 = BlockLayout.for_k(3)  # four 16-bit blocks: exact lookups up to 3
K8 = BlockLayout.for_k(8)  # three blocks: exact up to 2, probed above


def test_single_queries() -> None:
    assert plan_query(K3, 3, held=True, can_probe=True) is Way.LOOKUP  # exact: never memory
    assert plan_query(K8, 8, held=False, can_probe=True) is Way.PROBE
    assert plan_query(K8, 8, held=True, can_probe=True) is Way.HELD
    assert plan_query(K8, 30, held=False, can_probe=False) is Way.SCAN


def test_a_server_that_keeps_the_rows_within_k_matches_exact_lookups_itself() -> None:
    assert plan_query(K3, 3, held=False, can_probe=True, server_matches=True) is Way.MATCH
    assert plan_query(K8, 2, held=True, can_probe=True, server_matches=True) is Way.MATCH
    # Probed: the server's filter does not apply; memory first, where held.
    assert plan_query(K8, 8, held=False, can_probe=True, server_matches=True) is Way.PROBE
    assert plan_query(K8, 8, held=True, can_probe=True, server_matches=True) is Way.HELD


def batch(layout: BlockLayout, k: int, n: int, rows: int = 1_000_000, **given: bool) -> Way:
    asked: list[int] = []
    options = {"held": False, "can_probe": True, "server_join": False, "snapshot": False}
    options.update(given)

    def size() -> int:
        asked.append(1)
        return rows

    way = plan_batch(layout, k, n, size=size, **options)
    assert not asked or n >= BATCH_MIN  # a small batch never asks the index's size
    return way


def test_batches() -> None:
    assert batch(K8, 8, 10, held=True) is Way.HELD
    assert batch(K3, 3, 10) is Way.LOOKUP
    assert batch(K3, 3, BATCH_MIN, server_join=True) is Way.JOIN  # PostgreSQL, exact k
    assert batch(K3, 3, 10, server_join=True, server_matches=True) is Way.MATCH  # small batch
    assert batch(K8, 8, 10) is Way.PROBE  # query by query, probed
    assert batch(K8, 8, BATCH_MIN, server_join=True) is not Way.JOIN  # probed: not joined
    assert batch(K8, 14, 5, can_probe=False) is Way.READ  # past the probes: read once
    assert batch(K3, 3, 5000, snapshot=True) is Way.READ  # a snapshot is there to reread


@pytest.mark.parametrize(
    ("n", "rows", "way"),
    [
        (300, 1_000_000, Way.LOOKUP),  # 300 exact lookups cost less than reading 1M rows
        (200_000, 1_000_000, Way.READ),  # 200,000 of them cost more
        (300, 1_000, Way.READ),  # a batch large beside a small index
    ],
)
def test_a_large_batch_reads_the_index_when_its_lookups_would_cost_more(
    n: int, rows: int, way: Way
) -> None:
    assert batch(K3, 3, n, rows) is way

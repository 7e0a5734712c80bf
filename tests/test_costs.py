"""The cost models (simindex.costs): what each estimate counts, and the
choices made with them (a new index's blocks, the advisor's order)."""

from __future__ import annotations

import pytest

from simindex import InvalidArgumentError, costs
from simindex.blocks import DEFAULT_BLOCKS, MAX_INDEX_K, BlockLayout, probes


def test_the_stored_default_blocks_are_the_computed_ones() -> None:
    assert len(DEFAULT_BLOCKS) == MAX_INDEX_K + 1
    assert [costs.default_blocks(k) for k in range(MAX_INDEX_K + 1)] == list(DEFAULT_BLOCKS)
    assert DEFAULT_BLOCKS[3] == 4 and DEFAULT_BLOCKS[8] == 3  # the classic k = 3, the default k


@pytest.mark.parametrize(("k", "blocks"), [(3, 4), (3, 5), (8, 3), (6, 4)])
def test_a_lookup_costs_its_seeks_and_the_rows_sharing_their_bits(k: int, blocks: int) -> None:
    layout = BlockLayout.for_k(k, blocks)
    cost = costs.lookup_cost(layout, k, 1 << 20)
    assert cost is not None
    seeks, rows, us = cost
    if k <= layout.k:
        assert seeks == len(layout.tables)
        bits = [sum(layout.widths[b] for b in t) for t in layout.tables]
    else:
        found = probes(layout, k)
        assert found is not None and seeks == len(found)
        bits = [sum(layout.widths[b] for b in layout.tables[p.table]) for p in found]
    assert rows == pytest.approx(sum(2.0 ** (20 - b) for b in bits))
    assert us == pytest.approx(seeks * 1.2 + rows * 0.45)
    # Ten times the rows: the same seeks, ten times the candidates.
    more = costs.lookup_cost(layout, k, 10 << 20)
    assert more is not None and more[0] == seeks and more[1] == pytest.approx(10 * rows)


def test_a_lookup_past_the_probe_limit_has_no_cost() -> None:
    one_block = BlockLayout((64,), ((0,),))
    assert costs.lookup_cost(one_block, 3, 1000) is None  # 64 bits within 3: too many probes


def test_the_advisor_lists_every_layout_cheapest_first() -> None:
    advice = costs.advise(1_000_000, 3)
    assert [a.cost for a in advice] == sorted(a.cost for a in advice)
    assert {a.blocks for a in advice} >= {4, 5, 6, 7}
    for a in advice:
        cost = costs.lookup_cost(a.layout, 3, 1_000_000)
        assert cost is not None and (a.seeks, a.candidates, a.cost) == cost
        assert a.bytes_per_fingerprint == 40 + 25 * len(a.layout.tables)
    with pytest.raises(InvalidArgumentError):
        costs.advise(-1, 3)
    with pytest.raises(InvalidArgumentError):
        costs.advise(10, MAX_INDEX_K + 1)


def test_all_pairs_looks_up_by_offset_only_where_it_pays() -> None:
    assert not costs.pairs_by_offsets(1_000_000, costs.PAIRS_OFFSETS_MAX_BITS + 1, 1000)
    # Wider keys by offset only with no more possible keys than rows.
    assert costs.pairs_by_offsets(100_000_000, 26, 351)
    assert costs.pairs_lookup(1_000_000, 26, 351) == "occupied"
    assert costs.pairs_lookup(1_000_000, 40, 351) == "search"
    assert costs.pairs_lookup(1_000_000, 21, 231) == "offsets"
    assert not costs.pairs_by_offsets(1000, 22, 1)  # 4M offsets built for 1,000 rows
    assert costs.pairs_by_offsets(1_000_000, 16, 100)
    # A table's estimate grows with the rows and with the probe radius.
    assert costs.pairs_table_ns(2_000_000, 21, 0) > costs.pairs_table_ns(1_000_000, 21, 0)
    assert costs.pairs_table_ns(1_000_000, 21, 2) > costs.pairs_table_ns(1_000_000, 21, 1)


def test_a_held_table_costs_more_with_probes_and_less_by_offset() -> None:
    exact = costs.held_table_us(16, 1_000_000, None, True)
    probed = costs.held_table_us(16, 1_000_000, 100, True)
    searched = costs.held_table_us(16, 1_000_000, 100, False)
    assert exact < probed < searched

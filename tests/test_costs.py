"""The cost models (simindex.costs): what each estimate counts, and the
choices made with them (a new index's blocks, the advisor's order)."""

from __future__ import annotations

import ast
from pathlib import Path

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
    assert us == pytest.approx(seeks * costs._SEEK_US + rows * costs._ROW_US)
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
        assert a.bytes_per_fingerprint == pytest.approx(
            costs._ROW_BYTES + costs._INDEX_BYTES * len(a.layout.tables)
        )
    with pytest.raises(InvalidArgumentError):
        costs.advise(-1, 3)
    with pytest.raises(InvalidArgumentError):
        costs.advise(10, MAX_INDEX_K + 1)


@pytest.mark.usefixtures("reference_costs")
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


@pytest.mark.usefixtures("reference_costs")
def test_a_held_query_costs_more_with_probes_and_less_by_offset() -> None:
    n = 1_000_000
    exact = costs.held_query_us([16, 16, 16, 16], n, None, [False] * 4)
    probed = costs.held_query_us([16, 16, 16, 16], n, [100] * 4, [True, True, True, False])
    searched = costs.held_query_us([16, 16, 16, 16], n, [100] * 4, [False] * 4)
    assert exact < probed < searched
    # Tables all found by offset are joined: one fixed cost, whatever their number.
    joined = costs.held_query_us([16, 16, 16, 16], n, [100] * 4, [True] * 4)
    assert joined == pytest.approx(
        costs._HELD_JOINED_US + 400 * costs._HELD_OFFSET_US + 400 * 2**-16 * n * costs._HELD_ROW_US
    )


def test_every_cost_is_one_the_kept_script_measures() -> None:
    """The models' constants are the block bench/costs.py writes, each named
    in costs.MEASURED; no other number in costs.py is a cost typed in (what
    is left: 1.0 and 2.0 of the formulas, and whole numbers: limits and
    counts)."""
    source = Path(costs.__file__).read_text(encoding="utf-8")
    begin = source.index("# -- measured by `python bench/costs.py --write`")
    end = source.index("# -- end of the measured constants --")
    block = ast.parse(source[begin:end])
    assigned = [node.targets[0].id for node in block.body if isinstance(node, ast.Assign)]  # type: ignore[attr-defined]
    assert sorted(assigned) == sorted(costs.MEASURED) and len(set(assigned)) == len(assigned)
    rest = ast.parse(source[:begin] + source[end:])
    floats = {
        node.value
        for node in ast.walk(rest)
        if isinstance(node, ast.Constant) and isinstance(node.value, float)
    }
    assert floats <= {1.0, 2.0}
    script = (Path(__file__).resolve().parent.parent / "bench" / "costs.py").read_text("utf-8")
    for name in costs.MEASURED:  # each one a measurement returns by its name
        assert f'"{name}"' in script or f'"{name}"' in _parts(), name


def _parts() -> str:
    """The measurement sections bench/costs.py takes from its parts."""
    folder = Path(__file__).resolve().parent.parent / "bench" / "cost_parts"
    return "".join(p.read_text("utf-8") for p in folder.glob("*.py")) if folder.is_dir() else ""

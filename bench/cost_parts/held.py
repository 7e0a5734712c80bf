"""The held single query's cost model (costs.held_query_us), measured.

Times ``Snapshot.near`` itself on random uniform fingerprints with its
layout forced (snapshot.single_layout replaced while the tables are built,
and snapshot._OFFSETS_PER_ROW where a configuration forces lookups by offset
or by binary search), over sizes, block widths and probe counts, so that
each of held_query_us's three paths is well represented: joined (every
table by offset), exact lookups in a loop over the tables, and probed
lookups in that loop. Then one joint fit of its eight constants: least
squares of the relative error, without negative values, each configuration's
terms being what held_query_us multiplies each constant by (found by calling
it with that constant 1 and the others 0, the tables' lookups as built).
bench/costs.py runs ``measure`` and ``report``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np
from common import values_in  # (bench/: on the path bench/costs.py runs with)

from simindex import costs, snapshot
from simindex.blocks import MAX_INDEX_K, BlockLayout, Probe, even_layout, even_widths, probes

Measured = list[tuple[str, float, str]]  # (name, value, how it was measured)
Log = Callable[[str], None]

NAMES = (
    "_HELD_JOINED_US",
    "_HELD_QUERY_US",
    "_HELD_EXACT_US",
    "_HELD_EXACT_ROW_US",
    "_HELD_PROBED_US",
    "_HELD_OFFSET_US",
    "_HELD_SEARCH_US",
    "_HELD_ROW_US",
)

_CANDIDATES_CAP = 100_000  # expected candidates a query past which a configuration is left out
_MIXED = ((16, 16, 32), (12, 12, 12, 28))  # the wide block by binary search, the rest by offset
_WARM = 50  # queries before timing (after the one that builds the tables)
_MIN_QUERIES = 60  # a configuration's timed loop, at the least


class Config(NamedTuple):
    """One forced layout of one-block tables for one query distance k."""

    n: int
    widths: tuple[int, ...]
    k: int
    probed: bool  # with blocks.probes(layout, k), else exact lookups
    offsets: bool | None = None  # forced by offset / binary search; None: as the code decides

    def layout(self) -> BlockLayout:
        return BlockLayout(self.widths, tuple((b,) for b in range(len(self.widths))))

    def found(self) -> list[Probe] | None:
        return probes(self.layout(), self.k) if self.probed else None

    def probe_counts(self) -> list[int] | None:
        """Lookups a query makes in each table (None: exact, one a table)."""
        found = self.found()
        if found is None:
            return None
        return [sum(p.table == t for p in found) for t in range(len(self.widths))]

    def lookups(self) -> int:
        counts = self.probe_counts()
        return len(self.widths) if counts is None else sum(counts)

    def candidates(self) -> float:
        """Expected candidate rows a query (uniform fingerprints)."""
        counts = self.probe_counts() or [1] * len(self.widths)
        return sum(c * self.n / 2.0**w for c, w in zip(counts, self.widths, strict=True))


class Timed(NamedTuple):
    """A configuration's median microseconds a query and how near answered it."""

    config: Config
    us: float
    joined: bool  # every table by offset: one lookup for all (snapshot._Joined)
    by_offset: tuple[bool, ...]  # per table: found by offset, else by binary search

    def model(self, values: dict[str, float]) -> float:
        """costs.held_query_us of this configuration with these constants."""
        c = self.config
        with values_in(costs, values):
            return costs.held_query_us(c.widths, c.n, c.probe_counts(), self.by_offset)

    def terms(self) -> list[float]:
        """What held_query_us multiplies each constant by (it is linear in them)."""
        return [self.model({m: float(m == name) for m in NAMES}) for name in NAMES]

    def path(self) -> str:
        if self.joined:
            return "joined"
        kinds = "+".join(sorted({"offset" if o else "search" for o in self.by_offset}))
        return f"{'probed' if self.config.probed else 'exact'} {kinds}"


def today() -> dict[str, float]:
    """The values in simindex/costs.py now."""
    return {name: float(getattr(costs, name)) for name in NAMES}


def _fingerprints(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 2**64, size=n, dtype=np.uint64)


def _configs(n: int) -> list[Config]:
    """At n: the layouts single_layout weighs (even widths: exact with
    m = k + 1 blocks, probed with 2 <= m <= k at each distinct probe
    count); the same forced to binary search where they would be joined
    (exact and probed: the per-table loop), or to offsets where they would
    be searched; and mixed ones (the per-table loop with offsets); each
    within _CANDIDATES_CAP expected candidates."""
    out = [Config(n, even_widths(m), m - 1, False) for m in range(1, 17)]
    for m in (3, 4, 5, 6, 8, 11, 16):
        if snapshot._offsets_fit(even_widths(m)[0], n):
            out.append(Config(n, even_widths(m), m - 1, False, offsets=False))
    for m in range(2, 16):
        layout = even_layout(m)
        counts: list[int] = []
        for k in range(m, MAX_INDEX_K + 1):
            found = probes(layout, k)
            if found is not None and len(found) not in counts:
                counts.append(len(found))
                out.append(Config(n, even_widths(m), k, True))
                natural = snapshot._offsets_fit(even_widths(m)[0], n)
                if 3 <= m <= 8 and (len(counts) == 1 or natural):  # the other kind of lookup
                    out.append(Config(n, even_widths(m), k, True, offsets=not natural))
    for widths in _MIXED:
        m = len(widths)
        out += [Config(n, widths, m - 1, False), Config(n, widths, m, True)]
        out.append(Config(n, widths, 2 * m, True))
    return [c for c in out if c.candidates() <= _CANDIDATES_CAP]


@contextmanager
def _forced(config: Config) -> Iterator[None]:
    """single_layout (and, if forced, the offsets rule) as the configuration
    says, restored after."""
    chosen = (config.layout(), config.found())
    saved = snapshot.single_layout, snapshot._OFFSETS_PER_ROW

    def single_layout(n: int, k: int) -> tuple[BlockLayout, list[Probe] | None]:
        return chosen

    snapshot.single_layout = single_layout
    if config.offsets is not None:
        snapshot._OFFSETS_PER_ROW = 2**40 if config.offsets else 0
    try:
        yield
    finally:
        snapshot.single_layout, snapshot._OFFSETS_PER_ROW = saved


class _Held(NamedTuple):
    """A configuration's snapshot, its tables built, and its timed loop's length."""

    config: Config
    near: Callable[[int, int], np.ndarray]
    per_loop: int  # queries a timed loop
    joined: bool
    by_offset: tuple[bool, ...]


def _build(fps: np.ndarray, queries: list[int], config: Config, rep_s: float) -> _Held:
    """A snapshot with the configuration's tables, warmed up, and how many
    queries a timed loop makes: up to len(queries), fewer where a query is
    slow (about rep_s a loop, _MIN_QUERIES at the least)."""
    held = snapshot.Snapshot(np.arange(len(fps)), fps, version=None)
    k = config.k
    with _forced(config):
        held.near(queries[-1], k)  # builds the tables
    tables, joined = held._probed_for(k)
    assert tables is not None
    start = time.perf_counter()
    for q in queries[:_WARM]:
        held.near(q, k)
    per_query = (time.perf_counter() - start) / _WARM
    count = max(_MIN_QUERIES, min(len(queries), int(rep_s / per_query)))
    by_offset = tuple(t.lookup.by_offset for t in tables)
    return _Held(config, held.near, count, joined is not None, by_offset)


def _loop(held: _Held, queries: list[int]) -> float:
    """Microseconds a query of one timed loop."""
    near, k, asked = held.near, held.config.k, queries[: held.per_loop]
    start = time.perf_counter()
    for q in asked:
        near(q, k)
    return (time.perf_counter() - start) / len(asked) * 1e6


def _time(sizes: Sequence[int], reps: int, rep_s: float, log: Log) -> list[Timed]:
    """Every configuration at every size, timed in rounds (each round one
    loop of each, so that the machine's drift spreads over them all): the
    median loop."""
    queries = _fingerprints(2_000, 2).tolist()
    built = []
    for n in sizes:
        fps = _fingerprints(n, 1)
        built += [_build(fps, queries, config, rep_s) for config in _configs(n)]
    spent: list[list[float]] = [[] for _ in built]
    for _ in range(reps):
        for held, times in zip(built, spent, strict=True):
            times.append(_loop(held, queries))
    out = []
    for held, times in zip(built, spent, strict=True):
        t = Timed(held.config, float(np.median(times)), held.joined, held.by_offset)
        out.append(t)
        c = t.config
        log(
            f"n = {c.n:>9,} {_widths(c.widths):>10} k = {c.k:>2} lookups {c.lookups():>4} "
            f"{t.path():>20}: {t.us:9.1f} us"
        )
    return out


def _fit(terms: Sequence[Sequence[float]], us: Sequence[float]) -> tuple[np.ndarray, list[int]]:
    """Least squares of the relative error (each configuration's terms and
    time divided by its time: they span 10 us to milliseconds), without
    negative values: a constant that fits negative is set to 0 and the rest
    fitted again (the most negative first), until none is. The solution
    and the constants so set to 0."""
    y = np.array(us, dtype=float)
    a = np.array(terms, dtype=float) / y[:, None]
    free = list(range(a.shape[1]))
    solution = np.zeros(a.shape[1])
    dropped: list[int] = []
    while free:
        fitted, *_ = np.linalg.lstsq(a[:, free], np.ones(len(y)), rcond=None)
        worst = int(np.argmin(fitted))
        if fitted[worst] >= 0:
            solution[free] = fitted
            break
        dropped.append(free.pop(worst))
    return solution, dropped


def _widths(widths: tuple[int, ...]) -> str:
    """(13, 13, 13, 13, 12) -> '4x13+12'."""
    parts, i = [], 0
    while i < len(widths):
        j = i
        while j < len(widths) and widths[j] == widths[i]:
            j += 1
        parts.append(f"{j - i}x{widths[i]}" if j - i > 1 else str(widths[i]))
        i = j
    return "+".join(parts)


_HOW = {
    "_HELD_JOINED_US": "microseconds a joined query (more than one table, all by offset) besides "
    "its lookups and candidates",
    "_HELD_QUERY_US": "microseconds a query looped over its tables (not joined) besides them",
    "_HELD_EXACT_US": "microseconds a table without probes (one slice) in that loop",
    "_HELD_EXACT_ROW_US": "microseconds a candidate row of a table without probes in that loop",
    "_HELD_PROBED_US": "microseconds a probed table in that loop besides its probes and rows",
    "_HELD_OFFSET_US": "microseconds a lookup by offset (joined, or a probe in that loop)",
    "_HELD_SEARCH_US": "microseconds a probe found by binary search in that loop",
    "_HELD_ROW_US": "microseconds a candidate row, joined or probed",
}

# The timings of the last measure call, for report.
_LAST: list[Timed] = []


def _time_all(quick: bool, log: Log) -> list[Timed]:
    sizes = (5_000, 50_000) if quick else (20_000, 200_000, 1_000_000)
    reps, rep_s = (3, 0.02) if quick else (5, 0.05)
    started = time.perf_counter()
    timed = _time(sizes, reps, rep_s, log)
    paths = {p: sum(t.path().split()[0] == p for t in timed) for p in ("joined", "exact", "probed")}
    log(
        f"timed {len(timed)} configurations ({', '.join(f'{v} {p}' for p, v in paths.items())}) "
        f"in {time.perf_counter() - started:.0f} s"
    )
    return timed


def _by_size(timed: list[Timed], log: Log) -> None:
    """The same fit at each size alone, logged: what the model, whose
    constants do not depend on n, leaves out (a candidate row costs more
    once the arrays outgrow the caches)."""
    for n in sorted({t.config.n for t in timed}):
        group = [t for t in timed if t.config.n == n]
        fit, _ = _fit([t.terms() for t in group], [t.us for t in group])
        values = dict(zip(NAMES, (float(v) for v in fit), strict=True))
        ratios = [t.model(values) / t.us for t in group]
        parts = " ".join(f"{name[6:-3].lower()} {v:.3g}" for name, v in values.items())
        log(
            f"fitted at n = {n:,} alone: {parts} (model / measured "
            f"{min(ratios):.2f} to {max(ratios):.2f})"
        )


def measure(quick: bool, log: Callable[[str], None]) -> list[tuple[str, float, str]]:
    """(name, value, how it was measured in one short sentence) for each constant."""
    timed = _time_all(quick, log)
    _LAST[:] = timed
    _by_size(timed, log)
    fit, dropped = _fit([t.terms() for t in timed], [t.us for t in timed])
    values = dict(zip(NAMES, (float(v) for v in fit), strict=True))
    ratios = [t.model(values) / t.us for t in timed]
    log(f"fitted at every size: model / measured {min(ratios):.2f} to {max(ratios):.2f}")
    sizes = ", ".join(f"{n:,}" for n in sorted({t.config.n for t in timed}))
    out: Measured = []
    for i, name in enumerate(NAMES):
        if i == 0:
            how = (
                f"{_HOW[name]}: Snapshot.near timed over {len(timed)} forced layouts at "
                f"n = {sizes}, one least-squares fit of relative error for all eight (a "
                "constant fitting negative set to 0 and the rest fitted again)"
            )
        else:
            how = f"{_HOW[name]}, the same fit"
        if i in dropped:
            how += " (fitted negative: 0, the others fitted again without it)"
        out.append((name, float(fit[i]), how))
    return out


def _choice(n: int, k: int, values: dict[str, float]) -> tuple[int, ...]:
    """The block widths snapshot.single_layout chooses with these constants."""
    with values_in(costs, values):
        chosen = snapshot.single_layout(n, k)
    assert chosen is not None
    return chosen[0].widths


def report(measured: dict[str, float]) -> list[str]:
    """Printable lines: the worst ten configurations by model / measured (the
    model with the measured constants), and where single_layout's choice
    with today's constants or the measured ones is not the fastest of the
    layouts it weighs that were timed (the timings of the last measure
    call, else a quick run's)."""
    timed = _LAST or _time_all(True, lambda s: None)
    values = {name: measured[name] for name in NAMES}
    now = today()
    ratios = [(t.model(values) / t.us, t) for t in timed]
    lines = [
        "held query, us: the model with the measured constants beside Snapshot.near's "
        "(the worst ten)",
        f"{'n':>9} {'widths':>10} {'k':>2} {'lookups':>7} {'path':>20} "
        f"{'model':>8} {'measured':>8} {'ratio':>5}",
    ]
    for ratio, t in sorted(ratios, key=lambda r: -abs(np.log(r[0])))[:10]:
        c = t.config
        lines.append(
            f"{c.n:>9,} {_widths(c.widths):>10} {c.k:>2} {c.lookups():>7} {t.path():>20} "
            f"{t.model(values):8.1f} {t.us:8.1f} {ratio:5.2f}"
        )
    # Natural (unforced) even layouts, by (n, widths, lookups): what single_layout weighs.
    times = {
        (c.n, c.widths, c.lookups()): t.us
        for t in timed
        if (c := t.config).offsets is None and c.widths == even_widths(len(c.widths))
    }

    def us_of(n: int, widths: tuple[int, ...], k: int) -> float | None:
        """A layout's time at (n, k), None where not timed or not weighed."""
        m = len(widths)
        if m > k:
            return times.get((n, widths, m))
        found = probes(even_layout(m), k) if m > 1 else None
        return None if found is None else times.get((n, widths, len(found)))

    def shown(n: int, widths: tuple[int, ...], k: int) -> str:
        us = us_of(n, widths, k)
        return f"{_widths(widths)} {'-' if us is None else f'{us:.0f}'}"

    rows, agree, asked = [], [0, 0], 0
    for n in sorted({t.config.n for t in timed}):
        for k in range(MAX_INDEX_K + 1):
            weighed = {}
            for m in range(1, min(k + 1, 16) + 1):
                widths = even_widths(m)
                us = us_of(n, widths, k)
                if us is not None:
                    weighed[widths] = us
            if not weighed:
                continue
            fastest = min(weighed, key=lambda w: weighed[w])
            picks = [_choice(n, k, now), _choice(n, k, values)]
            asked += 1
            for i, pick in enumerate(picks):
                agree[i] += pick == fastest
            if picks[0] != picks[1] or fastest not in picks:
                marks = ["" if p == fastest else " !" for p in picks]
                rows.append(
                    f"{n:>9,} {k:>2} {shown(n, picks[0], k) + marks[0]:>16} "
                    f"{shown(n, picks[1], k) + marks[1]:>16} {shown(n, fastest, k):>14}"
                )
    lines += [
        f"single_layout's pick, us a query timed (! not the fastest timed); the fastest at "
        f"{agree[0]} of {asked} (n, k) with today's, {agree[1]} with the measured",
        f"{'n':>9} {'k':>2} {'today':>16} {'measured':>16} {'fastest':>14}",
    ]
    shown_rows = 16
    lines += rows[:shown_rows]
    if len(rows) > shown_rows:
        lines.append(f"... and {len(rows) - shown_rows} more")
    return lines

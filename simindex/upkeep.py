"""Looking after an index: stats, check (and repair), compact.

Functions of an index's Views (view.py), which SimIndex's ``stats()``,
``check()`` and ``compact()`` call: they describe and mend the index rather
than answer queries. Problems found by check carry their kind
(storage.Problem), and repair decides by kind, never by the words of a
message.
"""

from __future__ import annotations

import json
from typing import Any

from simindex import storage
from simindex.blocks import probe_radius
from simindex.errors import ClosedIndexError, SimIndexError
from simindex.results import CheckReport
from simindex.signature import NAME
from simindex.storage import Problem
from simindex.view import Views

# stats() warns of a crowded bucket (one value of a lookup index's blocks):
# one that holds at least 1% of the fingerprints and at least 10 of them (in
# an index of a few hundred, one shared value is 1% by itself), or 10,000
# whatever the share (a query that lands there reads that many rows); and in
# either case 4 times what uniform fingerprints would put there.
CROWDED_SHARE = 0.01
CROWDED_MIN_ROWS = 10
CROWDED_ROWS = 10_000
REPAIRABLE = ("blocks", "missing index", "triggers", "keys")  # what check(repair=True) mends


def crowded(rows: int, count: int, expected: float) -> bool:
    """Whether a bucket of `rows` (of `count`, `expected` if uniform) is crowded."""
    if rows < 4 * expected:
        return False
    return rows >= CROWDED_ROWS or (rows >= CROWDED_MIN_ROWS and rows >= CROWDED_SHARE * count)


def stats(views: Views) -> dict[str, Any]:
    """Facts about the index, for people and scripts."""
    view = views.refresh()
    settings, store, where = view.settings, view.store, views.where
    with views.lock, views.backend.reading() as conn:
        count = store.size(conn)
        buckets = store.checks.largest_buckets(conn)
        unsigned = store.without_signature(conn)
        passages = None
        if settings.passages:  # (documents, hashes) and whether they are the index's
            passages = (*views.passages.stats(conn), views.passages.current(conn)[0])
    layout, k = settings.layout, settings.k
    info: dict[str, Any] = {
        "index": str(where),
        "count": count,
        "k": k,
        "blocks": list(layout.widths),
        "tables": [list(t) for t in layout.tables],
        "layout": layout.describe(),
        # Lookups at the index's k: exact (0) or probed within this many bits.
        "probe_radius": probe_radius(layout, k) if k > layout.k else 0,
        "fingerprint": json.loads(settings.config.to_json()),
        "threshold": settings.threshold,
        "signature": NAME,
        "format": settings.format,
        "schema_revision": settings.revision,
        "created_by": settings.created_by,
    }
    info["held_in_memory_bytes"] = views.accel.nbytes  # (see accelerator.py)
    if where.path is not None:
        size = file_bytes(views)
        info["file_bytes"] = size
        info["bytes_per_fingerprint"] = round(size / count, 1) if count else None
    # Rows with no signature (add_fingerprint, or added before revision
    # 0002 and not yet rebuilt from their texts) are matched by distance alone.
    info["without_signature"] = unsigned
    # The passages overlaps() reads (storage/passages.py), where it keeps them.
    info["overlaps"] = None
    if passages is not None:
        documents, hashes, current = passages
        info["overlaps"] = {"documents": documents, "hashes": hashes, "current": current}
    info["largest_buckets"] = []
    info["warnings"] = []
    for rows, j in buckets:
        bits = sum(layout.widths[b] for b in layout.tables[j])
        share = rows / count if count else 0.0
        info["largest_buckets"].append(
            {
                "index": j,
                "rows": rows,
                "share": round(share, 6),
                "expected": round(count / 2**bits, 3),
            }
        )
        if crowded(rows, count, count / 2**bits):
            info["warnings"].append(
                f"one value of index {j}'s blocks holds {rows} fingerprints ({share:.1%}): "
                f"near-identical or templated texts share it, and every query that "
                f"lands there reads all {rows}"
            )
    if passages is not None and not passages[2]:
        info["warnings"].append(
            "another program wrote rows since the passages were made: overlaps() refuses "
            "to answer until the index is rebuilt from its texts"
        )
    if unsigned:
        info["warnings"].append(
            f"{unsigned} of {count} documents have no verification signature (added as "
            f"fingerprints, or before signatures were stored): they are matched by "
            f"distance alone; rebuild the index from its texts to verify them"
        )
    return info


def check(views: Views, *, repair: bool = False) -> CheckReport:
    """Damage found (and with ``repair``, mended in one transaction): see SimIndex.check."""
    problems = _problems(views)
    bad = [p for p in problems if p.kind == "blocks"]
    if repair and any(p.kind in REPAIRABLE for p in problems):
        repaired: list[str] = []
        with views.writing() as (write, view):  # rows not listed: a held snapshot goes
            conn = write.conn
            if bad:
                ids = view.store.checks.bad_blocks(conn)
                view.store.checks.repair_blocks(conn, ids)
                repaired.append(f"recomputed the block columns of {len(ids)} rows")
            for index in view.store.checks.missing_lookups(conn):
                index.create(conn)
                repaired.append(f"recreated index {index.name}")
            if any(p.kind == "triggers" for p in problems):
                storage.count_again(conn)
                repaired.append("made the triggers that count and mark changes again")
            if any(p.kind == "keys" for p in problems):
                view.store.checks.make_keys_again(conn)
                repaired.append("made every row's keys again")
        return check(views)._replace(repaired=repaired)
    return CheckReport(not problems, [p.text for p in problems], [])


def _problems(views: Views) -> list[Problem]:
    problems: list[Problem] = []
    try:
        view = views.refresh()
        store = view.store
        with views.lock, views.backend.reading() as conn:
            problems += store.checks.integrity(conn)
            found = storage.settings_now(views.backend, conn)
            # (settings carry the revision: an older one opened read-only is its own)
            if found is None or found != view.settings:
                text = "the stored settings or schema revision changed under this index"
                problems.append(Problem("settings", text))
            elif not (found.counting and found.marking):
                text = (
                    "triggers of the fingerprint table are missing or disabled: changes "
                    "made meanwhile are not counted, so nothing read is held or stored "
                    "(check --repair, or any open for writing, makes them again)"
                )
                problems.append(Problem("triggers", text))
            problems += store.checks.schema_problems(conn)
            if view.settings.passages and views.passages.current(conn)[0]:
                for text in views.passages.problems(conn):  # (rebuild from the texts)
                    problems.append(Problem("passages", f"{text}: rebuild from the texts"))
            columns_wrong = any(p.kind == "column" for p in problems)
            bad = [] if columns_wrong else store.checks.bad_blocks(conn)
            lacking, unsigned, first = store.checks.lacking_keys(conn)
    except ClosedIndexError:
        raise  # (not the index's problem: the caller's)
    except SimIndexError as exc:
        return [*problems, Problem("read", str(exc))]
    if bad:
        text = f"{len(bad)} rows have block columns that disagree with their fingerprint"
        problems.append(Problem("blocks", f"{text} (ids {_ids(bad, len(bad))})"))
    if unsigned:
        text = (
            f"{unsigned} rows hold a stored value that is not a signature (ids "
            f"{_ids(first, unsigned)}): a read that meets one stops with an error or judges "
            f"its bytes; rebuild the index from its texts"
        )
        problems.append(Problem("signatures", text))
    if lacking:
        text = (
            f"{lacking} rows lack some of their keys in the key table: a query of the "
            f"database may miss their copies beyond k (check --repair makes every key again)"
        )
        problems.append(Problem("keys", text))
    return problems


def _ids(first: list[int], count: int) -> str:
    """The first ten ids of ``count``, as a problem names them."""
    return ", ".join(map(str, first[:10])) + (", ..." if count > 10 else "")


def compact(views: Views) -> dict[str, int]:
    """VACUUM, the WAL folded in: the file's size before and after (bytes, WAL included)."""
    before = file_bytes(views)
    with views.lock:
        store = views.current.store
        if views.where.path is not None and store.stores:
            # VACUUM moves SQLite's schema cookie: the stored snapshot
            # would be stale, so its space comes back too.
            with views.backend.writing() as conn:
                store.snapshots.drop(conn)
        store.close()  # no connection may read while the file is rewritten
        views.backend.compact()
        views.accel.drop()
        views.refresh()  # (VACUUM moved the generation)
    return {"before": before, "after": file_bytes(views)}


def file_bytes(views: Views) -> int:
    """The index file's size with its WAL (0: not a file)."""
    path = views.where.path
    if path is None:
        return 0
    return sum(p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists())

"""Looking after an index: stats, check (and repair), compact.

``Upkeep`` is the part of SimIndex that describes and mends the index rather
than answering queries; SimIndex inherits it, so ``index.stats()``,
``index.check()`` and ``index.compact()`` are its methods. Problems found by
check carry their kind (storage.Problem), and repair decides by kind, never
by the words of a message.
"""

from __future__ import annotations

import json
import threading
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from simindex import signature, storage
from simindex.blocks import probe_radius
from simindex.errors import SimIndexError
from simindex.results import CheckReport
from simindex.storage import Problem

if TYPE_CHECKING:
    from simindex.accelerator import Accelerator
    from simindex.blocks import BlockLayout
    from simindex.fingerprint import FingerprintConfig

# stats() warns of a crowded bucket (one value of a lookup index's blocks):
# one that holds at least 1% of the fingerprints and at least 10 of them (in
# an index of a few hundred, one shared value is 1% by itself), or 10,000
# whatever the share (a query that lands there reads that many rows); and in
# either case 4 times what uniform fingerprints would put there.
CROWDED_SHARE = 0.01
CROWDED_MIN_ROWS = 10
CROWDED_ROWS = 10_000
REPAIRABLE = ("blocks", "missing index")  # what check(repair=True) mends


def crowded(rows: int, count: int, expected: float) -> bool:
    """Whether a bucket of `rows` (of `count`, `expected` if uniform) is crowded."""
    if rows < 4 * expected:
        return False
    return rows >= CROWDED_ROWS or (rows >= CROWDED_MIN_ROWS and rows >= CROWDED_SHARE * count)


class Upkeep:
    """stats, check and compact, for SimIndex (which provides the attributes below)."""

    if TYPE_CHECKING:  # SimIndex's own
        _backend: storage.Backend
        _accel: Accelerator
        _lock: AbstractContextManager[Any] | threading.RLock
        _where: storage.Location

        @property
        def _settings(self) -> storage.Settings: ...
        @property
        def _store(self) -> storage.Store: ...
        @property
        def k(self) -> int: ...
        @property
        def threshold(self) -> float: ...
        @property
        def layout(self) -> BlockLayout: ...
        @property
        def config(self) -> FingerprintConfig: ...
        @property
        def location(self) -> str: ...
        def __len__(self) -> int: ...
        def _refresh(self) -> bool: ...
        def _writing(
            self, *, alone: bool = False, fresh: bool = True
        ) -> AbstractContextManager[storage.Write]: ...

    def stats(self) -> dict[str, Any]:
        """Facts about the index, for people and scripts."""
        self._refresh()
        count = len(self)
        layout = self.layout
        info: dict[str, Any] = {
            "index": self.location,
            "count": count,
            "k": self.k,
            "blocks": list(layout.widths),
            "tables": [list(t) for t in layout.tables],
            "layout": layout.describe(),
            # Lookups at the index's k: exact (0) or probed within this many bits.
            "probe_radius": probe_radius(layout, self.k) if self.k > layout.k else 0,
            "fingerprint": json.loads(self.config.to_json()),
            "threshold": self.threshold,
            "signature": signature.NAME,
            "format": self._settings.format,
            "schema_revision": self._settings.revision,
            "created_by": self._settings.created_by,
        }
        info["held_in_memory_bytes"] = self._accel.nbytes  # (see accelerator.py)
        if self._where.path is not None:
            size = self._file_bytes()
            info["file_bytes"] = size
            info["bytes_per_fingerprint"] = round(size / count, 1) if count else None
        with self._lock, self._backend.reading() as conn:
            buckets = self._store.largest_buckets(conn)
            unsigned = self._store.without_signature(conn)
        # Rows with no signature (add_fingerprint, or added before revision
        # 0002 and not yet rebuilt from their texts) are matched by distance alone.
        info["without_signature"] = unsigned
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
        if unsigned:
            info["warnings"].append(
                f"{unsigned} of {count} documents have no verification signature (added as "
                f"fingerprints, or before signatures were stored): they are matched by "
                f"distance alone; rebuild the index from its texts to verify them"
            )
        return info

    def check(self, *, repair: bool = False) -> CheckReport:
        """Look for damage: the database's integrity check, the schema against
        the stored layout and revision, and every row's block columns against
        its fingerprint. With ``repair``, fix what can be fixed safely
        (recompute block columns, recreate missing lookup indexes) in one
        transaction."""
        problems = self._problems()
        bad = [p for p in problems if p.kind == "blocks"]
        if repair and any(p.kind in REPAIRABLE for p in problems):
            repaired: list[str] = []
            with self._writing() as write:  # rows not listed: a held snapshot goes
                conn = write.conn
                if bad:
                    ids = self._store.bad_blocks(conn)
                    self._store.repair_blocks(conn, ids)
                    repaired.append(f"recomputed the block columns of {len(ids)} rows")
                for index in self._store.missing_lookups(conn):
                    index.create(conn)
                    repaired.append(f"recreated index {index.name}")
            return self.check()._replace(repaired=repaired)
        return CheckReport(not problems, [p.text for p in problems], [])

    def _problems(self) -> list[Problem]:
        problems: list[Problem] = []
        try:
            self._refresh()
            with self._lock, self._backend.reading() as conn:
                problems += self._store.integrity(conn)
                found = storage.read_settings(conn, self._where)
                # (settings carry the revision: an older one opened read-only is its own)
                if found is None or found[0] != self._settings:
                    text = "the stored settings or schema revision changed under this index"
                    problems.append(Problem("settings", text))
                problems += self._store.schema_problems(conn)
                columns_wrong = any(p.kind == "column" for p in problems)
                bad = [] if columns_wrong else self._store.bad_blocks(conn)
        except SimIndexError as exc:
            return [*problems, Problem("read", str(exc))]
        if bad:
            shown = ", ".join(map(str, bad[:10])) + (", ..." if len(bad) > 10 else "")
            text = f"{len(bad)} rows have block columns that disagree with their fingerprint"
            problems.append(Problem("blocks", f"{text} (ids {shown})"))
        return problems

    def compact(self) -> dict[str, int]:
        """Reclaim free space (VACUUM) and fold the WAL into the file; returns the
        file's size before and after (bytes, WAL included)."""
        before = self._file_bytes()
        with self._lock:
            if self._where.path is not None and self._store.stores:
                # VACUUM moves SQLite's schema cookie: the stored snapshot
                # would be stale, so its space comes back too.
                with self._backend.writing() as conn:
                    self._store.drop_stored(conn)
            self._store.close()  # no connection may read while the file is rewritten
            self._backend.compact()
            self._accel.drop()
            self._store.valid_for = self._store.schema_version()  # (VACUUM moved it)
        return {"before": before, "after": self._file_bytes()}

    def _file_bytes(self) -> int:
        path = self._where.path
        if path is None:
            return 0
        return sum(
            p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists()
        )

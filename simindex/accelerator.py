"""The accelerator: an index's fingerprints held in memory for probed queries.

A query at a k above the layout's (the default k = 8 is one) looks each
table up with hundreds of probes: about a millisecond in SQLite, whatever
the index's size. Held in memory (a ``snapshot.Snapshot``), the same query
costs a tenth of that. Reading the index into memory costs about 1 us a
fingerprint, so it pays only once queries have spent about that much in the
database: ski rental, ``charge``. Once held, a snapshot answers queries
while it is *current*: nobody but the owner has written since it was read.

One Accelerator per SimIndex, shared by its threads: one copy of the
fingerprints per index per process, read once. It decides and remembers;
the Reader (reader.py) does the reading (the database, the clock) and the
write transactions (view.py) say what they committed; they tell it what
happened:

- ``current(versions)``: the snapshot, if the versions read now (the
  generation and the changes the database has counted: a ``Stamp``, as
  storage reads them) are the ones it was read at, or its owner's writes since, applied;
  else None, and a stale one is let go (doubling the next rent when it did
  not pay for itself, halving it when it did: writes that come often push
  the next read back, up to 16 times). The database counts every change,
  whoever makes it (triggers, revision 0005), so nothing goes unseen.
- ``charge(seconds, size, stored)``: a probed query spent this long in the
  database; True when it is time to read the index (``install`` it then).
  Reading it costs less where the last snapshot read is stored in the index
  and still current (storage/stored.py): ``stored()`` says so.
- ``committed(before, after, rows)``: a write of the owner's has committed,
  which found the changes counted at ``before`` and left them at ``after``;
  ``rows`` are the (id, signed fingerprint) it wrote, or None when unknown
  (too many to list, or a rebuild): applied to the snapshot if nobody else
  wrote since it was read (``before`` is its stamp), or the snapshot is let go.

``hold=False`` holds nothing, ever; ``hold=True`` holds from the first
probed query; ``None`` (the default) when it pays, as above.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from simindex.costs import HOLD_S_PER_ROW, STORED_S_PER_ROW
from simindex.fingerprint import to_unsigned
from simindex.snapshot import Snapshot

HOLD_FIRST_S = 0.05  # database time before the index's size is first asked
HOLD_MAX_ROWS = (
    20_000_000  # bigger indexes stay in the database (~70 bytes a row held, ~135
    # with a signature, ~215 once text queries ask for band keys: Snapshot.meeting)
)
HOLD_MAX_FACTOR = 16.0  # how far writes that come often push the next read back
# Rows the owner writes are applied to the snapshot (Snapshot.add) in writes
# of up to APPLIED_MAX rows (a larger one lets it go), and compared one by one
# up to ADDED_MAX of them (or a 64th of the snapshot, to 65,536; ~3 ns a row,
# so 44 us a query at 15,000); past that they are merged into its tables
# (0.44 s at a million, one-off timing). A 64th is about where the costs balance.
APPLIED_MAX = 1 << 16
ADDED_MAX = 4096


class Stamp(NamedTuple):
    """What a held snapshot is current at: the index's generation and the
    changes its database has counted, read together. Any pair of the two
    will do (storage's Versions is one, read from the database): stamps
    compare as the tuples they are."""

    generation: int
    changes: int


@dataclass
class Rent:
    """The ski-rental account: database time spent by probed queries since
    the last read, and what the last snapshot cost and saved."""

    spent: float = 0.0
    queries: int = 0
    served: int = 0  # queries the current snapshot answered
    per_query: float = 0.0  # what the database cost a query, before the last read
    load_seconds: float = 0.0  # what the last read cost
    factor: float = 1.0  # the next rent, times the index's reading cost
    rent: float | None = None  # the database time the next read waits for (None: HOLD_FIRST_S)


@dataclass
class Accelerator:
    """Fingerprints held in memory for one index, shared by its threads."""

    hold: bool | None = None
    snapshot: Snapshot | None = None
    stamp: Stamp | None = None  # what the snapshot is current at
    account: Rent = field(default_factory=Rent)
    reading: bool = False  # one thread is reading the index in (the others ask the database)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    @property
    def nbytes(self) -> int:
        """The memory the held snapshot takes (0 when nothing is held)."""
        snapshot = self.snapshot
        return 0 if snapshot is None else snapshot.nbytes

    def current(self, versions: tuple[int, int] | None) -> Snapshot | None:
        """The held snapshot if it is still what the index holds: the
        versions read now (one statement) are its stamp, so no change has
        been counted since but the owner's, applied. Else None, and a stale
        snapshot is let go."""
        with self._lock:
            snapshot, stamp = self.snapshot, self.stamp
            if snapshot is None or stamp is None:
                return None
            if versions != stamp:
                self._let_go()
                return None
            self.account.served += 1
            return snapshot

    def _let_go(self) -> None:
        """Drop the snapshot. Did it pay? If the queries it answered would have
        cost less in the database than reading it did, wait twice as long
        before the next (writes come often here); if it paid, half as long."""
        account = self.account
        paid = account.served * account.per_query >= account.load_seconds
        account.factor = (
            max(1.0, account.factor / 2) if paid else min(HOLD_MAX_FACTOR, account.factor * 2)
        )
        self.snapshot = self.stamp = None

    def drop(self) -> None:
        """Let the snapshot go without judging it (a rebuild, a compaction)."""
        with self._lock:
            self.snapshot = self.stamp = None

    def charge(
        self,
        seconds: float,
        size: Callable[[], int],
        stored: Callable[[], bool] = lambda: False,
    ) -> bool:
        """A probed query spent `seconds` in the database. True when it is time
        to read the index into memory: once the time spent reaches what reading
        it costs (``size()`` rows at HOLD_S_PER_ROW, or STORED_S_PER_ROW where
        ``stored()`` says the last snapshot read is stored and current; times
        the factor), or at once with hold=True. Queries then cost at most about
        twice what the better of the two ways would have, whatever the mix of
        reads and writes."""
        if self.hold is False:
            return False
        with self._lock:
            if self.reading or self.snapshot is not None:  # one read at a time, one copy
                return False
            account = self.account
            account.spent += seconds
            account.queries += 1
            rent = HOLD_FIRST_S if account.rent is None else account.rent
            if self.hold is None and account.spent < rent:
                return False
            rows = size()
            per_row = STORED_S_PER_ROW if rows <= HOLD_MAX_ROWS and stored() else HOLD_S_PER_ROW
            account.rent = (
                rows * per_row * account.factor if rows <= HOLD_MAX_ROWS else float("inf")
            )
            self.reading = bool(self.hold) or account.spent >= account.rent
            return self.reading

    def failed(self) -> None:
        """The read that charge asked for did not happen (an error)."""
        with self._lock:
            self.reading = False

    def never(self) -> None:
        """The database gives no way to tell a snapshot is current: never hold."""
        with self._lock:
            self.account.rent = float("inf")
            self.reading = False

    def install(
        self, snapshot: Snapshot, stamp: tuple[int, int] | None, load_seconds: float
    ) -> None:
        """Hold a snapshot just read (under `stamp`; None: it cannot be kept)."""
        with self._lock:
            self.reading = False
            if self.hold is False or stamp is None:
                return
            account = self.account
            account.per_query = account.spent / max(1, account.queries)
            account.load_seconds = load_seconds
            account.spent, account.queries, account.served = 0.0, 0, 0
            self.snapshot, self.stamp = snapshot, Stamp(*stamp)

    def replace(self, old: Snapshot, new: Snapshot) -> None:
        """The held snapshot `old` with its added rows merged in (`new`)."""
        with self._lock:
            if self.snapshot is old:
                self.snapshot = new

    def committed(
        self, before: int | None, after: int | None, rows: Sequence[tuple[int, int]] | None
    ) -> None:
        """A write transaction of the owner has committed, which found the
        changes counted at `before` and left them at `after`: bring the
        snapshot up to date with the rows it wrote ((id, signed fingerprint)
        of every key written; None when unknown), or let it go."""
        with self._lock:
            snapshot, stamp = self.snapshot, self.stamp
            if snapshot is None or stamp is None:
                return
            if before is None or after is None or rows is None or stamp.changes != before:
                self.snapshot = self.stamp = None  # someone else wrote too, or too much
                return
            if rows:
                snapshot.add([i for i, _ in rows], [to_unsigned(f) for _, f in rows])
                limit = max(ADDED_MAX, min(len(snapshot.ids) // 64, 1 << 16))
                if len(snapshot.added_ids) > limit:
                    self.snapshot = snapshot.merged()
            self.stamp = stamp._replace(changes=after)

    @property
    def wants_rows(self) -> bool:
        """Whether a write should list the rows it wrote (a snapshot is held)."""
        return self.snapshot is not None

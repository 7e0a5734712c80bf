"""What a large load sets aside while it writes, and puts back before it commits.

Some parts of the fingerprint table cost a load per row: the lookup indexes
(each row inserted into every one of them), SQLite's triggers that count
changes and those that mark rows with short sets (each runs for every row,
about as much again as the row). A load past a size sets such a part aside
once, the first time its rows reach the part's size, writes, and puts it
back at the end, all inside the load's transaction: readers keep seeing the
table as it was, and other writers wait on the write lock. One ``Aside`` a
part, each with the size past which it pays (measured: the comments below),
its own way to set itself aside and put itself back, and what each chunk
written meanwhile owes it; ``Load`` runs them for Store.put_stream.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection

# Rows into one transaction before the lookup indexes are set aside (and
# more than the table holds: remaking them costs a pass over every row).
FAST_LOAD_MIN = 20_000
# Rows before the triggers that count changes are set aside (SQLite: ~7 us
# a row; making them again costs about a millisecond).
COUNT_ASIDE_MIN = 5_000
# Rows before the triggers that mark short sets are set aside (SQLite), the
# load marking what it wrote itself (short_sets.mark_updated, mark_loaded).
MARK_ASIDE_MIN = 1_000
# A first chunk this large into an empty PostgreSQL table starts a load
# COPYed straight in (copying.Copying.begin_fresh_load): 3x the rows a second
# of the usual path at a million.
FRESH_LOAD_MIN = 1_000


@dataclass
class Aside:
    """One part of the table a load sets aside.

    ``rows``: the load's rows past which it pays (a function: asked once,
    when the load first reaches ``floor`` rows, e.g. for the table's size).
    ``take(conn)`` sets it aside and returns what putting it back needs, or
    None where there is nothing to set aside (this database runs it cheaply).
    ``chunk(conn, keys, taken)``: what a chunk written meanwhile owes it.
    ``give_back(conn, taken)`` puts it back before the load commits.
    """

    name: str
    floor: int
    take: Callable[[Connection], Any]
    give_back: Callable[[Connection, Any], None]
    chunk: Callable[[Connection, Sequence[str], Any], None] | None = None
    rows: Callable[[], int] | None = None
    _needed: int | None = field(default=None, init=False)

    def due(self, loaded: int) -> bool:
        """Whether a load of ``loaded`` rows so far (the next chunk's
        included) has passed this part's size."""
        if loaded < self.floor:
            return False
        if self._needed is None:
            self._needed = max(self.floor, self.rows()) if self.rows else self.floor
        return loaded >= self._needed


class Load:
    """The parts set aside by one load, in the order taken; put back in the
    reverse order by ``end``."""

    def __init__(self, conn: Connection, asides: Sequence[Aside]) -> None:
        self.conn = conn
        self.waiting = list(asides)
        self.taken: list[tuple[Aside, Any]] = []
        self.loaded = 0

    def take(self, aside: Aside) -> None:
        """Set ``aside`` aside now, whatever the size (a load that needs it)."""
        self.waiting.remove(aside)
        taken = aside.take(self.conn)
        if taken is not None:
            self.taken.append((aside, taken))

    def before(self, rows: int) -> None:
        """Before a chunk of ``rows`` rows is written: set aside what the
        load has now grown past."""
        self.loaded += rows
        for aside in [a for a in self.waiting if a.due(self.loaded)]:
            self.take(aside)

    def after(self, keys: Sequence[str]) -> None:
        """After a chunk of these keys is written: what it owes each part set aside."""
        for aside, taken in self.taken:
            if aside.chunk is not None:
                aside.chunk(self.conn, keys, taken)

    def end(self) -> None:
        """Put back every part set aside, the last taken first."""
        for aside, taken in reversed(self.taken):
            aside.give_back(self.conn, taken)
        self.taken.clear()

"""What every read and write of a SimIndex is done under: a View of the index.

A ``View`` is the index's settings, the ``Store`` compiled for them, and the
generation of the database at which they are the file's; it never changes.
``Views`` holds the current one and replaces it whole when the index
changes under it (another process or another SimIndex rebuilt it, or a
schema change moved its generation).

The one rule that keeps answers right whatever else writes the index:

- every read names the generation it expects (its view's), and the
  statement that reads the rows also reads the generation; where they
  differ, storage raises ``storage.Changed``;
- ``Views.read`` runs a read in one loop: on ``Changed``, or on a
  StorageError while the generation moved, it takes the index as it is now
  (``Views.moved``) and asks again. Nothing else retries.

Writes go through ``Views.writing``: inside the write transaction the view
is made the file's first, the passages' stamp is carried over the write
where the index keeps them (storage/passages.py), and once the write has
committed the accelerator hears what it wrote.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy import Connection

from simindex import storage
from simindex.accelerator import Accelerator
from simindex.errors import NotAnIndexError, StorageError
from simindex.storage.passages import Passages

T = TypeVar("T")


@dataclass(frozen=True)
class View:
    """The index as one read sees it."""

    settings: storage.Settings
    store: storage.Store
    generation: int | None  # None: not read yet (the first read takes the file's)


def _same(a: storage.Settings, b: storage.Settings) -> bool:
    """Whether a Store made for ``b`` serves ``a``: the same layout and
    configuration, and the same triggers there (a Store trusts a held or
    stored snapshot only while the database counts every change: the
    moment they are dropped or disabled, its holder lets go)."""
    return a == b and (a.counting, a.marking) == (b.counting, b.marking)


class Views:
    """The current View of one index, shared by its SimIndex's threads."""

    def __init__(
        self,
        backend: storage.Backend,
        where: storage.Location,
        accel: Accelerator,
        settings: storage.Settings,
    ) -> None:
        self.backend = backend
        self.where = where
        self.accel = accel
        # An in-memory database is one connection: its users take turns
        # (held across a read's retries and a write and what it tells the
        # accelerator, so no other thread comes between).
        self.lock = backend.turns
        self._swap = threading.Lock()  # one thread replaces the view at a time
        self.passages = Passages(backend)  # (the same whatever the layout)
        self._view = View(settings, self._store_for(settings), None)
        self.refresh()

    @property
    def current(self) -> View:
        return self._view

    def _store_for(self, settings: storage.Settings) -> storage.Store:
        return storage.Store(
            self.backend,
            settings.layout,
            counted=settings.counting,
            set_keys=settings.marking,
        )

    def _take(self, conn: Connection, seen: View) -> bool:
        """Make the view the file's as `conn` reads it; True if a read under
        `seen` must be asked again (the generation or the view moved)."""
        generation = self.backend.generation(conn)
        if generation == seen.generation and seen is self._view:
            return False
        settings = storage.settings_now(self.backend, conn)
        if settings is None:
            raise NotAnIndexError(f"{self.where} is no longer an index")
        with self._swap:
            current = self._view
            if _same(settings, current.settings):  # only the generation moved
                self._view = View(current.settings, current.store, generation)
            else:
                # The old Store is not closed here: another thread may be
                # reading through it this moment; it closes when it goes.
                self._view = View(settings, self._store_for(settings), generation)
                self.accel.drop()  # held under the old layout
        return True

    def moved(self, seen: View) -> bool:
        """Whether the index is no longer what `seen` says (then the view
        becomes what it is now)."""
        with self.backend.reading() as conn:
            return self._take(conn, seen)

    def refresh(self) -> View:
        """The current view, made the file's first."""
        self.moved(self._view)
        return self._view

    def adopt(self, settings: storage.Settings) -> None:
        """After a rebuild through this object: its settings, with a new Store;
        the generation is taken (with the file's settings) by the next read."""
        with self._swap:
            self._view = View(settings, self._store_for(settings), None)
            self.accel.drop()
        self.refresh()

    def read(self, read: Callable[[View], T]) -> T:
        """``read(view)`` under the current view, asked again (under the new
        one) for as long as the index changes under it: the one retry rule."""
        with self.lock:
            while True:
                view = self._view
                try:
                    return read(view)
                except storage.Changed:
                    self.moved(view)
                except StorageError:  # e.g. a column a new layout dropped
                    if not self.moved(view):
                        raise

    @contextlib.contextmanager
    def writing(
        self, *, alone: bool = False, fresh: bool = True
    ) -> Iterator[tuple[storage.Write, View]]:
        """Every write transaction of the index: it holds the write lock from
        its start (``alone``: on PostgreSQL, no other writer either), makes
        the view the file's first (``fresh``), counts the write as its last
        statement (see storage.Backend.write), and once it has committed
        tells the accelerator what it wrote (``Write.rows``). In an index
        that keeps passages, every write keeps them its rows' (the caller
        writes them) and moves their stamp with the count, if they were the
        index's when it began (Passages.begin and end)."""
        with self.lock:
            with self.backend.write(alone=alone) as write:
                if fresh:
                    self._take(write.conn, self._view)
                passages = self._view.settings.passages
                kept = self.passages.begin(write.conn) if passages else None
                yield write, self._view
                self._view.store.sets_written(write.conn)
                if passages:
                    self.passages.end(write.conn, kept)
            self.accel.committed(write.before, write.after, write.rows)

    def close(self) -> None:
        self._view.store.close()

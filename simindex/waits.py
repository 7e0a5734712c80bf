"""Waits a person should hear of: a write waiting for another writer's lock.

SQLite waits for a lock inside one call (its busy timeout) and PostgreSQL
inside one statement, which tells nobody; so the storage layer wraps each
wait for the write lock in ``noted``, and once a wait has lasted NOTE_AFTER_S
every listener hears of it, once a wait: the ``simindex`` command listens
and says so on stderr. With no listener (an application embedding the
index) ``noted`` starts nothing. Standard library only (and simindex.listeners).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

from simindex.listeners import Listeners

NOTE_AFTER_S = 2.0  # a wait for another writer's lock is told once it is this long

# listener(where, timeout): a wait for the write lock on ``where`` has lasted
# NOTE_AFTER_S and may last up to ``timeout`` seconds.
Listener = Callable[[str, float], None]

_listeners: Listeners[Listener] = Listeners()
listen = _listeners.listen  # listen(listener): tell it of every long wait
unlisten = _listeners.unlisten


@contextlib.contextmanager
def noted(where: object, timeout: float) -> Iterator[Callable[[], None]]:
    """Around a wait for a lock on ``where`` (an index's location, told as
    its str) of up to ``timeout`` seconds: if it lasts NOTE_AFTER_S, the
    listeners hear of it. Yields what to call the moment the lock is taken
    (the wait is over before the block ends)."""
    if not _listeners or timeout <= NOTE_AFTER_S:
        yield lambda: None
        return
    timer = threading.Timer(NOTE_AFTER_S, lambda: _listeners.tell(str(where), timeout))
    timer.daemon = True
    timer.start()
    try:
        yield timer.cancel
    finally:
        timer.cancel()

"""Telling whoever waits that numba is compiling simindex's loops.

The compiled modules (simindex.fastmarks, simindex.compiled) compile their
loops the first time a process uses them: numba takes seconds to do it
(COMPILE_S in each), once a machine, as it keeps the machine code in its
cache (beside the modules, in __pycache__, or in NUMBA_CACHE_DIR), and a
later process loads it from there in well under a second. They compile
inside ``step``, which tells the listeners when numba's cache does not
already hold the code: the simindex command registers one that says so on
its progress bar, or in a Note. A worker process tells its parent's
listeners (simindex.ingest.workers relays them).

Nothing here imports numba, or anything else of simindex's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple


class Compiling(NamedTuple):
    """What numba compiles, and about how long it takes."""

    what: str  # "the fast path"
    seconds: int  # about how long, the first time

    def note(self) -> str:
        return f"compiling {self.what} (once, about {self.seconds} s)"


# Told (what, True) when numba starts compiling and (what, False) when it is
# done; from whichever thread compiles.
Listener = Callable[[Compiling, bool], None]

_lock = threading.Lock()
_listeners: list[Listener] = []


def listen(listener: Listener) -> None:
    """Tell ``listener`` whenever numba compiles (once, however often called)."""
    with _lock:
        if listener not in _listeners:
            _listeners.append(listener)


def unlisten(listener: Listener) -> None:
    with _lock:
        if listener in _listeners:
            _listeners.remove(listener)


def listened() -> bool:
    """Whether anyone listens (a worker pool relays its workers' compiles only then)."""
    return bool(_listeners)


def tell(event: Compiling, begun: bool) -> None:
    """Tell every listener (``step`` does; so does the relay from a worker)."""
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(event, begun)


@contextmanager
def step(event: Compiling, functions: Iterable[Any]) -> Iterator[None]:
    """Around the first call of numba ``functions``: the listeners are told
    while it runs, unless numba's cache holds their code already (or nobody
    listens)."""
    if not _listeners or all(cached(f) for f in functions):
        yield
        return
    tell(event, True)
    try:
        yield
    finally:
        tell(event, False)


def cached(function: Any) -> bool:
    """Whether numba's cache holds machine code for a numba function compiled
    from its source as it is now (numba's index of the function, which it
    finds empty when the source changed). False where that cannot be read:
    then the listeners are told, at worst of a compile that takes a second."""
    try:
        return bool(function._cache._cache_file._load_index())
    except Exception:
        return False

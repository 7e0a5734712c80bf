"""Listeners: whom a module tells of something a person should hear of.

simindex.waits (a write waiting for another writer's lock) and
simindex.compiling (numba compiling) each keep one ``Listeners``: the
``simindex`` command listens while it runs, an application may, and the
module tells them from whichever thread noticed. Standard library only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

L = TypeVar("L", bound=Callable[..., None])


class Listeners(Generic[L]):
    """Callables told of an event, each once however often it listens;
    safe to change from any thread while another tells them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._listeners: list[L] = []

    def listen(self, listener: L) -> None:
        """Tell ``listener`` from now on (once, however often called)."""
        with self._lock:
            if listener not in self._listeners:
                self._listeners.append(listener)

    def unlisten(self, listener: L) -> None:
        """Tell ``listener`` no more (nothing if it was not listening)."""
        with self._lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def __bool__(self) -> bool:
        """Whether anyone listens (read without the lock: a hint, as it may change)."""
        return bool(self._listeners)

    def tell(self, *args: object) -> None:
        """Call every listener with ``args`` (those listening when it begins)."""
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener(*args)

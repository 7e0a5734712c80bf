"""The one loader of simindex's compiled code, and telling whoever waits
that numba is compiling it.

Two users load compiled code through ``load``: simindex.fastmarks (the
text pass, simindex/_marks.py) and simindex.compiled (the loops of all
pairs and of streaming dedup's lookups, simindex/_loops.py). It imports
numba once a process (the ImportError remembered: ``why``), imports the
module of loops and has its user run
them once, and keeps what that gives, or None where numba is missing or
cannot compile them here: the user then takes its numpy or Python path.
Nothing else imports numba or catches its ImportError
(tests/test_structure.py checks it).

``use("auto" | "always" | "never")`` is the switch for a process: "auto"
lets each user decide when the compiled code pays (fastmarks after
SWITCH_CHARS characters, all pairs where pairs._chosen prices them cheaper,
streaming dedup past dedup._COMPILED_AFTER documents),
"always" loads it at the first call, and "never" never does (the numpy or
Python path everywhere). A process starts with SIMINDEX_COMPILED from its
environment, else "auto".

numba compiles the loops the first time a process loads them: it takes
seconds (COMPILING in each user says how many), once a machine, as it keeps the machine
code in its cache (beside the modules, in __pycache__, or in
NUMBA_CACHE_DIR), and a later process loads it from there in well under a
second. They compile inside ``step``, which tells the listeners when
numba's cache does not already hold the code: the simindex command
registers one that says so on its progress bar, or in a Note. A worker
process tells its parent's listeners (simindex.ingest.workers relays them).

Nothing here imports numba, or anything else of simindex's but its
listeners (simindex.listeners), until ``load``.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType
from typing import Any, NamedTuple, TypeVar

from simindex.listeners import Listeners

T = TypeVar("T")

ENVIRONMENT = "SIMINDEX_COMPILED"  # the switch a process starts with
MODES = ("auto", "always", "never")


class Compiling(NamedTuple):
    """What numba compiles, and about how long it takes."""

    what: str  # "the fast path"
    seconds: int  # about how long, the first time

    def note(self) -> str:
        return f"compiling {self.what} (once, about {self.seconds} s)"


# Told (what, True) when numba starts compiling and (what, False) when it is
# done; from whichever thread compiles.
Listener = Callable[[Compiling, bool], None]

_listeners: Listeners[Listener] = Listeners()
listen = _listeners.listen  # listen(listener): tell it whenever numba compiles
unlisten = _listeners.unlisten
tell = _listeners.tell  # tell(event, begun): ``step`` does; so does the relay from a worker


def listened() -> bool:
    """Whether anyone listens (a worker pool relays its workers' compiles only then)."""
    return bool(_listeners)


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


# --- the loader ---------------------------------------------------------------------


def _checked(mode: str, where: str) -> str:
    if mode not in MODES:
        raise ValueError(f"{where} is one of {', '.join(MODES)}, not {mode!r}")
    return mode


_state: dict[str, Any] = {
    "mode": _checked(os.environ.get(ENVIRONMENT) or "auto", ENVIRONMENT),
    "numba": None,  # None untried; then True, or the ImportError numba's import raised
    "expected": 0,  # characters of text the process said it is about to read (expect)
}
_loaded: dict[str, Any] = {}  # module of loops -> what its user kept, or None (once tried)
_why: dict[str, BaseException] = {}  # module of loops -> why it did not load
_load_lock = threading.Lock()


def use(mode: str) -> None:
    """Set the switch for this process: ``"auto"`` (each user decides when
    compiled code pays), ``"always"`` (compiled from the first call, where
    it loads) or ``"never"`` (the numpy or Python path everywhere)."""
    _state["mode"] = _checked(mode, "mode")


def expect(chars: int) -> None:
    """Say this process is about to fingerprint about ``chars`` characters,
    until it says otherwise (0: nothing known): with the switch at "auto",
    the text pass turns on at its first text for a job of
    fastmarks.SWITCH_CHARS or more. The simindex command says it of its
    sources' bytes, and 0 as each command begins."""
    _state["expected"] = max(0, chars)


def expected() -> int:
    """What ``expect`` was last told (0: nothing)."""
    chars: int = _state["expected"]
    return chars


def mode() -> str:
    """The switch as this process has it (see ``use``)."""
    mode: str = _state["mode"]
    return mode


def tried(module: str) -> bool:
    """Whether ``load`` has tried ``module`` in this process (loaded or not)."""
    return module in _loaded


def why(module: str) -> BaseException | None:
    """Why ``module`` did not load: numba's ImportError, or what compiling
    or running its loops raised; None where it loaded or was not tried."""
    return _why.get(module)


def load(
    module: str, entries: Sequence[str], event: Compiling, warm: Callable[[ModuleType], T]
) -> T | None:
    """What ``warm(loops)`` gives, ``loops`` being ``module`` (which
    imports numba) imported: warm runs its ``entries`` once, so a failure to
    compile shows now, while the listeners are told (``step``). Once a
    process; None with the switch at "never", without numba, or where
    compiling or running them failed (``why`` says which)."""
    if _state["mode"] == "never":
        return None
    if module in _loaded:  # (no lock once tried: the hot path asks every call)
        got: T | None = _loaded[module]
        return got
    with _load_lock:
        if module not in _loaded:
            try:
                _numba()
                loops = importlib.import_module(module)
                with step(event, [getattr(loops, name) for name in entries]):
                    _loaded[module] = warm(loops)
            except Exception as exc:  # numba missing, or unusable here: the other path
                _why[module] = exc
                _loaded[module] = None
        got = _loaded[module]
        return got


def _numba() -> None:
    """Import numba, once a process: raise the ImportError it raised, every time."""
    if _state["numba"] is None:
        try:
            import numba  # noqa: F401
        except ImportError as exc:
            _state["numba"] = exc
        else:
            _state["numba"] = True
    if _state["numba"] is not True:
        raise _state["numba"]

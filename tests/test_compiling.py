"""simindex.compiling, the one loader of compiled code: the switch a
process starts with (SIMINDEX_COMPILED) reaches both of its users, the text
pass (simindex.fastmarks) and the all-pairs loops (simindex.compiled), and
numba's import error is remembered once for both."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from simindex import compiled, compiling, fastmarks
from simindex.fingerprint import DEFAULT_CONFIG
from tests.helpers import compiled_or_skip

# Run in a child process (the switch is read when simindex.compiling is
# imported): fingerprints a text and pairs a thousand fingerprints by a plan
# the compiled loops take, with compiled=None and compiled=True, each path
# spied on, and prints which ran.
CHILD = """
import json, sys
import numpy as np
from simindex import compiling, fastmarks, pairs, signature
from simindex.fingerprint import DEFAULT_CONFIG

ran = {"python pass": 0, "compiled pairs": 0}
one_pass, table = signature.one_pass, pairs._compiled_table
def python_pass(*args):
    ran["python pass"] += 1
    return one_pass(*args)
def compiled_table(*args):
    ran["compiled pairs"] += 1
    return table(*args)
signature.one_pass, pairs._compiled_table = python_pass, compiled_table

made = signature.fingerprint_and_signature("a text of a few words, " * 10, DEFAULT_CONFIG)
fps = np.random.default_rng(1).integers(0, 2**63, 1000, dtype=np.int64).astype(np.uint64)
fps[1] = fps[0] ^ 5
plan = pairs.pairs_plan(len(fps), 3, per_table=None, compiled=True)
found = [pairs.pairs_within(fps, 3, plan=plan, compiled=c)[0].size for c in (None, True)]
print(json.dumps({
    "mode": compiling.mode(),
    "ran": ran,
    "found": found,
    "tables": len(plan.masks),
    "available": fastmarks.available(),
    "numba imported": "numba" in sys.modules,
}))
"""


def child(mode: str) -> dict[str, Any]:
    import json

    env = {**os.environ, compiling.ENVIRONMENT: mode}
    done = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_never_from_the_environment_takes_the_python_and_numpy_paths_everywhere() -> None:
    """SIMINDEX_COMPILED=never: the text pass is Python's and the pairs
    numpy's, even where asked for compiled (compiled=True), and numba is
    never imported."""
    got = child("never")
    assert got["mode"] == "never"
    assert got["ran"] == {"python pass": 1, "compiled pairs": 0}
    assert got["found"] == [1, 1]
    assert not got["available"] and not got["numba imported"]


def test_always_from_the_environment_compiles_from_the_first_call() -> None:
    """SIMINDEX_COMPILED=always: the first text takes the compiled pass (no
    SWITCH_CHARS first), and a thousand fingerprints pair compiled (the
    price of loading the loops not asked)."""
    compiled_or_skip()
    got = child("always")
    assert got["mode"] == "always"
    assert got["ran"] == {"python pass": 0, "compiled pairs": 2 * got["tables"]}
    assert got["found"] == [1, 1] and got["available"]


def test_auto_from_the_environment_waits_for_what_pays() -> None:
    got = child("auto")
    compiled_pairs = got["tables"] if got["available"] else 0  # compiled=True only
    assert got["ran"] == {"python pass": 1, "compiled pairs": compiled_pairs}


def test_a_switch_it_does_not_know_is_an_error() -> None:
    env = {**os.environ, compiling.ENVIRONMENT: "sometimes"}
    done = subprocess.run(
        [sys.executable, "-c", "import simindex.compiling"], env=env, capture_output=True, text=True
    )
    assert done.returncode == 1
    assert "ValueError: SIMINDEX_COMPILED is one of auto, always, never, not 'sometimes'" in (
        done.stderr
    )
    with pytest.raises(ValueError, match="mode is one of auto, always, never, not 'on'"):
        compiling.use("on")


def test_numbas_import_error_is_remembered_once_for_both_users(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without numba neither user loads, each says why (the one ImportError),
    and numba's import is tried once."""
    tries: list[str] = []
    missing = ImportError("No module named 'numba'")

    def numba() -> None:
        tries.append("numba")
        raise missing

    monkeypatch.setattr(compiling, "_loaded", {})
    monkeypatch.setattr(compiling, "_why", {})
    monkeypatch.setitem(compiling._state, "mode", "always")
    monkeypatch.setitem(compiling._state, "numba", None)  # (not tried yet)
    monkeypatch.setattr("builtins.__import__", _refusing(numba))
    assert compiled.kernels() is None and not fastmarks.available()
    assert compiled.kernels() is None and not fastmarks.available()
    assert compiling.why("simindex._loops") is missing
    assert compiling.why("simindex._marks") is missing
    assert tries == ["numba"]  # remembered: not imported again
    assert fastmarks.marks("a few words", DEFAULT_CONFIG, _probes()) is None


def test_never_leaves_what_was_loaded_unused(monkeypatch: pytest.MonkeyPatch) -> None:
    """use("never") after a load: neither user runs compiled code until the
    switch moves again."""
    compiled_or_skip()
    monkeypatch.setitem(compiling._state, "mode", "always")
    assert compiled.kernels() is not None and fastmarks.available()
    compiling.use("never")
    assert compiled.kernels() is None and not fastmarks.available()
    assert fastmarks.marks("a few words", DEFAULT_CONFIG, _probes()) is None
    compiling.use("always")
    assert compiled.kernels() is not None and fastmarks.available()


def _probes() -> Any:
    from simindex.signature import _probes

    return _probes()


def _refusing(numba: Any) -> Any:
    """__import__, but numba's import calls ``numba`` (which raises)."""
    real = __import__

    def importing(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "numba" or name.startswith("numba."):
            numba()
        return real(name, *args, **kwargs)

    return importing

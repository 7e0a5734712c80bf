"""The benchmark scripts still run (tiny sizes; the figures are not checked).

Slow, so it runs with ``pytest -m slow`` (as .ci/run does). bench/peers.py
carries on without the peers it cannot import, so it runs without the
optional extra too.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .conftest import ROOT

pytestmark = pytest.mark.slow


def test_foundation_benchmark_runs_and_is_exact() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "bench/foundation.py",
            "--n",
            "3000",
            "--queries",
            "100",
            "--repeat",
            "1",
            "--text-mb",
            "0.2",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)


def test_peers_benchmark_quick_run() -> None:
    out = subprocess.run(
        [sys.executable, "bench/peers.py", "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert "exact: yes" in out.stdout


def test_batch_benchmark_runs_and_is_exact() -> None:
    out = subprocess.run(
        [sys.executable, "bench/batch.py", "--n", "5000", "--queries", "600"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert "exact: yes" in out.stdout

"""The built wheel works on its own: a fresh virtualenv outside the checkout.

Slow (it builds a wheel and installs the dependencies), so it runs with
``pytest -m slow``, which .ci/run does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from .conftest import ROOT

pytestmark = pytest.mark.slow


def run(args: list[str], cwd: Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]


def test_wheel_installs_and_runs_outside_the_checkout(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    built = run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(dist), str(ROOT)], tmp_path
    )
    assert built.returncode == 0, built.stderr
    wheel = next(dist.glob("simindex-*.whl"))

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    installed = run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)], tmp_path)
    assert installed.returncode == 0, installed.stderr

    work = tmp_path / "elsewhere"
    work.mkdir()
    simindex = str(bin_dir / "simindex")
    # The migrations come from inside the installed package, not the checkout.
    where = run(
        [
            str(bin_dir / "python"),
            "-c",
            "from simindex import storage; print(storage.migrations_dir())",
        ],
        work,
    )
    assert where.returncode == 0, where.stderr
    assert "site-packages" in where.stdout and str(ROOT) not in where.stdout

    added = run([simindex, "add", "docs.db", str(ROOT / "examples" / "news.jsonl"), "--json"], work)
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["count"] == 36

    found = run(
        [simindex, "query", "docs.db", "--json", "你妈妈喊你回家吃饭哦，回家罗回家罗"], work
    )
    assert found.returncode == 1  # nothing like it stored yet
    run(
        [
            simindex,
            "add",
            "docs.db",
            "--key",
            "dinner",
            "--text",
            "你妈妈喊你回家吃饭哦，回家罗回家罗",
        ],
        work,
    )
    # One character changed: 5 bits away with the default configuration; the
    # two share 8 of their 10 distinct characters (a Jaccard of 0.8), and
    # being short texts one unit apart, their similarity is 15/17: a copy at
    # the default threshold, not at 0.9.
    query = [simindex, "query", "docs.db", "--json", "--k", "5"]
    found = run([*query, "你妈妈喊你回家吃饭啦，回家罗回家罗"], work)
    assert found.returncode == 0, found.stderr
    match = json.loads(found.stdout)["matches"][0]
    assert match["key"] == "dinner" and match["similarity"] == 15 / 17
    assert (
        run([*query, "--threshold", "0.9", "你妈妈喊你回家吃饭啦，回家罗回家罗"], work).returncode
        == 1
    )

    bad = run([simindex, "query", "docs.db", "--k", "65", "x"], work)
    assert bad.returncode == 2 and bad.stderr.startswith("Error:") and "Traceback" not in bad.stderr

"""The CLI's safety rules, found by trying the installed command as a new user
would (issue 12): what a command may write, what a failed run leaves behind,
how keys are printed, Ctrl-C, --workers, the progress bar's rate, how files
are keyed, the text/file convention of fingerprint, distance and explain, and
an index inside the folder being added.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .test_cli import ROOT, T1, T2, T3, T4

TEXTS = [T1, T2, T3, T4]


def write_corpus(path: Path, n: int = 4, broken_at: int | None = None) -> bytes:
    """A JSON Lines corpus: T1..T4 and a near-duplicate of each after them;
    a line that is not JSON at line `broken_at`."""
    lines = [json.dumps({"id": f"d{i}", "text": TEXTS[i % 4]}) for i in range(n)]
    lines += [json.dumps({"id": f"d{i}.copy", "text": TEXTS[i % 4] + "!"}) for i in range(n)]
    if broken_at is not None:
        lines.insert(broken_at - 1, '{"id": "broken", ')
    data = ("\n".join(lines) + "\n").encode("utf-8")
    path.write_bytes(data)
    return data


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


# --- 9. Ctrl-C ------------------------------------------------------------------


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(ROOT)
    return env


def test_the_entry_module_imports_nothing_heavy() -> None:
    code = (
        "import sys, simindex.__main__; "
        "print(sorted(m for m in ('numpy', 'xxhash', 'sqlalchemy', 'typer', 'rich', "
        "'simindex.fingerprint', 'simindex.cli') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_child_env(), timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_command_is_the_entry_module_and_python_m_simindex_works() -> None:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '\nsimindex = "simindex.__main__:main"\n' in text
    done = subprocess.run(
        [sys.executable, "-m", "simindex", "-h"],
        capture_output=True,
        text=True,
        env=_child_env(),
        timeout=60,
    )
    assert done.returncode == 0 and "Usage" in done.stdout, done.stderr


# The child says when the entry module is imported (what Python and the
# installer's script run before it is out of simindex's hands), then runs the
# command as the installed script does; it blocks reading stdin, so every delay
# lands somewhere between its first import and its reading.
_CHILD = (
    "import sys; from simindex.__main__ import main; "
    "sys.stderr.write('ready\\n'); sys.stderr.flush(); sys.argv[0] = 'simindex'; main()"
)
FAST_DELAYS = [0.0, 0.05, 0.15]
SLOW_DELAYS = [0.002, 0.01, 0.02, 0.03, 0.07, 0.1, 0.12, 0.2, 0.25, 0.3, 0.6]


@pytest.mark.parametrize(
    "delay", [*FAST_DELAYS, *(pytest.param(d, marks=pytest.mark.slow) for d in SLOW_DELAYS)]
)
def test_ctrl_c_at_any_moment_is_one_line_and_exit_130(tmp_path: Path, delay: float) -> None:
    index = tmp_path / "ix.db"
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, "add", str(index), "-", "--key", "k"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_child_env(),
    )
    try:
        assert child.stderr is not None and child.stderr.readline() == b"ready\n"
        time.sleep(delay)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    shown = err.decode("utf-8", "replace")
    assert child.returncode == 130, shown
    assert "Traceback" not in shown
    assert len(shown.splitlines()) == 1 and shown.startswith("Interrupted"), shown
    assert out == b""
    assert not index.exists()  # the new index the add had created is gone too

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
import unicodedata
from pathlib import Path

import pytest

from .test_cli import ROOT, T1, T2, T3, T4, contents, error, ok

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


# --- 6. keys in tab-separated output ------------------------------------------

ODD_KEYS = [
    "plain",
    "with space",
    "tab\there",
    "new\nline",
    "carriage\rreturn",
    "nul\x00here",
    "back\\slash",
    "ansi \x1b[31mred\x1b[0m",
    "bell\x07 del\x7f c1\x85",
    "colon:7",
    "中文 key",
]


def unescape(field: str) -> str:
    """Read a field of the CLI's tab-separated output back (the test's own reader)."""
    out, i = [], 0
    simple = {"t": "\t", "n": "\n", "r": "\r", "0": "\x00", "\\": "\\"}
    while i < len(field):
        c = field[i]
        if c != "\\":
            out.append(c)
            i += 1
        elif field[i + 1] in simple:
            out.append(simple[field[i + 1]])
            i += 2
        else:
            assert field[i + 1] == "x", field
            out.append(chr(int(field[i + 2 : i + 4], 16)))
            i += 4
    return "".join(out)


def test_escaped_writes_every_control_character_visibly_and_reads_back() -> None:
    from simindex.cli import escaped

    assert escaped("plain key/with:colons.txt") == "plain key/with:colons.txt"
    assert escaped("a\tb\nc\rd\x00e\\f") == "a\\tb\\nc\\rd\\0e\\\\f"
    assert escaped("\x1b[31m\x07\x7f\x85\x9f") == "\\x1b[31m\\x07\\x7f\\x85\\x9f"
    assert escaped("中文 \u00a0é") == "中文 \u00a0é"
    every = "".join(map(chr, range(0x250))) + "\\x41"
    shown = escaped(every)
    assert unescape(shown) == every
    assert not any(unicodedata.category(ch) == "Cc" for ch in shown)
    assert escaped("C:\\x\n", backslash=False) == "C:\\x\\n"  # messages: controls only


@pytest.fixture
def odd(tmp_path: Path) -> Path:
    """An index of ODD_KEYS, all near-duplicates of T1."""
    docs = tmp_path / "odd.jsonl"
    lines = [json.dumps({"id": key, "text": T1 + " " * i + "!"}) for i, key in enumerate(ODD_KEYS)]
    docs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    index = tmp_path / "odd.db"
    ok("add", index, docs, "--quiet")
    assert set(contents(index)) == set(ODD_KEYS)
    return index


def _lines(stdout: str, fields: int | None) -> list[list[str]]:
    assert stdout.endswith("\n")
    assert "\x1b" not in stdout and "\r" not in stdout and "\x00" not in stdout
    assert all(unicodedata.category(ch) != "Cc" or ch in "\t\n" for ch in stdout)
    rows = [line.split("\t") for line in stdout[:-1].split("\n")]
    if fields is not None:
        assert all(len(row) == fields for row in rows), rows
    return rows


def test_query_prints_every_key_escaped_one_line_each(odd: Path) -> None:
    rows = _lines(ok("query", odd, T1).stdout, 2)
    assert sorted(unescape(key) for _, key in rows) == sorted(ODD_KEYS)
    matches = json.loads(ok("query", odd, T1, "--json").stdout)["matches"]
    assert sorted(m["key"] for m in matches) == sorted(ODD_KEYS)  # JSON: the keys as they are


def test_dedup_pairs_print_every_key_escaped(odd: Path) -> None:
    rows = _lines(ok("dedup", odd).stdout, 3)
    pairs = json.loads(ok("dedup", odd, "--json").stdout)["pairs"]
    assert len(pairs) == len(rows) == len(ODD_KEYS) * (len(ODD_KEYS) - 1) // 2
    got = [(int(d), unescape(a), unescape(b)) for d, a, b in rows]
    assert got == [(p["distance"], p["key_a"], p["key_b"]) for p in pairs]


def test_dedup_clusters_separate_members_with_tabs(odd: Path) -> None:
    rows = _lines(ok("dedup", odd, "--clusters").stdout, None)
    clusters = json.loads(ok("dedup", odd, "--clusters", "--json").stdout)["clusters"]
    assert len(rows) == len(clusters) == 1
    canonical, *members = rows[0]
    parsed = [(unescape(key), int(d)) for key, _, d in (m.rpartition(":") for m in members)]
    assert unescape(canonical) == clusters[0]["canonical"]
    assert [[unescape(canonical), 0], *map(list, parsed)] == clusters[0]["members"]
    assert sorted(k for k, _ in parsed) == sorted(set(ODD_KEYS) - {unescape(canonical)})


def test_keys_are_escaped_through_a_pipe_too(odd: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONIOENCODING"] = "utf-8"
    done = subprocess.run(
        [sys.executable, "cli.py", "query", str(odd), T1],
        cwd=ROOT,
        capture_output=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode("utf-8")
    assert "\\x1b[31mred\\x1b[0m" in out  # not stripped, not raw
    assert sorted(unescape(line.split("\t", 1)[1]) for line in out.splitlines()) == sorted(ODD_KEYS)


def test_an_error_naming_an_odd_key_stays_one_line(tmp_path: Path) -> None:
    message = error("add", tmp_path / "ix.db", "--text", "...", "--key", "bad\nkey\x1b[2J")
    assert "bad\\nkey\\x1b[2J" in message


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

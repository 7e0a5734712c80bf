"""The help a user reads, and what starting a command costs.

Every command's ``-h`` is written one way: no types shown as ``<str>``, an
argument by its upper-case name, a default said once, the command list's
summaries whole. ``simindex -h`` and ``--version`` load no part of the
library (no SQLAlchemy, no numpy), and a command loads what it needs, not
what the other commands do: checked by the modules a child process has
loaded, not by timing it (bench/startup.py times it).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from simindex import cli
from tests.helpers import T1, ok

NAMES = [name for name, *_ in cli.COMMANDS]


def helps() -> dict[str, str]:
    """``simindex -h`` and every command's ``-h``, as printed."""
    return {"": ok("-h").stdout} | {name: ok(name, "-h").stdout for name in NAMES}


def test_help_shows_no_types_and_names_arguments_one_way() -> None:
    for name, text in helps().items():
        shown = f"simindex {name} -h".replace("  ", " ")
        assert not re.search(r"<(bool|str|int|float|list\[\w+\])>", text), f"{shown}:\n{text}"
        usage = text.splitlines()[0]
        assert "{" not in usage, f"{shown}: {usage}"
        # After [OPTIONS], arguments in capitals: INDEX, [TEXT], SOURCES...
        for word in usage.split("[OPTIONS]", 1)[-1].split():
            assert re.fullmatch(r"\[?[A-Z][A-Z_]*\]?(\.\.\.)?\]?", word), f"{shown}: {usage}"


def test_a_default_is_said_once() -> None:
    for name, text in helps().items():
        assert "[default:" not in text, f"simindex {name} -h:\n{text}"


def test_the_command_list_shows_each_summary_whole() -> None:
    listing = " ".join(ok("-h").stdout.split("Commands:")[1].split())
    for name, _, _, summary in cli.COMMANDS:
        assert f"{name} {summary}" in listing, name
        assert len(summary) <= 64, f"{name}: a summary longer than a line: {summary!r}"
    assert "..." not in listing


def test_a_flag_shows_no_value() -> None:
    text = ok("fingerprint", "-h").stdout
    assert re.search(r"^\s*-t, --text\s{2,}TEXT is a text", text, flags=re.M), text
    assert re.search(r"^\s*-f, --file\s{2,}TEXT is a file", text, flags=re.M), text
    assert re.search(r"^\s*--json\s{2,}Print JSON", ok("query", "-h").stdout, flags=re.M)


def test_query_k_states_its_range() -> None:
    assert "--k K" in ok("query", "-h").stdout
    assert re.search(r"0-64", ok("query", "-h").stdout)


def test_help_states_the_library_s_defaults() -> None:
    """The options' help says the defaults in words (so showing it imports
    none of the library): they are the library's."""
    from simindex.blocks import DEFAULT_K
    from simindex.cli import options
    from simindex.fingerprint import DEFAULT_CONFIG, WEIGHTINGS
    from simindex.signature import DEFAULT_THRESHOLD, characters_threshold
    from simindex.tokenize import CJK_MODES

    assert options.DEFAULT_K == DEFAULT_K
    assert options.WEIGHTINGS == WEIGHTINGS
    assert DEFAULT_CONFIG.weighting == options.DEFAULT_WEIGHTING
    assert options.DEFAULT_THRESHOLD == DEFAULT_THRESHOLD
    assert f"{characters_threshold(DEFAULT_THRESHOLD):.4f}" == options.CHARACTERS_THRESHOLD
    assert options.CJK_MODES == CJK_MODES
    assert DEFAULT_CONFIG.cjk == options.DEFAULT_CJK


@pytest.mark.parametrize("argv", [["--version"], ["query", "--version"]])
def test_version(argv: list[str]) -> None:
    from importlib.metadata import version

    if argv == ["--version"]:
        assert ok(*argv).stdout == f"simindex {version('simindex')}\n"
    else:  # an option of simindex's own, not of its commands
        assert ok("-h").stdout.count("--version") == 1


# --- what a command loads -------------------------------------------------------------

HEAVY = ("sqlalchemy", "numpy", "pydantic", "rich", "jieba", "numba", "simindex.storage")


def loaded(argv: list[str]) -> dict[str, object]:
    """Run ``simindex ARGV`` in a fresh process; its exit code and which of
    HEAVY (and which command modules) it had loaded when it ended."""
    code = (
        "import atexit, json, sys\n"
        "def report():\n"
        "    names = sorted(m for m in sys.modules if m.split('.')[0] in "
        f"{[h.split('.')[0] for h in HEAVY]!r} or m.startswith('simindex.'))\n"
        "    sys.stderr.write('\\nLOADED ' + json.dumps(names) + '\\n')\n"
        "atexit.register(report)\n"
        f"sys.argv = ['simindex', *{argv!r}]\n"
        "from simindex.__main__ import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    names = json.loads(done.stderr.rsplit("LOADED ", 1)[1])
    return {"exit": done.returncode, "stdout": done.stdout, "modules": names}


def heavy(modules: object) -> set[str]:
    assert isinstance(modules, list)
    return {h for h in HEAVY for m in modules if m == h or m.startswith(h + ".")}


@pytest.mark.parametrize("argv", [["-h"], ["--version"], []])
def test_help_and_version_load_none_of_the_library(argv: list[str]) -> None:
    seen = loaded(argv)
    assert seen["exit"] in (0, 2), seen
    assert heavy(seen["modules"]) == set(), seen["modules"]
    commands = [m for m in seen["modules"] if "_command" in str(m) or m.endswith(".tools")]
    assert commands == [], commands


def test_query_loads_what_a_query_needs_and_no_more(tmp_path: Path) -> None:
    db = tmp_path / "ix.db"
    ok("add", db, "--text", T1, "--key", "a")
    seen = loaded(["query", str(db), T1])
    assert seen["exit"] == 0 and "a" in str(seen["stdout"]), seen
    # No pydantic (typer's coercion), no rich (no bar), no other command's module.
    assert heavy(seen["modules"]) <= {"sqlalchemy", "numpy", "simindex.storage", "jieba"}
    others = {"simindex.cli.dedup_command", "simindex.cli.tools", "simindex.cli.restore_command"}
    assert others.isdisjoint(seen["modules"])  # type: ignore[arg-type]

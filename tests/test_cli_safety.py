"""The CLI's safety rules, found by trying the installed command as a new user
would (issue 12): what a command may write, what a failed run leaves behind,
how keys are printed, Ctrl-C, --workers, the progress bar's rate, how files
are keyed, the text/file convention of fingerprint, distance and explain, and
an index inside the folder being added.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simindex import SimIndex, hamming, ingest, simhash
from simindex.cli import files as cli_files  # where the CLI opens and renames its outputs
from tests.helpers import (
    ROOT,
    T1,
    T2,
    T3,
    T4,
    compiled_or_skip,
    contents,
    describe,
    error,
    invoke,
    ok,
)

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


# --- 1. an output is never one of the inputs ---------------------------------


def _same_file_as(tmp_path: Path, target: Path, how: str) -> str:
    """A path naming `target` in another way."""
    if how == "as given":
        return target.name
    if how == "./":
        return f"./{target.name}"
    if how == "absolute":
        return str(target)
    if how == "through ..":
        (tmp_path / "sub").mkdir(exist_ok=True)
        return f"sub/../{target.name}"
    if how == "symlink":
        (tmp_path / "link.jsonl").symlink_to(target)
        return "link.jsonl"
    assert how == "hard link"
    os.link(target, tmp_path / "hard.jsonl")
    return "hard.jsonl"


SPELLINGS = ["as given", "./", "absolute", "through ..", "symlink", "hard link"]


@pytest.mark.parametrize("how", SPELLINGS)
@pytest.mark.parametrize("option", ["--out", "--report"])
def test_dedup_refuses_an_output_that_is_an_input_before_reading_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str, option: str
) -> None:
    monkeypatch.chdir(tmp_path)
    corpus = tmp_path / "X.jsonl"
    before = write_corpus(corpus, broken_at=3)  # refused before line 3 is ever read
    target = _same_file_as(tmp_path, corpus, how)
    others = listing(tmp_path)
    args = ["--out", target] if option == "--out" else ["--out", "u.jsonl", "--report", target]
    message = error("dedup", "X.jsonl", *args, contains=("also an input", option))
    assert "line 3" not in message
    assert corpus.read_bytes() == before
    assert listing(tmp_path) == others  # no u.jsonl, no .partial


def test_dedup_refuses_an_output_inside_an_input_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus" / "sub").mkdir(parents=True)
    (tmp_path / "corpus" / "a.txt").write_text(T1, encoding="utf-8")
    (tmp_path / "alias").symlink_to(tmp_path / "corpus")
    for source, out in [
        ("corpus", "corpus/unique.jsonl"),
        ("corpus/", "corpus/sub/unique.jsonl"),
        ("alias", "corpus/unique.jsonl"),  # the folder through a link
        ("corpus", "alias/unique.jsonl"),  # the output through a link
        (str(tmp_path / "corpus"), "./corpus/unique.jsonl"),
    ]:
        error("dedup", source, "--out", out, contains=("inside the input folder",))
        error("dedup", source, "--out", "u.jsonl", "--report", out, contains=("--report",))
    assert listing(tmp_path / "corpus") == ["a.txt", "sub"]
    assert listing(tmp_path / "corpus" / "sub") == []
    assert listing(tmp_path) == ["alias", "corpus"]
    # Beside the folder is fine.
    ok("dedup", "corpus", "--out", "unique.jsonl", "--quiet")
    assert json.loads((tmp_path / "unique.jsonl").read_text(encoding="utf-8"))["id"] == str(
        Path("corpus") / "a.txt"
    )


def test_dedup_refuses_to_write_over_an_index(tmp_path: Path) -> None:
    corpus, index = tmp_path / "X.jsonl", tmp_path / "ix.db"
    write_corpus(corpus)
    ok("add", index, "--text", T1, "--key", "a")
    before = index.read_bytes()
    error("dedup", corpus, "--out", index, contains=("SQLite database",))
    error("dedup", corpus, "--out", tmp_path / "u.jsonl", "--report", index, contains=("SQLite",))
    # An index given as the corpus is no corpus either (SQLite reads its head, never open()).
    error("dedup", index, "--out", tmp_path / "u.jsonl", contains=("an index?), not a corpus",))
    assert index.read_bytes() == before and contents(index) == {"a": simhash(T1)}
    assert not (tmp_path / "u.jsonl").exists()


def test_dedup_refuses_an_output_that_standard_input_reads(tmp_path: Path) -> None:
    corpus = tmp_path / "X.jsonl"
    before = write_corpus(corpus)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with corpus.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "cli.py", "dedup", "-", "--format", "jsonl", "--out", str(corpus)],
            cwd=ROOT,
            stdin=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("Error: ") and done.stderr.count("\n") == 1
    assert "standard input" in done.stderr
    assert corpus.read_bytes() == before


def test_dedup_refuses_a_folder_or_a_path_under_a_file_as_output(tmp_path: Path) -> None:
    corpus = tmp_path / "X.jsonl"
    write_corpus(corpus)
    (tmp_path / "folder").mkdir()
    error("dedup", corpus, "--out", tmp_path / "folder", contains=("is a folder",))
    error("dedup", corpus, "--out", corpus / "u.jsonl", contains=("is not a folder",))
    error("dedup", corpus, "--out", tmp_path / "no" / "u.jsonl", contains=("does not exist",))
    assert listing(tmp_path) == ["X.jsonl", "folder"]


@pytest.mark.parametrize("command", ["add", "rebuild"])
@pytest.mark.parametrize("how", ["as given", "absolute", "symlink", "hard link"])
def test_the_index_is_never_read_as_one_of_its_own_documents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, how: str
) -> None:
    monkeypatch.chdir(tmp_path)
    index = tmp_path / "ix.db"
    ok("add", index, "--text", T1, "--key", "a")
    before = contents(index)
    source = _same_file_as(tmp_path, index, how)
    error(command, "ix.db", source, contains=("is the index",))
    error(command, "ix.db", str(index) + "-wal", contains=("is the index",))
    assert contents(index) == before


# --- 2. a failed run leaves no output behind ----------------------------------


@pytest.mark.parametrize("how", SPELLINGS[:-1])
def test_out_and_report_naming_one_file_are_refused_up_front(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    monkeypatch.chdir(tmp_path)
    write_corpus(tmp_path / "X.jsonl")
    previous = tmp_path / "F.jsonl"
    previous.write_text("an earlier run's output\n", encoding="utf-8")
    same = _same_file_as(tmp_path, previous, how)
    others = listing(tmp_path)
    error("dedup", "X.jsonl", "--out", "F.jsonl", "--report", same, contains=("same file",))
    assert listing(tmp_path) == others
    assert previous.read_text(encoding="utf-8") == "an earlier run's output\n"


def test_out_and_report_through_a_hard_link_and_both_on_stdout_are_refused(
    tmp_path: Path,
) -> None:
    corpus, out = tmp_path / "X.jsonl", tmp_path / "F.jsonl"
    write_corpus(corpus)
    out.write_text("old\n", encoding="utf-8")
    os.link(out, tmp_path / "G.jsonl")
    error("dedup", corpus, "--out", out, "--report", tmp_path / "G.jsonl", contains=("same",))
    error("dedup", corpus, "--out", "-", "--report", "-", contains=("same file (standard output)",))
    # An output whose .partial would be the other output.
    error("dedup", corpus, "--out", out, "--report", tmp_path / ".F.jsonl.partial")
    assert listing(tmp_path) == ["F.jsonl", "G.jsonl", "X.jsonl"]


class _Full:
    """A file that takes `room` writes, then fails as a full disk does."""

    def __init__(self, real: Any, room: int, at_close: bool) -> None:
        self.real, self.room, self.at_close = real, room, at_close

    def write(self, text: str) -> int:
        if self.room <= 0 and not self.at_close:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= 1
        return int(self.real.write(text))

    def close(self) -> None:
        self.real.close()
        if self.at_close:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _failing_open(name: str, fail: Any) -> Any:
    """An open() for simindex.cli.files whose file named .NAME.partial fails by `fail`."""

    def fake_open(path: Any, *args: Any, **kwargs: Any) -> Any:
        if Path(path).name == f".{name}.partial":
            return fail(path, *args, **kwargs)
        return open(path, *args, **kwargs)

    return fake_open


def _full(room: int, at_close: bool = False) -> Any:
    return lambda path, *a, **k: _Full(open(path, *a, **k), room, at_close)


def _forbidden(path: Any, *args: Any, **kwargs: Any) -> Any:
    raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))


FAILURES = {
    "bad line midway": None,
    "out: disk full": ("u.jsonl", _full(2)),
    "report: disk full": ("r.jsonl", _full(1)),
    "out: disk full at close": ("u.jsonl", _full(10**6, at_close=True)),
    "report: disk full at close": ("r.jsonl", _full(10**6, at_close=True)),
    "out: folder not writable": ("u.jsonl", _forbidden),
    "report: folder not writable": ("r.jsonl", _forbidden),
}


@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_a_failed_dedup_leaves_neither_output_nor_partial(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    corpus = tmp_path / "X.jsonl"
    how = FAILURES[failure]
    write_corpus(corpus, broken_at=6 if how is None else None)
    if how is not None:
        monkeypatch.setattr(cli_files, "open", _failing_open(*how), raising=False)
    out, report = tmp_path / "u.jsonl", tmp_path / "r.jsonl"
    args = ["dedup", corpus, "--out", out, "--report", report, "--workers", "1"]
    message = error(*args)
    assert ("line 6" if how is None else how[0]) in message, message
    assert listing(tmp_path) == ["X.jsonl"]
    # Outputs an earlier run left are left as they were.
    out.write_text("earlier\n", encoding="utf-8")
    report.write_text("earlier report\n", encoding="utf-8")
    error(*args)
    assert listing(tmp_path) == ["X.jsonl", "r.jsonl", "u.jsonl"]
    assert out.read_text(encoding="utf-8") == "earlier\n"
    assert report.read_text(encoding="utf-8") == "earlier report\n"


def test_when_the_second_rename_fails_the_first_output_goes_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = tmp_path / "X.jsonl"
    write_corpus(corpus)
    real_replace = os.replace
    calls: list[str] = []

    def replace(src: Any, dst: Any) -> None:
        calls.append(Path(dst).name)
        if len(calls) == 2:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real_replace(src, dst)

    monkeypatch.setattr(cli_files.os, "replace", replace)
    error("dedup", corpus, "--out", tmp_path / "u.jsonl", "--report", tmp_path / "r.jsonl")
    monkeypatch.undo()
    assert calls == ["u.jsonl", "r.jsonl"]
    assert listing(tmp_path) == ["X.jsonl"]


def test_an_interrupted_dedup_leaves_no_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = tmp_path / "X.jsonl"
    write_corpus(corpus)
    real = ingest.fingerprint_docs

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        for n, item in enumerate(real(*args, **kwargs)):
            if n == 3:
                raise KeyboardInterrupt
            yield item

    monkeypatch.setattr(ingest, "fingerprint_docs", interrupted)
    out, report = tmp_path / "u.jsonl", tmp_path / "r"
    result = invoke("dedup", corpus, "--out", out, "--report", report)
    assert result.exit_code == 130, describe(result)
    # No transaction to speak of: the outputs are what was not written.
    assert result.stderr == f"Interrupted; nothing was written to {out} or {report}.\n"
    assert listing(tmp_path) == ["X.jsonl"]


def test_dedup_to_a_full_stdout_fails_cleanly(tmp_path: Path) -> None:
    corpus = tmp_path / "X.jsonl"
    write_corpus(corpus, n=400)  # more than a buffer of output
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    report = tmp_path / "r.jsonl"
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "cli.py", "dedup", str(corpus), "--out", "-", "--report", str(report)],
            cwd=ROOT,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            env=env,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("Error: ") and done.stderr.count("\n") == 1, done.stderr
    assert "No space left" in done.stderr
    assert listing(tmp_path) == ["X.jsonl"]


def test_dedup_to_dev_stdout_writes_through_it_not_over_the_redirected_file(
    tmp_path: Path,
) -> None:
    """--report /dev/stdout, with stdout redirected to a file the shell wrote
    before and writes after: the report is written through descriptor 1 (as
    '-' is), not by opening the name anew, which truncated the file and wrote
    over the shell's lines; and --out and --report both naming stdout are
    refused."""
    corpus = tmp_path / "X.jsonl"
    write_corpus(corpus, n=50)
    out, shown = tmp_path / "kept.jsonl", tmp_path / "shown.txt"
    cli = f"{sys.executable} cli.py dedup {corpus} -q"
    script = f"(echo BEFORE; {cli} --out {out} --report /dev/stdout; echo AFTER) > {shown}"
    done = subprocess.run(["sh", "-c", script], cwd=ROOT, env=_child_env(), timeout=60)
    assert done.returncode == 0
    lines = shown.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "BEFORE" and lines[-1] == "AFTER" and len(lines) > 2, lines
    assert all(json.loads(line)["duplicate_of"] for line in lines[1:-1])
    both = f"{cli} --out /dev/stdout --report /dev/stdout > {shown}"
    done = subprocess.run(["sh", "-c", both], cwd=ROOT, env=_child_env(), timeout=60)
    assert done.returncode == 2


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
# lands somewhere between its first import and its reading. An interrupt that
# lands in the child's own lines, between saying so and calling main (a few
# microseconds), is told apart (exit 99) and the run made again.
_CHILD = """
import sys
from simindex.__main__ import main
sys.argv[0] = "simindex"
try:
    sys.stderr.write("ready\\n")
    sys.stderr.flush()
    main()
except KeyboardInterrupt as exc:
    if exc.__traceback__ is not None and exc.__traceback__.tb_next is not None:
        raise  # it came out of main: what the test is about
    sys.stderr.write("before main\\n")
    sys.exit(99)
"""
FAST_DELAYS = [0.005, 0.05, 0.15]
SLOW_DELAYS = [0.0, 0.002, 0.01, 0.02, 0.03, 0.07, 0.1, 0.12, 0.2, 0.25, 0.3, 0.45, 0.6, 0.8]


def _interrupted_run(index: Path, delay: float) -> subprocess.CompletedProcess[str]:
    for _ in range(5):
        # The child's stdin is a pipe this test holds open until the child
        # ends: the command waits on it, so the interrupt is what ends it
        # (closing stdin at once would race it with the end of the input).
        reading, writing = os.pipe()
        try:
            child = subprocess.Popen(
                [sys.executable, "-c", _CHILD, "add", str(index), "-", "--key", "k"],
                stdin=reading,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=_child_env(),
            )
        finally:
            os.close(reading)
        try:
            assert child.stderr is not None and child.stderr.readline() == b"ready\n"
            time.sleep(delay)
            child.send_signal(signal.SIGINT)
            try:
                out, err = child.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                child.kill()
                out, err = child.communicate()
                pytest.fail(f"the interrupt did not end the command: {err.decode()!r}")
        finally:
            os.close(writing)
            child.kill()
        if child.returncode != 99:
            shown = err.decode("utf-8", "replace")
            return subprocess.CompletedProcess(child.args, child.returncode, out, shown)
    pytest.fail("every interrupt landed before main was called")


@pytest.mark.parametrize(
    "delay", [*FAST_DELAYS, *(pytest.param(d, marks=pytest.mark.slow) for d in SLOW_DELAYS)]
)
def test_ctrl_c_at_any_moment_is_one_line_and_exit_130(tmp_path: Path, delay: float) -> None:
    index = tmp_path / "ix.db"
    done = _interrupted_run(index, delay)
    assert done.returncode == 130, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("Interrupted"), done.stderr
    assert done.stdout == b""
    assert not index.exists()  # the new index the add had created is gone too


def test_an_interrupt_lost_in_a_finaliser_wakes_a_blocked_read() -> None:
    """A Ctrl-C raised where Python cannot raise it (here a __del__) is
    delivered again as a signal, which wakes the main thread from a read of
    a pipe nobody writes (a simulated interrupt would wait for the read)."""
    code = """
import sys
from simindex import __main__ as entry
sys.unraisablehook = entry._raise_again
class Finalised:
    def __del__(self):
        raise KeyboardInterrupt
Finalised()
try:
    sys.stdin.read()
except KeyboardInterrupt:
    sys.exit(42)
"""
    child = subprocess.Popen(
        [sys.executable, "-c", code],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_child_env(),
    )
    try:
        assert child.wait(timeout=30) == 42
    finally:
        child.kill()
        child.communicate()


def _one_line_and_130(code: str) -> None:
    """Run `code` (which calls simindex's main) in a child: it must end in
    the one line "Interrupted." and exit code 130."""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_child_env(), timeout=60
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr == "Interrupted.\n" and done.stdout == ""


def test_an_interrupt_python_would_ignore_is_delivered_again() -> None:
    """A KeyboardInterrupt raised in a __del__ is "ignored" by Python (printed,
    and the program goes on); the simindex command raises it again."""
    code = (
        "import gc, sys, time; from simindex.__main__ import main\n"
        "class Late:\n"
        "    def __del__(self): raise KeyboardInterrupt\n"
        "sys.argv[1:] = ['-h']\n"
        "import simindex.cli\n"
        "real = simindex.cli.main\n"
        "def run(argv=None):\n"
        "    Late(); gc.collect()\n"
        "    for _ in range(10**6): pass\n"
        "    real(argv)\n"
        "simindex.cli.main = run\n"
        "main()\n"
    )
    _one_line_and_130(code)


def test_an_interrupt_c_code_prints_and_replaces_is_still_one_line_and_130() -> None:
    """numpy's extension modules, when an import they make is interrupted,
    print the KeyboardInterrupt (PyErr_Print) and raise ImportError instead
    (seen once in the Ctrl-C sweep above, landing inside numpy's import):
    the command still says one line and exits 130."""
    code = (
        "import ctypes, sys; from simindex.__main__ import main\n"
        "sys.argv[1:] = ['-h']\n"
        "import simindex.cli\n"
        "def run(argv=None):\n"
        "    ctypes.pythonapi.PyRun_SimpleString(b'raise KeyboardInterrupt')  # printed\n"
        "    raise ImportError('numpy._core.multiarray failed to import')\n"
        "simindex.cli.main = run\n"
        "main()\n"
    )
    _one_line_and_130(code)


# --- 10. --workers ---------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-1"])
@pytest.mark.parametrize("command", ["add", "rebuild", "dedup"])
def test_workers_below_one_are_refused(tmp_path: Path, command: str, value: str) -> None:
    corpus = tmp_path / "X.jsonl"
    write_corpus(corpus)
    index = tmp_path / "ix.db"
    if command == "rebuild":
        ok("add", index, corpus)
    args = {
        "add": ["add", index, corpus],
        "rebuild": ["rebuild", index, corpus],
        "dedup": ["dedup", corpus, "--out", tmp_path / "u.jsonl"],
    }[command]
    error(*args, "--workers", value, contains=("--workers must be at least 1",))
    assert not (tmp_path / "u.jsonl").exists()
    assert index.exists() == (command == "rebuild")


@pytest.mark.parametrize("command", ["add", "rebuild", "dedup"])
def test_too_many_workers_are_capped_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    corpus = tmp_path / "X.jsonl"
    write_corpus(corpus)
    index = tmp_path / "ix.db"
    if command == "rebuild":
        ok("add", index, corpus)
    used: list[int | None] = []
    real = ingest.fingerprint_docs

    def spy(*args: Any, workers: int | None = None, **kwargs: Any) -> Any:
        used.append(workers)
        return real(*args, workers=workers, **kwargs)

    monkeypatch.setattr(ingest, "fingerprint_docs", spy)
    monkeypatch.setattr(ingest, "usable_cpus", lambda: 2)
    args = {
        "add": ["add", index, corpus],
        "rebuild": ["rebuild", index, corpus],
        "dedup": ["dedup", corpus, "--out", tmp_path / "u.jsonl"],
    }[command]
    result = ok(*args, "--workers", "1000")
    warnings = [line for line in result.stderr.splitlines() if line.startswith("Warning:")]
    assert warnings == ["Warning: --workers 1000 is more than 4 a CPU (2 CPUs here); using 8"]
    assert used == [8]
    used.clear()
    result = ok(*args, "--workers", "8")
    assert "Warning" not in result.stderr and used == [8]


# --- 11. the progress bar's rate ---------------------------------------------------


def test_the_rate_and_time_left_show_only_after_a_second() -> None:
    from rich.progress import Progress

    from simindex.cli import SETTLE_S, _settled_columns

    now = [100.0]
    rate_column, left_column = (c() for c in _settled_columns())
    with Progress(get_time=lambda: now[0], disable=True) as progress:
        task_id = progress.add_task("adding", total=10**9)
        task = progress.tasks[0]
        now[0] += 0.001
        progress.update(task_id, advance=6_500_000)  # 6.5 GB/s over the first millisecond
        assert str(rate_column.render(task)) == ""
        assert str(left_column.render(task)) == "-:--:--"
        now[0] += SETTLE_S
        progress.update(task_id, advance=1_000_000)
        assert str(rate_column.render(task)).endswith("/s")
        assert str(rate_column.render(task)) != ""
        assert str(left_column.render(task)) not in ("", "-:--:--")


def test_the_rate_waits_for_readings_a_second_apart_not_a_second_after_the_start() -> None:
    # The first chunk of an add comes back a second or more after the bar
    # starts, and the next a fraction of a millisecond later: rich's rate over
    # those two readings was 4.7 GB/s, with a second left.
    from rich.progress import Progress

    from simindex.cli import SETTLE_S, _settled_columns

    now = [100.0]
    rate_column, left_column = (c() for c in _settled_columns())
    with Progress(get_time=lambda: now[0], disable=True) as progress:
        task_id = progress.add_task("adding", total=100_000_000)
        task = progress.tasks[0]
        now[0] += 1.5  # the first chunk back
        progress.update(task_id, advance=1_100_000)
        now[0] += 0.0002  # and the next, all but at once
        progress.update(task_id, advance=1_000_000)
        assert task.elapsed is not None and task.elapsed > SETTLE_S
        assert str(rate_column.render(task)) == ""
        assert str(left_column.render(task)) == "-:--:--"
        now[0] += SETTLE_S  # readings a second apart: a rate that means something
        progress.update(task_id, advance=1_000_000)
        assert str(rate_column.render(task)) == "2.0 MB/s"
        assert str(left_column.render(task)) not in ("", "-:--:--")


def _compiling_for_the_first_time(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The compiled text pass made to compile again in this process, as with
    numba's cache empty: its loop replaced by a step that notes what the
    progress bars in use say while it runs (then runs the real loop). The
    list it returns gets those descriptions."""
    compiled_or_skip()
    from simindex import _marks, compiling, fastmarks
    from simindex.cli import output

    seen: list[str] = []
    real = _marks.marks_many

    def compile_step(*args: object) -> object:
        seen.extend(task.description for bar in output._WAITS.bars for task in bar.tasks)
        return real(*args)

    monkeypatch.setattr(_marks, "marks_many", compile_step)
    monkeypatch.setattr(compiling, "cached", lambda function: False)
    fastmarks.available()  # (loaded once, so that the monkeypatch puts it back)
    monkeypatch.delitem(compiling._loaded, "simindex._marks")
    monkeypatch.setitem(compiling._state, "mode", "always")
    return seen


def test_the_bar_says_while_numba_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from rich.console import Console

    from simindex import fastmarks
    from simindex.cli.output import listen_for_compiling, progress

    seen = _compiling_for_the_first_time(monkeypatch)
    listen_for_compiling()
    terminal = io.StringIO()
    with progress(100, False, console=Console(file=terminal, force_terminal=True)) as bar:
        bar.add_task("adding", total=100, docs=0)
        assert fastmarks.available()
        assert seen == ["compiling the fast path (once, about 15 s)"]
        assert [task.description for task in bar.tasks] == ["adding"]
    assert "Note" not in terminal.getvalue()


def test_a_note_says_it_where_no_bar_is_drawn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = _compiling_for_the_first_time(monkeypatch)
    (tmp_path / "a.txt").write_text(T1, encoding="utf-8")
    result = ok("add", tmp_path / "x.db", tmp_path / "a.txt")  # stderr is no terminal
    assert result.stderr == "Note: compiling the fast path (once, about 15 s)\n"
    assert seen and set(seen) == {"adding"}  # its bar, not drawn, is left alone
    result = ok("add", tmp_path / "y.db", tmp_path / "a.txt")  # compiled: nothing said
    assert result.stderr == ""


@pytest.mark.parametrize("command", ["add", "dedup", "query"])
def test_a_command_says_how_much_text_it_will_read_to_the_switch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """The commands that fingerprint their sources tell the compiled pass's
    "auto" switch the bytes they hold (compiling.expect), so a large input
    is read compiled from its first text; each command begins by saying 0
    (what a command before it in this process said holds no more)."""
    from simindex import compiling

    told: list[int] = []
    monkeypatch.setattr(compiling, "expect", told.append)
    source = tmp_path / "a.jsonl"
    source.write_text(json.dumps({"id": "a", "text": T1}) + "\n", encoding="utf-8")
    ok("add", tmp_path / "x.db", source)
    told.clear()
    args = {
        "add": ["add", tmp_path / "y.db", source],
        "dedup": ["dedup", source, "--out", tmp_path / "out.jsonl"],
        "query": ["query", tmp_path / "x.db", "--batch", source],
    }[command]
    ok(*args)
    assert told == [0, source.stat().st_size]


# --- 12. how a file is keyed --------------------------------------------------------


def test_a_file_is_keyed_by_the_path_that_opens_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data" / "corpus" / "sub").mkdir(parents=True)
    (tmp_path / "data" / "corpus" / "a.txt").write_text(T1, encoding="utf-8")
    (tmp_path / "data" / "corpus" / "sub" / "b.txt").write_text(T2, encoding="utf-8")
    absolute = str(tmp_path / "data" / "corpus")
    for given, keys in [
        ("data/corpus", ["data/corpus/a.txt", "data/corpus/sub/b.txt"]),
        ("data/corpus/", ["data/corpus/a.txt", "data/corpus/sub/b.txt"]),
        ("./data/corpus", ["./data/corpus/a.txt", "./data/corpus/sub/b.txt"]),
        (absolute, [f"{absolute}/a.txt", f"{absolute}/sub/b.txt"]),
    ]:
        index = tmp_path / "ix.db"
        ok("add", index, given, "--quiet")
        assert sorted(contents(index)) == keys, given
        for key in keys:  # each key opens its file
            assert simhash(Path(key).read_text(encoding="utf-8")) == contents(index)[key]
        index.unlink()
    # The same file given by name or found in its folder: one key, one document.
    ok("add", "ix.db", "data/corpus/a.txt")
    ok("add", "ix.db", "data/corpus", "--quiet")
    assert sorted(contents(tmp_path / "ix.db")) == ["data/corpus/a.txt", "data/corpus/sub/b.txt"]
    # In a line format, FILE in FILE:LINE is that path too.
    ok("add", "lines.db", "data/corpus", "--format", "lines", "--quiet")
    assert sorted(contents(tmp_path / "lines.db")) == [
        "data/corpus/a.txt:1",
        "data/corpus/sub/b.txt:1",
    ]
    monkeypatch.chdir(tmp_path / "data" / "corpus")
    ok("add", "../../dot.db", ".", "--quiet")
    assert sorted(contents(tmp_path / "dot.db")) == ["./a.txt", "./sub/b.txt"]


def test_dedup_and_rebuild_key_folder_files_the_same_way(tmp_path: Path) -> None:
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.txt").write_text(T1, encoding="utf-8")
    (folder / "b.txt").write_text(T1 + "!", encoding="utf-8")
    out, report = tmp_path / "u.jsonl", tmp_path / "r.jsonl"
    ok("dedup", folder, "--out", out, "--report", report, "--quiet")
    assert json.loads(out.read_text(encoding="utf-8"))["id"] == f"{folder}/a.txt"
    assert json.loads(report.read_text(encoding="utf-8")) == {
        "id": f"{folder}/b.txt",
        "duplicate_of": f"{folder}/a.txt",
        "distance": hamming(simhash(T1), simhash(T1 + "!")),
        "similarity": 1.0,  # the same words: the same signature
    }
    index = tmp_path / "ix.db"
    ok("add", index, "--text", T2, "--key", "other")
    ok("rebuild", index, folder, "--quiet")
    assert sorted(contents(index)) == [f"{folder}/a.txt", f"{folder}/b.txt"]


@pytest.mark.parametrize("command", ["add", "rebuild", "dedup"])
def test_the_help_says_what_the_key_is(command: str) -> None:
    shown = " ".join(ok(command, "--help").stdout.replace("│", " ").split())  # unboxed
    assert "keyed by its path as given" in shown
    assert "the path that opens it" in shown


# --- 13. fingerprint, distance and explain: one convention ---------------------------


def test_fingerprint_takes_text_and_file_flags_like_distance_and_explain(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text(T2, encoding="utf-8")
    want = str(simhash(T1))
    for args in (["--text", T1], ["-t", T1], [T1, "--text"], [T1]):
        assert ok("fingerprint", *args).stdout.strip() == want, args
    for args in (["--file", path], ["-f", path], [path, "--file"]):
        assert ok("fingerprint", *args).stdout.strip() == str(simhash(T2)), args
    assert ok("fingerprint", "--file", "-", input=T3).stdout.strip() == str(simhash(T3))


def test_distance_and_explain_take_the_same_flags(tmp_path: Path) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(T1, encoding="utf-8")
    b.write_text(T1 + " again", encoding="utf-8")
    want = hamming(simhash(T1), simhash(T1 + " again"))
    for args in (["--text", T1, T1 + " again"], ["-t", T1, T1 + " again"]):
        assert ok("distance", *args).stdout.strip() == str(want)
        assert json.loads(ok("explain", *args, "--json").stdout)["distance"] == want
    for args in (["--file", a, b], ["-f", a, b], [a, b, "--file"]):
        assert ok("distance", *args).stdout.strip() == str(want)
        assert json.loads(ok("explain", *args, "--json").stdout)["distance"] == want
    assert json.loads(ok("explain", a, b, "--json").stdout)["distance"] == want  # default: files
    assert ok("distance", str(simhash(T1)), hex(simhash(T1))).stdout.strip() == "0"


def test_the_convention_s_errors_say_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_text(T1, encoding="utf-8")
    for command in (["fingerprint", "x"], ["distance", "x", "y"], ["explain", "x", "y"]):
        error(*command, "--text", "--file", contains=("not both",))
    error("fingerprint", contains=("give the text to fingerprint",))
    error("fingerprint", "--file", tmp_path / "nope.txt", contains=("no such file",))
    error("explain", tmp_path / "nope.txt", path, contains=("no such file", "--text"))
    error("distance", "hello", "world", contains=("not a fingerprint", "--text"))
    error("distance", "--file", "-", "-", contains=("only one",))
    # A text that names a file is fingerprinted as a text, with a word about --file.
    result = ok("fingerprint", path)
    assert result.stdout.strip() == str(simhash(str(path)))
    assert result.stderr.startswith("Warning: ") and "--file" in result.stderr


# --- 15. an index inside the folder being added ----------------------------------------


def test_adding_the_folder_that_holds_the_index_skips_the_index(tmp_path: Path) -> None:
    folder = tmp_path / "dir"
    folder.mkdir()
    (folder / "a.txt").write_text(T1, encoding="utf-8")
    (folder / "b.txt").write_text(T2, encoding="utf-8")
    index = folder / "idx.db"
    result = ok("add", index, folder)  # a new index, inside the folder
    assert sorted(contents(index)) == [f"{folder}/a.txt", f"{folder}/b.txt"]
    notes = [line for line in result.stderr.splitlines() if line.startswith("Note:")]
    assert len(notes) == 1 and str(index) in notes[0], result.stderr
    # Again, with the index existing, a link to it and a hard link of it beside it.
    (folder / "link.db").symlink_to(index)
    os.link(index, folder / "hard.db")
    result = ok("add", index, folder, "--json")
    assert json.loads(result.stdout)["count"] == 2
    notes = [line for line in result.stderr.splitlines() if line.startswith("Note:")]
    assert len(notes) == 1 and "link.db" in notes[0] and "hard.db" in notes[0]
    (folder / "c.txt").write_text(T3, encoding="utf-8")
    ok("rebuild", index, folder)
    assert sorted(contents(index)) == [f"{folder}/{n}.txt" for n in "abc"]


def test_the_index_s_files_in_a_folder_are_found_by_identity(tmp_path: Path) -> None:
    folder = tmp_path / "dir"
    folder.mkdir()
    (folder / "a.txt").write_text(T1, encoding="utf-8")
    index = folder / "idx.db"
    with SimIndex(index) as ix:
        ix.add("held", T4)  # open: its -wal and -shm are there while it is
        skipped: list[str] = []
        own = [str(index), f"{index}-wal", f"{index}-shm", f"{index}-journal"]
        docs = ingest.read_docs([str(folder)], folder_keys="path", skip=own, on_skip=skipped.append)
        assert [d.key for d in docs] == [f"{folder}/a.txt"]
        assert sorted(Path(p).name for p in skipped) == sorted(
            p.name for p in folder.iterdir() if p.name.startswith("idx.db")
        )
        assert len(skipped) >= 1


def test_an_output_that_is_a_device_or_a_pipe_is_written_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A .partial renamed over /dev/null would make it a file, and opening a
    pipe to see whether it is a database would wait for ever: a device or a
    pipe is written as it goes, and stays what it was."""
    import stat
    import threading

    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus").mkdir()
    for name, text in (("a.txt", T1), ("b.txt", T1), ("c.txt", T3)):
        (tmp_path / "corpus" / name).write_text(text, encoding="utf-8")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    ok("dedup", "corpus", "--out", fifo, "--report", "r.jsonl", "-q")
    reader.join(timeout=30)
    assert [json.loads(line)["id"] for line in got[0].decode().splitlines()] == [
        "corpus/a.txt",
        "corpus/c.txt",
    ]
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert json.loads((tmp_path / "r.jsonl").read_text())["duplicate_of"] == "corpus/a.txt"
    assert not list(tmp_path.glob(".*partial"))
    if os.geteuid() == 0:  # a device of our own (mknod needs root): the null device
        null = tmp_path / "null"
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        ok("dedup", "corpus", "--out", null, "-q")
        assert stat.S_ISCHR(null.stat().st_mode)
    ok("dedup", "corpus", "--out", os.devnull, "-q")  # the real one, only ever opened
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_an_output_through_a_link_keeps_the_link(tmp_path: Path) -> None:
    """A link to a file: the file gets the output, the link stays a link; a
    link to a file descriptor (/dev/stdout is one) is written through, so the
    output reaches what the descriptor is (here a file the shell made)."""
    (tmp_path / "corpus").mkdir()
    for name, text in (("a.txt", T1), ("b.txt", T1), ("c.txt", T3)):
        (tmp_path / "corpus" / name).write_text(text, encoding="utf-8")
    (tmp_path / "real.jsonl").write_text("old\n", encoding="utf-8")
    (tmp_path / "link.jsonl").symlink_to("real.jsonl")
    (tmp_path / "fd").symlink_to("/proc/self/fd/1")
    for out, stdout in (("link.jsonl", subprocess.DEVNULL), ("fd", None)):
        with open(tmp_path / "captured.txt", "wb") as captured:
            done = subprocess.run(
                [sys.executable, "-m", "simindex", "dedup", "corpus", "--out", out, "-q"],
                cwd=tmp_path,
                stdout=stdout if stdout is not None else captured,
                stderr=subprocess.PIPE,
                timeout=120,
            )
        assert done.returncode == 0, done.stderr
        assert (tmp_path / out).is_symlink()
    assert len((tmp_path / "real.jsonl").read_text().splitlines()) == 2
    assert len((tmp_path / "captured.txt").read_text().splitlines()) == 2
    assert not list(tmp_path.glob(".*partial"))


def test_an_interrupt_wrapped_by_python_is_one_line_and_exit_130() -> None:
    """A Ctrl-C that lands in a class's __set_name__ while a module is
    imported comes out as RuntimeError("Error calling __set_name__ ...")
    raised from the KeyboardInterrupt (seen about 1 run in 20 of the test
    above): one line and exit 130 all the same."""
    code = (
        "import sys; from simindex.__main__ import main\n"
        "sys.argv[1:] = ['-h']\n"
        "import simindex.cli\n"
        "def run(argv=None):\n"
        "    class Named:\n"
        "        def __set_name__(self, owner, name): raise KeyboardInterrupt\n"
        "    class Owner:\n"
        "        x = Named()\n"
        "simindex.cli.main = run\n"
        "main()\n"
    )
    _one_line_and_130(code)


def test_an_interrupt_while_the_handlers_are_set_is_one_line_and_exit_130() -> None:
    """A Ctrl-C that lands while main sets its signal handlers (the slow test
    above at delay 0 once printed a traceback from signal.signal)."""
    code = (
        "import sys; from simindex import signals; from simindex.__main__ import main\n"
        "def stop(): raise KeyboardInterrupt\n"
        "signals.stop_on_signals = stop\n"
        "main()\n"
    )
    _one_line_and_130(code)


# --- 13. waiting for another writer ------------------------------------------------


@pytest.fixture
def lock_holder(tmp_path: Path) -> Iterator[tuple[Path, Any]]:
    """An index, and a connection that holds its write lock (as another
    process's write would) until it rolls back or the test ends."""
    import sqlite3

    db = tmp_path / "x.db"
    (tmp_path / "a.txt").write_text(T1, encoding="utf-8")
    ok("add", db, tmp_path / "a.txt")
    holder = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    yield db, holder
    if holder.in_transaction:
        holder.rollback()
    holder.close()


@pytest.fixture
def held_index(lock_holder: tuple[Path, Any]) -> Path:
    return lock_holder[0]


@pytest.mark.parametrize("command", ["add", "remove"])
def test_timeout_0_against_a_held_write_lock_fails_at_once(
    held_index: Path, tmp_path: Path, command: str
) -> None:
    given = tmp_path / "a.txt" if command == "add" else "some-key"
    line = error(command, held_index, given, "--timeout", "0")
    assert line.endswith("is locked by another writer: gave up after 0 s"), line


def test_timeout_takes_seconds_0_or_more(held_index: Path) -> None:
    for value, said in (("-1", "must be 0 or more seconds"), ("soon", "'soon' is not a number")):
        result = invoke("remove", held_index, "k", "--timeout", value)
        assert result.exit_code == 2, describe(result)
        assert f"Error: Invalid value for '--timeout': {said}" in result.stderr


@pytest.mark.parametrize("batch_size", [None, 10])
@pytest.mark.parametrize("interrupted_at", [3, 25])
def test_an_interrupted_add_leaves_no_new_empty_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_size: int | None, interrupted_at: int
) -> None:
    """Ctrl-C during `add` into a new index: with nothing committed (one
    transaction, or before the first batch), no file is left; with
    batches committed, they are kept."""
    corpus = tmp_path / "X.jsonl"
    write_corpus(corpus, n=40)
    real = ingest.fingerprint_docs

    def interrupted(*args: Any, **kwargs: Any) -> Any:
        for n, item in enumerate(real(*args, **kwargs)):
            if n == interrupted_at:
                raise KeyboardInterrupt
            yield item

    monkeypatch.setattr(ingest, "fingerprint_docs", interrupted)
    index = tmp_path / "new.db"
    sized = [] if batch_size is None else ["--batch-size", batch_size]
    result = invoke("add", index, corpus, *sized)
    assert result.exit_code == 130, describe(result)
    committed = 0 if batch_size is None else interrupted_at // batch_size * batch_size
    if committed:
        assert listing(tmp_path) == ["X.jsonl", "new.db"]
        with SimIndex(index) as left:
            assert len(left) == committed
    else:
        assert listing(tmp_path) == ["X.jsonl"]


@pytest.mark.parametrize("command", ["add", "add --batch-size 1", "remove", "rebuild"])
def test_a_wait_for_another_writers_lock_is_said_once(
    lock_holder: tuple[Path, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """Every write transaction of every command tells a long wait for the
    lock (simindex.waits), not only the first of add's: said once a wait."""
    from simindex import waits
    from simindex.cli import errors

    db, holder = lock_holder
    said = errors.say_waiting
    told: list[str] = []

    def say_and_let_go(where: str, timeout: float) -> None:  # the other writer commits then
        # (at NOTE_AFTER_S = 0 a transaction that waits for nothing may be
        # told too, before it cancels: only a wait on the held lock counts)
        if holder.in_transaction:
            said(where, timeout)
            told.append(where)
            holder.rollback()

    monkeypatch.setattr(waits, "NOTE_AFTER_S", 0.0)  # said at once (the wait is real)
    monkeypatch.setattr(errors, "say_waiting", say_and_let_go)
    (tmp_path / "b.txt").write_text(T2, encoding="utf-8")
    args = {
        "add": ["add", db, tmp_path / "b.txt"],
        "add --batch-size 1": ["add", db, tmp_path / "b.txt", "--batch-size", "1"],
        "remove": ["remove", db, "some-key"],
        "rebuild": ["rebuild", db],
    }[command]
    result = ok(*args, "--timeout", "60")
    note = f"Note: waiting for another process's write lock on {db} (up to 60 s)...\n"
    assert result.stderr.count(note) == 1 and told == [str(db)], result.stderr
    assert not holder.in_transaction
    assert not waits._listeners  # the command stops listening when it ends


# --- 14. query --batch's progress ----------------------------------------------------


def test_query_batch_shows_its_progress_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from rich.console import Console

    from simindex.cli import index_commands, output

    made: list[Any] = []

    def on_a_terminal(total: int | None, quiet: bool, **options: Any) -> Any:
        console = Console(file=io.StringIO(), force_terminal=True)
        made.append(output.progress(total, quiet, console=console, **options))
        return made[-1]

    monkeypatch.setattr(index_commands, "progress", on_a_terminal)
    monkeypatch.setattr(index_commands, "_BAR_PASS_BYTES", 1)  # a pass a query
    write_corpus(tmp_path / "c.jsonl")
    db = tmp_path / "x.db"
    ok("add", db, tmp_path / "c.jsonl")
    made.clear()  # (add's bar)
    queries = tmp_path / "q.jsonl"
    queries.write_text(
        "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(TEXTS[:3])) + "\n",
        encoding="utf-8",
    )
    answered = ok("query", db, "--batch", queries).stdout.splitlines()
    assert [json.loads(line)["id"] for line in answered] == [0, 1, 2]
    [bar] = made
    assert not bar.disable
    [task] = bar.tasks
    assert task.total == task.completed == queries.stat().st_size
    assert task.fields["docs"] == 3
    assert ok("query", db, "--batch", queries, "--quiet").stdout.splitlines() == answered
    assert made[-1].disable  # --quiet: none drawn

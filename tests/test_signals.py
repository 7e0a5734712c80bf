"""How add and rebuild end under signals, and that their worker processes end with them.

The commands run as real processes, each in a session of its own, so that
every process they start (the fork server, the resource tracker, the
workers) is found by its session id, even once it has been re-parented to
init. Their input is standard input, held open: a command is waiting for
more documents, with its pool at work, for as long as a test needs, however
fast or slow the machine is. Waits poll with generous deadlines.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from simindex import SimIndex, ingest
from simindex.fingerprint import DEFAULT_CONFIG
from simindex.ingest import Doc
from tests.helpers import ROOT

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/stat").exists(), reason="looks at processes through /proc (Linux)"
)

DEADLINE_S = 60.0  # for what must happen (a pool to start, an index to appear)
GONE_S = 10.0  # the bound: nothing of the command alive this long after it ends


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(ROOT)
    return env


def _stat(pid: int) -> list[str] | None:
    """/proc/PID/stat's fields after the command name (state, ppid, pgrp, session, ...)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rpartition(")")[2].split()


def session(sid: int) -> list[int]:
    """The live processes of a session (zombies, already ended, left out)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None and fields[0] != "Z" and int(fields[3]) == sid:
                found.append(int(entry.name))
    return sorted(found)


def alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def wait_for(what: str, ready: Callable[[], bool], seconds: float = DEADLINE_S) -> None:
    end = time.monotonic() + seconds
    while not ready():
        if time.monotonic() > end:
            raise AssertionError(f"not within {seconds} s: {what}")
        time.sleep(0.05)


def deaf_to(pid: int) -> int:
    """The signals a process blocks or ignores (a mask: signal n is bit n - 1)."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return int(fields["SigBlk"], 16) | int(fields["SigIgn"], 16)


# Two chunks of 256 start a pool; more, and less than a pipe's buffer (64 KiB),
# so that writing them never waits for a command that is not reading yet.
FEED = 600


def jsonl(n: int, start: int = 0) -> bytes:
    return "".join(
        json.dumps({"id": f"d{i}", "text": f"document {i} about topic {i % 13} and more {i * 7}"})
        + "\n"
        for i in range(start, start + n)
    ).encode()


class Command:
    """A simindex command in a session of its own, reading standard input."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "simindex", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(),
            cwd=ROOT,
            start_new_session=True,
        )
        self.pid = self.proc.pid

    def feed(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def helpers(self) -> list[int]:
        """The processes of its session other than itself."""
        return [p for p in session(self.pid) if p != self.pid]

    def finish(self) -> tuple[int, str]:
        out, err = self.proc.communicate(timeout=DEADLINE_S)
        return self.proc.returncode, err.decode("utf-8", "replace")

    def clean_up(self) -> None:
        """Whatever a failed test leaves: every process of the session, by its id."""
        for pid in session(self.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=DEADLINE_S)


@pytest.fixture
def command() -> Iterator[Callable[..., Command]]:
    started: list[Command] = []

    def start(*args: str) -> Command:
        started.append(Command(*args))
        return started[-1]

    yield start
    for c in started:
        c.clean_up()


def at_work(c: Command) -> list[int]:
    """Feed a command enough documents to start its pool of two, keep its
    input open, and wait until the fork server, the tracker and both workers
    are there; their ids."""
    c.feed(jsonl(FEED))
    wait_for("the pool's processes", lambda: len(c.helpers()) >= 4)
    return c.helpers()


def index_args(tmp_path: Path, name: str) -> list[str]:
    """add or rebuild of an index, from JSON Lines on stdin, with two workers."""
    index = tmp_path / "ix.db"
    if name == "rebuild":
        with SimIndex(index) as ix:
            ix.add("old", "an old document that the rebuild replaces")
    return [name, str(index), "-", "--format", "jsonl", "--workers", "2", "--quiet"]


# --- 4. workers end with their parent ------------------------------------------------


@pytest.mark.parametrize("name", ["add", "rebuild"])
def test_nothing_of_a_killed_command_outlives_it(
    tmp_path: Path, command: Callable[..., Command], name: str
) -> None:
    c = command(*index_args(tmp_path, name))
    at_work(c)
    os.kill(c.pid, signal.SIGKILL)
    c.proc.wait(timeout=DEADLINE_S)
    wait_for("the workers, fork server and tracker to end", lambda: not c.helpers(), GONE_S)


# --- 5. Ctrl-C: one line, from every moment -------------------------------------------


# Run as the command: the fork server also preloads slow_preload, which says
# when the server is importing it and waits there until the test says go.
_SLOW_PRELOAD = """
import os, pathlib, time
here = pathlib.Path(os.environ["SLOW_PRELOAD_DIR"])
(here / "preloading").touch()
end = time.monotonic() + 60
while not (here / "go").exists() and time.monotonic() < end:
    time.sleep(0.02)
"""
_WITH_SLOW_PRELOAD = """
import sys
from multiprocessing import forkserver
forkserver.set_forkserver_preload(["__main__", "slow_preload"])
from simindex.__main__ import main
sys.argv[0] = "simindex"
main()
"""


def test_ctrl_c_while_the_fork_server_imports_is_one_line(tmp_path: Path) -> None:
    """The fork server imports simindex before it ignores Ctrl-C: a Ctrl-C
    then (about half a second into add) printed its KeyboardInterrupt
    traceback after the command's one line. It starts with SIGINT blocked
    now, as the workers forked from it are, and the parent alone stops."""
    (tmp_path / "slow_preload.py").write_text(_SLOW_PRELOAD)
    env = _env() | {
        "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}",
        "SLOW_PRELOAD_DIR": str(tmp_path),
    }
    args = index_args(tmp_path, "add")[1:]
    proc = subprocess.Popen(
        [sys.executable, "-c", _WITH_SLOW_PRELOAD, "add", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        assert proc.stdin is not None
        proc.stdin.write(jsonl(FEED))
        proc.stdin.flush()
        wait_for("the fork server's imports", (tmp_path / "preloading").exists)
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: to the whole group
        (tmp_path / "go").touch()
        out, err = proc.communicate(timeout=DEADLINE_S)
        assert proc.returncode == 130, err.decode()
        assert err.decode() == "Interrupted; nothing of the unfinished transaction was kept.\n"
        wait_for("the pool to end", lambda: not session(proc.pid), GONE_S)
    finally:
        for pid in session(proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.kill()
        proc.communicate()


def test_an_interrupt_while_a_worker_starts_waits_for_it(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C landing just after a worker process was made, before the pool
    knew of it, left a worker nobody waited for: it printed forkserver.py's
    FileNotFoundError once the pool's semaphores were gone (reading what it
    had been sent), or waited for work forever. The interrupt now comes once
    the worker is known, and the pool stops it."""
    from simindex.ingest import workers

    context = workers._context().Process  # the class of the pool's processes
    real = context._Popen
    made: list[int] = []

    def launch_then_interrupt(process_obj: Any) -> Any:
        popen = real(process_obj)
        made.append(popen.pid)
        if len(made) == 1:
            signal.raise_signal(signal.SIGINT)  # as a Ctrl-C right then would
        return popen

    monkeypatch.setattr(context, "_Popen", staticmethod(launch_then_interrupt))
    docs = (Doc(str(i), f"word{i} other{i % 7}", "", 1) for i in range(100_000))
    try:
        with pytest.raises(KeyboardInterrupt):
            for _ in ingest.fingerprint_docs(docs, DEFAULT_CONFIG, workers=2, chunk_size=50):
                pass
        assert made
        wait_for("the worker to end", lambda: not any(map(alive, made)), GONE_S)
        assert capfd.readouterr().err == ""  # (a worker's stderr is this process's)
    finally:
        for pid in made:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for child in multiprocessing.active_children():
            child.kill()


# Python marks the interpreter as ended by Ctrl-C when a KeyboardInterrupt
# passes through C code that runs Python source (PyRun_String; some extension
# modules' imports do), even if it is caught later; run as `python -m`, it
# then kills itself with SIGINT at exit, whatever code the command chose.
_THROUGH_PYRUN = """
import ctypes, sys
import simindex.cli
from simindex.__main__ import main
run_string = ctypes.pythonapi.PyRun_String
run_string.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.py_object, ctypes.py_object]
run_string.restype = ctypes.py_object
def interrupted_in_c(argv=None):
    run_string(b"raise KeyboardInterrupt", 257, {}, {})  # 257: Py_file_input
simindex.cli.main = interrupted_in_c
main()
"""


def test_ctrl_c_through_c_code_still_exits_130(tmp_path: Path) -> None:
    """About 1 Ctrl-C in 10 while the command's modules loaded said
    "Interrupted." and then ended by SIGINT (-2), not with exit code 130."""
    (tmp_path / "through_c").mkdir()
    (tmp_path / "through_c" / "__init__.py").write_text("")
    (tmp_path / "through_c" / "__main__.py").write_text(_THROUGH_PYRUN)
    env = _env() | {"PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    done = subprocess.run(
        [sys.executable, "-m", "through_c"], capture_output=True, text=True, env=env, timeout=60
    )
    assert (done.returncode, done.stderr) == (130, "Interrupted.\n")


# --- 6. SIGTERM and SIGHUP are Ctrl-C ---------------------------------------------------


@pytest.mark.parametrize(("name", "code"), [("SIGTERM", 143), ("SIGHUP", 129)])
def test_a_stopped_add_leaves_no_new_index(
    tmp_path: Path, command: Callable[..., Command], name: str, code: int
) -> None:
    if signal.getsignal(getattr(signal, name)) == signal.SIG_IGN:
        # The command keeps a signal ignored when it starts so (nohup), by
        # design (simindex/signals.py); these tests then run under nohup.
        pytest.skip(f"{name} is ignored in this process (run under nohup): the command keeps it so")
    index = tmp_path / "new.db"
    c = command("add", str(index), "-", "--key", "k", "--quiet")
    wait_for("the new index", index.exists)
    os.kill(c.pid, getattr(signal, name))
    got, err = c.finish()
    assert got == code, err
    assert err == f"Interrupted by {name}; nothing of the unfinished transaction was kept.\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["add", "rebuild"])
def test_sigterm_to_the_group_stops_the_command_and_its_pool(
    tmp_path: Path, command: Callable[..., Command], name: str
) -> None:
    """As `timeout` does: the signal goes to the command and to its group."""
    c = command(*index_args(tmp_path, name))
    at_work(c)
    os.killpg(c.pid, signal.SIGTERM)
    code, err = c.finish()
    assert code == 143, err
    assert err == "Interrupted by SIGTERM; nothing of the unfinished transaction was kept.\n"
    wait_for("the pool to end", lambda: not c.helpers(), GONE_S)
    if name == "add":  # the new index is gone
        assert sorted(p.name for p in tmp_path.iterdir()) == []
    else:  # the old index is as it was
        with SimIndex(tmp_path / "ix.db") as ix:
            assert [k for k, _ in ix.items()] == ["old"]


def test_an_ignored_sighup_stays_ignored(tmp_path: Path) -> None:
    """nohup ignores SIGHUP before the command starts: the command keeps it so."""
    index = tmp_path / "ix.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "simindex", "add", str(index), "-", "--key", "k", "-q"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
        cwd=ROOT,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),  # noqa: PLW1509
    )
    try:
        wait_for("the new index", index.exists)
        proc.send_signal(signal.SIGHUP)
        out, err = proc.communicate(b"a document that arrives after the hangup", timeout=DEADLINE_S)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    with SimIndex(index) as ix:
        assert ix.get("k") is not None

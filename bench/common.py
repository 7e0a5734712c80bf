"""The helper every bench script shares (and the only bench module a script
imports, beside data.py's data): progress on stderr (``log``), timing
(``clock``, ``per_call``), medians and percentiles, JSON on stdout
(``print_json``), the revision a run measured and whether its tree was clean,
the machine it ran on, and the results file each script writes what it
prints into (``save_output``), plus the PostgreSQL clean-up the scripts that
make schemas share.

Every script prints its table to stdout and, through ``save_output``, writes
the same text to ``bench/results/<script>.txt`` (an experiment's to
``bench/results/experiments/``) under a header giving the command, the date,
the revision and whether the tree was clean, and the machine. The docs cite those files.
A run writes no file with ``--no-save``, with JSON on stdout (``--json``), or
with ``--quick`` (a smoke run must not replace the results of a full one);
``--out FILE`` writes elsewhere, and writes even a quick run. The file is
written beside its name and renamed into place when the script exits 0, so a
failed or interrupted run leaves the results as they were.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import IO, TypeVar

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
RESULTS = BENCH / "results"

T = TypeVar("T")
R = TypeVar("R")


def log(msg: str) -> None:
    """Progress: one line to stderr, flushed (stdout holds the table)."""
    print(msg, file=sys.stderr, flush=True)


def print_json(obj: object) -> None:
    """A run's results as JSON on stdout (``--json``); what JSON cannot hold
    (a path, a numpy scalar) is written as its string."""
    print(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


# Timing


def clock(fn: Callable[[], T]) -> tuple[T, float]:
    """What one call of fn returns, and the seconds it took."""
    t0 = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - t0


def per_call(fn: Callable[[T], R], items: Iterable[T]) -> tuple[list[R], list[float]]:
    """fn over items, one call at a time: the answers and each call's seconds."""
    answers: list[R] = []
    seconds: list[float] = []
    now = time.perf_counter
    for item in items:
        t0 = now()
        answer = fn(item)
        seconds.append(now() - t0)
        answers.append(answer)
    return answers, seconds


@contextmanager
def values_in(module: ModuleType, values: dict[str, float]) -> Iterator[None]:
    """A module's names set to these values for a while (simindex.costs'
    constants, which its functions read at each call), then set back."""
    before = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            setattr(module, name, value)


# Medians and percentiles (q is a fraction: 0.99 is P99)


def median(values: Iterable[float]) -> float:
    return float(statistics.median(values))


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank percentile: the value at rank int(q * n) of the sorted values."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def interpolated_percentile(values: Sequence[float], q: float) -> float:
    """The percentile numpy interpolates linearly between neighbouring ranks."""
    return float(np.quantile(np.asarray(values, dtype=np.float64), q))


def p99(values: Sequence[float]) -> float:
    """P99, interpolated (as numpy's percentile)."""
    return interpolated_percentile(values, 0.99)


# Figures as tables show them


def fmt(x: float | None, unit: str = "") -> str:
    """A figure at the precision a table shows it: thousands separated, three
    significant digits below 100."""
    if x is None:
        return "-"
    if abs(x) >= 1000:
        s = f"{x:,.0f}"
    elif abs(x) >= 100:
        s = f"{x:.0f}"
    elif abs(x) >= 10:
        s = f"{x:.1f}"
    elif abs(x) >= 1:
        s = f"{x:.2f}"
    else:
        s = f"{x:.3g}"
    return s + unit


def pct(x: float | None) -> str:
    """A rate as a percentage: "-" for none, one decimal under 10%, "<0.1" under 0.1%."""
    if x is not None and 0 < x < 0.001:
        return "<0.1"
    return "-" if x is None else f"{100 * x:.0f}" if x >= 0.1 or x == 0 else f"{100 * x:.1f}"


# The revision, the machine, the results file


def git_rev() -> str:
    """`git describe --always --dirty` of the checkout, or "unknown"."""
    try:
        return subprocess.run(
            ["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def tree_clean() -> bool | None:
    """Whether the checkout has no uncommitted change (untracked files count;
    what .gitignore leaves out does not, nor a results file being written,
    save_output's .partial), or None outside a git checkout."""
    try:
        out = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return not [line for line in out.splitlines() if not line.endswith(".partial")]


def revision() -> str:
    """The revision and whether its tree was clean, as a results header says it."""
    clean = tree_clean()
    state = {True: "clean tree", False: "uncommitted changes", None: "tree unknown"}[clean]
    return f"{git_rev()} ({state})"


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else what platform says."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown cpu"


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as /proc/loadavg gives them."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def machine() -> str:
    """CPUs, CPU model, operating system and Python, in one line."""
    return (
        f"nproc {os.cpu_count()}, {cpu_model()}, {platform.system()} {platform.release()} "
        f"{platform.machine()}, Python {platform.python_version()}, load average {load_average()}"
    )


def environment() -> dict:
    """The versions and the machine a run measured, for a script's JSON and table."""
    import sqlalchemy
    import xxhash

    try:
        nproc = subprocess.run(["nproc"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        nproc = f"{os.cpu_count()} (os.cpu_count)"
    cpu, load = cpu_model(), load_average()
    rev = git_rev()
    try:
        import jieba

        jieba_version = getattr(jieba, "__version__", "unknown")
    except ImportError:
        jieba_version = "not installed"
    return {
        "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "numpy": np.__version__,
        "sqlalchemy": sqlalchemy.__version__,
        "xxhash": xxhash.VERSION,
        "jieba": jieba_version,
        "nproc": nproc,
        "cpu": cpu,
        "loadavg_at_start": load,
        "git": rev,
    }


def output_options(ap: argparse.ArgumentParser) -> None:
    """Add --out and --no-save (see save_output) to a script's options."""
    ap.add_argument(
        "--out",
        metavar="FILE",
        help="write what is printed to FILE (default: bench/results/<script>.txt, "
        "except for --quick and --json runs)",
    )
    ap.add_argument("--no-save", action="store_true", help="print only: write no results file")


def results_path(script: str, args: argparse.Namespace) -> Path | None:
    """Where a run of `script` with `args` writes what it prints, or None."""
    if getattr(args, "no_save", False):
        return None
    if getattr(args, "out", None):
        return Path(args.out)
    as_json = getattr(args, "json", None)
    if as_json is True or as_json == "-":  # JSON on stdout: not the table
        return None
    if getattr(args, "quick", False):  # a smoke run keeps the full run's results
        return None
    return RESULTS / f"{script}.txt"


def script_path() -> str:
    """The running script, relative to the checkout (bench/x.py, bench/experiments/y.py)."""
    path = Path(sys.argv[0]).resolve()
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def header(path: Path) -> str:
    """The lines a results file starts with."""
    try:
        shown = path.resolve().relative_to(ROOT)
    except ValueError:
        shown = path
    command = shlex.join(["python", script_path(), *sys.argv[1:]])
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (
        f"# {shown}: what `{command}` printed\n"
        f"# date {date}    revision {revision()}\n"
        f"# machine {machine()}\n\n"
    )


class _Tee:
    """A text stream that writes to the terminal's stdout and to a file."""

    def __init__(self, screen: IO[str], file: IO[str]) -> None:
        self.screen, self.file = screen, file

    def write(self, text: str) -> int:
        self.file.write(text)
        return self.screen.write(text)

    def flush(self) -> None:
        self.file.flush()
        self.screen.flush()

    def __getattr__(self, name: str) -> object:  # encoding, isatty, fileno, ...
        return getattr(self.screen, name)


def save_output(script: str, args: argparse.Namespace, run: Callable[[], int]) -> int:
    """Run a script's body, writing what it prints to stdout into its results
    file too (see results_path) under a header (see header). The file is kept
    only when the body returns 0; returns what the body returned."""
    path = results_path(script, args)
    if path is None:
        return run()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    # The header first: once the partial file exists, git sees the tree as changed.
    head = header(path)
    screen = sys.stdout
    status = 1
    try:
        with partial.open("w", encoding="utf-8") as file:
            file.write(head)
            sys.stdout = _Tee(screen, file)
            try:
                status = run()
            finally:
                sys.stdout.flush()
                sys.stdout = screen
        if status == 0:
            partial.replace(path)
            print(f"written to {path}", file=sys.stderr)
        else:
            print(f"exit status {status}: {path} left as it was", file=sys.stderr)
    finally:
        partial.unlink(missing_ok=True)
    return status


# PostgreSQL: the schemas and stored snapshots a run leaves behind


def drop_schema(url: str, schema: str) -> None:
    """Drop a PostgreSQL schema a run made, with everything in it."""
    from sqlalchemy import create_engine

    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    finally:
        engine.dispose()


def forget_stored(location: str) -> None:
    """Empty an index's stored snapshot, so the next holder reads the rows."""
    from simindex import SimIndex

    with SimIndex(location, hold=False) as index, index._backend.writing() as conn:
        index._store.snapshots.drop(conn)

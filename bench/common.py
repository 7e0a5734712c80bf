"""What the bench scripts share: the revision a run measured, the machine it
ran on, and the results file each script writes what it prints into.

Every script prints its table to stdout and, through ``save_output``, writes
the same text to ``bench/results/<script>.txt`` under a header giving the
command, the date, the revision and the machine. The docs cite those files.
A run writes no file with ``--no-save``, with JSON on stdout (``--json``), or
with ``--quick`` (a smoke run must not replace the results of a full one);
``--out FILE`` writes elsewhere, and writes even a quick run. The file is
written beside its name and renamed into place when the script exits 0, so a
failed or interrupted run leaves the results as they were.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


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


def header(script: str, path: Path) -> str:
    """The lines a results file starts with."""
    try:
        shown = path.resolve().relative_to(ROOT)
    except ValueError:
        shown = path
    command = shlex.join(["python", f"bench/{script}.py", *sys.argv[1:]])
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return (
        f"# {shown}: what `{command}` printed\n"
        f"# date {date}    revision {git_rev()}\n"
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
    screen = sys.stdout
    status = 1
    try:
        with partial.open("w", encoding="utf-8") as file:
            file.write(header(script, path))
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

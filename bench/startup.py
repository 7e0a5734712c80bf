#!/usr/bin/env python
"""What a shell user waits for: `simindex -h`, `simindex --version` and
`simindex query` on a small index, each the whole process, beside what
importing each dependency alone costs in the same run, and the ratios
issue 37 sets as targets: -h and --version within 2x of `python -c "import
typer"` (the interpreter and typer's own import), the query within 1.3x of
`python -c "import sqlalchemy, numpy"`.

    python bench/startup.py            # 15 fresh processes a row (about a minute)
    python bench/startup.py --runs 5   # fewer
    python bench/startup.py --no-save  # print only (else bench/results/startup.txt)

The index: examples/news.jsonl added to a SQLite file in a temporary
directory (not timed). Each row is the median wall time of R fresh
processes, the rows interleaved run by run so a busy moment of the machine
falls on all of them alike: `python -c pass` (the interpreter alone), one
`import` of each dependency the query needs (alone, so each includes what it
imports), all of them together, `import simindex.cli`, and the command
itself (`simindex query INDEX TEXT`, through the installed entry point,
TEXT the file's first document, which it finds), `simindex -h` and
`simindex --version`. A row's "beyond python" is its median less the
interpreter's: what the import or the command adds.

The command pauses Python's garbage collector while its modules load
(simindex/__main__.py), which a plain ``python -c "import ..."`` does not:
the row "what query needs, gc paused as in simindex"
loads the floor that way, and the last ratio is simindex's own part above it
(opening the index, the query, simindex's own modules).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import clock, log, output_options, save_output  # noqa: E402

EXAMPLE = HERE.parent / "examples" / "news.jsonl"
PY = sys.executable
IMPORTS = {
    "numpy": "import numpy",
    "sqlalchemy, numpy": "import sqlalchemy, numpy",
    "sqlalchemy": "import sqlalchemy",
    "sqlalchemy + SQLite dialect": "import sqlalchemy.dialects.sqlite",
    "typer": "import typer",
    "typer + pydantic (typer's parsing of any option)": "import typer._adapters",
    "all of the above": "import numpy, sqlalchemy.dialects.sqlite, typer, typer._adapters",
    # What `simindex query` cannot start without: its floor.
    "what query needs (SQLite dialect, numpy, typer)": (
        "import numpy, sqlalchemy.dialects.sqlite, typer"
    ),
    # The same, loaded as the simindex command loads its modules (simindex/__main__.py:
    # the garbage collector paused meanwhile, what they made frozen before it resumes).
    "what query needs, gc paused as in simindex": (
        "import gc; gc.disable(); import numpy, sqlalchemy.dialects.sqlite, typer; "
        "gc.freeze(); gc.enable()"
    ),
    "simindex.cli": "import simindex.cli",
}


# (row, the row it is measured against, the largest ratio the target allows)
RATIOS = (
    ("simindex -h (whole process)", "import typer", 2.0),
    ("simindex --version (whole process)", "import typer", 2.0),
    ("simindex query INDEX TEXT (whole process)", "import sqlalchemy, numpy", 1.3),
    # Not a target: how far the floor of the query's own dependencies is
    # from the target's baseline, and simindex's part above that floor.
    (
        "import what query needs (SQLite dialect, numpy, typer)",
        "import sqlalchemy, numpy",
        None,
    ),
    (
        "simindex query INDEX TEXT (whole process)",
        "import what query needs (SQLite dialect, numpy, typer)",
        None,
    ),
    # simindex's own part: above the floor loaded as the command loads it.
    (
        "simindex query INDEX TEXT (whole process)",
        "import what query needs, gc paused as in simindex",
        None,
    ),
)
# Each process as a user's install runs it: with the .pyc files pip writes
# (a session that sets PYTHONDONTWRITEBYTECODE would time compiling instead).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str]) -> float:
    _done, seconds = clock(
        lambda: subprocess.run(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=ENV
        )
    )
    return seconds


def measure(args: argparse.Namespace) -> int:
    exe = shutil.which("simindex")
    if exe is None:
        log("no `simindex` command on PATH: pip install -e . first")
        return 1
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        db = str(Path(tmp) / "small.db")
        with EXAMPLE.open(encoding="utf-8") as lines:
            first = json.loads(next(lines))
        text, key = first["text"], first["id"]
        subprocess.run([exe, "add", db, str(EXAMPLE)], check=True, capture_output=True)
        found = subprocess.run([exe, "query", db, text], capture_output=True, text=True)
        if found.returncode != 0 or key not in found.stdout:
            log(f"simindex query did not find {key} (exit {found.returncode})")
            return 1
        rows: dict[str, list[str]] = {"python -c pass": [PY, "-c", "pass"]}
        rows |= {f"import {name}": [PY, "-c", code] for name, code in IMPORTS.items()}
        rows["simindex -h (whole process)"] = [exe, "-h"]
        rows["simindex --version (whole process)"] = [exe, "--version"]
        rows["simindex query INDEX TEXT (whole process)"] = [exe, "query", db, text]
        times: dict[str, list[float]] = {name: [] for name in rows}
        for cmd in rows.values():  # a warm-up round (it writes the .pyc files), not kept
            timed(cmd)
        for run in range(args.runs):
            log(f"round {run + 1} of {args.runs}")
            for name, cmd in rows.items():
                times[name].append(timed(cmd))
    base = statistics.median(times["python -c pass"])
    where = subprocess.run(
        [PY, "-c", "import simindex; print(simindex.__file__)"], capture_output=True, text=True
    ).stdout.strip()
    print(f"simindex loaded from {Path(where).parent} (PYTHONPATH may point it at an export)")
    print(
        f"`simindex query` on a small index (examples/news.jsonl, SQLite), whole process, "
        f"beside imports alone; medians of {args.runs} fresh processes a row, interleaved\n"
    )
    width = max(map(len, times))
    print(f"{'':{width}} {'median ms':>10} {'beyond python':>14}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:{width}} {median * 1000:10.0f} {(median - base) * 1000:14.0f}")
    medians = {name: statistics.median(values) for name, values in times.items()}
    print("\nratios (issue 37's targets)")
    for name, against, target in RATIOS:
        ratio = medians[name] / medians[against]
        if target is None:
            print(f"  {name} / {against}: {ratio:.2f}x")
            continue
        verdict = "holds" if ratio <= target else "misses"
        print(f"  {name} / {against}: {ratio:.2f}x (target <= {target}x: {verdict})")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=15, help="fresh processes a row (default 15)")
    output_options(ap)
    args = ap.parse_args(argv)
    return save_output("startup", args, lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())

"""The benchmark suite: its scripts import only the helper layer, and still
run (tiny sizes; the figures are not checked).

The import checks are fast. The smoke runs are slow, so they run with
``pytest -m slow`` (as .ci/run does). bench/peers.py carries on without the
peers it cannot import, so it runs without the optional extra too. The smoke
runs never touch bench/results/ (they print JSON, are --quick, or say
--no-save): every test checks that the results the docs cite are left as
they were.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import ROOT

BENCH = ROOT / "bench"
RESULTS = BENCH / "results"
HELPERS = {"common", "data"}  # the helper layer every script may import
KEPT = {  # one script a question a user asks
    "foundation",
    "peers",
    "quality",
    "thresholds",
    "shorttext",
    "bulk",
    "holding",
    "allpairs",
    "growth",
    "threads",
    "revisions",
    "spark",
    "backends",
    "batch",
    "distance",
    "startup",
    "defaults",
    "overlaps",
    "fingerprinting",
    "dedup",
    "costs",
}
EXPERIMENT_LIBRARIES = {"sketches"}  # bench/experiments/: modules, not scripts


def imported_modules(path: Path) -> set[str]:
    """The top-level names of every module a file imports, at any depth."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.split(".")[0])
    return found


def test_no_script_imports_another_script() -> None:
    """Every script under bench/ imports the helper layer (common.py, data.py),
    simindex and libraries, never another script; an experiment may also
    import the signature library beside it, which is not a script."""
    scripts = sorted(BENCH.glob("*.py"))
    experiments = sorted((BENCH / "experiments").glob("*.py"))
    names = {p.stem for p in scripts + experiments}
    wrong = {}
    for path in scripts + experiments:
        allowed = HELPERS | (EXPERIMENT_LIBRARIES if path in experiments else set())
        bad = (imported_modules(path) & names) - allowed - {path.stem}
        if bad:
            wrong[str(path.relative_to(ROOT))] = sorted(bad)
    assert not wrong, f"scripts importing other scripts: {wrong}"
    for name in EXPERIMENT_LIBRARIES:
        text = (BENCH / "experiments" / f"{name}.py").read_text(encoding="utf-8")
        assert "__main__" not in text, f"{name}.py is run as a script"


def test_bench_top_level_holds_only_the_suite() -> None:
    """bench/ holds the kept scripts (each in bench/README.md's table) and the
    helper layer; experiments live in bench/experiments/."""
    assert {p.stem for p in BENCH.glob("*.py")} == KEPT | HELPERS
    readme = (BENCH / "README.md").read_text(encoding="utf-8")
    for name in sorted(KEPT):
        assert f"| `{name}.py` |" in readme, f"{name}.py is not in bench/README.md's table"


slow = pytest.mark.slow


@pytest.fixture(autouse=True)
def results_untouched() -> Iterator[None]:
    """A smoke run must not overwrite the results of a full run."""

    def files() -> dict[str, bytes]:
        return {
            str(p.relative_to(RESULTS)): p.read_bytes() for p in RESULTS.rglob("*") if p.is_file()
        }

    before = files()
    yield
    assert files() == before


def run_script(*args: str) -> str:
    """Run a bench script from the checkout; its stdout, after a clean exit."""
    out = subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@slow
def test_foundation_benchmark_runs_and_is_exact() -> None:
    printed = run_script(
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
    )
    assert json.loads(printed)


@slow
def test_peers_benchmark_quick_run() -> None:
    assert "exact: yes" in run_script("bench/peers.py", "--quick")


@slow
def test_growth_benchmark_quick_run_finds_the_same_pairs() -> None:
    assert "same pairs: yes" in run_script("bench/growth.py", "--quick")


@slow
def test_batch_benchmark_runs_and_is_exact() -> None:
    printed = run_script("bench/batch.py", "--n", "5000", "--queries", "600", "--no-save")
    assert "exact: yes" in printed


@slow
def test_a_script_writes_what_it_prints_under_a_header(tmp_path: Path) -> None:
    """--out: the file holds the command, date, revision and machine, then
    exactly what went to stdout."""
    out = tmp_path / "batch.txt"
    printed = run_script("bench/batch.py", "--n", "3000", "--queries", "300", "--out", str(out))
    head, _, body = out.read_text(encoding="utf-8").partition("\n\n")
    assert body == printed
    lines = head.splitlines()
    assert "python bench/batch.py --n 3000 --queries 300 --out" in lines[0]
    assert lines[1].startswith("# date ") and " revision " in lines[1]
    assert lines[2].startswith("# machine nproc ")
    assert not list(tmp_path.glob(".*.partial"))


@slow
def test_distance_benchmark_runs_and_is_exact() -> None:
    """It asserts every answer against numpy brute force itself."""
    out = json.loads(
        run_script(
            "bench/distance.py", "--n", "3000", "--queries", "60", "--stream", "60", "--json"
        )
    )
    assert [r["k"] for r in out["rows"]] == [3, 4, 6, 8]
    assert all(r["stream_held_p50_us"] > 0 for r in out["rows"])


@slow
def test_backends_benchmark_runs_on_both() -> None:
    """SQLite and, in CI, the PostgreSQL server .ci/run starts."""
    from .conftest import postgres_or_skip

    postgres_or_skip()
    printed = run_script(
        "bench/backends.py", "--n", "3000", "--queries", "50", "--batch", "500", "--json"
    )
    assert json.loads(printed)


@slow
def test_holding_benchmark_runs_on_both() -> None:
    """Every path of bench/holding.py checked against brute force, on SQLite
    and the PostgreSQL server .ci/run starts."""
    from .conftest import postgres_or_skip

    postgres_or_skip()
    printed = run_script("bench/holding.py", "--n", "3000", "--queries", "300", "--no-save")
    assert "same answers: yes" in printed and "PostgreSQL" in printed


@slow
def test_shorttext_benchmark_runs_quickly() -> None:
    """bench/shorttext.py --quick prints its table for both languages and
    writes no results file."""
    printed = run_script("bench/shorttext.py", "--quick")
    assert "SimIndex() defaults" in printed and "## Chinese" in printed


@slow
@slow
def test_overlaps_benchmark_runs_quickly_and_agrees() -> None:
    """bench/overlaps.py --quick: every answer of overlaps() is the offline shares."""
    printed = run_script("bench/overlaps.py", "--quick")
    assert "answers: the same as the offline shares (both ways)" in printed


def test_bulk_benchmark_runs_on_both() -> None:
    """bench/bulk.py loads SQLite and the PostgreSQL server .ci/run starts,
    each beside its floor, and leaves no schema behind."""
    from .conftest import postgres_or_skip

    postgres_or_skip()
    printed = run_script("bench/bulk.py", "--n", "3000", "--runs", "1", "--no-save")
    assert "fresh SQLite file" in printed and "fresh PostgreSQL index" in printed


@slow
def test_defaults_benchmark_quick_run() -> None:
    """bench/defaults.py runs every script it names at tiny sizes and reads
    each one's printed figures into its table (a row for each target)."""
    from .conftest import postgres_or_skip

    postgres_or_skip()
    printed = run_script("bench/defaults.py", "--quick")
    rows = [line for line in printed.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) == 14, rows  # the header and 13 rows
    assert "PostgreSQL add_fingerprints" in printed and "k = 3 single query" in printed


@slow
def test_threads_benchmark_runs_and_is_exact() -> None:
    """bench/threads.py: every thread's answers equal brute force, one read a process."""
    printed = run_script(
        "bench/threads.py", "--n", "3000", "--threads", "3", "--queries", "20", "--no-save"
    )
    assert "all equal brute force" in printed
    reads = [
        line.split()[-2] for line in printed.splitlines() if line.endswith((" rows", " stored"))
    ]
    assert reads == ["1", "1", "1", "1"]


def quality_cache_filled() -> None:
    """Skip unless bench/quality.py has filled its cache of texts (it fetches)."""
    cache = os.environ.get("SIMINDEX_QUALITY_CACHE", "~/.cache/simindex-quality")
    root = Path(cache).expanduser()
    marks = [root / "199801.txt"] + [
        root / f"root/.{pkg}.done"
        for pkg in (
            "fortunes-min",
            "fortunes",
            "jargon-text",
            "fortunes-zh",
            "debian-edu-doc-zh-cn",
        )
    ]
    if not all(m.exists() for m in marks):
        pytest.skip(f"{root} not filled: run `python bench/quality.py` once (it fetches)")


@slow
def test_quality_benchmark_quick_run() -> None:
    """Offline, from the texts it caches; skipped until a full run has filled the cache."""
    quality_cache_filled()
    out = json.loads(run_script("bench/quality.py", "--quick", "--json"))
    for lang in ("en", "zh"):
        pairs = out["languages"][lang]["pairs"]
        assert pairs["sent50"] == pairs["replace50"] == 80
    # The two releases of the Chinese manual are read, and give natural pairs.
    zh = out["languages"]["zh"]
    assert zh["sources"]["debian-edu-manuals"]["passages"] > 100
    assert sum(p["kind"] == "nat+" and "debian-edu" in p["a"] for p in zh["natural"]["pairs"]) >= 5
    # The ceilings need nothing beyond simindex (the MinHash row needs datasketch).
    assert {"cosine (exact)", "jaccard (exact)"} <= set(zh["results"])


@slow
def test_thresholds_benchmark_quick_run() -> None:
    """The threshold per language: tuned on one seed, reported on the other."""
    quality_cache_filled()
    printed = run_script("bench/thresholds.py", "--quick", "--lang", "zh")
    assert "## Chinese" in printed and "<- tuned" in printed
    assert "negatives set aside as sharing >= half of their 3-grams" in printed


@slow
def test_revisions_benchmark_compares_a_revision_with_the_working_tree() -> None:
    """HEAD against the working tree: two worktrees, removed again."""
    printed = run_script(
        "bench/revisions.py",
        "--base",
        "HEAD",
        "--n",
        "2000",
        "--queries",
        "50",
        "--repeats",
        "1",
        "--no-save",
    )
    assert "same answers: yes" in printed
    trees = subprocess.run(
        ["git", "worktree", "list"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert "simindex-revisions-" not in trees.stdout


def _quality_cache_or_skip() -> None:
    cache = os.environ.get("SIMINDEX_QUALITY_CACHE", "~/.cache/simindex-quality")
    root = Path(cache).expanduser()
    if not ((root / "199801.txt").exists() and (root / "root/.fortunes.done").exists()):
        pytest.skip(f"{root} not filled: run `python bench/quality.py` once (it fetches)")


@slow
def test_hard_quality_benchmark_quick_run() -> None:
    """The harder kinds and the two-stage rows, at ten pairs a kind."""
    _quality_cache_or_skip()
    printed = run_script(
        "bench/experiments/quality_hard.py",
        "--quick",
        "--n",
        "10",
        "--random",
        "100",
        "--json",
    )
    out = json.loads(printed)
    for lang in ("en", "zh"):
        r = out["languages"][lang]
        assert {"mixsent", "mixword", "template", "manpage"} <= set(r["pairs"])
        assert {"default k<=8", "k<=8 + minhash128x4/1", "jaccard1 (exact)"} <= set(r["results"])
    assert "zhspace" in out["languages"]["zh"]["pairs"]


@slow
@pytest.mark.skipif(not Path("/usr/share/common-licenses").is_dir(), reason="not Debian")
def test_copyright_benchmark_quick_run() -> None:
    out = json.loads(run_script("bench/experiments/copyright.py", "--quick", "--json"))
    assert out["results"][0]["method"].startswith("defaults")
    assert len(out["sweep"]["rows"]) > 3


@slow
def test_signatures_benchmark_quick_run() -> None:
    _quality_cache_or_skip()
    printed = run_script(
        "bench/experiments/signatures.py",
        "--quick",
        "--mb",
        "0.02",
        "--signatures",
        "minhash128x4/1",
        "--json",
    )
    methods = {c["method"] for c in json.loads(printed)["costs"]}
    assert {"simhash alone", "simhash + minhash128x4/1"} <= methods


@slow
def test_changes_experiment_runs() -> None:
    """bench/experiments/changes.py on SQLite at a tiny size: every row printed."""
    printed = run_script(
        "bench/experiments/changes.py",
        "--n",
        "3000",
        "--singles",
        "20",
        "--repeats",
        "1",
        "--no-save",
    )
    for label in ("single add", "5,000 at once", "50,000 at once", "bulk load"):
        assert label in printed


@slow
def test_fingerprinting_benchmark_quick_run() -> None:
    """Every step, both languages, over the quality benchmark's texts (up
    to 200 a language, the few over PIECE_CHARS left out), the compiled
    pass checked against the Python one first."""
    _quality_cache_or_skip()
    printed = run_script("bench/fingerprinting.py", "--quick")
    for lang in ("en", "zh"):
        for step in ("simhash", "fingerprint_and_signature", " +compiled", " +prepare"):
            assert re.search(rf"^{lang} +{step} +(19\d|200) ", printed, re.M), printed
        assert re.search(rf"^{lang} +the compiled pass gives the Python one's bits", printed, re.M)


@slow
def test_the_cost_script_measures_every_constant_and_writes_nothing_quick() -> None:
    """bench/costs.py --quick measures every constant simindex/costs.py prices
    with (each printed beside the value in use) and leaves costs.py as it is."""
    from simindex import costs

    source = (ROOT / "simindex" / "costs.py").read_bytes()
    printed = run_script("bench/costs.py", "--quick", "--write")
    assert (ROOT / "simindex" / "costs.py").read_bytes() == source
    from simindex import compiled

    wanted = set(costs.MEASURED)
    if compiled.kernels() is None:  # (no numba here: the compiled loops' costs are kept)
        wanted = {name for name in wanted if not name.startswith("COMPILED_")}
    table = printed.partition("How each was measured")[0].partition("\nnot measured")[0]
    measured = {line.split()[0] for line in table.splitlines()[3:] if line.strip()}
    assert measured == wanted
    assert "Plans the measured values choose differently" in printed

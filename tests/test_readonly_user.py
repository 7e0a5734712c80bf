"""An index a user may read but not write, opened by a real unprivileged process.

Permission bits do not stop root, so as root the checks run in a child
process without any capability (``setpriv --bounding-set=-all``): the
kernel then applies the file's and folder's permission bits to it as to any
ordinary user. As an ordinary user they run in a child process as they are.
CI runs as root and sets SIMINDEX_REQUIRE_UNPRIVILEGED=1: a skip is then a
failure.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from simindex import SimIndex
from tests.helpers import unprivileged

ROOT = Path(__file__).resolve().parent.parent

DOCS = {
    f"doc-{i}": f"document number {i} about {topic} with some words of its own {i * 7}"
    for i, topic in enumerate(["rivers", "bakeries", "concerts", "libraries", "buses"] * 4)
}

# Run in the unprivileged child: every read works, every write is refused.
CHILD = textwrap.dedent(
    """
    import json, sys
    from simindex import SimIndex, StorageError
    path, text, key = sys.argv[1], sys.argv[2], sys.argv[3]
    seen = {}
    ways = (("readonly", {"readonly": True}), ("default", {}), ("held", {"hold": True}))
    for name, options in ways:
        with SimIndex(path, **options) as ix:
            got = {"len": len(ix), "readonly": ix.readonly,
                   "query": [m.key for m in ix.query(text)][:1],
                   "query_k3": [m.key for m in ix.query(text, k=3)][:1],
                   "get": ix.get(key) is not None,
                   "pairs": len(ix.duplicates()),
                   "check": ix.check().ok}
            refused = []
            for write in (lambda: ix.add("new", "a new document"),
                          lambda: ix.remove(key),
                          lambda: ix.add_fingerprints([("x", 5)])):
                try:
                    write()
                except StorageError as exc:
                    refused.append("read-only" in str(exc))
                else:
                    refused.append(False)
            got["refused"] = refused
            seen[name] = got
    print(json.dumps(seen))
    """
)


@pytest.fixture
def locked_index(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    folder = tmp_path / "shared"
    folder.mkdir()
    path = folder / "index.db"
    with SimIndex(path) as ix:
        ix.add_many(DOCS.items())
    assert sorted(p.name for p in folder.iterdir()) == ["index.db"]
    path.chmod(request.param)
    folder.chmod(0o555)
    yield path
    folder.chmod(0o755)
    path.chmod(0o644)


@pytest.mark.parametrize("locked_index", [0o644, 0o444], indirect=True, ids=["644", "444"])
def test_unwritable_folder_reads_through_the_api(locked_index: Path) -> None:
    prefix = unprivileged()
    before = locked_index.read_bytes()
    key = "doc-3"
    done = subprocess.run(
        [*prefix, sys.executable, "-c", CHILD, str(locked_index), DOCS[key], key],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    for name, got in seen.items():
        assert got == {
            "len": len(DOCS),
            "readonly": True,
            "query": [key],
            "query_k3": [key],
            "get": True,
            "pairs": got["pairs"],
            "check": True,
            "refused": [True, True, True],
        }, name
    assert locked_index.read_bytes() == before
    assert sorted(p.name for p in locked_index.parent.iterdir()) == ["index.db"]


@pytest.mark.parametrize("locked_index", [0o644, 0o444], indirect=True, ids=["644", "444"])
@pytest.mark.parametrize("command", ["stats", "query", "check", "dedup", "dedup --clusters"])
def test_unwritable_folder_reads_through_the_cli(locked_index: Path, command: str) -> None:
    prefix = unprivileged()
    argv = [*command.split()[:1], str(locked_index), *command.split()[1:]]
    if command == "query":
        argv.append(DOCS["doc-3"])
    done = subprocess.run(
        [*prefix, sys.executable, str(ROOT / "cli.py"), *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "Error" not in done.stderr
    if command == "query":
        assert "doc-3" in done.stdout
    refused = subprocess.run(
        [*prefix, sys.executable, str(ROOT / "cli.py"), "add", str(locked_index), "--text",
         "a new one", "--key", "new"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )  # fmt: skip
    assert refused.returncode == 2
    assert refused.stderr.startswith("Error: ") and "read-only" in refused.stderr
    assert refused.stderr.count("\n") == 1

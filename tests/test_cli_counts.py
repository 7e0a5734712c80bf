"""`simindex add` reports what it wrote: resuming an import counts the new keys only."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from simindex import SimIndex
from simindex.cli import app


def run(*args: object) -> dict[str, object]:
    result = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_skip_existing_counts_what_was_written(tmp_path: Path) -> None:
    corpus = tmp_path / "docs.jsonl"
    lines = [
        json.dumps({"id": f"d{i}", "text": f"document {i} with words such as river {i * 3}"})
        for i in range(30)
    ]
    corpus.write_text("\n".join(lines[:20]) + "\n", encoding="utf-8")
    index = tmp_path / "index.db"
    assert run("add", index, corpus, "--json", "-q")["added"] == 20
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")  # ten more: a resumed import
    out = run("add", index, corpus, "--skip-existing", "--batch-size", "7", "--json", "-q")
    assert (out["added"], out["count"]) == (10, 30)
    out = run("add", index, corpus, "--skip-existing", "--json", "-q")  # all there: none
    assert (out["added"], out["count"]) == (0, 30)
    result = CliRunner().invoke(app, ["add", str(index), str(corpus), "--skip-existing", "-q"])
    assert result.exit_code == 0
    assert result.stdout.startswith("added 0 documents to ")
    assert "(30 in all)" in result.stdout
    with SimIndex(index) as ix:
        assert len(ix) == 30

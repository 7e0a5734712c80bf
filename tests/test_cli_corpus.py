"""The corpus-scale commands: query --batch, dedup (pairs and clusters), advise, --blocks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simindex import SimIndex
from simindex.blocks import DEFAULT_K
from simindex.signature import DEFAULT_THRESHOLD
from tests.helpers import error, invoke, ok

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "news.jsonl"


@pytest.fixture
def news(tmp_path: Path) -> Path:
    path = tmp_path / "news.db"
    ok("add", path, EXAMPLES, "--quiet")
    return path


def test_batch_query_answers_each_line_in_order(news: Path, tmp_path: Path) -> None:
    records = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines()]
    queries = tmp_path / "q.jsonl"
    with SimIndex(news) as index:
        fp = index.get(records[0]["id"])
    lines = [json.dumps({"id": r["id"], "text": r["text"]}) for r in records[:5]]
    lines.append(json.dumps({"id": "by-fp", "fingerprint": fp}))
    lines.append(json.dumps({"id": "by-hex", "fingerprint": f"0x{fp:x}"}))
    lines.append(json.dumps({"id": "none", "fingerprint": 0}))
    queries.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = ok("query", news, "--batch", queries)
    answers = [json.loads(line) for line in result.stdout.splitlines()]
    assert [a["id"] for a in answers] == [r["id"] for r in records[:5]] + [
        "by-fp",
        "by-hex",
        "none",
    ]
    for record, answer in zip(records[:5], answers, strict=False):
        assert answer["matches"][0] == {
            "key": record["id"],
            "distance": 0,
            "fingerprint": answer["matches"][0]["fingerprint"],
            "similarity": 1.0,  # its own text: the same signature
        }
    assert answers[5]["matches"][0]["key"] == records[0]["id"]
    assert all(m["similarity"] is None for m in answers[5]["matches"])  # by fingerprint
    assert answers[5] == answers[6] | {"id": "by-fp"}
    assert answers[7]["matches"] == []


def test_batch_query_from_stdin_and_nothing_found(news: Path) -> None:
    result = invoke("query", news, "--batch", "-", input='{"id": 1, "fingerprint": 0}\n')
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {"id": 1, "matches": []}


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ('{"id": 1, "text": "fine words"}\n{"id": 2, \n', "line 2"),
        ('{"id": 1}\n', "no string field 'text' for the text, nor a 'fingerprint'"),
        ('{"id": 1, "fingerprint": -5}\n', "fingerprint"),
        ('{"id": 1, "text": "..."}\n', "no words"),
        ("[1, 2]\n", "not a JSON object"),
    ],
)
def test_batch_query_errors(news: Path, tmp_path: Path, content: str, words: str) -> None:
    queries = tmp_path / "q.jsonl"
    queries.write_text(content, encoding="utf-8")
    error("query", news, "--batch", queries, contains=(words,))


def test_batch_query_refuses_a_text_too(news: Path, tmp_path: Path) -> None:
    error("query", news, "some text", "--batch", tmp_path / "q.jsonl")


def test_dedup_pairs_and_clusters(news: Path) -> None:
    # Every variant in the sample is within 6 of its article (examples/README.md).
    pairs = json.loads(ok("dedup", news, "--k", "6", "--json").stdout)["pairs"]
    assert len(pairs) == 12
    assert all(p["key_b"].startswith(p["key_a"] + ".") for p in pairs)
    clusters = json.loads(ok("dedup", news, "--k", "6", "--clusters", "--json").stdout)
    assert len(clusters["clusters"]) == 12
    for cluster in clusters["clusters"]:
        canonical, (variant, distance) = cluster["canonical"], cluster["members"][1]
        assert cluster["members"][0] == [canonical, 0]
        assert variant.startswith(canonical + ".") and distance <= 6
    text = ok("dedup", news, "--k", "6", "--clusters").stdout.splitlines()
    assert len(text) == 12 and all("\t" in line for line in text)
    near = json.loads(ok("dedup", news, "--k", "2", "--json").stdout)["pairs"]
    assert len(near) == 12  # 3 of them beyond k = 2, found by their signatures' keys
    assert sum(p["distance"] > 2 for p in near) == 3
    assert len(json.loads(ok("dedup", news, "--json").stdout)["pairs"]) == 12  # k = 8
    error("dedup", news, "--k", "16")


def test_advise_recommends_more_blocks_for_more_fingerprints() -> None:
    small = json.loads(ok("advise", "--n", "100000", "--k", "3", "--json").stdout)
    large = json.loads(ok("advise", "--n", "10000000", "--k", "3", "--json").stdout)
    assert small["recommended_blocks"] == 4 and large["recommended_blocks"] == 5
    four = next(r for r in large["layouts"] if r["blocks"] == 4)
    assert four["candidates_per_query"] == pytest.approx(10_000_000 * 4 / 2**16, rel=1e-3)
    assert "recommended" in ok("advise", "--n", "1000000").stdout
    error("advise", "--n", "-1")
    error("advise", "--n", "10", "--k", "16")


def test_init_with_more_blocks(tmp_path: Path) -> None:
    path = tmp_path / "b.db"
    info = json.loads(ok("init", path, "--k", "3", "--blocks", "5", "--json").stdout)
    assert info["blocks"] == [13, 13, 13, 13, 12] and len(info["tables"]) == 10
    error("init", path, "--blocks", "4")  # it has 5
    error("init", tmp_path / "c.db", "--k", "15", "--blocks", "2")  # too many probes
    assert not (tmp_path / "c.db").exists()


def test_dedup_a_corpus_keeps_the_first_of_each_group(tmp_path: Path) -> None:
    unique, report = tmp_path / "unique.jsonl", tmp_path / "dropped.jsonl"
    result = ok(
        "dedup", EXAMPLES, "--out", unique, "--report", report, "--workers", "1", "--k", "6"
    )
    assert "kept 24, dropped 12" in result.stderr
    kept = [json.loads(line)["id"] for line in unique.read_text(encoding="utf-8").splitlines()]
    dropped = [json.loads(line) for line in report.read_text(encoding="utf-8").splitlines()]
    assert len(kept) == 24 and not any("." in key for key in kept)
    assert len(dropped) == 12
    for record in dropped:
        assert record["id"].startswith(record["duplicate_of"] + ".")
        assert 0 <= record["distance"] <= 6
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dropped.jsonl", "unique.jsonl"]


def test_dedup_a_corpus_from_stdin_to_stdout(tmp_path: Path) -> None:
    lines = [
        json.dumps({"id": "a", "text": "the quick brown fox jumps over the lazy dog"}),
        json.dumps({"id": "b", "text": "The quick brown fox jumps over the lazy dog!"}),
        json.dumps({"id": "c", "text": "..."}),
        json.dumps({"id": "d", "text": "an entirely different sentence about tea and cake"}),
    ]
    result = invoke(
        "dedup", "-", "--format", "jsonl", "--out", "-", "--json", input="\n".join(lines) + "\n"
    )
    assert result.exit_code == 0, result.stderr
    assert [json.loads(x)["id"] for x in result.stdout.splitlines()] == ["a", "d"]
    summary = json.loads(result.stderr)
    assert summary == {
        "read": 4,
        "kept": 2,
        "dropped": 1,
        "no_words": 1,
        "repeated_keys": 0,
        "k": DEFAULT_K,
        "threshold": DEFAULT_THRESHOLD,
        "skipped_files": {"count": 0, "first": []},
    }


def test_a_failed_corpus_dedup_leaves_no_output(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "text": "fine words here"}\n{"id": \n', encoding="utf-8")
    error("dedup", corpus, "--out", tmp_path / "u.jsonl", contains=("line 2",))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl"]
    error("dedup", corpus, "--out", tmp_path / "nope" / "u.jsonl", contains=("folder",))
    error("dedup", corpus, "--report", tmp_path / "r.jsonl")


def test_add_in_batches_then_resume(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    good = [
        json.dumps({"id": f"d{i}", "text": f"document {i} on subject {i * 13}"}) for i in range(7)
    ]
    corpus.write_text("\n".join(good[:5] + ['{"id": "broken"'] + good[5:]) + "\n", encoding="utf-8")
    index = tmp_path / "ix.db"
    error("add", index, corpus, "--batch-size", "2", "--workers", "1", contains=("line 6",))
    with SimIndex(index) as ix:
        assert sorted(k for k, _ in ix.items()) == ["d0", "d1", "d2", "d3"]  # whole batches
    corpus.write_text("\n".join(good) + "\n", encoding="utf-8")
    result = ok("add", index, corpus, "--batch-size", "2", "--skip-existing", "--json")
    assert json.loads(result.stdout)["count"] == 7
    error("add", index, corpus, "--batch-size", "0")

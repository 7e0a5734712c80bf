"""Small slips a first use of the CLI met: counts of one, a stats null, CSV
records with extra fields, and a key repeated in a corpus given to dedup --out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from simindex.cli.output import counted
from tests.helpers import error, invoke, ok, ok_json

FOX = "the quick brown fox jumps over the lazy dog near the river bank today"
PASTA = "something else entirely about cooking pasta at home on a quiet evening"
TRIP = "completely different words now about a long trip to the snowy mountains"


def test_counted_says_one_in_the_singular() -> None:
    assert counted(1, "fingerprint") == "1 fingerprint"
    assert counted(0, "fingerprint") == "0 fingerprints"
    assert counted(2, "index", "indexes") == "2 indexes"
    assert counted(1, "index", "indexes") == "1 index"
    assert counted(2000, "fingerprint", grouped=True) == "2,000 fingerprints"


def test_counts_of_one_are_singular(tmp_path: Path) -> None:
    index, text = tmp_path / "one.db", tmp_path / "one.txt"
    text.write_text(FOX, encoding="utf-8")
    # k = 0: one block, one index over it
    said = ok("init", index, "--k", "0").stdout
    assert "1 block (64 bits), 1 index over 1 block each" in said, said
    assert said.endswith(", 0 fingerprints\n"), said
    assert ok("add", index, text, "-q").stdout.startswith("added 1 document to ")
    assert "layout: 1 block (64 bits), 1 index over 1 block each\n" in ok("stats", index).stdout
    layout = ok_json("stats", index)["layout"]  # (--json: BlockLayout.describe(), as the text)
    assert layout == "1 block (64 bits), 1 index over 1 block each"
    said = ok("rebuild", index, "-q").stdout
    assert ": 1 fingerprint, k=0," in said and "1 block (64 bits)" in said, said
    backup = tmp_path / "backup.db"
    shutil.copyfile(index, backup)
    assert ok("restore", backup, index).stdout.endswith(": 1 fingerprint\n")
    assert "n=1 fingerprint, k=8:" in ok("advise", "--n", "1").stdout
    # one near-duplicate dropped
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        json.dumps({"id": "a", "text": FOX}) + "\n" + json.dumps({"id": "b", "text": FOX}) + "\n",
        encoding="utf-8",
    )
    result = ok("dedup", corpus, "--out", tmp_path / "u.jsonl", "-q")
    assert "dropped 1 near-duplicate (k=8" in result.stderr, result.stderr


def test_stats_says_overlaps_off_in_words_and_null_in_json(tmp_path: Path) -> None:
    index, passages = tmp_path / "plain.db", tmp_path / "passages.db"
    ok("init", index)
    ok("init", passages, "--overlaps")
    lines = ok("stats", index).stdout.splitlines()
    assert "overlaps: off" in lines and "bytes_per_fingerprint: -" in lines  # (empty)
    assert not any(line.endswith(": None") for line in lines), lines
    info = ok_json("stats", index)
    assert info["overlaps"] is None and info["bytes_per_fingerprint"] is None
    shown = ok("stats", passages).stdout
    assert 'overlaps: {"documents": 0, "hashes": 0, "current": true}' in shown


def test_a_csv_record_with_more_fields_than_the_header_is_an_error(tmp_path: Path) -> None:
    corpus = tmp_path / "extra.csv"
    # an unquoted comma: the text would be cut at it
    corpus.write_text(f"id,text\n1,{FOX}\n2,hello, world\n", encoding="utf-8")
    said = f"{corpus} line 3 has 3 fields; the header has 2 (quote a field that holds a comma)"
    index = tmp_path / "x.db"
    error("add", index, corpus, "-q", contains=(said,))
    assert not index.exists()
    out = tmp_path / "u.csv"
    error("dedup", corpus, "--out", out, "-q", contains=(said,))
    assert not out.exists()
    # Quoted, it is one field; fewer fields than the header's are read (key and text there).
    corpus.write_text(f'id,text,lang\n1,{FOX}\n2,"hello, world",en\n', encoding="utf-8")
    assert ok_json("add", index, corpus, "-q")["added"] == 2


def test_dedup_drops_a_repeated_key_as_repeated_not_as_its_own_duplicate(
    tmp_path: Path,
) -> None:
    records = [("a", FOX), ("b", PASTA), ("a", FOX), ("c", FOX), ("a", TRIP), ("d", TRIP)]
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": key, "text": text}) + "\n" for key, text in records),
        encoding="utf-8",
    )
    unique, report = tmp_path / "u.jsonl", tmp_path / "dropped.jsonl"
    result = ok("dedup", corpus, "--out", unique, "--report", report, "-q", "-w", "1")
    kept = [json.loads(line) for line in unique.read_text(encoding="utf-8").splitlines()]
    # The first record of a key stays (as add --skip-existing keeps it); every
    # later one is dropped whatever its text: the output names each key once.
    assert kept == [{"id": "a", "text": FOX}, {"id": "b", "text": PASTA}, {"id": "d", "text": TRIP}]
    dropped = [json.loads(line) for line in report.read_text(encoding="utf-8").splitlines()]
    assert dropped == [
        {"id": "a", "reason": "repeated key"},
        {"id": "c", "duplicate_of": "a", "distance": 0, "similarity": 1.0},
        {"id": "a", "reason": "repeated key"},
    ]
    assert result.stderr == (
        "read 6, kept 3, dropped 1 near-duplicate (k=8, threshold 0.78), "
        "0 with no words and 2 with a repeated key\n"
    )
    summary = ok_json("dedup", corpus, "--out", unique, "-q", "-w", "1")
    assert summary["read"] == 6 and summary["no_words"] == 0
    assert (summary["kept"], summary["dropped"], summary["repeated_keys"]) == (3, 1, 2)
    # Without a repeated key, the summary says nothing of them.
    corpus.write_text(json.dumps({"id": "a", "text": FOX}) + "\n", encoding="utf-8")
    result = ok("dedup", corpus, "--out", unique, "-q")
    assert result.stderr.endswith("(k=8, threshold 0.78) and 0 with no words\n")
    assert ok_json("dedup", corpus, "--out", unique, "-q")["repeated_keys"] == 0


def test_explain_aligns_its_feature_tables_for_wide_characters(tmp_path: Path) -> None:
    """A CJK character takes two columns: every row of a feature table
    (its numbers right-aligned) is as wide on a terminal as its header."""
    from unicodedata import east_asian_width

    def columns(line: str) -> int:
        return sum(2 if east_asian_width(c) in "WF" else 1 for c in line)

    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("今天天气很好我们一起去公园散步吧 release notes", encoding="utf-8")
    b.write_text("今天天气不好我们一起去商店买东西 release notes", encoding="utf-8")
    lines = ok("explain", str(a), str(b)).output.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("  feature ")]
    assert heads
    for head in heads:
        rows = lines[head + 1 :]
        rows = rows[: next((i for i, r in enumerate(rows) if not r.startswith("  ")), len(rows))]
        assert any(not row.isascii() for row in rows)
        assert {columns(row) for row in rows} == {columns(lines[head])}, rows


def test_a_key_whose_first_record_has_no_words_is_dropped_with_it(tmp_path: Path) -> None:
    """Whether a text has words is known once it is fingerprinted: the
    first record takes its key whatever it holds (as documented)."""
    records = [("a", "... --- !!!"), ("a", FOX)]
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": key, "text": text}) + "\n" for key, text in records),
        encoding="utf-8",
    )
    unique, report = tmp_path / "u.jsonl", tmp_path / "dropped.jsonl"
    ok("dedup", corpus, "--out", unique, "--report", report, "-q", "-w", "1")
    assert unique.read_text(encoding="utf-8") == ""
    dropped = [json.loads(line) for line in report.read_text(encoding="utf-8").splitlines()]
    assert dropped == [{"id": "a", "reason": "no words"}, {"id": "a", "reason": "repeated key"}]


def test_a_file_named_and_in_a_folder_given_too_is_repeated(tmp_path: Path) -> None:
    """A folder's file whose key was read before is a repeated key, not a
    file with no words (its text is not read again)."""
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "a.txt").write_text(FOX, encoding="utf-8")
    (folder / "b.txt").write_text(PASTA, encoding="utf-8")
    unique, report = tmp_path / "u.jsonl", tmp_path / "dropped.jsonl"
    for sources in ([folder / "a.txt", folder], [folder, folder]):
        result = ok("dedup", *sources, "--out", unique, "--report", report, "-q", "--strict")
        summary = result.stderr.splitlines()[-1]
        repeats = 1 if sources[0] != folder else 2
        assert summary == (
            f"read {2 + repeats}, kept 2, dropped 0 near-duplicates (k=8, threshold 0.78), "
            f"0 with no words and {repeats} with a repeated key"
        ), result.stderr
        reasons = [json.loads(line) for line in report.read_text(encoding="utf-8").splitlines()]
        assert [r["reason"] for r in reasons] == ["repeated key"] * repeats


def test_dedup_of_an_index_refuses_what_only_a_corpus_takes(tmp_path: Path) -> None:
    """An index is read with its own configuration: the options of a
    corpus's reading and fingerprinting are refused, not ignored."""
    index = tmp_path / "i.db"
    ok("add", index, "--key", "a", "--text", FOX)
    for options in (["--ngram", "3"], ["--weighting", "binary"], ["--format", "csv"],
                    ["--strict"], ["-w", "2"], ["--key-field", "k"]):  # fmt: skip
        message = error("dedup", index, *options)
        assert options[0] in message and "for a corpus (with --out)" in message, message
    assert ok("dedup", index, "--k", "3").exit_code == 0


def test_messages_name_the_option_and_the_file(tmp_path: Path) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(json.dumps({"id": "a", "text": FOX}) + "\n", encoding="utf-8")
    error("add", tmp_path / "i.db", corpus, "--format", "xml", contains=("--format must be",))
    empty = tmp_path / "empty.txt"
    empty.write_text("... !!!", encoding="utf-8")
    good = tmp_path / "good.txt"
    good.write_text(FOX, encoding="utf-8")
    error("explain", good, empty, contains=(f"B ({empty}) has no word",))
    error("explain", "--text", "...", FOX, contains=("A has no word",))


def test_a_csv_record_with_empty_extra_fields_is_read(tmp_path: Path) -> None:
    """A trailing comma (an empty field past the header's) loses nothing."""
    corpus = tmp_path / "t.csv"
    corpus.write_text(f"id,text\n1,{FOX},\n2,{PASTA},,\n", encoding="utf-8")
    out = tmp_path / "u.jsonl"
    ok("dedup", corpus, "--out", out, "-q")
    kept = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert kept == [{"id": "1", "text": FOX}, {"id": "2", "text": PASTA}]


def test_query_reads_a_dash_from_stdin_and_warns_of_a_file_name(tmp_path: Path) -> None:
    """`query INDEX -` reads the text from standard input, as --file - does
    (a '-' has no word to look for); a TEXT that names an existing file is
    looked for as the text it is, with a warning, as fingerprint warns."""
    index, text = tmp_path / "q.db", tmp_path / "fox.txt"
    text.write_text(FOX, encoding="utf-8")
    ok("add", index, text, "-q")
    found = ok("query", index, "-", input=FOX)
    assert found.stdout == f"0\t{text}\n", found.stdout
    assert ok_json("query", index, "-", input=FOX)["matches"][0]["key"] == str(text)
    missed = invoke("query", index, str(text))
    assert missed.exit_code == 1 and missed.stdout == ""
    assert missed.stderr == (
        f"Warning: looking for the text {str(text)!r}, not the file of that name "
        "(give --file to read it)\n"
    )


def test_an_add_in_batches_interrupted_says_the_batches_before_it_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With --batch-size, Ctrl-C leaves the batches committed before it: the
    message says so (not that nothing was kept), exit code 130."""
    from simindex.index import SimIndex

    index, text = tmp_path / "b.db", tmp_path / "fox.txt"
    text.write_text(FOX, encoding="utf-8")
    ok("add", index, text, "-q")

    def stopped(*_args: object, **_kwargs: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(SimIndex, "add_fingerprints", stopped)
    result = invoke("add", index, text, "--batch-size", "1", "-q")
    assert result.exit_code == 130 and result.stdout == ""
    assert result.stderr == (
        "Interrupted; the batches committed before it are kept, the unfinished one is not "
        "(add again with --skip-existing to go on).\n"
    )
    plain = invoke("add", index, text, "-q")
    assert plain.exit_code == 130
    assert plain.stderr == "Interrupted; nothing of the unfinished transaction was kept.\n"


def test_dedup_of_a_corpus_without_out_says_to_give_out(tmp_path: Path) -> None:
    """`dedup CORPUS` without --out (a folder, a JSON Lines file) is most
    likely a corpus meant to be deduplicated: the error says --out."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text(FOX, encoding="utf-8")
    records = tmp_path / "news.jsonl"
    records.write_text(json.dumps({"id": "a", "text": FOX}) + "\n", encoding="utf-8")
    for source in (corpus, records):
        said = error("dedup", source, contains=("give --out FILE",))
        assert said.startswith(f"Error: {source} is "), said
    index = tmp_path / "ok.db"
    ok("add", index, corpus / "a.txt", "-q")
    assert invoke("dedup", index).exit_code == 0


def test_another_index_given_as_a_document_is_named_so(tmp_path: Path) -> None:
    """`add NEW OTHER.db`: the other index is refused as a SQLite database,
    not read as text ('line 1 is not valid UTF-8'); nothing is made."""
    other, text = tmp_path / "other.db", tmp_path / "fox.txt"
    text.write_text(FOX, encoding="utf-8")
    ok("add", other, text, "-q")
    error("add", tmp_path / "new.db", other, contains=("is a SQLite database (an index?)",))
    assert not (tmp_path / "new.db").exists()
    third = tmp_path / "third.db"
    ok("add", third, text, "-q")
    error("query", other, "--file", third, contains=("is a SQLite database (an index?)",))

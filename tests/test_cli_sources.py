"""What the commands say about the files they are given: folders holding files
that are not text (skipped, counted and named, or with --strict an error),
gzip-compressed text, and the messages for paths that cannot be used."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import (
    ROOT,
    T1,
    T2,
    T3,
    T4,
    contents,
    describe,
    error,
    invoke,
    ok,
    unprivileged,
)


def folder_with_junk(top: Path) -> Path:
    """A folder of four texts (one gzip-compressed) and three files that are not text."""
    corpus = top / "corpus"
    (corpus / "sub").mkdir(parents=True)
    (corpus / "a.txt").write_text(T1, encoding="utf-8")
    (corpus / "b.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    (corpus / "c.txt").write_text("Café: " + T2, encoding="latin-1")
    (corpus / "sub" / "NEWS.Debian.gz").write_bytes(gzip.compress(T3.encode()))
    (corpus / "sub" / "old.gz").write_bytes(b"not gzip data at all")
    (corpus / "sub" / "z.txt").write_text(T4, encoding="utf-8")
    (corpus / "sub" / "zz.txt").write_text(T1.replace("weekdays.", "weekdays!"), encoding="utf-8")
    return corpus


SKIPPED = (
    "Note: skipped 3 files found in the folders given that cannot be read as text or have "
    "no words: {c}/b.png (binary), {c}/c.txt (not valid UTF-8 at line 1), {c}/sub/old.gz "
    "(not gzip data) (--strict makes them errors)"
)
KEPT = ["a.txt", "sub/NEWS.Debian.gz", "sub/z.txt", "sub/zz.txt"]


# --- 8. a folder's files that are not text --------------------------------------------


def test_add_skips_a_folders_files_that_are_not_text_and_names_them(tmp_path: Path) -> None:
    corpus, index = folder_with_junk(tmp_path), tmp_path / "ix.db"
    result = ok("add", index, corpus)
    assert result.stderr.splitlines() == [SKIPPED.format(c=corpus)]
    assert result.stdout.startswith("added 4 documents")
    assert sorted(contents(index)) == [f"{corpus}/{name}" for name in KEPT]
    found = ok("query", index, T3).stdout  # the .gz file was read as the text it holds
    assert found == f"0\t{corpus}/sub/NEWS.Debian.gz\n"


def test_add_json_gives_the_skipped_files(tmp_path: Path) -> None:
    corpus = folder_with_junk(tmp_path)
    result = ok("add", tmp_path / "ix.db", corpus, "--json")
    out = json.loads(result.stdout)
    assert out["added"] == 4
    assert out["skipped_files"] == {
        "count": 3,
        "first": [
            {"file": f"{corpus}/b.png", "reason": "binary"},
            {"file": f"{corpus}/c.txt", "reason": "not valid UTF-8 at line 1"},
            {"file": f"{corpus}/sub/old.gz", "reason": "not gzip data"},
        ],
    }
    clean = json.loads(ok("add", tmp_path / "other.db", corpus / "sub" / "z.txt", "--json").stdout)
    assert clean["skipped_files"] == {"count": 0, "first": []}


def test_many_files_that_are_not_text_are_counted_the_first_five_named(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.txt").write_text(T1, encoding="utf-8")
    for i in range(8):
        (corpus / f"blob{i}.bin").write_bytes(b"\x00\x01\x02" * 10)
    result = ok("add", tmp_path / "ix.db", corpus)
    [note] = result.stderr.splitlines()
    named = ", ".join(f"{corpus}/blob{i}.bin (binary)" for i in range(5))
    assert note.endswith(f"have no words: {named}, and 3 more (--strict makes them errors)"), note
    assert note.startswith("Note: skipped 8 files")


def test_strict_makes_a_file_that_is_not_text_an_error(tmp_path: Path) -> None:
    corpus, index = folder_with_junk(tmp_path), tmp_path / "ix.db"
    error("add", index, corpus, "--strict", contains=(f"{corpus}/b.png is binary",))
    assert not index.exists()  # the new index is not left behind


def test_rebuild_and_dedup_skip_them_too(tmp_path: Path) -> None:
    corpus, index = folder_with_junk(tmp_path), tmp_path / "ix.db"
    ok("add", index, "--text", T1, "--key", "old")
    result = ok("rebuild", index, corpus, "--json")
    assert result.stderr.splitlines() == [SKIPPED.format(c=corpus)]
    assert json.loads(result.stdout)["skipped_files"]["count"] == 3
    assert sorted(contents(index)) == [f"{corpus}/{name}" for name in KEPT]
    error("rebuild", index, corpus, "--strict", contains=("b.png is binary",))

    out = tmp_path / "unique.jsonl"
    result = ok("dedup", corpus, "--out", out, "--json")
    assert result.stderr.splitlines() == [SKIPPED.format(c=corpus)]
    assert json.loads(result.stdout)["skipped_files"]["count"] == 3
    kept = [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert kept == [f"{corpus}/{name}" for name in KEPT[:-1]]  # zz.txt: a.txt's near-copy
    error("dedup", corpus, "--out", out, "--strict", contains=("b.png is binary",))


def test_a_rebuild_from_no_document_leaves_the_index_as_it_was(tmp_path: Path) -> None:
    """A mistyped or empty source must not empty an index: a rebuild that
    finds no document is refused, and the index keeps what it had."""
    index, empty, blank = tmp_path / "ix.db", tmp_path / "nothing", tmp_path / "blank.txt"
    empty.mkdir()
    blank.write_text("  \n", encoding="utf-8")
    ok("add", index, "--text", T1, "--key", "old")
    binary = tmp_path / "binary"
    binary.mkdir()
    (binary / "x.bin").write_bytes(b"\x00\x01" * 100)
    for args in ([empty], [blank, "--skip-empty"], ["-", "--format", "jsonl"], [binary]):
        result = invoke("rebuild", index, *args, input="")
        assert result.exit_code == 2, describe(result)
        assert result.stderr.splitlines()[-1].startswith("Error: found no document to rebuild")
        assert list(contents(index)) == ["old"]
    assert "x.bin (binary)" in result.stderr  # (why there was none: said first)


def test_a_gz_file_given_by_name_is_read_as_its_text(tmp_path: Path) -> None:
    notes = tmp_path / "notes.jsonl.gz"
    lines = [json.dumps({"id": f"n{i}", "text": t}) for i, t in enumerate([T1, T2])]
    notes.write_bytes(gzip.compress("\n".join(lines).encode()))
    index = tmp_path / "ix.db"
    ok("add", index, notes)  # JSON Lines, by its name without .gz
    assert sorted(contents(index)) == ["n0", "n1"]
    bad = tmp_path / "bad.txt.gz"
    bad.write_bytes(b"plain text")
    error("add", index, bad, contains=(f"{bad} is not gzip data",))


# --- 9. messages -------------------------------------------------------------------------


def test_a_symbolic_link_loop_given_by_name_says_so(tmp_path: Path) -> None:
    loop = tmp_path / "loop.txt"
    loop.symlink_to(loop)
    index = tmp_path / "ix.db"
    error("add", index, loop, contains=(f"{loop} is a symbolic link loop",))
    error("dedup", loop, "--out", tmp_path / "u.jsonl", contains=("is a symbolic link loop",))
    ok("add", index, "--text", T1, "--key", "k")
    error("query", index, "--file", loop, contains=(f"{loop} is a symbolic link loop",))
    error("query", index, "--batch", loop, contains=(f"{loop} is a symbolic link loop",))
    error("query", loop, T1, contains=(f"{loop} is a symbolic link loop",))
    error("init", loop, contains=(f"{loop} is a symbolic link loop",))


def test_a_document_with_no_words_is_named_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("empty.txt").write_text("", encoding="utf-8")
    line = error("add", "ix.db", "empty.txt")
    assert line.startswith("Error: empty.txt has no words to fingerprint;"), line
    Path("d.jsonl").write_text('{"id": "k7", "text": "..."}\n', encoding="utf-8")
    line = error("add", "ix.db", "d.jsonl")
    assert line.startswith("Error: d.jsonl line 1 (k7) has no words"), line


@pytest.mark.parametrize("value", ['"zz"', '"0x1ffffffffffffffff"', '""'])
def test_a_bad_fingerprint_in_a_batch_names_the_file_and_line(tmp_path: Path, value: str) -> None:
    index = tmp_path / "ix.db"
    ok("add", index, "--text", T1, "--key", "k")
    queries = tmp_path / "q.jsonl"
    queries.write_text(f'{{"id": 1, "text": "{T2}"}}\n{{"id": 2, "fingerprint": {value}}}\n')
    error("query", index, "--batch", queries, contains=(f"{queries} line 2: ",))


def test_an_index_in_a_folder_that_cannot_be_written_says_why(tmp_path: Path) -> None:
    prefix = unprivileged()
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(ROOT)}
    try:
        for args in (["init"], ["add", "--text", T1, "--key", "k"]):
            target = folder / "new.db"
            done = subprocess.run(
                [*prefix, sys.executable, "-m", "simindex", args[0], str(target), *args[1:]],
                capture_output=True,
                text=True,
                env=env,
                timeout=120,
            )
            assert done.returncode == 2, done.stderr
            assert done.stderr == (
                f"Error: cannot create {target}: folder {folder} is not writable\n"
            ), done.stderr
        result = invoke("init", tmp_path / "nowhere" / "new.db")
        assert result.exit_code == 2, describe(result)
        assert "folder" in result.stderr and "does not exist" in result.stderr
        (tmp_path / "a-file").write_text("", encoding="utf-8")
        error("init", tmp_path / "a-file" / "new.db", contains=("is not a folder",))
    finally:
        folder.chmod(0o755)


# --- issue 37: folders read as named files are, single files as add reads them ---------


def news_folder(top: Path) -> Path:
    """A folder holding a JSON Lines file of three records and a text file."""
    folder = top / "sub"
    folder.mkdir()
    records = [json.dumps({"id": f"n{i}", "text": t}) for i, t in enumerate([T1, T2, T3])]
    (folder / "news.jsonl").write_text("\n".join(records) + "\n", encoding="utf-8")
    (folder / "note.txt").write_text(T4, encoding="utf-8")
    return folder


def test_a_records_file_in_a_folder_is_read_as_records(tmp_path: Path) -> None:
    folder, index = news_folder(tmp_path), tmp_path / "ix.db"
    result = ok("add", index, folder)
    assert result.stdout.startswith("added 4 documents"), describe(result)
    assert sorted(contents(index)) == sorted(["n0", "n1", "n2", f"{folder}/note.txt"])
    out = tmp_path / "unique.jsonl"
    result = ok("dedup", folder, "--out", out)
    assert result.stderr.startswith("read 4, kept 4"), describe(result)
    kept = [json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines()]
    assert kept == ["n0", "n1", "n2", f"{folder}/note.txt"]


def test_an_empty_file_in_a_folder_is_skipped_and_named(tmp_path: Path) -> None:
    corpus, index = tmp_path / "corp", tmp_path / "ix.db"
    (corpus / "sub").mkdir(parents=True)
    (corpus / "a.txt").write_text(T1, encoding="utf-8")
    (corpus / "b.json").write_text("{}\n", encoding="utf-8")  # no words
    (corpus / "sub" / "__init__.py").write_text("", encoding="utf-8")
    note = (
        f"Note: skipped 2 files found in the folders given that cannot be read as text or have "
        f"no words: {corpus}/b.json (no words), {corpus}/sub/__init__.py (empty) (--strict "
        f"makes them errors)"
    )
    result = ok("add", index, corpus)
    assert result.stderr.splitlines() == [note]
    assert result.stdout.startswith("added 1 document to"), describe(result)
    error("add", tmp_path / "strict.db", corpus, "--strict", contains=("b.json has no words",))
    out = tmp_path / "u.jsonl"
    result = ok("dedup", corpus, "--out", out, "--json")
    assert result.stderr.splitlines() == [note]
    summary = json.loads(result.stdout)
    assert (summary["read"], summary["kept"], summary["no_words"]) == (1, 1, 0)
    assert summary["skipped_files"]["count"] == 2
    error("dedup", corpus, "--out", out, "--strict", contains=("b.json has no words",))


@pytest.mark.parametrize("suffix", [".gz", ".bz2", ".xz", ".zst"])
def test_every_single_file_option_reads_compressed_files(tmp_path: Path, suffix: str) -> None:
    from simindex.ingest import compression

    kind = compression.SUFFIXES[suffix]
    if kind == "zstd":
        pytest.importorskip("zstandard")
    packed = tmp_path / f"changelog{suffix}"
    with open(packed, "wb") as raw, compression.writer(kind, raw) as stream:
        stream.write(T1.encode())
    plain = tmp_path / "plain.txt"
    plain.write_text(T1, encoding="utf-8")
    index = tmp_path / "ix.db"
    ok("add", index, "--text", T1, "--key", "k", "--overlaps")
    fp = ok("fingerprint", "--file", plain).stdout
    assert ok("fingerprint", "--file", packed).stdout == fp
    assert ok("query", index, "--file", packed).stdout == "0\tk\n"
    assert ok("distance", "--file", packed, plain).stdout == "0\n"
    assert ok("explain", packed, plain).stdout.startswith("near-duplicates: distance 0")
    assert ok("overlaps", index, "--file", packed).stdout.endswith("\tk\n")
    assert ok("fingerprint", "--file", "-", input=packed.read_bytes()).stdout == fp


def test_a_single_file_option_never_reads_the_index(tmp_path: Path) -> None:
    index = tmp_path / "ix.db"
    ok("add", index, "--text", T1, "--key", "k")
    said = f"{index} is the index (or one of its files); it cannot be a document"
    error("query", index, "--file", index, contains=(said,))
    error("query", index, "--batch", index, contains=(said,))
    error("overlaps", index, "--file", index, contains=(said,))
    error("fingerprint", "--index", index, "--file", index, contains=(said,))
    error("explain", "--index", index, index, index, contains=(said,))


def test_overlaps_on_an_index_without_passages_says_what_to_do(tmp_path: Path) -> None:
    index, text = tmp_path / "ov.db", tmp_path / "bus.txt"
    text.write_text(T2, encoding="utf-8")
    ok("add", index, text)
    line = error("add", index, text, "--overlaps")
    assert line == (
        f"Error: {index} does not keep passages: --overlaps is for a new index (leave it out "
        f"to add to this one; rebuild it from its texts to keep them: simindex rebuild "
        f"{index} SOURCES --overlaps)"
    )
    error("add", index, text, "--overlaps", "--k", "3", contains=("not k=3",))
    ok("add", tmp_path / "new.db", text, "--overlaps")  # a new index keeps them
    ok("add", tmp_path / "new.db", text, "--overlaps")  # and one that keeps them takes more


def test_silent_successes_say_a_note(tmp_path: Path) -> None:
    empty, binary = tmp_path / "empty", tmp_path / "bin"
    empty.mkdir()
    binary.mkdir()
    (binary / "x.bin").write_bytes(b"\x00\x01\x02")
    result = ok("add", tmp_path / "e.db", empty)
    assert result.stderr.splitlines() == [
        f"Note: found no file to read in the folder {empty} (hidden files are not read)",
        f"Note: {tmp_path / 'e.db'} is empty: no document was found to add",
    ]
    result = ok("add", tmp_path / "b.db", binary)
    assert result.stderr.splitlines()[-1] == (
        f"Note: {tmp_path / 'b.db'} is empty: no document was found to add"
    )
    result = ok("dedup", empty, "--out", tmp_path / "u.jsonl")
    assert result.stderr.splitlines()[0] == (
        f"Note: found no file to read in the folder {empty} (hidden files are not read)"
    )
    lines = tmp_path / "l.txt"
    lines.write_text(T1, encoding="utf-8")
    for command in (["add", tmp_path / "l.db"], ["dedup", "--out", tmp_path / "l.jsonl"]):
        for option in ("--key-field", "--text-field"):
            error(*command, lines, "--format", "lines", option, "x", contains=(option,))
    csv_file = tmp_path / "u.csv"
    csv_file.write_text(f'id,text\n1,"{T1}\n2,{T2}\n', encoding="utf-8")
    error("add", tmp_path / "c.db", csv_file, contains=(f"{csv_file} line 2 is not valid CSV",))


def test_k_out_of_range_is_said_one_way(tmp_path: Path) -> None:
    index = tmp_path / "ix.db"
    for args in (["add", index, "--text", T1, "--key", "k"], ["init", index], ["dedup", index]):
        error(*args, "--k", "16", contains=("--k must be from 0 to 15, not 16",))
    error("query", index, T1, "--k", "65", contains=("--k must be from 0 to 64, not 65",))

"""The simindex command as a user runs it.

Most tests go through typer's CliRunner (stdout and stderr are kept apart:
``result.stdout`` / ``result.stderr``); a few run ``python cli.py`` for real
to show that the checkout's script works and never prints a traceback.

Exit codes: 0 success, 1 ``query`` found nothing, 2 an error printed as one
line ``Error: ...`` on stderr.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import Result

from simindex import DEFAULT_CONFIG, FingerprintConfig, SimIndex, cli, hamming, simhash
from simindex.blocks import DEFAULT_K
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
    ok_json,
)

COMMANDS = cli.commands()  # name -> click command, each built from its module

ZH_STORED = "你妈妈喊你回家吃饭哦，回家罗回家罗"
ZH_QUERY = "你妈妈喊你回家吃饭啦，回家罗回家罗"  # one character changed: distance 5


# --- helpers -------------------------------------------------------------------


def index_k(path: Path) -> int:
    with SimIndex(path, create=False) as ix:
        return ix.k


def query_lines(result: Result) -> list[tuple[int, str]]:
    out = []
    for line in result.stdout.splitlines():
        distance, key = line.split("\t", 1)
        out.append((int(distance), key))
    return out


def copy_index(source: Path, target: Path) -> Path:
    """Copy a closed index file (and its -wal/-shm files, if any were left)."""
    for suffix in ("", "-wal", "-shm"):
        src = source.with_name(source.name + suffix)
        if src.exists():
            shutil.copyfile(src, target.with_name(target.name + suffix))
    return target


@pytest.fixture(scope="session")
def ix_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "ix.db"
    ok("init", path)
    ok("add", path, "--text", T1, "--key", "one")
    ok("add", path, "--text", T2, "--key", "two")
    return path


@pytest.fixture
def ix(tmp_path: Path, ix_template: Path) -> Path:
    """An index made with the CLI, holding T1 under 'one' and T2 under 'two'.

    Made once, then copied for each test (creating an index runs the migrations).
    """
    return copy_index(ix_template, tmp_path / "ix.db")


def add_fails(
    index: Path, *args: Any, input: str | bytes | None = None, contains: tuple[str, ...] = ()
) -> str:
    """``add`` must fail with one Error line and leave the index exactly as it was."""
    before = contents(index)
    message = error("add", index, *args, input=input, contains=contains)
    assert contents(index) == before
    return message


# --- init -----------------------------------------------------------------------


def test_init_creates_an_empty_index(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    result = ok("init", path)
    assert path.is_file()
    assert f"k={DEFAULT_K}" in result.stdout
    assert contents(path) == {}
    assert index_k(path) == DEFAULT_K


def test_init_again_with_the_same_settings_succeeds_and_keeps_the_data(ix: Path) -> None:
    before = contents(ix)
    ok("init", ix)
    ok("init", ix, "--k", str(DEFAULT_K))
    assert contents(ix) == before


def test_init_with_a_different_k_fails_and_leaves_the_index_alone(ix: Path) -> None:
    before = contents(ix)
    error("init", ix, "--k", "4", contains=(f"k={DEFAULT_K}",))
    assert contents(ix) == before
    assert index_k(ix) == DEFAULT_K


def test_init_with_a_different_fingerprint_configuration_fails(ix: Path) -> None:
    before = contents(ix)
    error("init", ix, "--ngram", "2")
    assert contents(ix) == before


def test_init_json(tmp_path: Path) -> None:
    path = tmp_path / "k5.db"
    info = ok_json("init", path, "--k", "5")
    assert info["k"] == 5
    assert info["blocks"] == [22, 21, 21]  # three blocks, probed (costs.default_blocks)
    assert info["count"] == 0
    assert info["fingerprint"]["ngram"] == 1
    assert Path(info["index"]) == path
    assert index_k(path) == 5


@pytest.mark.parametrize("k", [0, 15])
def test_init_accepts_k_from_0_to_15(tmp_path: Path, k: int) -> None:
    info = ok_json("init", tmp_path / "ix.db", "--k", k)
    assert info["k"] == k and sum(info["blocks"]) == 64
    assert len(info["blocks"]) == (1 if k == 0 else 6)  # k = 15: six blocks, probed


@pytest.mark.parametrize("k", [-1, 65, 16])
def test_init_rejects_a_k_out_of_range_and_creates_nothing(tmp_path: Path, k: int) -> None:
    error("init", tmp_path / "ix.db", "--k", k, contains=(str(k),))
    assert list(tmp_path.iterdir()) == []


def test_init_rejects_an_unknown_weighting(tmp_path: Path) -> None:
    error("init", tmp_path / "ix.db", "--weighting", "nonsense")
    assert list(tmp_path.iterdir()) == []


# --- add ------------------------------------------------------------------------


def test_add_text_with_key(tmp_path: Path) -> None:
    path = tmp_path / "ix.db"
    result = ok("add", path, "--text", T1, "--key", "doc-1")  # creates the index
    assert "added 1 document" in result.stdout
    assert contents(path) == {"doc-1": simhash(T1)}


def test_add_creates_the_index_with_the_k_asked_for(tmp_path: Path) -> None:
    path = tmp_path / "ix.db"
    ok("add", path, "--text", T1, "--key", "a", "--k", "5")
    assert index_k(path) == 5


def test_add_a_text_file_is_keyed_by_its_path_as_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text(T1, encoding="utf-8")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "other.txt").write_text(T2, encoding="utf-8")
    ok("add", "ix.db", "notes.txt")
    ok("add", "ix.db", str(sub / "other.txt"))
    ok("add", "ix.db", "sub/../notes.txt")
    assert contents(tmp_path / "ix.db") == {
        "notes.txt": simhash(T1),
        str(sub / "other.txt"): simhash(T2),
        "sub/../notes.txt": simhash(T1),
    }


def test_add_several_files_at_once(tmp_path: Path) -> None:
    files = []
    for name, text in [("a.txt", T1), ("b.txt", T2), ("c.md", T3)]:
        (tmp_path / name).write_text(text, encoding="utf-8")
        files.append(str(tmp_path / name))
    out = ok_json("add", tmp_path / "ix.db", *files)
    assert out["added"] == 3 and out["count"] == 3
    assert contents(tmp_path / "ix.db") == {
        files[0]: simhash(T1),
        files[1]: simhash(T2),
        files[2]: simhash(T3),
    }


def test_add_a_file_with_a_utf8_bom(tmp_path: Path) -> None:
    (tmp_path / "bom.txt").write_bytes(b"\xef\xbb\xbf" + T1.encode("utf-8"))
    ok("add", tmp_path / "ix.db", tmp_path / "bom.txt")
    assert contents(tmp_path / "ix.db") == {str(tmp_path / "bom.txt"): simhash(T1)}


def test_add_from_stdin_with_a_key(tmp_path: Path) -> None:
    ok("add", tmp_path / "ix.db", "-", "--key", "from-stdin", input=T1)
    assert contents(tmp_path / "ix.db") == {"from-stdin": simhash(T1)}


def test_add_from_stdin_needs_a_key(ix: Path) -> None:
    add_fails(ix, "-", input=T3, contains=("--key",))


def test_add_lines_format_keys_each_line_by_file_and_number(tmp_path: Path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{T1}\n\n   \n{T2}\r\n{T3}", encoding="utf-8")
    out = ok_json("add", tmp_path / "ix.db", lines, "--format", "lines")
    assert out["added"] == 3
    assert contents(tmp_path / "ix.db") == {
        f"{lines}:1": simhash(T1),
        f"{lines}:4": simhash(T2),
        f"{lines}:5": simhash(T3),
    }


def test_add_lines_format_from_stdin(tmp_path: Path) -> None:
    ok("add", tmp_path / "ix.db", "-", "--format", "lines", input=f"{T1}\n\n{T2}\n")
    assert contents(tmp_path / "ix.db") == {"stdin:1": simhash(T1), "stdin:3": simhash(T2)}


def test_add_jsonl_is_detected_by_extension_and_integer_keys_become_strings(
    tmp_path: Path,
) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        "\n".join(json.dumps(r) for r in [{"id": 1, "text": T1}, {"id": "two", "text": T2}])
        + "\n\n"
        + json.dumps({"id": 0, "text": T3})
        + "\n",
        encoding="utf-8",
    )
    out = ok_json("add", tmp_path / "ix.db", docs)
    assert out["added"] == 3
    assert contents(tmp_path / "ix.db") == {"1": simhash(T1), "two": simhash(T2), "0": simhash(T3)}
    hits = query_lines(ok("query", tmp_path / "ix.db", T1))
    assert hits[0] == (0, "1")


def test_add_ndjson_is_detected_too(tmp_path: Path) -> None:
    docs = tmp_path / "docs.ndjson"
    docs.write_text(json.dumps({"id": "n", "text": T1}) + "\n", encoding="utf-8")
    ok("add", tmp_path / "ix.db", docs)
    assert contents(tmp_path / "ix.db") == {"n": simhash(T1)}


def test_add_format_jsonl_with_other_field_names(tmp_path: Path) -> None:
    docs = tmp_path / "export.txt"  # not .jsonl: --format says what it is
    docs.write_text(
        json.dumps({"url": "https://a.example/1", "body": T1, "text": "ignored"})
        + "\n"
        + json.dumps({"url": 7, "body": T2})
        + "\n",
        encoding="utf-8",
    )
    ok(
        "add",
        tmp_path / "ix.db",
        docs,
        "--format",
        "jsonl",
        "--key-field",
        "url",
        "--text-field",
        "body",
    )
    assert contents(tmp_path / "ix.db") == {"https://a.example/1": simhash(T1), "7": simhash(T2)}


def test_add_jsonl_from_stdin(tmp_path: Path) -> None:
    ok(
        "add",
        tmp_path / "ix.db",
        "-",
        "--format",
        "jsonl",
        input=json.dumps({"id": "s", "text": T3}) + "\n",
    )
    assert contents(tmp_path / "ix.db") == {"s": simhash(T3)}


def test_add_json_output(ix: Path) -> None:
    out = ok_json("add", ix, "--text", T3, "--key", "three")
    assert out == {
        "index": str(ix),
        "added": 1,
        "skipped": [],
        "count": 3,
        "skipped_files": {"count": 0, "first": []},
    }


def test_add_plain_output_counts(ix: Path, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(T3, encoding="utf-8")
    (tmp_path / "b.txt").write_text(T4, encoding="utf-8")
    result = ok("add", ix, tmp_path / "a.txt", tmp_path / "b.txt")
    assert result.stdout.strip() == f"added 2 documents to {ix} (4 in all)"


def test_adding_an_existing_key_replaces_its_fingerprint(ix: Path) -> None:
    assert contents(ix)["one"] == simhash(T1)
    out = ok_json("add", ix, "--text", T3, "--key", "one")
    assert out["count"] == 2
    assert contents(ix) == {"one": simhash(T3), "two": simhash(T2)}
    # the old text no longer finds it, the new one does
    assert "one" not in [key for _, key in query_lines(invoke("query", ix, T1))]
    assert (0, "one") in query_lines(ok("query", ix, T3))


def test_the_later_of_two_documents_with_one_key_wins(tmp_path: Path) -> None:
    docs = tmp_path / "dup.jsonl"
    docs.write_text(
        json.dumps({"id": "k", "text": T1}) + "\n" + json.dumps({"id": "k", "text": T2}) + "\n",
        encoding="utf-8",
    )
    ok("add", tmp_path / "ix.db", docs)
    assert contents(tmp_path / "ix.db") == {"k": simhash(T2)}


def test_add_a_sample_corpus_and_find_every_documented_variant(tmp_path: Path) -> None:
    corpus = ROOT / "examples" / "news.jsonl"
    if not corpus.is_file():
        pytest.skip("examples/news.jsonl is not in this checkout")
    rows = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines() if line]
    path = tmp_path / "news.db"
    assert ok_json("add", path, corpus)["count"] == len(rows)
    variants = [r for r in rows if "." in r["id"]]
    assert variants
    for row in variants:
        found = [
            key
            for _, key in query_lines(
                ok("query", path, "--fingerprint", str(simhash(row["text"])), "--k", "6")
            )
        ]  # every documented variant is within 6 (examples/README.md)
        assert row["id"].split(".")[0] in found, row["id"]


# --- add: errors (exit 2, one line, index unchanged) ----------------------------


def test_add_a_missing_file_fails(ix: Path, tmp_path: Path) -> None:
    add_fails(ix, tmp_path / "nope.txt", contains=("no such file", "nope.txt"))


def test_add_a_missing_file_among_good_ones_adds_none_of_them(ix: Path, tmp_path: Path) -> None:
    (tmp_path / "good.txt").write_text(T3, encoding="utf-8")
    add_fails(ix, tmp_path / "good.txt", tmp_path / "nope.txt", contains=("nope.txt",))


def test_add_a_missing_file_does_not_create_the_index(tmp_path: Path) -> None:
    error("add", tmp_path / "ix.db", tmp_path / "nope.txt")
    assert list(tmp_path.iterdir()) == []


def test_add_a_folder_adds_its_files(ix: Path, tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text(T3, encoding="utf-8")
    (folder / "sub" / "b.txt").write_text(T4, encoding="utf-8")
    (folder / ".hidden").write_text("not read", encoding="utf-8")
    ok("add", ix, folder, "--quiet")
    keys = set(contents(ix))  # each keyed by the path that opens it (test_cli_safety.py)
    assert keys == {"one", "two", f"{folder}/a.txt", f"{folder}/sub/b.txt"}


def test_add_an_empty_folder_adds_nothing(ix: Path, tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    before = contents(ix)
    ok("add", ix, folder, "--quiet")
    assert contents(ix) == before


def test_add_an_invalid_utf8_file_fails(ix: Path, tmp_path: Path) -> None:
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("Caf\u00e9 au lait, cr\u00e8me br\u00fbl\u00e9e".encode("latin-1"))
    add_fails(ix, bad, contains=("latin1.txt", "UTF-8"))


def test_add_invalid_utf8_on_stdin_fails(ix: Path) -> None:
    add_fails(ix, "-", "--key", "s", input=b"caf\xe9 au lait", contains=("UTF-8",))


def test_add_jsonl_with_invalid_utf8_names_the_line(ix: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_bytes(
        json.dumps({"id": "a", "text": T3}).encode() + b"\n" + b'{"id": "b", "text": "caf\xe9"}\n'
    )
    add_fails(ix, docs, contains=("line 2", "UTF-8"))


def test_add_jsonl_with_a_broken_line_in_the_middle_adds_nothing(ix: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        json.dumps({"id": "one", "text": T4})
        + "\n"  # would replace an existing key
        + json.dumps({"id": "three", "text": T3})
        + "\n"
        + '{"id": "broken", "text": "no closing brace"\n'
        + json.dumps({"id": "four", "text": T4})
        + "\n",
        encoding="utf-8",
    )
    message = add_fails(ix, docs, contains=("line 3",))
    assert "docs.jsonl" in message
    assert contents(ix) == {"one": simhash(T1), "two": simhash(T2)}


def test_add_jsonl_line_missing_the_text_field(ix: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        json.dumps({"id": "a", "text": T3}) + "\n" + json.dumps({"id": "b", "body": T4}) + "\n",
        encoding="utf-8",
    )
    add_fails(ix, docs, contains=("line 2", "'text'"))


def test_add_jsonl_line_missing_the_custom_text_field(ix: Path, tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text(json.dumps({"id": "a", "text": T3}) + "\n", encoding="utf-8")
    add_fails(ix, docs, "--text-field", "body", contains=("line 1", "'body'"))


@pytest.mark.parametrize(
    "record",
    [
        {"text": T3},  # no key
        {"id": "", "text": T3},
        {"id": True, "text": T3},
        {"id": 1.5, "text": T3},
        {"id": None, "text": T3},
        {"id": "a", "text": 5},
        {"id": "a", "text": None},
    ],
    ids=["no-key", "empty-key", "bool-key", "float-key", "null-key", "int-text", "null-text"],
)
def test_add_jsonl_with_a_bad_key_or_text_fails(ix: Path, tmp_path: Path, record: dict) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        json.dumps({"id": "ok", "text": T4}) + "\n" + json.dumps(record) + "\n", encoding="utf-8"
    )
    add_fails(ix, docs, contains=("line 2",))


@pytest.mark.parametrize("line", ["[1, 2]", '"just a string"', "42"])
def test_add_jsonl_line_that_is_not_an_object_fails(ix: Path, tmp_path: Path, line: str) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text(line + "\n", encoding="utf-8")
    add_fails(ix, docs, contains=("line 1",))


EMPTY_TEXTS = ["", "   \n\t  ", "!!! ... ??? ---", "，。！？……"]


@pytest.mark.parametrize("text", EMPTY_TEXTS, ids=["empty", "whitespace", "punct", "cjk-punct"])
def test_add_a_text_with_no_words_fails_without_skip_empty(ix: Path, text: str) -> None:
    add_fails(ix, "--text", text, "--key", "empty", contains=("--skip-empty",))


@pytest.mark.parametrize("text", EMPTY_TEXTS, ids=["empty", "whitespace", "punct", "cjk-punct"])
def test_add_skip_empty_skips_and_reports_it(ix: Path, text: str) -> None:
    before = contents(ix)
    result = ok("add", ix, "--text", text, "--key", "empty", "--skip-empty")
    assert "skipped 1" in result.stdout
    out = ok_json("add", ix, "--text", text, "--key", "empty", "--skip-empty")
    assert out["added"] == 0 and out["skipped"] == ["empty"]
    assert contents(ix) == before


def test_add_skip_empty_in_a_file_of_lines(tmp_path: Path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text(f"{T1}\n!!!\n{T2}\n", encoding="utf-8")
    path = tmp_path / "ix.db"
    ok("init", path)
    error("add", path, lines, "--format", "lines", contains=(f"{lines} line 2",))
    assert contents(path) == {}
    out = ok_json("add", path, lines, "--format", "lines", "--skip-empty")
    assert out["added"] == 2 and out["skipped"] == [f"{lines}:2"]
    assert set(contents(path)) == {f"{lines}:1", f"{lines}:3"}


def test_add_an_empty_file_fails(ix: Path, tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_bytes(b"")
    add_fails(ix, tmp_path / "empty.txt")


def test_add_text_without_key_fails(ix: Path) -> None:
    add_fails(ix, "--text", T3, contains=("--key",))
    add_fails(ix, "--text", T3, "--key", "", contains=("--key",))


def test_add_nothing_fails(ix: Path) -> None:
    add_fails(ix, contains=("nothing to add",))


def test_add_stdin_twice_fails(ix: Path) -> None:
    add_fails(ix, "-", "-", "--key", "s", input=T3)


def test_add_an_unknown_format_fails(ix: Path, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(T3, encoding="utf-8")
    add_fails(ix, tmp_path / "a.txt", "--format", "xml", contains=("format",))


def test_add_with_another_k_than_the_index_fails(ix: Path) -> None:
    add_fails(ix, "--text", T3, "--key", "three", "--k", "5", contains=(f"k={DEFAULT_K}",))


def test_add_with_another_fingerprint_configuration_fails(ix: Path) -> None:
    add_fails(ix, "--text", T3, "--key", "three", "--ngram", "2")


@pytest.mark.parametrize("k", [-1, 65, 16])
def test_add_with_a_k_out_of_range_creates_nothing(tmp_path: Path, k: int) -> None:
    error("add", tmp_path / "ix.db", "--text", T1, "--key", "a", "--k", k)
    assert list(tmp_path.iterdir()) == []


def test_a_failed_add_does_not_leave_a_new_index_behind(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": \n', encoding="utf-8")
    error("add", tmp_path / "ix.db", bad)
    assert not (tmp_path / "ix.db").exists()


# Python decodes command-line bytes that are not UTF-8 with surrogateescape, so
# `--text $'caf\xe9'` arrives as "caf\udce9". Either outcome is fine for these:
# the command works, or it fails with one Error line (exit 2) and changes nothing.
# A traceback (exit 1, which would also read as "query found nothing") is not.


def works_or_fails_cleanly(index: Path, *args: Any) -> Result:
    before = contents(index)
    result = invoke(*args)  # raises on an uncaught exception (a traceback)
    assert result.exit_code in (0, 2), describe(result)
    if result.exit_code == 2:
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), describe(result)
        assert contents(index) == before
    return result


def test_add_text_with_undecodable_command_line_bytes(ix: Path) -> None:
    works_or_fails_cleanly(ix, "add", ix, "--text", "caf\udce9 au lait", "--key", "latin1")


def test_add_key_with_undecodable_command_line_bytes(ix: Path) -> None:
    works_or_fails_cleanly(ix, "add", ix, "--text", T3, "--key", "k\udcff")


def test_add_a_file_whose_name_is_not_utf8(ix: Path, tmp_path: Path) -> None:
    path = tmp_path / "caf\udce9.txt"  # the file name is the bytes b"caf\xe9.txt"
    path.write_text(T3, encoding="utf-8")
    works_or_fails_cleanly(ix, "add", ix, path)


def test_remove_key_with_undecodable_command_line_bytes(ix: Path) -> None:
    works_or_fails_cleanly(ix, "remove", ix, "k\udcff")


def test_query_and_fingerprint_of_undecodable_command_line_bytes(ix: Path) -> None:
    assert invoke("query", ix, "caf\udce9 " + T1).exit_code in (0, 1, 2)
    assert invoke("fingerprint", "caf\udce9 au lait").exit_code in (0, 2)


# --- a file that is not an index --------------------------------------------------


def _random_file(path: Path) -> None:
    path.write_bytes(random.Random(1234).randbytes(4096))


def _other_sqlite_file(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    conn.executemany("INSERT INTO customers (name) VALUES (?)", [("Ann",), ("Bob",)])
    conn.commit()
    conn.close()


NOT_INDEX_COMMANDS = {
    "init": lambda p: ["init", p],
    "add": lambda p: ["add", p, "--text", T1, "--key", "a"],
    "query": lambda p: ["query", p, T1],
    "stats": lambda p: ["stats", p],
    "remove": lambda p: ["remove", p, "a"],
    "fingerprint": lambda p: ["fingerprint", "--index", p, T1],
}


@pytest.mark.parametrize("command", sorted(NOT_INDEX_COMMANDS))
@pytest.mark.parametrize(
    "maker", [_random_file, _other_sqlite_file], ids=["random-bytes", "sqlite"]
)
def test_a_file_that_is_not_an_index_is_refused_and_left_untouched(
    tmp_path: Path, command: str, maker: Any
) -> None:
    path = tmp_path / "data.bin"
    maker(path)
    before = path.read_bytes()
    error(*NOT_INDEX_COMMANDS[command](path), contains=("not a simindex index",))
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["data.bin"]  # no -wal, -shm, -journal


def test_a_folder_as_index_is_refused(tmp_path: Path) -> None:
    error("add", tmp_path, "--text", T1, "--key", "a", contains=("folder",))


# --- query ----------------------------------------------------------------------


@pytest.fixture(scope="session")
def fp_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "fp.db"
    with SimIndex(path, k=3) as index:
        for key, fp in [
            ("far", 0xFF),
            ("e", 0b111),
            ("d", 0b11),
            ("b", 1),
            ("c", 0),
            ("a", 2),
            ("ones", 2**64 - 1),
        ]:
            index.add_fingerprint(key, fp)
    return path


@pytest.fixture
def fp_index(tmp_path: Path, fp_template: Path) -> Path:
    """An index of chosen fingerprints, at chosen distances from 0 (index k=3)."""
    return copy_index(fp_template, tmp_path / "fp.db")


def test_query_text(ix: Path) -> None:
    result = ok("query", ix, T1)
    assert query_lines(result) == [(0, "one")]
    assert result.stderr == ""


def test_query_a_near_duplicate(ix: Path) -> None:
    near = T1.replace("opening hours", "opening  hours") + " "
    assert query_lines(ok("query", ix, near.upper())) == [(0, "one")]


def test_query_file_and_stdin(ix: Path, tmp_path: Path) -> None:
    (tmp_path / "q.txt").write_text(T2, encoding="utf-8")
    assert query_lines(ok("query", ix, "--file", tmp_path / "q.txt")) == [(0, "two")]
    assert query_lines(ok("query", ix, "-f", tmp_path / "q.txt")) == [(0, "two")]
    assert query_lines(ok("query", ix, "--file", "-", input=T2)) == [(0, "two")]


def test_query_file_errors(ix: Path, tmp_path: Path) -> None:
    error("query", ix, "--file", tmp_path / "nope.txt", contains=("nope.txt",))
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe\xfa")
    error("query", ix, "--file", tmp_path / "bad.txt", contains=("UTF-8",))
    error("query", ix, "--file", "-", input=b"caf\xe9", contains=("UTF-8",))


def test_query_needs_exactly_one_input(ix: Path) -> None:
    error("query", ix)
    error("query", ix, T1, "--fingerprint", "0")
    error("query", ix, "--file", "-", "--fingerprint", "0", input=T1)


def test_query_a_text_with_no_words_is_an_error_not_a_miss(ix: Path) -> None:
    error("query", ix, "... !!!")


@pytest.mark.parametrize("value", [str(2**64 - 1), "0xffffffffffffffff", "0xFFFFFFFFFFFFFFFF"])
def test_query_fingerprint_of_all_ones(fp_index: Path, value: str) -> None:
    assert query_lines(ok("query", fp_index, "--fingerprint", value)) == [(0, "ones")]


def test_query_fingerprint_decimal_and_hex_agree(ix: Path) -> None:
    fp = simhash(T2)
    by_decimal = ok("query", ix, "--fingerprint", str(fp)).stdout
    by_hex = ok("query", ix, "--fingerprint", hex(fp)).stdout
    assert by_decimal == by_hex
    assert query_lines(ok("query", ix, "--fingerprint", f"0x{fp:016x}")) == [(0, "two")]


@pytest.mark.parametrize("value", [str(2**64), "-1", "abc", "0xZZ", "1.5", ""])
def test_query_bad_fingerprint(fp_index: Path, value: str) -> None:
    error("query", fp_index, "--fingerprint", value)


def test_query_results_are_sorted_by_distance_then_key(fp_index: Path) -> None:
    lines = query_lines(ok("query", fp_index, "--fingerprint", "0"))
    assert lines == [(0, "c"), (1, "a"), (1, "b"), (2, "d"), (3, "e")]


def test_query_k_and_limit(fp_index: Path) -> None:
    assert query_lines(ok("query", fp_index, "--fingerprint", "0", "--k", "1")) == [
        (0, "c"),
        (1, "a"),
        (1, "b"),
    ]
    assert query_lines(ok("query", fp_index, "--fingerprint", "0", "-k", "0")) == [(0, "c")]
    assert query_lines(ok("query", fp_index, "--fingerprint", "0", "--limit", "2")) == [
        (0, "c"),
        (1, "a"),
    ]
    assert query_lines(ok("query", fp_index, "--fingerprint", "0", "-n", "1", "-k", "2")) == [
        (0, "c")
    ]


@pytest.mark.parametrize(
    "args", [["--k", "-1"], ["--k", "65"], ["--limit", "0"], ["--limit", "-3"], ["--k", "two"]]
)
def test_query_bad_k_or_limit(fp_index: Path, args: list[str]) -> None:
    result = invoke("query", fp_index, "--fingerprint", "0", *args)
    assert result.exit_code == 2, describe(result)
    assert result.stdout == ""


def test_query_json(fp_index: Path) -> None:
    out = ok_json("query", fp_index, "--fingerprint", "0x3", "--k", "1")
    assert out["fingerprint"] == 3 and out["k"] == 1
    # A query by fingerprint (and rows added as fingerprints): no similarity.
    assert out["matches"] == [
        {"key": "d", "distance": 0, "fingerprint": 3, "similarity": None},
        {"key": "a", "distance": 1, "fingerprint": 2, "similarity": None},
        {"key": "b", "distance": 1, "fingerprint": 1, "similarity": None},
        {"key": "e", "distance": 1, "fingerprint": 7, "similarity": None},
    ]


def test_query_json_of_a_text(ix: Path) -> None:
    out = ok_json("query", ix, T2)
    assert out["fingerprint"] == simhash(T2) and out["k"] == DEFAULT_K
    # The stored text itself: the same signature, a similarity of 1.0.
    assert out["matches"] == [
        {"key": "two", "distance": 0, "fingerprint": simhash(T2), "similarity": 1.0}
    ]


def test_query_nothing_found_exits_1(ix: Path) -> None:
    result = invoke("query", ix, T4)
    assert result.exit_code == 1, describe(result)
    assert result.stdout == "" and result.stderr == ""
    result = invoke("query", ix, T4, "--json")
    assert result.exit_code == 1, describe(result)
    out = json.loads(result.stdout)
    assert out["matches"] == [] and out["fingerprint"] == simhash(T4)


def test_query_on_an_empty_index_exits_1(tmp_path: Path) -> None:
    ok("init", tmp_path / "ix.db")
    assert invoke("query", tmp_path / "ix.db", T1).exit_code == 1


@pytest.mark.parametrize(
    "command",
    [
        ["query", "{p}", T1],
        ["query", "{p}", "--fingerprint", "0"],
        ["stats", "{p}"],
        ["remove", "{p}", "a"],
        ["fingerprint", "--index", "{p}", T1],
    ],
)
def test_a_missing_index_is_an_error_and_is_not_created(tmp_path: Path, command: list[str]) -> None:
    path = tmp_path / "missing.db"
    args = [str(path) if a == "{p}" else a for a in command]
    error(*args, contains=("no index", "missing.db", "init"))
    assert list(tmp_path.iterdir()) == []


def test_query_above_the_index_k_warns_and_is_exact(fp_index: Path) -> None:
    """k = 4..11 probes the four block indexes (no warning); past that, a full scan, said so."""
    stored = contents(fp_index)
    for k in (4, 8, 11, 12, 40, 64):
        result = ok("query", fp_index, "--fingerprint", "0", "--k", k)
        warning = result.stderr.splitlines()
        if k <= 11:
            assert warning == [], describe(result)
        else:
            assert len(warning) == 1 and warning[0].startswith("Warning: "), describe(result)
        expected = sorted(
            ((hamming(fp, 0), key) for key, fp in stored.items() if hamming(fp, 0) <= k)
        )
        assert query_lines(result) == expected
    assert query_lines(ok("query", fp_index, "--fingerprint", "0", "--k", "64"))[-1] == (64, "ones")
    out = ok_json("query", fp_index, "--fingerprint", "0", "--k", "8")
    assert out["k"] == 8 and [m["key"] for m in out["matches"]][-1] == "far"


def test_query_above_the_index_k_that_finds_nothing_still_warns_and_exits_1(ix: Path) -> None:
    result = invoke("query", ix, "--fingerprint", str(simhash(T1) ^ 0xFFFFFF), "--k", "12")
    assert result.exit_code == 1, describe(result)
    assert result.stderr.startswith("Warning: ")


def test_query_at_or_below_the_index_k_does_not_warn(fp_index: Path) -> None:
    for k in ("0", "3"):
        assert ok("query", fp_index, "--fingerprint", "0", "--k", k).stderr == ""


# --- remove, stats --------------------------------------------------------------


def test_remove_existing_and_missing_keys(ix: Path) -> None:
    result = ok("remove", ix, "one", "not-there")
    assert result.stdout.strip() == "removed 1 of 2 keys"
    assert contents(ix) == {"two": simhash(T2)}
    assert invoke("query", ix, T1).exit_code == 1


def test_remove_json(ix: Path) -> None:
    assert ok_json("remove", ix, "two", "two", "nope", "nada") == {"removed": 1, "missing": 2}
    assert contents(ix) == {"one": simhash(T1)}
    assert ok_json("remove", ix, "nope") == {"removed": 0, "missing": 1}
    assert contents(ix) == {"one": simhash(T1)}


def test_remove_needs_a_key(ix: Path) -> None:
    result = invoke("remove", ix)
    assert result.exit_code == 2
    assert len(contents(ix)) == 2


def test_stats_json(ix: Path) -> None:
    info = ok_json("stats", ix)
    assert info["count"] == 2
    assert info["k"] == DEFAULT_K
    assert info["blocks"] == [22, 21, 21]  # the default layout for k = 8
    assert info["fingerprint"] == json.loads(DEFAULT_CONFIG.to_json())
    assert Path(info["index"]) == ix


def test_stats_plain(ix: Path, tmp_path: Path) -> None:
    lines = ok("stats", ix).stdout.splitlines()
    assert "count: 2" in lines and f"k: {DEFAULT_K}" in lines
    ok("init", tmp_path / "k7.db", "--k", "7", "--ngram", "2")
    info = ok_json("stats", tmp_path / "k7.db")
    assert info["k"] == 7 and len(info["blocks"]) == 4 and info["count"] == 0
    assert info["probe_radius"] == 1
    assert info["fingerprint"]["ngram"] == 2


# --- fingerprint, distance -------------------------------------------------------


def test_fingerprint_of_a_text(tmp_path: Path) -> None:
    assert ok("fingerprint", T1).stdout.strip() == str(simhash(T1))
    (tmp_path / "a.txt").write_text(T2, encoding="utf-8")
    assert ok("fingerprint", "--file", tmp_path / "a.txt").stdout.strip() == str(simhash(T2))
    assert ok("fingerprint", "-f", "-", input=T3).stdout.strip() == str(simhash(T3))


def test_fingerprint_json_has_hex() -> None:
    out = ok_json("fingerprint", ZH_STORED)
    assert out["fingerprint"] == simhash(ZH_STORED)
    assert out["hex"] == f"0x{simhash(ZH_STORED):016x}"
    assert int(out["hex"], 16) == out["fingerprint"]


def test_fingerprint_uses_the_options_or_the_index_configuration(tmp_path: Path) -> None:
    bigrams = FingerprintConfig(ngram=2)
    assert ok("fingerprint", T1, "--ngram", "2").stdout.strip() == str(simhash(T1, bigrams))
    ok("init", tmp_path / "bi.db", "--ngram", "2")
    result = ok("fingerprint", "--index", tmp_path / "bi.db", T1)
    assert result.stdout.strip() == str(simhash(T1, bigrams))


def test_the_cjk_option(tmp_path: Path) -> None:
    words = replace(DEFAULT_CONFIG, cjk="words")
    assert ok("fingerprint", ZH_STORED, "--cjk", "words").stdout.strip() == str(
        simhash(ZH_STORED, words)
    )
    assert ok("fingerprint", ZH_STORED).stdout.strip() == str(simhash(ZH_STORED, DEFAULT_CONFIG))
    ok("init", tmp_path / "w.db", "--cjk", "words")
    assert ok_json("stats", tmp_path / "w.db")["fingerprint"]["cjk"] == "words"
    result = ok("fingerprint", "--index", tmp_path / "w.db", ZH_STORED)
    assert result.stdout.strip() == str(simhash(ZH_STORED, words))
    error("fingerprint", ZH_STORED, "--cjk", "jieba", contains=("cjk",))


def test_fingerprint_errors(tmp_path: Path) -> None:
    error("fingerprint", "   ")
    error("fingerprint")
    error("fingerprint", "--file", tmp_path / "nope.txt", contains=("nope.txt",))


def test_distance_between_fingerprints() -> None:
    assert ok("distance", "0", "0xff").stdout.strip() == "8"
    assert ok("distance", "0", str(2**64 - 1)).stdout.strip() == "64"
    assert ok("distance", "12345", "12345").stdout.strip() == "0"
    assert ok_json("distance", "0x0f", "0xf0") == {"distance": 8, "a": 15, "b": 240}


def test_distance_between_texts_and_files(tmp_path: Path) -> None:
    expected = hamming(simhash(T1), simhash(T2))
    assert ok("distance", "--text", T1, T2).stdout.strip() == str(expected)
    (tmp_path / "a.txt").write_text(T1, encoding="utf-8")
    (tmp_path / "b.txt").write_text(T2, encoding="utf-8")
    out = ok_json("distance", "--file", tmp_path / "a.txt", tmp_path / "b.txt")
    assert out == {"distance": expected, "a": simhash(T1), "b": simhash(T2)}


@pytest.mark.parametrize(
    "args",
    [
        ["12", "twelve"],
        ["0", str(2**64)],
        ["--", "-1", "0"],
        ["--text", "--file", "a", "b"],
        ["--text", T1, "..."],
    ],
)
def test_distance_errors(args: list[str]) -> None:
    error("distance", *args)


def test_distance_missing_file(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(T1, encoding="utf-8")
    error("distance", "--file", tmp_path / "a.txt", tmp_path / "b.txt", contains=("b.txt",))


# --- help ------------------------------------------------------------------------


@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_app_help(flag: str) -> None:
    result = ok(flag)
    assert "Usage" in result.stdout
    for name in COMMANDS:
        assert name in result.stdout


def test_no_arguments_shows_help() -> None:
    result = invoke()
    assert "Usage" in result.output
    assert result.exit_code in (0, 2)


def test_every_registered_command_has_help_text() -> None:
    names = set()
    for name, module, function, summary in cli.COMMANDS:
        callback = getattr(importlib.import_module(f"simindex.cli.{module}"), function)
        names.add(name)
        text = inspect.getdoc(callback)
        assert text and text.strip(), name
        # The command list (simindex -h) shows the summary without importing
        # the command: it is the docstring's first line.
        assert text.split("\n\n")[0].replace("\n", " ") == summary, name
    assert names == set(COMMANDS)
    assert {"init", "add", "query", "remove", "stats", "fingerprint", "distance"} <= names
    for name, command in COMMANDS.items():
        assert command.help and command.help.strip(), name
        for param in command.params:
            assert getattr(param, "help", None), f"{name} {param.name} has no help"


@pytest.mark.parametrize("name", sorted(COMMANDS))
@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_command_help(name: str, flag: str) -> None:
    result = ok(name, flag)
    assert "Usage" in result.stdout and name in result.stdout
    first_line = (COMMANDS[name].help or "").strip().splitlines()[0]
    assert first_line.split()[0] in result.stdout


def test_an_unknown_option_is_a_usage_error_without_traceback(ix: Path) -> None:
    result = invoke("query", ix, T1, "--no-such-option")
    assert result.exit_code == 2
    assert result.stdout == ""


# --- Chinese ----------------------------------------------------------------------


# The two share 8 of their 10 distinct characters (Jaccard 0.8): verified at
# the default threshold (0.8) the estimate falls on either side of it, so the
# Chinese tests below store their index with a threshold of 0.7.
ZH_THRESHOLD = "0.7"


def test_chinese_near_duplicate_through_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "zh.db"
    ok("add", path, "--text", ZH_STORED, "--key", "回家", "--k", "5", "--threshold", ZH_THRESHOLD)
    lines = query_lines(ok("query", path, ZH_QUERY))
    assert len(lines) == 1 and lines[0][1] == "回家" and lines[0][0] <= 5
    out = ok_json("query", path, ZH_QUERY)
    assert out["matches"][0]["key"] == "回家" and out["matches"][0]["distance"] <= 5
    assert 0.7 <= out["matches"][0]["similarity"] < 1.0  # verified, and not a copy
    # At a threshold above the estimate, the candidate is not a near-duplicate.
    assert invoke("query", path, ZH_QUERY, "--threshold", "0.95").exit_code == 1
    distance = int(ok("distance", "--text", ZH_STORED, ZH_QUERY).stdout)
    assert distance == out["matches"][0]["distance"]


def test_chinese_jsonl_through_the_cli(tmp_path: Path) -> None:
    docs = tmp_path / "zh.jsonl"
    docs.write_text(
        json.dumps({"id": "家", "text": ZH_STORED}, ensure_ascii=False)
        + "\n"
        + json.dumps({"id": 2, "text": T1})
        + "\n",
        encoding="utf-8",
    )
    ok("add", tmp_path / "zh.db", docs, "--k", "5", "--threshold", ZH_THRESHOLD)
    result = ok("query", tmp_path / "zh.db", "--file", "-", input=ZH_QUERY.encode("utf-8"))
    assert [key for _, key in query_lines(result)] == ["家"]
    assert "家" in ok("query", tmp_path / "zh.db", ZH_QUERY, "--json").stdout  # not \u-escaped


# --- real runs of python cli.py ------------------------------------------------------


def run_script(*args: Any, input: bytes | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)  # `python cli.py` must work from the checkout by itself
    env["PYTHONIOENCODING"] = "utf-8"
    completed = subprocess.run(
        [sys.executable, "cli.py", *map(str, args)],
        cwd=ROOT,
        input=input,
        capture_output=True,
        timeout=60,
        env=env,
    )
    out = completed.stdout.decode("utf-8")
    err = completed.stderr.decode("utf-8")
    assert "Traceback" not in out + err, err
    return subprocess.CompletedProcess(completed.args, completed.returncode, out, err)


def test_script_help() -> None:
    done = run_script("-h")
    assert done.returncode == 0, done.stderr
    assert "Usage" in done.stdout and "query" in done.stdout


def test_script_add_query_and_errors(tmp_path: Path) -> None:
    path = tmp_path / "ix.db"
    done = run_script("add", path, "-", "--key", "piped", input=T1.encode("utf-8"))
    assert done.returncode == 0, done.stderr
    assert f"added 1 document to {path}" in done.stdout

    done = run_script("query", path, T1.lower())
    assert done.returncode == 0, done.stderr
    assert done.stdout == "0\tpiped\n"

    done = run_script("query", path, T4)  # found nothing
    assert (done.returncode, done.stdout) == (1, "")

    missing = tmp_path / "missing.db"
    done = run_script("query", missing, T1)
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("Error: ")
    assert not missing.exists()


def test_script_invalid_utf8_input_is_one_error_line(tmp_path: Path) -> None:
    path = tmp_path / "ix.db"
    ok("add", path, "--text", T1, "--key", "one")
    before = contents(path)
    done = run_script("add", path, "-", "--format", "lines", input=b"good line here\n\xff\xfe\n")
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith("Error: ")
    assert "line 2" in done.stderr
    assert contents(path) == before


# --- usage mistakes through the real entry point ----------------------------------


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["query", "x.db", "--bogus"], "No such option: --bogus (see: simindex query -h)"),
        (["query"], "Missing argument"),
        (["query", "x.db", "--k", "abc", "text"], "--k"),
        (["frobnicate"], "No such command"),
        (["query", "x.db", "--k"], "requires an argument. (see: simindex query -h)"),
        (["dedup", "x.jsonl", "--out"], "requires an argument. (see: simindex dedup -h)"),
        (["init", "x.db", "--ngram", "9"], "--ngram must be a whole number"),
        (["add", "x.db", "notes.txt", "--key", "k"], "--key names the document of --text"),
    ],
)
def test_usage_mistakes_are_one_error_line(
    argv: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from simindex.cli import main

    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("Error: ") and words in err


def test_fingerprints_with_leading_zeros_parse_as_decimal(tmp_path: Path) -> None:
    from simindex.cli import _parse_fingerprint

    assert _parse_fingerprint("010") == 10
    assert _parse_fingerprint("0xFF") == 255
    assert _parse_fingerprint(str(2**64 - 1)) == 2**64 - 1

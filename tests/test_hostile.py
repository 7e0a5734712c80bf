"""Hostile and odd input: every one gets a clear error or a documented result.

A clear error is a SimIndexError subclass in the API, and exit code 2 with one
line ``Error: ...`` (no traceback) in the CLI; either way the index is left as
it was. A documented result is what README.md says happens (texts with no
words raise EmptyTextError, a text of stop words is fingerprinted from them,
integer JSON keys become strings, the later of two texts for a key wins...).

Sections: texts, invalid UTF-8 and line endings in files, keys, SQL injection,
parameters, damaged index files, Hypothesis fuzzing of the text pipeline, and
one slow test of a 100 MB document's memory.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import warnings
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.main import get_command

from simindex import (
    DEFAULT_CONFIG,
    EmptyTextError,
    FingerprintConfig,
    FullScanWarning,
    InvalidArgumentError,
    Match,
    NotAnIndexError,
    SimIndex,
    SimIndexError,
    StorageError,
    simhash,
)
from simindex.cli import app, main
from simindex.fingerprint import WEIGHTINGS, prepare
from simindex.ingest import SourceError, read_docs
from simindex.tokenize import words
from tests.helpers import T1, T2, T3, contents, error, invoke, ok

ROOT = Path(__file__).resolve().parent.parent

# One document in many scripts at once: Chinese, Latin, Cyrillic, Arabic,
# emoji, a combining mark (e + U+0301), right-to-left marks and overrides,
# zero-width joiners and spaces.
MIXED = (
    "河滨图书馆下个月起将调整开放时间 The library opens earlier "
    "Библиотека откроется раньше \u200fالمكتبة تفتح مبكرا\u200f "
    "👩\u200d👩\u200d👧 family 🎉 cafe\u0301 \u202eevil override\u202c "
    "zero\u200bwidth joi\u200dner"
)
SQL_KEYS = [
    "x'); DROP TABLE simindex_fingerprints; --",
    "'; DELETE FROM simindex_meta; --",
    'say "hello"; DROP TABLE simindex_meta',
    "semi;colon;;",
    "back\\slash`tick`",
    "1 OR 1=1",
    "%_wild%card_",
    "?:name $1 @p",
]
ODD_KEYS = [
    "a\x00b",
    "\x00",
    "trailing nul\x00",
    " ",
    "\t\n\r",
    "\u202eRTL override",
    "ключ-中文-مفتاح-🔑",
    "cafe\u0301",
    "café",  # another key than the decomposed one: keys are stored as given
]
HOSTILE_FIELD = 'id"; DROP TABLE x; --'
HOSTILE_TEXT_FIELD = "te'xt`); DROP TABLE simindex_meta; --"


# --- helpers ---------------------------------------------------------------------


def write(path: Path, data: str | bytes) -> Path:
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def jsonl(*records: dict[str, Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def schema_of(path: Path) -> list[tuple[str, str]]:
    """(type, name) of everything in a SQLite file's schema, read with sqlite3 itself."""
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        return sorted(conn.execute("SELECT type, name FROM sqlite_master").fetchall())
    finally:
        conn.close()


def stored_keys(path: Path) -> set[str]:
    """The keys in the fingerprint table, read with sqlite3 (not through simindex)."""
    conn = sqlite3.connect(path)
    try:
        return {k for (k,) in conn.execute("SELECT key FROM simindex_fingerprints")}
    finally:
        conn.close()


def new_index(path: Path, docs: dict[str, str] | None = None) -> Path:
    with SimIndex(path) as ix:
        ix.add_many((docs or {"one": T1, "two": T2}).items())
    return path


def files_beside(path: Path) -> set[str]:
    return {p.name for p in path.parent.iterdir() if p.name.startswith(path.name)}


def run_cli(
    *args: str | bytes | Path, input: bytes | None = None
) -> subprocess.CompletedProcess[str]:
    """``python cli.py ...`` for real: argv may hold bytes that are not UTF-8."""
    env = dict(os.environ, PYTHONUTF8="1", PYTHONIOENCODING="utf-8")
    env.pop("PYTHONPATH", None)
    argv = [a if isinstance(a, bytes) else str(a) for a in args]
    done = subprocess.run(
        [sys.executable, "cli.py", *argv],
        cwd=ROOT,
        input=input,
        capture_output=True,
        timeout=120,
        env=env,
    )
    out = done.stdout.decode("utf-8", "backslashreplace")
    err = done.stderr.decode("utf-8", "backslashreplace")
    return subprocess.CompletedProcess(done.args, done.returncode, out, err)


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    shown = f"exit {done.returncode}\nstdout: {done.stdout!r}\nstderr: {done.stderr!r}"
    assert done.returncode == 2, shown
    assert "Traceback" not in done.stderr, shown
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), shown
    return lines[0]


def cli_error(
    capsys: pytest.CaptureFixture[str], *args: Any, contains: tuple[str, ...] = ()
) -> str:
    """Through the real entry point (usage mistakes too): exit 2, one Error line."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as caught:
        main([str(a) for a in args])
    captured = capsys.readouterr()
    shown = f"exit {caught.value.code}\nstdout: {captured.out!r}\nstderr: {captured.err!r}"
    assert caught.value.code == 2, shown
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), shown
    assert captured.out == "", shown
    for part in contains:
        assert part in lines[0], f"{part!r} not in {lines[0]!r}"
    return lines[0]


def ok_or_error(*args: Any, found_nothing: bool = False) -> str | None:
    """A command that may succeed or fail, but only cleanly: exit 0 (1 for a query
    that found nothing), or exit 2 and one Error line. Returns the Error line."""
    result = invoke(*args)
    shown = f"exit {result.exit_code}\nstdout: {result.stdout!r}\nstderr: {result.stderr!r}"
    if result.exit_code == 2:
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), shown
        return lines[0]
    assert result.exit_code in ((0, 1) if found_nothing else (0,)), shown
    return None


@pytest.fixture
def ix(tmp_path: Path) -> Path:
    """An index file holding T1 under 'one' and T2 under 'two'."""
    return new_index(tmp_path / "ix.db")


# --- texts: the API ----------------------------------------------------------------

NO_WORDS = [
    "",
    " ",
    "   \n\t\r\n  \u3000\u00a0",
    "!!! ... ,,, ??? -- ;; '' \"\" ()[]{}",
    "。，、！？「」",  # CJK punctuation
    "\x00\x00\x00",
    "\x00 \x01 \x1f \x7f",
    "\ud800",
    "\udcff\udcfe",
    "😀🎉👩\u200d👩\u200d👧",  # emoji are symbols, not words
    "\u200b\u200c\u200d\u200e\u200f\u202e\u2066",  # zero-width and direction marks
    "\u0301\u0308",  # combining marks with nothing to combine with
    "___",
]


@pytest.mark.parametrize("text", NO_WORDS, ids=lambda t: repr(t)[:30])
def test_a_text_with_no_words_raises_empty_text_error_and_adds_nothing(
    memory_index: SimIndex, text: str
) -> None:
    memory_index.add("kept", T1)
    assert words(text) == []
    with pytest.raises(EmptyTextError):
        simhash(text)
    with pytest.raises(EmptyTextError):
        memory_index.add("empty", text)
    with pytest.raises(EmptyTextError):
        memory_index.add_many([("a", T2), ("empty", text), ("b", T3)])
    with pytest.raises(EmptyTextError):
        memory_index.query(text)
    assert dict(memory_index.items()) == {"kept": simhash(T1)}


@pytest.mark.parametrize(
    "text", ["to be or not to be", "the", "the the the", "的 了 是", "and or but if"]
)  # 的 了 是 is read as jieba words: as characters, its bigrams (的了, 了是) are not stop words
def test_a_text_of_stop_words_only_is_fingerprinted_from_them(
    memory_index: SimIndex, text: str
) -> None:
    config = replace(DEFAULT_CONFIG, cjk="words")
    fp = simhash(text, config)
    assert fp == simhash(text, replace(config, stopwords=False))
    fp = simhash(text)
    assert memory_index.add("stop", text) == fp
    assert memory_index.query(text)[0] == Match("stop", 0, fp, 1.0)  # its own signature


def test_nul_characters_separate_words_like_whitespace(memory_index: SimIndex) -> None:
    with_nul = T1.replace(" ", "\x00")
    assert words(with_nul) == words(T1)
    assert simhash(with_nul) == simhash(T1)
    assert simhash("abc\x00def") == simhash("abc def") != simhash("abcdef")
    memory_index.add("nul", with_nul)
    assert memory_index.query(T1)[0] == Match("nul", 0, simhash(T1), 1.0)  # the same words


@pytest.mark.parametrize(
    "text",
    [T1 + " \ud800", "\udcff" + T1, T1.replace(" ", " \udfff "), "abc\ud800def ghi"],
    ids=["end", "start", "between-words", "inside-a-word"],
)
def test_lone_surrogates_in_a_text_separate_words(memory_index: SimIndex, text: str) -> None:
    """A lone surrogate (from bytes that were not UTF-8) is not a letter: like
    any other non-letter it separates words. No error, no crash."""
    spaced = "".join(" " if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    assert words(text) == words(spaced)
    fp = simhash(text)
    assert fp == simhash(spaced)
    assert memory_index.add("surrogate", text) == fp
    assert memory_index.query(text)[0] == Match("surrogate", 0, fp, 1.0)
    assert memory_index.query(spaced)[0] == Match("surrogate", 0, fp, 1.0)  # the same words


def test_mixed_scripts_in_one_document(memory_index: SimIndex) -> None:
    tokens = words(MIXED)
    for expected in ("the", "library", "библиотека", "المكتبة", "family", "café", "evil"):
        assert expected in tokens, expected
    assert any("图书馆" in t for t in tokens)  # jieba segmented the Chinese run
    # Zero-width and direction marks are not letters: they separate words.
    assert "zero" in tokens and "width" in tokens and "joi" in tokens and "ner" in tokens
    assert not any(set(t) & set("\u200b\u200d\u200f\u202e\u202c😀🎉👩👧") for t in tokens)
    fp = simhash(MIXED)
    assert simhash(MIXED) == fp
    # NFKC: the decomposed "cafe" + U+0301 is the precomposed "café".
    assert simhash(MIXED.replace("cafe\u0301", "café")) == fp
    assert memory_index.add("mixed", MIXED) == fp
    assert memory_index.query(MIXED)[0] == Match("mixed", 0, fp, 1.0)


def test_text_that_is_not_a_str_is_an_invalid_argument(memory_index: SimIndex) -> None:
    for value in (None, b"bytes text", 42, ["a", "list"], 3.5):
        with pytest.raises(InvalidArgumentError):
            simhash(value)  # type: ignore[arg-type]
        with pytest.raises(InvalidArgumentError):
            memory_index.add("k", value)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        memory_index.add_many([("a", T1), ("b", None)])  # type: ignore[list-item]
    assert len(memory_index) == 0


# --- texts: the CLI ----------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "!!! ???", "\x00", "\ud800", "😀🎉"], ids=repr)
def test_cli_text_with_no_words_is_one_error_line_and_adds_nothing(ix: Path, text: str) -> None:
    before = contents(ix)
    error("add", ix, "--text", text, "--key", "empty", contains=("no words",))
    assert contents(ix) == before
    error("query", ix, text)
    error("fingerprint", text)


def test_cli_stop_words_nul_and_mixed_scripts_through_text(ix: Path) -> None:
    for key, text in [("stop", "to be or not to be"), ("nul", "a\x00b c"), ("mixed", MIXED)]:
        ok("add", ix, "--text", text, "--key", key)
        assert contents(ix)[key] == simhash(text)
        assert f"0\t{key}" in ok("query", ix, text).stdout.splitlines()
    assert ok("fingerprint", MIXED).stdout.strip() == str(simhash(MIXED))


def test_cli_text_with_a_lone_surrogate_in_process(ix: Path) -> None:
    text = T3 + " \ud800"
    before = contents(ix)
    result = invoke("add", ix, "--text", text, "--key", "sur")
    if result.exit_code == 0:  # fingerprinted like the API does it
        assert contents(ix) == before | {"sur": simhash(text)}
        assert simhash(text) == simhash(T3)
    else:  # or refused cleanly
        assert result.exit_code == 2 and result.stderr.startswith("Error: ")
        assert contents(ix) == before


def test_cli_text_argument_that_is_not_utf8_for_real(ix: Path) -> None:
    """argv bytes that are not UTF-8 reach Python as lone surrogates
    (surrogateescape). As a text: fingerprinted, the bad bytes separating words,
    the same as the API gives. As a key: refused, the index unchanged."""
    before = contents(ix)
    done = run_cli("add", ix, "--text", T3.encode() + b" \xff\xfe tail", "--key", "bytes")
    assert "Traceback" not in done.stderr
    if done.returncode == 0:
        assert contents(ix) == before | {"bytes": simhash(T3 + " \udcff\udcfe tail")}
    else:
        one_error_line(done)
        assert contents(ix) == before
    before = contents(ix)
    message = one_error_line(run_cli("add", ix, "--text", T3, "--key", b"bad\xffkey"))
    assert "surrogate" in message or "UTF-8" in message
    assert contents(ix) == before
    done = run_cli("query", ix, T1.encode() + b" \xff")
    assert done.returncode == 0 and done.stdout.startswith("0\tone\n"), done.stderr


# --- invalid UTF-8, line endings, long lines, broken lines in files ------------------

BAD_UTF8 = {  # format -> (file name, contents with invalid UTF-8 on line 3)
    "text": ("doc.txt", b"first line\nsecond line\nthird \xff\xfe line\n"),
    "lines": ("doc.lines", b"first line\nsecond line\nthird \xc3\x28 line\n"),
    "jsonl": (
        "doc.jsonl",
        b'{"id": "a", "text": "first"}\n{"id": "b", "text": "second"}\n'
        b'{"id": "c", "text": "bad \xed\xa0\x80"}\n',
    ),
    "csv": ("doc.csv", b"id,text\na,first\nb,bad \xc0\xaf bytes\n"),
}


@pytest.mark.parametrize("fmt", sorted(BAD_UTF8))
def test_invalid_utf8_in_a_file_is_one_error_naming_the_line(
    ix: Path, tmp_path: Path, fmt: str
) -> None:
    name, data = BAD_UTF8[fmt]
    path = write(tmp_path / name, data)
    before = contents(ix)
    message = error("add", ix, path, "--format", fmt, contains=(name, "UTF-8"))
    assert "line 3" in message
    assert contents(ix) == before
    with pytest.raises(SourceError, match="line 3"):
        list(read_docs([str(path)], fmt=fmt))
    with SimIndex(ix) as index, pytest.raises(SourceError):
        index.add_many((d.key, d.text) for d in read_docs([str(path)], fmt=fmt))
    assert contents(ix) == before
    error("dedup", path, "--format", fmt, "--out", tmp_path / "out.jsonl", contains=(name,))
    assert not (tmp_path / "out.jsonl").exists()


def test_invalid_utf8_on_stdin_and_in_query_files(ix: Path, tmp_path: Path) -> None:
    before = contents(ix)
    error("add", ix, "-", "--key", "k", input=b"ok \xff\xfe")
    error("add", ix, "-", "--format", "jsonl", input=b'{"id": "a", "text": "\xff"}\n')
    assert contents(ix) == before
    error("query", ix, "--file", write(tmp_path / "q.txt", b"caf\xe9"))
    error("query", ix, "--batch", write(tmp_path / "q.jsonl", b'{"text": "\xff"}\n'))
    error("distance", "--file", tmp_path / "q.txt", tmp_path / "q.txt")


@pytest.mark.parametrize("fmt", ["text", "lines", "jsonl", "csv"])
def test_crlf_files_give_the_same_documents_as_lf_files(tmp_path: Path, fmt: str) -> None:
    if fmt == "jsonl":
        lf = jsonl({"id": "a", "text": T1}, {"id": "b", "text": T2 + "\nsecond line"})
    elif fmt == "csv":
        lf = 'id,text\na,"' + T1 + '"\nb,"' + T2 + '\nsecond line"\n'
    else:
        lf = f"{T1}\n\n{T2}\nsecond line\n"
    (tmp_path / "lf").mkdir()
    (tmp_path / "crlf").mkdir()
    a = write(tmp_path / "lf" / "docs", lf)
    b = write(tmp_path / "crlf" / "docs", lf.replace("\n", "\r\n"))
    docs_lf = list(read_docs([str(a)], fmt=fmt))
    docs_crlf = list(read_docs([str(b)], fmt=fmt))
    assert len(docs_lf) == len(docs_crlf) >= 1
    for x, y in zip(docs_lf, docs_crlf, strict=True):
        assert simhash(x.text) == simhash(y.text)
        if fmt == "lines":
            assert "\r" not in y.text  # the line ending is not part of the document
    for where, path in (("lf", a), ("crlf", b)):
        ok("add", tmp_path / f"{where}.db", path, "--format", fmt, "--workers", 1)
    assert sorted(contents(tmp_path / "lf.db").values()) == sorted(
        contents(tmp_path / "crlf.db").values()
    )


def test_a_jsonl_file_with_a_broken_line_in_the_middle(ix: Path, tmp_path: Path) -> None:
    lines = [json.dumps({"id": f"d{i}", "text": t}) for i, t in enumerate([T1, T2, T3])]
    lines.insert(2, '{"id": "broken", "text": "no closing quote}')
    lines += [json.dumps({"id": "d9", "text": T3 + " after"})]
    path = write(tmp_path / "docs.jsonl", "\n".join(lines) + "\n")
    before = contents(ix)
    error("add", ix, path, contains=("docs.jsonl", "line 3", "JSON"))
    assert contents(ix) == before  # one transaction: nothing of lines 1-2 kept
    error("add", ix, path, "--workers", 2, contains=("line 3",))
    assert contents(ix) == before
    with SimIndex(ix) as index, pytest.raises(SourceError, match="line 3"):
        index.add_many((d.key, d.text) for d in read_docs([str(path)]))
    assert contents(ix) == before
    # In committed batches, the batches before the broken line stay (documented).
    error("add", ix, path, "--batch-size", 1, "--workers", 1, contains=("line 3",))
    assert contents(ix) == before | {"d0": simhash(T1), "d1": simhash(T2)}


@pytest.mark.parametrize(
    ("line", "words_in_message"),
    [
        ("[1, 2, 3]", ("line 2", "not a JSON object")),
        ('"just a string"', ("line 2", "not a JSON object")),
        ('{"id": null, "text": "x"}', ("line 2", "'id'")),
        ('{"id": 1.5, "text": "x"}', ("line 2", "'id'")),
        ('{"id": true, "text": "x"}', ("line 2", "'id'")),
        ('{"id": ["a"], "text": "x"}', ("line 2", "'id'")),
        ('{"id": "", "text": "x"}', ("line 2", "empty key")),
        ('{"id": "k", "text": null}', ("line 2", "'text'")),
        ('{"id": "k", "text": 12}', ("line 2", "'text'")),
        ('{"id": "k"}', ("line 2", "'text'")),
        ("[" * 100_000 + "]" * 100_000, ("line 2", "nested too deeply")),
        ('{"id": "k", "text": "x"} trailing', ("line 2", "JSON")),
        ('{"id": "\\ud800", "text": "lone surrogate key"}', ("surrogate",)),
    ],
    ids=lambda v: v[:30] if isinstance(v, str) else None,
)
def test_odd_json_lines_are_one_error_and_add_nothing(
    ix: Path, tmp_path: Path, line: str, words_in_message: tuple[str, ...]
) -> None:
    path = write(tmp_path / "docs.jsonl", jsonl({"id": "first", "text": T3}) + line + "\n")
    before = contents(ix)
    error("add", ix, path, contains=words_in_message)
    assert contents(ix) == before


def test_a_10_mb_single_line_json_document(ix: Path, tmp_path: Path) -> None:
    rng = random.Random(10)
    vocabulary = [
        "".join(rng.choices("abcdefghijklmnop", k=rng.randint(3, 9))) for _ in range(3000)
    ]
    chunk = " ".join(rng.choices(vocabulary, k=20_000)) + " "
    big = (chunk * (10 * 2**20 // len(chunk) + 1))[: 10 * 2**20]
    path = write(
        tmp_path / "big.jsonl",
        jsonl(
            {"id": "before", "text": T3}, {"id": "big", "text": big}, {"id": "after", "text": T1}
        ),
    )
    assert path.stat().st_size > 10 * 2**20
    before = contents(ix)
    # Two workers: the 10 MB document goes through a pipe to a worker process.
    out = json.loads(ok("add", ix, path, "--json", "--workers", 2).stdout)
    assert out["added"] == 3
    assert contents(ix) == before | {
        "before": simhash(T3),
        "big": simhash(big),
        "after": simhash(T1),
    }


# --- keys --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key", ["", 1, 0, None, b"bytes", 1.5, True, ("a",), "\ud800", "ok\udcffkey"], ids=repr
)
def test_a_bad_key_is_an_invalid_argument_and_changes_nothing(
    memory_index: SimIndex, key: Any
) -> None:
    memory_index.add("kept", T1)
    with pytest.raises(InvalidArgumentError):
        memory_index.add(key, T2)
    with pytest.raises(InvalidArgumentError):
        memory_index.add_fingerprint(key, 12345)
    with pytest.raises(InvalidArgumentError):
        memory_index.add_many([("fine", T3), (key, T2)])
    with pytest.raises(InvalidArgumentError):
        memory_index.add_fingerprints([("fine", 1), (key, 2)])
    with pytest.raises(InvalidArgumentError):
        memory_index.remove_many(["kept", key])
    assert dict(memory_index.items()) == {"kept": simhash(T1)}
    try:
        assert key not in memory_index
    except InvalidArgumentError:
        assert isinstance(key, str) and has_surrogate(key)  # `in` checks the key too


@pytest.mark.parametrize("key", [*SQL_KEYS, *ODD_KEYS, "x" * 100_000], ids=lambda k: repr(k)[:30])
def test_odd_keys_are_stored_verbatim_and_round_trip(tmp_path: Path, key: str) -> None:
    path = tmp_path / "ix.db"
    with SimIndex(path) as ix:
        ix.add("plain", T2)
        schema = schema_of(path)
        fp = ix.add(key, T1)
        assert key in ix and ix.get(key) == fp
        assert Match(key, 0, fp, 1.0) in ix.query(T1)  # its own text: similarity 1.0
        assert dict(ix.items()) == {"plain": simhash(T2), key: fp}
        assert ix.query_many([T1] * 300)[0][0] == Match(key, 0, fp, 1.0)
        assert Match(key, 0, fp) in ix.query(fp)  # by fingerprint: no similarity
        ix.add(key, T3)  # replaced, not duplicated
        assert len(ix) == 2 and ix.get(key) == simhash(T3)
    assert stored_keys(path) == {"plain", key}
    assert schema_of(path) == schema
    with SimIndex(path) as ix:
        assert ix.remove(key) and not ix.remove(key)
        assert dict(ix.items()) == {"plain": simhash(T2)}


def test_keys_that_differ_only_invisibly_are_different_keys(memory_index: SimIndex) -> None:
    """Keys are stored as given: not normalised, not cut at a NUL."""
    keys = ["a", "a\x00", "a\x00b", "a\x00c", "\x00a", "café", "cafe\u0301", "ｃａｆé", "Café"]
    memory_index.add_fingerprints((k, i) for i, k in enumerate(keys))
    assert dict(memory_index.items()) == {k: i for i, k in enumerate(keys)}
    assert [memory_index.get(k) for k in keys] == list(range(len(keys)))


def test_duplicate_keys_in_one_batch(memory_index: SimIndex) -> None:
    memory_index.add_many([("k", T1), ("other", T3), ("k", T2)])
    assert memory_index.get("k") == simhash(T2)  # the later wins
    with SimIndex(":memory:") as fresh:
        fresh.add_many([("k", T1), ("k", T2), ("k", T3)], skip_existing=True)
        assert dict(fresh.items()) == {"k": simhash(T1)}  # the first wins
        fresh.add_many([("k", T3), ("new", T2)], skip_existing=True)  # stored: kept
        assert dict(fresh.items()) == {"k": simhash(T1), "new": simhash(T2)}
    with SimIndex(":memory:") as fresh:  # across chunk boundaries too
        fresh.add_fingerprints([("k", 1)] + [(f"x{i}", i) for i in range(12_000)] + [("k", 2)])
        assert fresh.get("k") == 2 and len(fresh) == 12_001


def test_duplicate_keys_in_one_cli_import(tmp_path: Path) -> None:
    path = write(
        tmp_path / "dup.jsonl",
        jsonl({"id": "k", "text": T1}, {"id": "k", "text": T2}, {"id": "k", "text": T3}),
    )
    ok("add", tmp_path / "a.db", path)
    assert contents(tmp_path / "a.db") == {"k": simhash(T3)}
    ok("add", tmp_path / "b.db", path, "--skip-existing")
    assert contents(tmp_path / "b.db") == {"k": simhash(T1)}


def test_empty_and_long_keys_in_the_cli(ix: Path, tmp_path: Path) -> None:
    before = contents(ix)
    error("add", ix, "--text", T3, "--key", "")
    error("add", ix, write(tmp_path / "e.csv", "id,text\n,hello there\n"), contains=("line 2",))
    assert contents(ix) == before
    long_key = "k" * 100_000
    ok("add", ix, "--text", T3, "--key", long_key)
    assert contents(ix)[long_key] == simhash(T3)
    ok("add", ix, write(tmp_path / "long.jsonl", jsonl({"id": "j" * 100_000, "text": T3})))
    assert contents(ix)["j" * 100_000] == simhash(T3)


# --- SQL injection: impossible by construction ----------------------------------------


def test_hostile_keys_through_every_cli_input(ix: Path, tmp_path: Path) -> None:
    schema = schema_of(ix)
    keys = [*SQL_KEYS, *ODD_KEYS]
    texts = [f"{T3} number {i}" for i in range(len(keys))]
    ok("add", ix, "--text", T3, "--key", keys[0])
    ok("add", ix, "-", "--key", keys[1], input=T3)
    records = [{"id": k, "text": t} for k, t in zip(keys, texts, strict=True)]
    ok("add", ix, write(tmp_path / "k.jsonl", jsonl(*records)))
    rows = "".join(  # CSV: the keys without NUL (Python < 3.11's csv refuses NUL)
        '"' + k.replace('"', '""') + '","' + t + '"\n'
        for k, t in zip(keys, texts, strict=True)
        if "\x00" not in k
    )
    ok("add", ix, write(tmp_path / "k.csv", "id,text\n" + rows))
    assert schema_of(ix) == schema
    assert stored_keys(ix) == {"one", "two", *keys}
    assert contents(ix) == {"one": simhash(T1), "two": simhash(T2)} | dict(
        zip(keys, map(simhash, texts), strict=True)
    )
    assert f"0\t{keys[0]}" in ok("query", ix, texts[0], "--k", 0).stdout.splitlines()
    ok("remove", ix, *keys)
    assert schema_of(ix) == schema
    assert contents(ix) == {"one": simhash(T1), "two": simhash(T2)}


def test_hostile_field_names_in_jsonl_and_csv(ix: Path, tmp_path: Path) -> None:
    schema = schema_of(ix)
    key = "x'); DROP TABLE simindex_fingerprints; --"
    record = {HOSTILE_FIELD: key, HOSTILE_TEXT_FIELD: T3, "id": "decoy", "text": "decoy"}
    path = write(tmp_path / "h.jsonl", json.dumps(record) + "\n")
    fields = ("--key-field", HOSTILE_FIELD, "--text-field", HOSTILE_TEXT_FIELD)
    ok("add", ix, path, *fields)
    header = ",".join('"' + f.replace('"', '""') + '"' for f in (HOSTILE_FIELD, HOSTILE_TEXT_FIELD))
    csv_path = write(tmp_path / "h.csv", f'{header}\n"csv {key}","{T1} again"\n')
    ok("add", ix, csv_path, *fields)
    assert schema_of(ix) == schema
    assert contents(ix) == {
        "one": simhash(T1),
        "two": simhash(T2),
        key: simhash(T3),
        f"csv {key}": simhash(T1 + " again"),
    }
    # the same fields for query --batch and for dedup --out
    result = ok("query", ix, "--batch", path, *fields)
    assert json.loads(result.stdout)["id"] == key
    out = tmp_path / "unique.jsonl"
    ok("dedup", path, csv_path, "--out", out, *fields)
    kept = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert {r[HOSTILE_FIELD] for r in kept} == {key, f"csv {key}"}
    # a field name that is not there: one error naming it, nothing added
    before = contents(ix)
    error("add", ix, csv_path, "--key-field", "nope'; --", contains=("nope'; --",))
    error("add", ix, path, "--text-field", "nope'; --", contains=("nope'; --",))
    assert contents(ix) == before and schema_of(ix) == schema


# --- parameters ----------------------------------------------------------------------


@pytest.mark.parametrize("k", [-1, 65, 1000, True, 2.0, "3"])
def test_query_k_out_of_range(memory_index: SimIndex, k: Any) -> None:
    memory_index.add("one", T1)
    with pytest.raises(InvalidArgumentError):
        memory_index.query(T1, k=k)
    with pytest.raises(InvalidArgumentError):
        memory_index.query_many([T1], k=k)
    with pytest.raises(InvalidArgumentError):
        memory_index.duplicates(k=k)


def test_query_k_up_to_64_is_a_full_scan_and_above_15_not_in_batch(memory_index: SimIndex) -> None:
    memory_index.add("one", T1)
    with pytest.warns(FullScanWarning):
        assert memory_index.query(T1, k=64)[0].key == "one"
    for bad in (16, 64):
        with pytest.raises(InvalidArgumentError):
            memory_index.query_many([T1], k=bad)
        with pytest.raises(InvalidArgumentError):
            memory_index.clusters(k=bad)


@pytest.mark.parametrize("limit", [0, -1, True, 1.5, "2"])
def test_bad_limits(memory_index: SimIndex, limit: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        memory_index.query(T1, limit=limit)


@pytest.mark.parametrize("query", [-1, 2**64, True, None, b"text", 1.0, [T1]], ids=repr)
def test_bad_query_values(memory_index: SimIndex, query: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        memory_index.query(query)
    with pytest.raises(InvalidArgumentError):
        memory_index.query_many([T1, query])


@pytest.mark.parametrize(
    ("k", "blocks"),
    [
        (16, None),
        (-1, None),
        (64, None),
        (True, None),
        (3.0, None),
        (15, 2),  # two blocks probed within 7 bits: more than 1,024 lookups
        (3, 0),
        (3, -1),
        (3, 17),
        (3, True),
        (3, "5"),
        (7, 16),  # C(16, 7) = 11,440 database indexes
        (0, 65),
    ],
    ids=repr,
)
def test_index_k_and_blocks_out_of_range_create_nothing(
    tmp_path: Path, k: Any, blocks: Any
) -> None:
    path = tmp_path / "ix.db"
    with pytest.raises(InvalidArgumentError):
        SimIndex(path, k=k, blocks=blocks)
    assert not path.exists()


@pytest.mark.parametrize(
    "options",
    [
        ["--k", "16"],
        ["--k", "-1"],
        ["--k", "64"],
        ["--k", "three"],
        ["--k", "15", "--blocks", "2"],
        ["--k", "3", "--blocks", "17"],
        ["--blocks", "0"],
        ["--blocks", "-4"],
        ["--k", "7", "--blocks", "16"],
    ],
)
def test_cli_index_k_and_blocks_out_of_range_create_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str]
) -> None:
    cli_error(capsys, "init", tmp_path / "ix.db", *options)
    cli_error(capsys, "add", tmp_path / "ix.db", "--text", T1, "--key", "k", *options)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "config",
    [
        {"ngram": 1, "bogus": True},
        {"shingles": 3},
        {"ngram": 0},
        {"ngram": 9},
        {"ngram": "2"},
        {"ngram": 2.0},
        {"weighting": "nonsense"},
        {"weighting": None},
        {"stopwords": "yes"},
        {"tokenizer": 2},
        "ngram=2",
        ["ngram", 2],
        42,
    ],
    ids=repr,
)
def test_unknown_or_bad_fingerprint_options(tmp_path: Path, config: Any) -> None:
    path = tmp_path / "ix.db"
    with pytest.raises(InvalidArgumentError):
        SimIndex(path, config=config)
    assert not path.exists()


@pytest.mark.parametrize("config", [{1: 2}, {"ngram": 1, None: 2}], ids=repr)
def test_fingerprint_options_with_names_that_are_not_strings(tmp_path: Path, config: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        SimIndex(tmp_path / "ix.db", config=config)


@pytest.mark.parametrize(
    "options",
    [
        ["--bogus", "1"],
        ["--shingles", "3"],
        ["--ngram", "0"],
        ["--ngram", "9"],
        ["--ngram", "two"],
        ["--weighting", "nonsense"],
        ["--keep-stopwords=maybe"],
    ],
)
def test_cli_unknown_or_bad_fingerprint_options_create_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str]
) -> None:
    cli_error(capsys, "init", tmp_path / "ix.db", *options)
    cli_error(capsys, "add", tmp_path / "ix.db", "--text", T1, "--key", "k", *options)
    cli_error(capsys, "fingerprint", T1, *options)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args",
    [
        ["query", "{ix}", T1, "--k", "-1"],
        ["query", "{ix}", T1, "--k", "65"],
        ["query", "{ix}", T1, "--limit", "0"],
        ["query", "{ix}", "--fingerprint", str(2**64)],
        ["query", "{ix}", "--fingerprint", "-1"],
        ["dedup", "{ix}", "--k", "16"],
        ["dedup", "{ix}", "--k", "-1"],
        ["advise", "--n", "-1"],
        ["advise", "--n", "10", "--k", "16"],
        ["add", "{ix}", "--text", T3, "--key", "k", "--batch-size", "0"],
        ["add", "{ix}", "--text", T3, "--key", "k", "--workers", "x"],
    ],
)
def test_cli_parameters_out_of_range(
    ix: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    before = contents(ix)
    cli_error(capsys, *(str(ix) if a == "{ix}" else a for a in args))
    assert contents(ix) == before


def test_a_path_in_a_folder_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such" / "folder" / "ix.db"
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        SimIndex(missing)
    with pytest.raises(NotAnIndexError):
        SimIndex(missing, create=False)
    with pytest.raises(InvalidArgumentError):
        SimIndex(f"sqlite:///{missing}")
    with pytest.raises(InvalidArgumentError):
        SimIndex(tmp_path)  # a folder, not a file
    error("init", missing)
    error("add", missing, "--text", T1, "--key", "k")
    error("query", missing, T1)
    error("stats", missing)
    error("dedup", write(tmp_path / "c.jsonl", jsonl({"id": 1, "text": T1})), "--out", missing)
    assert list(tmp_path.iterdir()) == [tmp_path / "c.jsonl"]


@pytest.mark.parametrize(
    "url",
    [
        "postgresql+psycopg://u:s3cret-pw@127.0.0.1:1/db",
        "postgresql://u:s3cret-pw@127.0.0.1:1/db",
        "mysql+pymysql://u:s3cret-pw@127.0.0.1:1/db",
        "nosuchdb://u:s3cret-pw@127.0.0.1:1/db",
    ],
)
def test_an_unreachable_database_url_is_one_clear_error_without_the_password(url: str) -> None:
    """The driver may be missing (StorageError saying so) or present and the
    server unreachable (StorageError from connecting); an unknown kind of
    database is an InvalidArgumentError. Never the password."""
    with pytest.raises(SimIndexError) as caught:
        SimIndex(url)
    assert isinstance(caught.value, (StorageError, InvalidArgumentError))
    assert "s3cret-pw" not in str(caught.value)
    for args in (["init", url], ["query", url, T1], ["add", url, "--text", T1, "--key", "k"]):
        message = error(*args)
        assert "s3cret-pw" not in message


# --- damaged index files ------------------------------------------------------------


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A closed index of 3,000 fingerprints and three texts (about 450 KB)."""
    path = tmp_path_factory.mktemp("healthy") / "ix.db"
    rng = random.Random(2024)
    with SimIndex(path) as ix:
        ix.add_fingerprints((f"k{i}", rng.getrandbits(64)) for i in range(3000))
        ix.add_many([("one", T1), ("two", T2), ("three", T3)])
    assert files_beside(path) == {"ix.db"}  # checkpointed: no -wal left
    return path


def _garbage(data: bytes, seed: int) -> bytes:
    """The file with 2,000 bytes of garbage at a third, a half and two thirds in."""
    damaged = bytearray(data)
    rng = random.Random(seed)
    for at in (len(data) // 3, len(data) // 2, 2 * len(data) // 3):
        damaged[at : at + 2000] = rng.randbytes(2000)
    return bytes(damaged)


def _pages_overwritten(data: bytes, like: str) -> bytes:
    """Every page of the b-trees named LIKE ``like`` overwritten with a pattern
    that is no valid page; the settings tables (read to open it) left intact."""
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "copy.db"
        copy.write_bytes(data)
        conn = sqlite3.connect(copy)
        try:
            size = conn.execute("PRAGMA page_size").fetchone()[0]
            try:  # the pages of each b-tree, where SQLite has the dbstat table
                pages = [
                    p
                    for (p,) in conn.execute("SELECT pageno FROM dbstat WHERE name LIKE ?", (like,))
                ]
            except sqlite3.OperationalError:  # else: every page from the first root on
                (root,) = conn.execute(
                    "SELECT min(rootpage) FROM sqlite_master WHERE name LIKE ?", (like,)
                ).fetchone()
                pages = list(range(root, len(data) // size + 1))
        finally:
            conn.close()
    damaged = bytearray(data)
    for page in pages:
        damaged[(page - 1) * size : page * size] = b"\xde\xad\xbe\xef" * (size // 4)
    return bytes(damaged)


DAMAGE: dict[str, Callable[[bytes], bytes]] = {
    "random bytes": lambda data: random.Random(1).randbytes(len(data)),
    "text file": lambda data: b"just some text, not a database\n" * 100,
    "truncated to half": lambda data: data[: len(data) // 2],
    "truncated to 100 bytes": lambda data: data[:100],
    "truncated to the header": lambda data: data[:16],
    "garbage in the middle": lambda data: _garbage(data, 7),
    "garbage in the first pages": lambda data: (
        data[:150] + random.Random(3).randbytes(9000) + data[9150:]
    ),
    # The table and all its indexes: no fingerprint can be read.
    "garbage in every fingerprint page": lambda data: _pages_overwritten(
        data, "%simindex_fingerprints%"
    ),
    # The lookup indexes only: the table (and its rowids) can still be read.
    "garbage in every lookup index page": lambda data: _pages_overwritten(
        data, "ix_simindex_fingerprints%"
    ),
}


def damaged(healthy: Path, tmp_path: Path, how: str) -> Path:
    path = tmp_path / "damaged.db"
    path.write_bytes(DAMAGE[how](healthy.read_bytes()))
    return path


def really_damaged(path: Path) -> bool:
    """sqlite3's own opinion: quick_check fails, or the file cannot be read at all."""
    try:
        conn = sqlite3.connect(path)
        try:
            return conn.execute("PRAGMA quick_check").fetchall() != [("ok",)]
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return True


# What reads every fingerprint at once (Store.load, on the driver's own cursor).
LOAD_OPERATIONS: dict[str, Callable[[SimIndex], object]] = {
    # 400 queries: matched in memory, after reading every fingerprint
    "query_many": lambda ix: ix.query_many([T1, T2] * 200),
    "duplicates": lambda ix: ix.duplicates(),
    "clusters": lambda ix: ix.clusters(),
}
API_OPERATIONS: dict[str, Callable[[SimIndex], object]] = {
    "len": len,
    "get": lambda ix: ix.get("k5"),
    "contains": lambda ix: "one" in ix,
    "query text": lambda ix: ix.query(T1),
    "query fingerprint": lambda ix: ix.query(12345, k=3),
    "query full scan": lambda ix: ix.query(T2, k=20),
    "query_many": lambda ix: ix.query_many([T1, T2]),  # through the block indexes
    "items": lambda ix: list(ix.items()),
    "stats": lambda ix: ix.stats(),
    "add": lambda ix: ix.add("new", T3 + " new"),
    "add_many": lambda ix: ix.add_many((f"n{i}", f"{T3} {i}") for i in range(50)),
    "remove": lambda ix: ix.remove("k7"),
    **LOAD_OPERATIONS,
}


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_a_damaged_index_file_raises_only_simindex_errors(
    healthy: Path, tmp_path: Path, how: str
) -> None:
    path = damaged(healthy, tmp_path, how)
    assert really_damaged(path)
    original = path.read_bytes()
    outcomes: dict[str, str] = {}
    try:
        ix = SimIndex(path, create=False)
    except SimIndexError as exc:
        outcomes["open"] = type(exc).__name__
    else:
        with ix, warnings.catch_warnings():
            warnings.simplefilter("ignore", FullScanWarning)
            for name, operation in API_OPERATIONS.items():
                try:
                    operation(ix)
                    outcomes[name] = "ok"
                except SimIndexError as exc:
                    outcomes[name] = type(exc).__name__
    if "open" in outcomes:
        # Refused at the door: the file is left exactly as it was.
        assert path.read_bytes() == original
        assert files_beside(path) == {path.name}
        if how in ("random bytes", "text file"):
            assert outcomes["open"] == "NotAnIndexError"
        with pytest.raises(SimIndexError):
            SimIndex(path)  # create=True does not overwrite it either
        assert path.read_bytes() == original
    print(f"{how}: {outcomes}")


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_a_damaged_index_file_in_the_cli_is_one_error_line_at_worst(
    healthy: Path, tmp_path: Path, how: str
) -> None:
    path = damaged(healthy, tmp_path, how)
    queries = write(tmp_path / "q.jsonl", jsonl(*({"id": i, "text": T1} for i in range(300))))
    refused = how in ("random bytes", "text file")
    for args in (
        ["stats", path],
        ["query", path, T1],
        ["query", path, "--fingerprint", "12345", "--k", "20"],
        ["query", path, "--batch", queries],  # 300 queries: matched in memory
        ["dedup", path],
        ["dedup", path, "--clusters"],
        ["init", path],
        ["add", path, "--text", T3 + " added", "--key", "added"],
        ["remove", path, "k9"],
    ):
        message = ok_or_error(*args, found_nothing=args[0] == "query")
        if refused:
            assert message is not None and "not a simindex index" in message
    if refused:
        assert path.read_bytes() == DAMAGE[how](healthy.read_bytes())


# Reads of every fingerprint go through the driver's own cursor (Store.load):
# a damaged page there must be a StorageError too, never sqlite3.DatabaseError.
# Damage chosen so that opening works and the read certainly meets it.
@pytest.mark.parametrize(
    ("operation", "how"),
    [
        ("duplicates", "garbage in every fingerprint page"),
        ("clusters", "garbage in every fingerprint page"),
        # query_many reads max(id) first (a StorageError when the table is
        # damaged too), so it meets the bug when only the indexes are.
        ("query_many", "garbage in every lookup index page"),
        ("duplicates", "garbage in every lookup index page"),
    ],
)
def test_reading_every_fingerprint_of_a_damaged_index_raises_storage_error(
    healthy: Path, tmp_path: Path, operation: str, how: str
) -> None:
    path = damaged(healthy, tmp_path, how)
    # The settings are intact: it opens.
    with SimIndex(path, create=False) as ix, pytest.raises(StorageError, match="malformed"):
        LOAD_OPERATIONS[operation](ix)


@pytest.mark.parametrize("command", ["dedup", "dedup --clusters", "query --batch"])
def test_reading_every_fingerprint_of_a_damaged_index_in_the_cli(
    healthy: Path, tmp_path: Path, command: str
) -> None:
    path = damaged(healthy, tmp_path, "garbage in every lookup index page")
    if command == "query --batch":
        queries = write(tmp_path / "q.jsonl", jsonl(*({"id": i, "text": T1} for i in range(300))))
        error("query", path, "--batch", queries, contains=("malformed",))
    else:
        error(*command.split()[:1], path, *command.split()[1:], contains=("malformed",))


def test_a_sqlite_database_that_is_not_an_index_is_refused_and_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE simindex_fingerprints (key TEXT, fingerprint INTEGER)")
    conn.execute("INSERT INTO simindex_fingerprints VALUES ('a', 1)")
    conn.commit()
    conn.close()
    original = path.read_bytes()
    for create in (True, False):
        with pytest.raises(NotAnIndexError, match="not a simindex index"):
            SimIndex(path, create=create)
    for args in (["init", path], ["add", path, "--text", T1, "--key", "k"], ["query", path, T1]):
        error(*args, contains=("not a simindex index",))
    assert path.read_bytes() == original
    assert files_beside(path) == {"other.db"}


@pytest.mark.parametrize("how", sorted(DAMAGE))
def test_check_reports_the_damage(healthy: Path, tmp_path: Path, how: str) -> None:
    """SimIndex.check() and `simindex check` report it (both must exist)."""
    assert hasattr(SimIndex, "check"), "SimIndex.check() is missing"
    assert "check" in get_command(app).list_commands(None), "`simindex check` is missing"
    copy = tmp_path / "healthy.db"
    shutil.copyfile(healthy, copy)
    path = damaged(healthy, tmp_path, how)
    with SimIndex(copy, create=False) as ix:
        report = ix.check()
    assert report.ok and not report.problems
    try:
        ix = SimIndex(path, create=False)
    except SimIndexError:
        pass  # refused when opened: that reports it too
    else:
        with ix:
            try:
                report = ix.check()
            except SimIndexError:
                pass
            else:
                assert not report.ok and report.problems, how
    assert invoke("check", copy).exit_code == 0
    result = invoke("check", path)
    assert result.exit_code in (1, 2), result.output
    if result.exit_code == 2:
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("Error: "), result.stderr


# --- known bugs ---------------------------------------------------------------------

HUGE_INT = "9" * 5000  # more digits than Python converts by default (4300)


@pytest.mark.parametrize("command", ["add", "dedup", "query --batch"])
def test_a_json_line_with_a_huge_integer_is_one_error_line(
    ix: Path, tmp_path: Path, command: str
) -> None:
    path = write(tmp_path / "huge.jsonl", jsonl({"id": "a", "text": T3}))
    with path.open("a", encoding="utf-8") as f:
        f.write(f'{{"id": {HUGE_INT}, "text": "{T3}", "fingerprint": {HUGE_INT}}}\n')
    before = contents(ix)
    if command == "add":
        error("add", ix, path, "--workers", 1, contains=("line 2",))
        with pytest.raises(SourceError, match="line 2"):
            list(read_docs([str(path)]))
    elif command == "dedup":
        error("dedup", path, "--out", tmp_path / "out.jsonl", "--workers", 1, contains=("line 2",))
    else:
        error("query", ix, "--batch", path, contains=("line 2",))
    assert contents(ix) == before


def test_query_batch_with_a_deeply_nested_line_is_one_error_line(ix: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "deep.jsonl", "[" * 100_000 + "]" * 100_000 + "\n")
    error("query", ix, "--batch", path, contains=("line 1",))


@pytest.mark.parametrize(
    ("command", "record"),
    [
        ("dedup --out", {"id": "s", "text": T1 + " \ud800"}),  # the text is written out
        ("query --batch", {"id": "s\ud800", "text": T1}),  # the id is echoed back
    ],
    ids=["dedup --out", "query --batch"],
)
def test_an_escaped_lone_surrogate_in_json_input_is_written_or_named(
    ix: Path, tmp_path: Path, command: str, record: dict[str, str]
) -> None:
    path = write(tmp_path / "sur.jsonl", jsonl(record))  # json.dumps escapes it: \\ud800
    assert "\\ud800" in path.read_text(encoding="ascii")
    if command == "dedup --out":
        done = run_cli("dedup", path, "--out", tmp_path / "out.jsonl", "--workers", 1)
    else:
        done = run_cli("query", ix, "--batch", path)
    assert "Traceback" not in done.stderr
    if done.returncode != 0:
        message = one_error_line(done)
        assert "sur.jsonl" in message and "line 1" in message, message


# --- fuzzing the text pipeline -------------------------------------------------------

# Every code point, of every category: surrogates, private use, unassigned,
# controls and format characters included.
ANY_CHAR = st.characters(exclude_categories=())
PIECES = st.sampled_from(
    [
        "the",
        "word",
        "Straße",
        "ΣΊΣΥΦΟΣ",
        "кошка",
        "مرحبا",
        "中文分词",
        "日本語のテキスト",
        "한국어",
        "don't",
        "don’t",
        "ﬁ",
        "Ｆｕｌｌ",
        "e\u0301",
        "\u200d",
        "\u200b",
        "\u202e",
        "\x00",
        "\ud800",
        "😀",
        "👩\u200d👩\u200d👧",
        "_",
        "'",
        "1,000.5",
        "\r\n",
        "İ",
        "ǅ",
    ]
)
FUZZ_TEXT = st.one_of(
    st.text(ANY_CHAR, max_size=500),
    st.lists(st.one_of(PIECES, st.text(ANY_CHAR, max_size=6)), max_size=80).map(
        lambda parts: " ".join(parts)[:500]
    ),
    st.lists(st.one_of(PIECES, st.text(ANY_CHAR, max_size=3)), max_size=80).map(
        lambda parts: "".join(parts)[:500]
    ),
)
CONFIGS = st.builds(
    FingerprintConfig,
    ngram=st.integers(1, 8),
    weighting=st.sampled_from(WEIGHTINGS),
    stopwords=st.booleans(),
)
_KEYS = itertools.count()


@pytest.fixture(scope="module")
def fuzz_index() -> Iterator[SimIndex]:
    with SimIndex(":memory:") as ix:
        yield ix


def has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(c) <= 0xDFFF for c in text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=FUZZ_TEXT)
def test_fuzz_simhash_and_the_index_round_trip(fuzz_index: SimIndex, text: str) -> None:
    tokens = words(prepare(text, DEFAULT_CONFIG), cjk=DEFAULT_CONFIG.cjk)  # what simhash reads
    try:
        fp = simhash(text)
    except EmptyTextError:
        assert tokens == []
        size = len(fuzz_index)
        with pytest.raises(EmptyTextError):
            fuzz_index.add("never", text)
        assert len(fuzz_index) == size
        return
    assert tokens
    assert 0 <= fp < 2**64
    assert simhash(text) == fp
    key = f"fuzz-{next(_KEYS)}"
    assert fuzz_index.add(key, text) == fp
    assert fuzz_index.get(key) == fp
    assert Match(key, 0, fp, 1.0) in fuzz_index.query(text)  # the same text: the same signature
    assert Match(key, 0, fp) in fuzz_index.query(fp, k=0)  # by fingerprint: no similarity


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=FUZZ_TEXT, config=CONFIGS)
def test_fuzz_simhash_with_any_configuration(text: str, config: FingerprintConfig) -> None:
    try:
        fp = simhash(text, config)
    except EmptyTextError:
        assert words(text) == []
        return
    assert words(text)
    assert 0 <= fp < 2**64 and simhash(text, config) == fp


@settings(max_examples=200, deadline=None)
@given(key=st.text(ANY_CHAR, max_size=40), fp=st.integers(0, 2**64 - 1))
def test_fuzz_keys_are_stored_verbatim_or_refused(fuzz_index: SimIndex, key: str, fp: int) -> None:
    size = len(fuzz_index)
    if not key or has_surrogate(key):
        with pytest.raises(InvalidArgumentError):
            fuzz_index.add_fingerprint(key, fp)
        assert len(fuzz_index) == size
        return
    fuzz_index.add_fingerprint(key, fp)
    assert fuzz_index.get(key) == fp and key in fuzz_index
    assert Match(key, 0, fp) in fuzz_index.query(fp, k=0)
    assert fuzz_index.remove(key)
    assert len(fuzz_index) == size


def test_fingerprints_are_the_same_in_a_fresh_process() -> None:
    """~20 generated texts (with words) and a few fixed hostile ones, fingerprinted
    here and in a new interpreter with another hash seed: the same numbers."""
    texts = [MIXED, T1 + "\x00\ud800", "中文 English Кириллица", "to be or not to be"]

    @settings(max_examples=200, deadline=None, database=None)
    @given(text=FUZZ_TEXT)
    def collect(text: str) -> None:
        if len(texts) < 24 and words(text) and text not in texts:
            texts.append(text)

    collect()
    assert len(texts) >= 20
    here = [simhash(t) for t in texts]
    script = textwrap.dedent(
        """
        import json, sys
        from simindex import simhash
        texts = json.loads(sys.stdin.read())
        print(json.dumps([simhash(t) for t in texts]))
        """
    )
    env = dict(os.environ, PYTHONHASHSEED="12345", PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps(texts),  # ASCII: lone surrogates travel as \\udXXX escapes
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == here


# --- a 100 MB document ----------------------------------------------------------------

MEMORY_SCRIPT = """
import json, random, resource, time
from simindex import simhash

rng = random.Random(7)
vocabulary = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(2, 10)))
              for _ in range(50_000)]
piece = " ".join(rng.choices(vocabulary, k=200_000)) + "\\n"
size = 100 * 2**20
text = (piece * (size // len(piece) + 1))[:size]
simhash("warm up the imports")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
fp = simhash(text)
seconds = time.perf_counter() - start
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"chars": len(text), "fingerprint": fp, "seconds": seconds,
                  "rss_before_kb": before, "rss_after_kb": after}))
"""


@pytest.mark.slow
def test_a_100_mb_document_through_simhash_in_bounded_memory(
    record_property: Callable[[str, object], None],
) -> None:
    """Peak RSS growth (ru_maxrss, in a fresh process) while fingerprinting one
    100 MB English-like text, 16 million words of a 50,000-word vocabulary."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", MEMORY_SCRIPT],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    growth_mb = (result["rss_after_kb"] - result["rss_before_kb"]) / 1024
    record_property("simhash_100mb_rss_growth_mb", round(growth_mb))
    print(
        f"\n100 MB simhash: peak RSS growth {growth_mb:.0f} MB "
        f"({growth_mb / 100:.1f} bytes per input byte), {result['seconds']:.1f} s"
    )
    assert result["chars"] == 100 * 2**20 and 0 <= result["fingerprint"] < 2**64
    # Long texts are tokenised in 1 MB pieces: memory grows with the vocabulary
    # (before pieces: 1,050 MB for this text).
    assert growth_mb < 300, f"simhash of 100 MB grew the peak RSS by {growth_mb:.0f} MB"

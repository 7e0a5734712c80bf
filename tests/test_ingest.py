"""Reading documents from sources, and fingerprinting them in worker processes.

Every test makes its own files in tmp_path. The parallel tests start real
worker processes (a couple of seconds in all, most of it jieba loading in the
workers of the one test with Chinese text).
"""

from __future__ import annotations

import gzip
import io
import itertools
import multiprocessing
import os
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simindex import (
    DEFAULT_CONFIG,
    EmptyTextError,
    FingerprintConfig,
    InvalidArgumentError,
    SimIndexError,
    ingest,
    simhash,
)
from simindex.ingest import (
    Doc,
    SourceError,
    UnreadableFileError,
    check_paths,
    fingerprint_docs,
    read_docs,
    read_text,
    source_size,
    usable_cpus,
)
from simindex.signature import is_signature, signature
from tests.helpers import compiled_or_skip

CONFIG = FingerprintConfig()
EN = [
    "The Riverside branch library will change its opening hours next month.",
    "Route fourteen buses will follow a temporary diversion for six weeks.",
    "A new bakery has opened on Mill Street in the old picture frame shop.",
    "The school summer fair raised money for new playground equipment.",
]
ZH = [
    "你妈妈喊你回家吃饭哦，回家罗回家罗",
    "河滨图书馆下个月起将调整开放时间，工作日提前一小时开门。",
    "十四路公交车因桥梁维修将临时改道六个星期。",
]


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def docs_of(paths: list[Path | str], **options: object) -> list[Doc]:
    return list(read_docs([str(p) for p in paths], **options))  # type: ignore[arg-type]


def no_children() -> bool:
    return multiprocessing.active_children() == []


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run in tmp_path, so paths as given are short and relative."""
    monkeypatch.chdir(tmp_path)


# --- formats -------------------------------------------------------------------


def test_text_file_is_one_document_keyed_by_its_path_as_given() -> None:
    write(Path("notes/a.txt"), "\ufeffFirst line.\r\nSecond line.\n")
    [doc] = docs_of(["notes/a.txt"])
    assert doc == Doc("notes/a.txt", "First line.\r\nSecond line.\n", "notes/a.txt", 29)
    assert docs_of(["./notes/a.txt"], fmt="text")[0].key == "./notes/a.txt"


def test_lines_each_non_blank_line_is_a_document() -> None:
    write(Path("l.txt"), b"\xef\xbb\xbfone\r\n\r\n   \ntwo\nthree")
    docs = docs_of(["l.txt"], fmt="lines")
    assert [(d.key, d.text, d.where) for d in docs] == [
        ("l.txt:1", "one", "l.txt line 1"),
        ("l.txt:4", "two", "l.txt line 4"),
        ("l.txt:5", "three", "l.txt line 5"),
    ]
    assert sum(d.size for d in docs) == Path("l.txt").stat().st_size == source_size(["l.txt"])


def test_jsonl_fields_integer_keys_blank_lines_crlf_and_bom() -> None:
    write(
        Path("d.jsonl"),
        '\ufeff{"id": 7, "text": "seven"}\r\n\r\n{"id": "b", "text": "bee", "x": 1}\r\n',
    )
    docs = docs_of(["d.jsonl"])
    assert [(d.key, d.text, d.where) for d in docs] == [
        ("7", "seven", "d.jsonl line 1"),
        ("b", "bee", "d.jsonl line 3"),
    ]
    assert sum(d.size for d in docs) == source_size(["d.jsonl"])
    write(Path("u.ndjson"), '{"url": "http://a", "body": "text a"}\n')
    [doc] = docs_of(["u.ndjson"], key_field="url", text_field="body")
    assert (doc.key, doc.text) == ("http://a", "text a")


def test_broken_json_line_in_the_middle_is_named_after_the_lines_before_it() -> None:
    write(Path("d.jsonl"), '{"id": 1, "text": "a"}\n{"id": 2, "text": "b"}\n{"id": 3,\n')
    stream = read_docs(["d.jsonl"])
    assert [next(stream).key, next(stream).key] == ["1", "2"]  # streamed, not read whole
    with pytest.raises(SourceError, match=r"^d\.jsonl line 3 is not valid JSON"):
        next(stream)


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ('{"id": 1, "text": "abc', "(Unterminated string starting at column 19)"),
        ('{"id": 1, "text": }', "(Expecting value at column 19)"),
        ('{"id": 1} x', "(Extra data at column 11)"),
    ],
)
def test_broken_json_says_the_column(line: str, said: str) -> None:
    write(Path("q.jsonl"), '{"id": 0, "text": "a"}\n' + line + "\n")
    with pytest.raises(SourceError) as caught:
        docs_of(["q.jsonl"])
    assert str(caught.value) == f"q.jsonl line 2 is not valid JSON {said}"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[1, 2]", "line 2 is not a JSON object"),
        ('{"text": "t"}', "line 2 has no string or integer field 'id'"),
        ('{"id": true, "text": "t"}', "line 2 has no string or integer field 'id'"),
        ('{"id": "", "text": "t"}', "line 2 has an empty key"),
        ('{"id": "k"}', "line 2 has no string field 'text'"),
        ('{"id": "k", "text": 5}', "line 2 has no string field 'text'"),
    ],
)
def test_json_lines_that_are_not_documents_are_named(line: str, message: str) -> None:
    write(Path("d.jsonl"), '{"id": 1, "text": "a"}\n' + line + "\n")
    with pytest.raises(SourceError, match=message):
        docs_of(["d.jsonl"])


def test_csv_header_quoted_multiline_field_crlf_and_bom() -> None:
    data = (
        "\ufeffid,title,text\r\n"
        '1,One,"first line\r\nsecond line, with a comma and ""quotes"""\r\n'
        "\r\n"
        "2,Two,plain\r\n"
    )
    write(Path("d.csv"), data)
    docs = docs_of(["d.csv"])
    assert [(d.key, d.text, d.where) for d in docs] == [
        ("1", 'first line\r\nsecond line, with a comma and "quotes"', "d.csv line 2"),
        ("2", "plain", "d.csv line 5"),
    ]
    assert sum(d.size for d in docs) == source_size(["d.csv"]) == len(data.encode())
    [doc] = docs_of(["d.csv"], key_field="title", text_field="id")[:1]
    assert (doc.key, doc.text) == ("One", "1")


def test_csv_errors_name_the_column_or_line() -> None:
    write(Path("d.csv"), "id,body\n1,x\n")
    with pytest.raises(SourceError, match=r"d\.csv has no column 'text' for the text"):
        docs_of(["d.csv"])
    write(Path("e.csv"), "id,text\n1,x\n2\n")
    with pytest.raises(SourceError, match=r"e\.csv line 3 has 1 field; the header has 2"):
        docs_of(["e.csv"])
    write(Path("f.csv"), "id,text\n,x\n")
    with pytest.raises(SourceError, match=r"f\.csv line 2 has an empty key"):
        docs_of(["f.csv"])


def test_csv_with_a_quote_never_closed_is_an_error() -> None:
    """csv, not strict, would take the rest of the file as one field's text."""
    write(Path("u.csv"), 'id,text\n1,ok\n2,"opened\n3,never closed\n')
    stream = read_docs(["u.csv"])
    assert next(stream).key == "1"
    with pytest.raises(SourceError) as caught:
        next(stream)
    assert str(caught.value) == (
        "u.csv line 3 is not valid CSV (a quote opened in the record there is never closed)"
    )
    write(Path("v.csv"), 'id,text\n1,"closed\nlate"\n2,"last, no line end"')
    assert [d.text for d in docs_of(["v.csv"])] == ["closed\nlate", "last, no line end"]


def test_csv_field_longer_than_the_csv_module_default_limit() -> None:
    long_text = "word " * 40_000  # 200 KB, over csv's default 128 KiB
    write(Path("d.csv"), f'id,text\nk,"{long_text}"\n')
    assert docs_of(["d.csv"])[0].text == long_text


def test_auto_detection_by_extension_and_folder() -> None:
    write(Path("a.JSONL"), '{"id": "j", "text": "from jsonl"}\n')
    write(Path("b.ndjson"), '{"id": "n", "text": "from ndjson"}\n')
    write(Path("c.csv"), "id,text\nc,from csv\n")
    write(Path("d.md"), "a whole file\n")
    write(Path("e/f.jsonl"), '{"id": "x", "text": "in a folder: records, as named"}\n')
    keys = [d.key for d in docs_of(["a.JSONL", "b.ndjson", "c.csv", "d.md", "e"])]
    assert keys == ["j", "n", "c", "d.md", "x"]


# --- folders -------------------------------------------------------------------


def test_folder_recursive_sorted_hidden_skipped_keys_from_its_parent(tmp_path: Path) -> None:
    for name in [
        "b.txt",
        "a/z.txt",
        "a/b/c.txt",
        "A.txt",
        ".hidden.txt",
        ".git/x.txt",
        "a/.secret/y.txt",
        "a/.env",
    ]:
        write(Path("data/corpus") / name, f"text of {name}")
    inside = ["A.txt", "a/b/c.txt", "a/z.txt", "b.txt"]
    expected = [f"corpus/{name}" for name in inside]
    for given in ["data/corpus", "data/corpus/", str(tmp_path / "data/corpus")]:
        docs = docs_of([given], folder_keys="parent")
        assert [d.key for d in docs] == expected
        assert [d.where for d in docs] == expected
        assert docs[1].text == "text of a/b/c.txt"
        assert sum(d.size for d in docs) == source_size([given])
        # The default: the path that opens the file, the folder as given.
        opening = [os.path.join(given, name) for name in inside]
        assert [d.key for d in docs_of([given])] == opening
        assert all(Path(key).read_text() == d.text for key, d in zip(opening, docs, strict=True))
    os.chdir("data/corpus")
    assert [d.key for d in docs_of(["."], folder_keys="parent")][0] == "corpus/A.txt"
    assert [d.key for d in docs_of(["."])][0] == "./A.txt"


def test_folder_with_a_line_format_reads_every_file_in_it() -> None:
    write(Path("shards/1.jsonl"), '{"id": "a", "text": "x"}\n')
    write(Path("shards/2.jsonl"), '{"id": "b", "text": "y"}\n{"id": "c", "text": "z"}\n')
    assert [d.key for d in docs_of(["shards"], fmt="jsonl")] == ["a", "b", "c"]
    lines = docs_of(["shards"], fmt="lines")
    assert [d.key for d in lines][:2] == ["shards/1.jsonl:1", "shards/2.jsonl:1"]
    assert lines[2].where == "shards/2.jsonl line 2"


def test_folder_does_not_follow_links_to_folders() -> None:
    write(Path("c/real/a.txt"), "a")
    write(Path("outside/b.txt"), "b")
    os.symlink(Path("outside").resolve(), "c/linked")
    os.symlink(Path("outside/b.txt").resolve(), "c/b-link.txt")
    assert [d.key for d in docs_of(["c"])] == ["c/b-link.txt", "c/real/a.txt"]


# --- encodings and errors ----------------------------------------------------------


def test_invalid_utf8_names_the_line_and_byte() -> None:
    write(Path("l.txt"), b"good\nalso good\nbad \xff here\n")
    stream = read_docs(["l.txt"], fmt="lines")
    assert next(stream).text == "good"
    with pytest.raises(SourceError, match=r"^l\.txt line 3 is not valid UTF-8 \(byte 19 "):
        list(stream)
    write(Path("d.jsonl"), b'{"id": 1, "text": "a"}\n{"id": 2, "text": "\xc3("}\n')
    with pytest.raises(SourceError, match=r"d\.jsonl line 2 is not valid UTF-8"):
        docs_of(["d.jsonl"])
    write(Path("d.csv"), b'id,text\n1,"multi\nline \xe9"\n')
    with pytest.raises(SourceError, match=r"d\.csv line 3 is not valid UTF-8"):
        docs_of(["d.csv"])
    write(Path("t.txt"), b"one\ntwo \xe9t\xe9\n")
    with pytest.raises(
        SourceError, match=r"^t\.txt line 2 is not valid UTF-8 \(byte 8 of the file\)"
    ):
        docs_of(["t.txt"])


def test_missing_paths_fail_up_front() -> None:
    write(Path("here.txt"), "here")
    with pytest.raises(SourceError, match="^no such file: gone.txt$"):
        check_paths(["here.txt", "gone.txt"])
    with pytest.raises(SourceError, match="^no such file: gone/$"):
        read_docs(["here.txt", "gone/"])  # when called, before anything is read
    with pytest.raises(SourceError, match="only once"):
        check_paths(["-", "here.txt", "-"])
    check_paths(["here.txt", "-"])
    assert issubclass(SourceError, SimIndexError)


def test_bad_arguments() -> None:
    write(Path("a.txt"), "a")
    with pytest.raises(InvalidArgumentError, match="format must be one of"):
        read_docs(["a.txt"], fmt="xml")
    with pytest.raises(InvalidArgumentError, match="not one string"):
        read_docs("a.txt")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="standard input needs a key"):
        read_docs(["-"])


def test_a_symbolic_link_that_goes_nowhere_says_so() -> None:
    os.symlink("loop", "loop")
    os.symlink("gone.txt", "dangling")
    with pytest.raises(SourceError, match="^loop is a symbolic link loop$"):
        check_paths(["loop"])
    with pytest.raises(SourceError, match=r"^dangling is a broken symbolic link \(to gone\.txt"):
        read_docs(["dangling"])


# --- gzip ----------------------------------------------------------------------------


def test_gzip_files_are_read_as_the_text_they_hold() -> None:
    write(Path("notes.txt.gz"), gzip.compress(b"a note, compressed\n"))
    write(Path("d.jsonl.gz"), gzip.compress(b'{"id": "j", "text": "from jsonl.gz"}\n'))
    write(Path("f/NEWS.Debian.GZ"), gzip.compress(b"news of the package\n"))
    docs = docs_of(["notes.txt.gz", "d.jsonl.gz", "f"])
    # keyed by their names, .gz kept; the format is the name's without it
    assert [(d.key, d.text) for d in docs] == [
        ("notes.txt.gz", "a note, compressed\n"),
        ("j", "from jsonl.gz"),
        ("f/NEWS.Debian.GZ", "news of the package\n"),
    ]
    # sizes are of the text, as source_size counts them (gzip's record of it)
    assert sum(d.size for d in docs) == source_size(["notes.txt.gz", "d.jsonl.gz", "f"])
    lines = docs_of(["d.jsonl.gz"], fmt="lines")
    assert [d.key for d in lines] == ["d.jsonl.gz:1"]


def test_a_gz_file_that_is_not_gzip_data_is_an_error_naming_it() -> None:
    write(Path("plain.gz"), "not compressed at all\n")
    write(Path("cut.gz"), gzip.compress(b"some text " * 100)[:-20])
    with pytest.raises(UnreadableFileError, match=r"^plain\.gz is not gzip data") as caught:
        docs_of(["plain.gz"])
    assert (caught.value.path, caught.value.reason) == ("plain.gz", "not gzip data")
    with pytest.raises(UnreadableFileError, match=r"^cut\.gz holds damaged gzip data"):
        docs_of(["cut.gz"])
    with pytest.raises(UnreadableFileError, match=r"^plain\.gz is not gzip data"):
        docs_of(["plain.gz"], fmt="lines")


# --- files in folders that are not text ---------------------------------------------


def not_text_folder() -> list[tuple[str, str]]:
    """A folder of good files and files that are not text; what read_docs
    reports for the latter, in order."""
    write(Path("c/a.txt"), "a good file")
    write(Path("c/b.bin"), b"GIF89a\x00\x01\x02")
    write(Path("c/c.gz"), "not gzip data")
    write(Path("c/d.txt"), "the second good file")
    write(Path("c/e.txt"), b"caf\xe9 in Latin-1\n")
    os.symlink("nowhere", "c/f-broken")
    os.symlink("g-loop", "c/g-loop")
    write(Path("c/h.txt"), b"\xff\xfeu\x00t\x00f\x00")  # UTF-16
    write(Path("c/z.txt"), "the last good file")
    return [
        ("c/b.bin", "binary"),
        ("c/c.gz", "not gzip data"),
        ("c/e.txt", "not valid UTF-8 at line 1"),
        ("c/f-broken", "a broken symbolic link"),
        ("c/g-loop", "a symbolic link loop"),
        ("c/h.txt", "binary"),
    ]


def test_files_in_a_folder_that_are_not_text_are_skipped_and_told() -> None:
    expected = not_text_folder()
    told: list[tuple[str, str]] = []
    docs = docs_of(["c"], on_unreadable=lambda path, why: told.append((path, why)))
    assert [d.key for d in docs] == ["c/a.txt", "c/d.txt", "c/z.txt"]
    assert told == expected


def test_without_on_unreadable_the_first_is_an_error() -> None:
    not_text_folder()
    with pytest.raises(UnreadableFileError, match=r"^c/b\.bin is binary \(it holds NUL bytes\)"):
        docs_of(["c"])


def test_a_file_given_by_name_is_read_whatever_bytes_it_holds() -> None:
    write(Path("nul.txt"), "words\x00between nul bytes")
    assert docs_of(["nul.txt"])[0].text == "words\x00between nul bytes"
    write(Path("c/nul.txt"), "words\x00between nul bytes")
    assert docs_of(["c"], on_unreadable=lambda *_: None) == []


def test_in_a_line_format_a_folder_file_is_judged_by_its_head() -> None:
    write(Path("s/1.jsonl"), '{"id": "a", "text": "x"}\n')
    write(Path("s/2.jsonl"), b"\x89PNG\r\n\x1a\n\x00\x00")
    write(Path("s/3.jsonl"), b'{"id": "b", "text": "y"}\n' * 1000 + b"\xff\n")
    told: list[tuple[str, str]] = []
    stream = read_docs(["s"], fmt="jsonl", on_unreadable=lambda p, why: told.append((p, why)))
    assert [next(stream).key for _ in range(2)] == ["a", "b"]
    assert told == [("s/2.jsonl", "binary")]
    # past its head, a file already partly read is an error, not skipped
    with pytest.raises(UnreadableFileError, match=r"^s/3\.jsonl line 1001 is not valid UTF-8"):
        list(stream)


# --- standard input ----------------------------------------------------------------


def fake_stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", types.SimpleNamespace(buffer=io.BytesIO(data)))


def test_stdin_text_lines_and_jsonl(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_stdin(monkeypatch, b"\xef\xbb\xbfpiped text\r\n")
    assert docs_of(["-"], stdin_key="page-1") == [Doc("page-1", "piped text\r\n", "stdin", 15)]
    fake_stdin(monkeypatch, b"a\r\n\r\nb\n")
    docs = docs_of(["-"], fmt="lines")
    assert [(d.key, d.text, d.where) for d in docs] == [
        ("stdin:1", "a", "stdin line 1"),
        ("stdin:3", "b", "stdin line 3"),
    ]
    fake_stdin(monkeypatch, b'{"id": 1, "text": "x"}\n{"id": 2}\n')
    with pytest.raises(SourceError, match="^stdin line 2 has no string field 'text'"):
        docs_of(["-"], fmt="jsonl")


def test_standard_input_stays_open_when_its_reading_stops_early(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A stream of stdin's lines closed after one, or stopped by a line that
    is not UTF-8, leaves standard input open for what reads it next."""
    from simindex.ingest import read_lines

    fake_stdin(monkeypatch, b"one\ntwo\nthree\n")
    lines = read_lines("-")
    assert next(lines) == (1, "one", 4)
    lines.close()
    assert not sys.stdin.buffer.closed
    assert [text for _, text, _ in read_lines("-")] == ["two", "three"]
    fake_stdin(monkeypatch, b"ok\nno \xff\nafter\n")
    with pytest.raises(SourceError):
        list(read_lines("-"))
    assert not sys.stdin.buffer.closed


def test_text_that_is_not_utf8_is_said_one_way(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read whole or by lines, from a file, stdin or a compressed file: the
    line, then the byte in the file, the input or the text it holds."""
    said = "line 2 is not valid UTF-8 (byte 6 of {})"
    for fmt in ("text", "lines"):
        fake_stdin(monkeypatch, b"ok\nno \xff\n")
        with pytest.raises(SourceError) as caught:
            docs_of(["-"], fmt=fmt, stdin_key="k")
        assert str(caught.value) == "stdin " + said.format("the input")
        with pytest.raises(SourceError) as caught:
            fake_stdin(monkeypatch, b"ok\nno \xff\n")
            read_text("-")
        assert str(caught.value) == "stdin " + said.format("the input")
        write(Path("t.txt.gz"), gzip.compress(b"ok\nno \xff\n"))
        with pytest.raises(SourceError) as caught:
            docs_of(["t.txt.gz"], fmt=fmt)
        assert str(caught.value) == "t.txt.gz " + said.format("its text")


def test_stdin_between_files(monkeypatch: pytest.MonkeyPatch) -> None:
    write(Path("a.txt"), "file a")
    fake_stdin(monkeypatch, b"from stdin")
    docs = docs_of(["a.txt", "-", "a.txt"], stdin_key="s")
    assert [d.key for d in docs] == ["a.txt", "s", "a.txt"]


# --- fingerprinting ----------------------------------------------------------------


def mixed_docs(n: int) -> list[Doc]:
    texts = EN + ZH + ["", "  ...  ", "to be or not to be"]
    out = []
    for i in range(n):
        text = texts[i % len(texts)]
        if text.strip(" .") and i % 3:
            text = f"{text} item {i} {'第' + str(i) + '条' if i % 2 else 'number ' + str(i)}"
        out.append(Doc(f"k{i}", text, f"w{i}", len(text)))
    return out


def expected(docs: list[Doc]) -> list[tuple[Doc, int | None, bytes | None]]:
    """The oracle: each document's fingerprint and signature, made one at a time."""
    out: list[tuple[Doc, int | None, bytes | None]] = []
    for d in docs:
        try:
            out.append((d, simhash(d.text, CONFIG), signature(d.text, CONFIG)))
        except EmptyTextError:
            out.append((d, None, None))
    return out


def test_serial_fingerprints_and_empty_texts_give_none() -> None:
    docs = mixed_docs(40)
    got = list(fingerprint_docs(docs, CONFIG, workers=1))
    assert got == expected(docs)
    empty = [(fp, sig) for d, fp, sig in got if not d.text.strip(" .")]
    assert empty == [(None, None)] * 8
    assert all(is_signature(sig) for _, fp, sig in got if fp is not None and sig is not None)
    config = FingerprintConfig(ngram=2, weighting="binary")
    assert [fp for _, fp, _ in fingerprint_docs(iter(docs), config, workers=0)] == [
        simhash(d.text, config) if d.text.strip(" .") else None for d in docs
    ]


def test_parallel_equals_serial_in_input_order() -> None:
    docs = mixed_docs(2_000)
    got = fingerprint_docs(iter(docs), CONFIG, workers=2, chunk_size=64)
    first = next(got)
    assert len(multiprocessing.active_children()) == 2  # a pool is at work
    assert [first, *got] == expected(docs)
    assert no_children()


def test_one_chunk_of_input_starts_no_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a pool was started")

    monkeypatch.setattr(ingest.workers, "ProcessPoolExecutor", refuse)
    docs = mixed_docs(30)
    assert list(fingerprint_docs(docs, CONFIG, workers=4, chunk_size=30)) == expected(docs)


def test_stopping_early_leaves_no_processes() -> None:
    docs = (Doc(str(i), f"word{i} other{i % 7}", "", 1) for i in range(100_000))
    stream = fingerprint_docs(docs, CONFIG, workers=2, chunk_size=50)
    assert len(list(itertools.islice(stream, 120))) == 120
    assert multiprocessing.active_children()
    stream.close()
    assert no_children()


def test_interrupt_stops_the_pool() -> None:
    docs = (Doc(str(i), f"word{i}", "", 1) for i in range(100_000))
    stream = fingerprint_docs(docs, CONFIG, workers=2, chunk_size=50)
    next(stream)
    with pytest.raises(KeyboardInterrupt):
        stream.throw(KeyboardInterrupt)
    assert no_children()


def test_consumed_lazily_with_bounded_read_ahead() -> None:
    read = 0

    def source() -> Iterator[Doc]:
        nonlocal read
        for i in range(200_000):
            read += 1
            yield Doc(str(i), f"w{i}", "", 1)

    workers, chunk = 2, 256
    bound = (2 * workers + 1) * chunk  # in flight, and the chunk being yielded
    consumed = lead = 0
    stream = fingerprint_docs(source(), CONFIG, workers=workers, chunk_size=chunk)
    for doc, fp, sig in stream:
        assert doc.key == str(consumed) and fp is not None and sig is not None
        consumed += 1
        lead = max(lead, read - consumed)
        if consumed == 5_000:
            break
    stream.close()
    assert chunk < lead <= bound
    assert read <= consumed + bound
    assert no_children()


@pytest.mark.parametrize("workers", [1, 2])
def test_worker_error_comes_after_the_documents_before_it(workers: int) -> None:
    docs = mixed_docs(500)
    docs[333] = Doc("bad", None, "here", 0)  # type: ignore[arg-type]
    got = []
    with pytest.raises(InvalidArgumentError, match="text must be a str") as caught:
        for item in fingerprint_docs(docs, CONFIG, workers=workers, chunk_size=50):
            got.append(item)
    assert got == expected(docs[:333])
    if workers > 1:
        assert "Traceback" in str(caught.value.__cause__)  # the worker's traceback
    assert no_children()


@pytest.mark.parametrize("workers", [1, 2])
def test_source_error_comes_after_the_documents_read_before_it(workers: int) -> None:
    docs = mixed_docs(700)

    def source() -> Iterator[Doc]:
        yield from docs
        raise SourceError("broken at the end")

    got = []
    with pytest.raises(SourceError, match="broken at the end"):
        for item in fingerprint_docs(source(), CONFIG, workers=workers, chunk_size=64):
            got.append(item)
    assert got == expected(docs)
    assert no_children()


def test_a_chunk_is_fingerprinted_in_a_thread_while_the_compiled_pass_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With one worker and the compiled pass on, the next chunk is
    fingerprinted in a thread while the consumer takes this one: the same
    marks in the same order, and an error in a text or in the source still
    after the documents before it."""
    import threading

    from simindex import compiling
    from simindex.ingest import workers

    compiled_or_skip()
    monkeypatch.setitem(compiling._state, "mode", "always")
    threads: set[str] = set()
    real = workers._marks_of

    def spied(texts: list[str], config: FingerprintConfig) -> Any:
        threads.add(threading.current_thread().name)
        return real(texts, config)

    monkeypatch.setattr(workers, "_marks_of", spied)
    config = DEFAULT_CONFIG  # (one the compiled pass serves; CONFIG is not)
    monkeypatch.setattr(sys.modules[__name__], "CONFIG", config)  # (expected()'s)
    docs = mixed_docs(500)
    assert list(fingerprint_docs(docs, config, workers=1, chunk_size=50)) == expected(docs)
    assert any(name.startswith("simindex-fingerprints") for name in threads), threads
    bad = list(docs)
    bad[333] = Doc("bad", None, "here", 0)  # type: ignore[arg-type]
    got = []
    with pytest.raises(InvalidArgumentError, match="text must be a str"):
        for item in fingerprint_docs(bad, config, workers=1, chunk_size=50):
            got.append(item)
    assert got == expected(docs[:333])

    def source() -> Iterator[Doc]:
        yield from docs
        raise SourceError("broken at the end")

    got = []
    with pytest.raises(SourceError, match="broken at the end"):
        for item in fingerprint_docs(source(), config, workers=1, chunk_size=64):
            got.append(item)
    assert got == expected(docs)


def test_read_docs_into_fingerprint_docs(monkeypatch: pytest.MonkeyPatch) -> None:
    write(Path("d.jsonl"), "".join(f'{{"id": {i}, "text": "doc {i} text"}}\n' for i in range(300)))
    got = list(fingerprint_docs(read_docs(["d.jsonl"]), CONFIG, workers=2, chunk_size=100))
    assert [d.key for d, _, _ in got] == [str(i) for i in range(300)]
    assert all(fp == simhash(d.text) for d, fp, _ in got)
    assert all(sig == signature(d.text, CONFIG) for d, _, sig in got)


def test_fingerprint_arguments() -> None:
    with pytest.raises(InvalidArgumentError, match="chunk_size must be at least 1"):
        fingerprint_docs([], CONFIG, chunk_size=0)
    with pytest.raises(InvalidArgumentError, match="workers must be a whole number"):
        fingerprint_docs([], CONFIG, workers="2")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="config must be a FingerprintConfig"):
        fingerprint_docs([], None)  # type: ignore[arg-type]
    assert list(fingerprint_docs([], CONFIG, workers=2)) == []
    assert usable_cpus() >= 1


def test_a_worker_turns_the_compiled_pass_on_when_the_parent_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """_parallel tells the workers to switch once the job has sent
    fastmarks.SWITCH_CHARS characters in all; a worker at "auto" then turns
    the pass on, one at "never" (the parent's switch, given at start) not."""
    from simindex import compiling
    from simindex.ingest import workers

    monkeypatch.setitem(compiling._state, "mode", "auto")
    expected = workers._marks_of(["some words here"], CONFIG)
    assert workers._fingerprint_chunk(["some words here"], False) == expected
    assert compiling.mode() == "auto"
    assert workers._fingerprint_chunk(["some words here"], True) == expected
    assert compiling.mode() == "always"
    compiling.use("never")
    workers._fingerprint_chunk(["some words here"], True)
    assert compiling.mode() == "never"


def test_what_a_worker_tells_of_numba_compiling_is_told_in_the_parent() -> None:
    from simindex import compiling
    from simindex.ingest import workers

    told: list[tuple[compiling.Compiling, bool]] = []

    def listener(event: compiling.Compiling, begun: bool) -> None:
        told.append((event, begun))

    event = compiling.Compiling("the fast path", 15)
    compiling.listen(listener)
    try:
        relay = workers._Relay(multiprocessing.get_context("spawn"))
        # A worker's side: what _init_worker listens with, given the relay's queue.
        worker = multiprocessing.get_context("spawn").Process(
            target=_tells_compiling, args=(relay.queue, event)
        )
        worker.start()
        worker.join()
        relay.close()  # what the workers told, told here before it returns
    finally:
        compiling.unlisten(listener)
    assert worker.exitcode == 0
    assert told == [(event, True), (event, False)]


def _tells_compiling(queue: object, event: object) -> None:
    from simindex import compiling
    from simindex.ingest import workers

    workers._relayed_to(queue)
    assert isinstance(event, compiling.Compiling)
    with compiling.step(event, [lambda: None]):  # not in numba's cache: told
        pass

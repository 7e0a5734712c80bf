"""Compressed files and Parquet, in and out: add and dedup read them (by name
and by content, stdin too), dedup --out writes the input's format, and
dedup_stream and add_many take Arrow tables and pandas DataFrames."""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import json
import lzma
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from simindex import SimIndex, dedup_stream, ingest
from simindex.errors import InvalidArgumentError
from simindex.ingest import parquet as parquet_module
from tests.helpers import contents, error, ok

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
zstandard = pytest.importorskip("zstandard")

NEWS = Path(__file__).resolve().parent.parent / "examples" / "news.jsonl"
ONE = ("--workers", "1", "--quiet")

COMPRESS: dict[str, Callable[[bytes], bytes]] = {
    ".gz": gzip.compress,
    ".zst": lambda data: zstandard.ZstdCompressor().compress(data),
    ".bz2": bz2.compress,
    ".xz": lzma.compress,
}
MAGIC = {".gz": b"\x1f\x8b", ".zst": b"\x28\xb5\x2f\xfd", ".bz2": b"BZh", ".xz": b"\xfd7zXZ\x00"}


def decompress(data: bytes) -> bytes:
    """The bytes a compressed file holds (known by its first bytes)."""
    if data.startswith(MAGIC[".zst"]):
        return bytes(zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data)).read())
    for opener in (gzip.decompress, bz2.decompress, lzma.decompress):
        try:
            return opener(data)
        except (OSError, lzma.LZMAError, ValueError):
            continue
    return data


def news_rows() -> list[dict[str, Any]]:
    """examples/news.jsonl, with two more columns a data team's file has."""
    rows = [json.loads(line) for line in NEWS.read_text(encoding="utf-8").splitlines()]
    return [r | {"n": i, "tags": [f"t{i % 3}"]} for i, r in enumerate(rows)]


def write_corpus(path: Path, rows: list[dict[str, Any]]) -> Path:
    """rows in the format (and compression) path's name says."""
    name = path.name
    suffix = next((s for s in COMPRESS if name.endswith(s)), "")
    base = name.removesuffix(suffix)
    if base.endswith((".parquet", ".pq")):
        pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=10)
        return path
    if base.endswith(".csv"):
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["id", "text", "n"])
        writer.writerows([r["id"], r["text"], r["n"]] for r in rows)
        data = out.getvalue().encode()
    else:
        data = "".join(json.dumps(r) + "\n" for r in rows).encode()
    path.write_bytes(COMPRESS[suffix](data) if suffix else data)
    return path


def kept_keys(path: Path) -> list[str]:
    """The keys of a dedup output, whatever its format."""
    if path.name.endswith(".parquet"):
        return [str(k) for k in pq.read_table(path).column("id").to_pylist()]
    text = decompress(path.read_bytes()).decode("utf-8")
    if ".csv" in path.name:
        return [row["id"] for row in csv.DictReader(io.StringIO(text))]
    return [str(json.loads(line)["id"]) for line in text.splitlines()]


@pytest.fixture
def baseline(tmp_path: Path) -> list[str]:
    """The keys dedup keeps from the plain JSON Lines corpus."""
    source = write_corpus(tmp_path / "base.jsonl", news_rows())
    ok("dedup", source, "--out", tmp_path / "base-out.jsonl", *ONE)
    keys = kept_keys(tmp_path / "base-out.jsonl")
    assert 0 < len(keys) < len(news_rows())  # some were near-duplicates
    return keys


# --- reading: every format and compression, as add and dedup see them ------------------

INPUTS = [
    "c.jsonl.gz",
    "c.jsonl.zst",
    "c.jsonl.bz2",
    "c.jsonl.xz",
    "c.csv",
    "c.csv.zst",
    "c.parquet",
]


@pytest.mark.parametrize("name", INPUTS)
def test_dedup_reads_each_format_and_writes_it_back(
    tmp_path: Path, baseline: list[str], name: str
) -> None:
    source = write_corpus(tmp_path / name, news_rows())
    out = tmp_path / f"out-{name}"
    result = ok("dedup", source, "--out", out, *ONE)
    assert f"kept {len(baseline)}" in result.stderr
    assert kept_keys(out) == baseline
    suffix = next((s for s in COMPRESS if name.endswith(s)), None)
    if suffix is not None:  # the compression is kept
        assert out.read_bytes().startswith(MAGIC[suffix])
    if name.endswith(".parquet"):
        assert out.read_bytes()[:4] == b"PAR1"


@pytest.mark.parametrize("name", ["c.jsonl.zst", "c.csv.bz2", "c.parquet"])
def test_add_reads_each_format_as_json_lines_gives(tmp_path: Path, name: str) -> None:
    plain = write_corpus(tmp_path / "c.jsonl", news_rows())
    ok("add", tmp_path / "plain.db", plain, *ONE)
    ok("add", tmp_path / "other.db", write_corpus(tmp_path / name, news_rows()), *ONE)
    assert contents(tmp_path / "other.db") == contents(tmp_path / "plain.db")


def test_files_are_known_by_content_when_their_names_say_nothing(
    tmp_path: Path, baseline: list[str]
) -> None:
    rows = news_rows()
    plain = write_corpus(tmp_path / "x.jsonl", rows).read_bytes()
    gz = tmp_path / "data.jsonl"  # JSON Lines by name, gzip by content
    gz.write_bytes(gzip.compress(plain))
    zst = tmp_path / "more.jsonl"
    zst.write_bytes(COMPRESS[".zst"](plain))
    table = tmp_path / "export.bin"  # Parquet by content
    pq.write_table(pa.Table.from_pylist(rows), table)
    for source in (gz, zst, table):
        ok("dedup", source, "--out", tmp_path / f"{source.name}.out", *ONE)
    # a name that says nothing: the output is the input's format and compression
    assert (tmp_path / "data.jsonl.out").read_bytes().startswith(MAGIC[".gz"])
    assert (tmp_path / "more.jsonl.out").read_bytes().startswith(MAGIC[".zst"])
    assert kept_keys(tmp_path / "data.jsonl.out") == baseline
    assert kept_keys(tmp_path / "more.jsonl.out") == baseline
    assert pq.read_table(tmp_path / "export.bin.out").column("id").to_pylist() == baseline
    ok("add", tmp_path / "ix.db", zst, table, "--skip-existing", *ONE)
    assert sorted(contents(tmp_path / "ix.db")) == sorted(r["id"] for r in rows)


def test_a_named_compression_must_be_what_the_file_holds(tmp_path: Path) -> None:
    plain = tmp_path / "notes.jsonl.zst"
    plain.write_text('{"id": "a", "text": "not compressed at all"}\n', encoding="utf-8")
    error("add", tmp_path / "ix.db", plain, contains=("notes.jsonl.zst is not zstd data",))
    damaged = tmp_path / "cut.jsonl.xz"
    damaged.write_bytes(lzma.compress(b'{"id": "a", "text": "some words"}\n' * 50)[:-30])
    error("add", tmp_path / "ix.db", damaged, contains=("cut.jsonl.xz",))
    assert not (tmp_path / "ix.db").exists()


@pytest.mark.parametrize("suffix", [".gz", ".zst", ".bz2", ".xz"])
def test_compressed_standard_input_is_read(
    tmp_path: Path, baseline: list[str], suffix: str
) -> None:
    data = write_corpus(tmp_path / "c.jsonl", news_rows()).read_bytes()
    result = ok(
        "dedup",
        "-",
        "--format",
        "jsonl",
        "--out",
        tmp_path / "u.jsonl",
        *ONE,
        input=COMPRESS[suffix](data),
    )
    assert "read 36" in result.stderr
    assert kept_keys(tmp_path / "u.jsonl") == baseline
    page = COMPRESS[suffix](b"a page of text piped in, compressed")
    ok("add", tmp_path / "ix.db", "-", "--key", "page", *ONE, input=page)
    with SimIndex(tmp_path / "ix.db") as ix:
        assert [m.key for m in ix.query("a page of text piped in, compressed")] == ["page"]


def test_parquet_cannot_come_from_standard_input(tmp_path: Path) -> None:
    error(
        "dedup",
        "-",
        "--format",
        "parquet",
        "--out",
        tmp_path / "u.parquet",
        input=b"PAR1",
        contains=("standard input",),
    )


# --- writing -----------------------------------------------------------------------------


def test_parquet_out_keeps_the_schema_and_every_column(tmp_path: Path, baseline: list[str]) -> None:
    rows = news_rows()
    source = tmp_path / "c.parquet"
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("text", pa.large_string()),
            ("n", pa.int32()),
            ("tags", pa.list_(pa.string())),
        ]
    )
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), source, compression="zstd")
    out = tmp_path / "u.parquet"
    ok("dedup", source, "--out", out, *ONE)
    written = pq.read_table(out)
    assert written.schema.equals(schema)
    by_key = {r["id"]: r for r in rows}
    assert written.to_pylist() == [by_key[key] for key in baseline]
    codec = pq.ParquetFile(out).metadata.row_group(0).column(0).compression
    assert codec == "ZSTD"  # the input's column compression too


def test_json_lines_and_csv_out_keep_every_field(tmp_path: Path, baseline: list[str]) -> None:
    rows = news_rows()
    ok("dedup", write_corpus(tmp_path / "c.jsonl.gz", rows), "--out", tmp_path / "u.jsonl.gz", *ONE)
    lines = gzip.decompress((tmp_path / "u.jsonl.gz").read_bytes()).decode().splitlines()
    by_key = {r["id"]: r for r in rows}
    assert [json.loads(line) for line in lines] == [by_key[key] for key in baseline]
    ok("dedup", write_corpus(tmp_path / "c.csv", rows), "--out", tmp_path / "u.csv", *ONE)
    with (tmp_path / "u.csv").open(encoding="utf-8", newline="") as f:
        read = list(csv.DictReader(f))
    assert read == [
        {"id": k, "text": by_key[k]["text"], "n": str(by_key[k]["n"])} for k in baseline
    ]


@pytest.mark.parametrize("out_name", ["u.jsonl", "u.csv.xz", "u.parquet", "u.ndjson.zst"])
def test_the_output_name_says_its_format(
    tmp_path: Path, baseline: list[str], out_name: str
) -> None:
    source = write_corpus(tmp_path / "c.parquet", news_rows())
    out = tmp_path / out_name
    ok("dedup", source, "--out", out, *ONE)
    assert kept_keys(out) == baseline
    if out_name == "u.jsonl":  # another format than the input's: key and text only
        first = json.loads(out.read_text(encoding="utf-8").splitlines()[0])
        assert sorted(first) == ["id", "text"]


def test_stdout_gets_the_inputs_format(tmp_path: Path, baseline: list[str]) -> None:
    source = write_corpus(tmp_path / "c.parquet", news_rows())
    result = ok("dedup", source, "--out", "-", *ONE)
    assert pq.read_table(io.BytesIO(result.stdout_bytes)).column("id").to_pylist() == baseline
    source = write_corpus(tmp_path / "c.jsonl.gz", news_rows())
    result = ok("dedup", source, "--out", "-", *ONE)
    assert [json.loads(x)["id"] for x in gzip.decompress(result.stdout_bytes).splitlines()] == (
        baseline
    )


def test_output_mistakes_are_one_line(tmp_path: Path) -> None:
    source = write_corpus(tmp_path / "c.parquet", news_rows())
    error("dedup", source, "--out", source, contains=("is also an input",))
    error(
        "dedup",
        source,
        "--out",
        tmp_path / "u.parquet.gz",
        contains=("Parquet file is compressed inside",),
    )
    other = tmp_path / "d.parquet"
    pq.write_table(pa.table({"id": ["x"], "text": ["quite another text"]}), other)
    error(
        "dedup",
        source,
        other,
        "--out",
        tmp_path / "both.parquet",
        *ONE,
        contains=("d.parquet row 1", "columns differ"),
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.parquet", "d.parquet"]
    assert source.read_bytes()[:4] == b"PAR1"


def test_a_failed_parquet_dedup_leaves_no_output(tmp_path: Path) -> None:
    rows = [{"id": f"k{i}", "text": f"document {i} on subject {i * 31}"} for i in range(500)]
    rows[400]["text"] = None
    source = tmp_path / "c.parquet"
    pq.write_table(pa.Table.from_pylist(rows), source, row_group_size=50)
    error(
        "dedup",
        source,
        "--out",
        tmp_path / "u.parquet",
        *ONE,
        contains=("c.parquet row 401 has no text",),
    )
    error("dedup", source, "--out", tmp_path / "u.jsonl.zst", *ONE, contains=("row 401",))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.parquet"]


# --- Parquet is read a batch at a time -----------------------------------------------


class Batches:
    """Counts the record batches ParquetFile.iter_batches hands out; the
    whole-file reads fail."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self.sizes: list[int] = []
        real = pq.ParquetFile.iter_batches

        def iter_batches(file: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
            for batch in real(file, *args, **kwargs):
                self.count += 1
                self.sizes.append(batch.num_rows)
                yield batch

        def whole(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("a Parquet file was read whole")

        monkeypatch.setattr(pq.ParquetFile, "iter_batches", iter_batches)
        monkeypatch.setattr(pq.ParquetFile, "read", whole)
        monkeypatch.setattr(pq, "read_table", whole)
        monkeypatch.setattr(parquet_module, "BATCH_ROWS", 100)


def big_parquet(path: Path, rows: int = 3000) -> Path:
    table = pa.table(
        {
            "id": [f"r{i}" for i in range(rows)],
            "text": [
                f"row {i} says {i * 7919 % 10007} and {i * 104729 % 1009}" for i in range(rows)
            ],
            "n": list(range(rows)),
        }
    )
    pq.write_table(table, path, row_group_size=50)
    assert pq.ParquetFile(path).metadata.num_row_groups == rows // 50
    return path


def test_parquet_is_read_batch_by_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = big_parquet(tmp_path / "big.parquet")
    batches = Batches(monkeypatch)
    docs = ingest.read_docs([str(source)])
    first = [next(docs) for _ in range(150)]
    assert first[149].key == "r149" and first[0].where == f"{source} row 1"
    assert batches.count == 2  # 150 documents: two batches of 100 read, not the file
    rest = list(docs)
    assert len(first) + len(rest) == 3000
    assert batches.count == 30 and max(batches.sizes) == 100
    # sizes add up to the file's, for the progress bar
    assert sum(d.size for d in first + rest) == ingest.source_size([str(source)])


def test_parquet_dedup_streams_through_batches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = big_parquet(tmp_path / "big.parquet")
    batches = Batches(monkeypatch)
    out = tmp_path / "u.parquet"
    result = ok("dedup", source, "--out", out, *ONE)
    assert batches.count == 30
    kept = int(result.stderr.split("kept ")[1].split(",")[0])
    monkeypatch.undo()
    written = pq.read_table(out)
    assert written.num_rows == kept and written.column_names == ["id", "text", "n"]


# --- a missing optional dependency -----------------------------------------------------


@pytest.mark.parametrize(
    ("blocked", "name", "args", "message"),
    [
        ("pyarrow", "c.parquet", ("add", "ix.db"), "reading .parquet needs pyarrow"),
        ("zstandard", "c.jsonl.zst", ("add", "ix.db"), "reading .zst needs zstandard"),
        ("pyarrow", "c.jsonl", ("dedup", "--out", "u.parquet"), "writing .parquet needs pyarrow"),
        ("zstandard", "c.jsonl", ("dedup", "--out", "u.jsonl.zst"), "writing .zst needs zstandard"),
    ],
)
def test_a_missing_dependency_is_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    blocked: str,
    name: str,
    args: Any,
    message: str,
) -> None:
    source = write_corpus(tmp_path / name, news_rows())
    for module in [m for m in sys.modules if m == blocked or m.startswith(f"{blocked}.")]:
        monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setitem(sys.modules, blocked, None)
    command, *rest = args
    if command == "add":
        argv = [command, tmp_path / rest[0], source]
    else:
        argv = [command, source, rest[0], tmp_path / rest[1]]
    line = error(*argv, *ONE)
    assert line == f"Error: {message}: pip install 'simindex[formats]'"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no index, no output


def test_a_missing_pyarrow_in_the_command_itself(tmp_path: Path) -> None:
    source = write_corpus(tmp_path / "c.parquet", news_rows())
    blocked = (
        "import sys; sys.modules['pyarrow'] = None; sys.argv[0] = 'simindex'; "
        "from simindex.__main__ import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", blocked, "add", str(tmp_path / "ix.db"), str(source)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "Error: reading .parquet needs pyarrow: pip install 'simindex[formats]'\n"
    )
    assert not (tmp_path / "ix.db").exists()


# --- the API: Arrow tables and DataFrames -----------------------------------------------


def _decided(docs: Any, **kwargs: Any) -> list[tuple[str, bool]]:
    return [(d.key, d.kept) for d in dedup_stream(docs, workers=1, **kwargs)]


def test_dedup_stream_takes_arrow_and_pandas(baseline: list[str]) -> None:
    rows = news_rows()
    pairs = [(r["id"], r["text"]) for r in rows]
    want = _decided(pairs)
    assert [key for key, kept in want if kept] == baseline
    table = pa.Table.from_pylist(rows)
    assert _decided(table) == want
    assert _decided(table.to_batches(max_chunksize=5)) == want  # a list of batches
    assert _decided(table.combine_chunks().to_batches()[0]) == want  # one RecordBatch
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=7))
    assert _decided(reader) == want
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(rows).rename(columns={"id": "doc", "text": "body"})
    assert _decided(frame, key_field="doc", text_field="body") == want


def test_tables_keys_and_their_mistakes() -> None:
    numbered = pa.table({"key": [7, 8], "text": ["one two three", "four five six"]})
    assert _decided(numbered) == [("7", True), ("8", True)]  # "key" when there is no "id"
    with pytest.raises(InvalidArgumentError, match="no column 'body' for the text"):
        dedup_stream(numbered, text_field="body")
    with pytest.raises(InvalidArgumentError, match="no column 'id' or 'key'"):
        dedup_stream(pa.table({"text": ["a b"]}))
    nulls = pa.table({"id": ["a", "b"], "text": ["some words here", None]})
    with pytest.raises(InvalidArgumentError, match="row 2: the text"):
        _decided(nulls)


def test_add_many_takes_arrow_and_pandas() -> None:
    rows = news_rows()
    with SimIndex() as by_pairs, SimIndex() as by_table, SimIndex() as by_frame:
        by_pairs.add_many((r["id"], r["text"]) for r in rows)
        assert by_table.add_many(pa.Table.from_pylist(rows)) == len(rows)
        pd = pytest.importorskip("pandas")
        frame = pd.DataFrame(rows)
        assert by_frame.add_many(frame, key_field="id", text_field="text") == len(rows)
        assert dict(by_table.items()) == dict(by_pairs.items()) == dict(by_frame.items())


def test_text_that_only_begins_as_a_format_does_is_text(tmp_path: Path) -> None:
    notes = {
        "a.txt": "BZh91 is how this note about compression begins",
        "b.txt": "PAR1 of the report: a plain text that begins as Parquet does",
    }
    for name, text in notes.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    ok("add", tmp_path / "ix.db", tmp_path / "a.txt", tmp_path / "b.txt", *ONE)
    with SimIndex(tmp_path / "ix.db") as ix:
        for name, text in notes.items():
            assert [m.key for m in ix.query(text)] == [str(tmp_path / name)]


def test_a_compressed_parquet_file_is_refused(tmp_path: Path) -> None:
    source = write_corpus(tmp_path / "c.parquet", news_rows())
    packed = tmp_path / "c.parquet.gz"
    packed.write_bytes(gzip.compress(source.read_bytes()))
    error("add", tmp_path / "ix.db", packed, *ONE, contains=("c.parquet.gz is gzip data",))


@pytest.mark.parametrize("name", ["c.jsonl.gz", "c.jsonl.zst", "c.csv.bz2", "c.jsonl.xz", "c.pq"])
def test_documents_sizes_add_up_to_the_progress_bars_total(tmp_path: Path, name: str) -> None:
    source = str(write_corpus(tmp_path / name, news_rows()))
    assert sum(d.size for d in ingest.read_docs([source])) == ingest.source_size([source])


def test_csv_inputs_with_two_headers_cannot_share_a_csv_output(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("id,text\na,some words here for a\n", encoding="utf-8")
    (tmp_path / "b.csv").write_text("id,text,n\nb,other words for b,1\n", encoding="utf-8")
    sources = (tmp_path / "a.csv", tmp_path / "b.csv")
    error("dedup", *sources, "--out", tmp_path / "u.csv", *ONE, contains=("b.csv line 2",))
    ok("dedup", *sources, "--out", tmp_path / "u.jsonl", *ONE)
    assert kept_keys(tmp_path / "u.jsonl") == ["a", "b"]


def test_a_report_is_compressed_as_its_name_says(tmp_path: Path) -> None:
    source = write_corpus(tmp_path / "c.jsonl", news_rows())
    report = tmp_path / "dropped.jsonl.xz"
    ok("dedup", source, "--out", tmp_path / "u.jsonl", "--report", report, *ONE)
    dropped = [json.loads(line) for line in lzma.decompress(report.read_bytes()).splitlines()]
    assert len(dropped) == 12 and all(d["duplicate_of"] for d in dropped)


def test_damaged_parquet_is_one_line_naming_the_file(tmp_path: Path) -> None:
    data = write_corpus(tmp_path / "c.parquet", news_rows()).read_bytes()
    damaged = bytearray(data)
    for i in range(200, 2000):
        damaged[i] ^= 0x5A
    (tmp_path / "bad.parquet").write_bytes(bytes(damaged))
    (tmp_path / "cut.parquet").write_bytes(data[: len(data) // 2])
    error("add", tmp_path / "ix.db", tmp_path / "bad.parquet", *ONE, contains=("bad.parquet",))
    error(
        "add",
        tmp_path / "ix.db",
        tmp_path / "cut.parquet",
        *ONE,
        contains=("cut.parquet cannot be read as Parquet",),
    )

"""The simindex command: a thin shell over SimIndex.

Data goes to stdout, progress and errors to stderr. Exit codes: 0 success;
1 ``query`` found nothing (like grep) or ``check`` found a problem; 2 an
error (one line ``Error: ...``); 130 interrupted (Ctrl-C; one line too).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator
from itertools import chain
from pathlib import Path
from typing import IO, Annotated, Any, NoReturn, TypeVar

import typer

from simindex import ingest, storage
from simindex.blocks import MAX_INDEX_K, BlockLayout, probe_radius
from simindex.errors import (
    DamagedIndexError,
    EmptyTextError,
    InvalidArgumentError,
    NotAnIndexError,
    SimIndexError,
)
from simindex.explain import Explanation, explain
from simindex.fingerprint import DEFAULT_CONFIG, WEIGHTINGS, FingerprintConfig, hamming, simhash
from simindex.index import DEFAULT_K, SimIndex
from simindex.results import CheckReport, FullScanWarning
from simindex.tokenize import CJK_MODES

EXIT_OK, EXIT_NOT_FOUND, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C stopped

app = typer.Typer(
    name="simindex",
    help="A persistent near-duplicate index for text (64-bit Simhash, SQLite).\n\n"
    "Exit codes: 0 success, 1 query found nothing or check found a problem, 2 error.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

F = TypeVar("F", bound=Callable[..., Any])


class UserError(Exception):
    """A mistake in what the command was given, reported as one line."""


def fail(message: str) -> NoReturn:
    _settle_stdout()
    typer.echo(f"Error: {escaped(message, backslash=False)}", err=True)
    raise typer.Exit(EXIT_ERROR)


def _settle_stdout() -> None:
    """Flush what was printed before an error; if stdout cannot take it (a full
    disk, a closed pipe), drop it, so that exiting does not fail a second time."""
    try:
        sys.stdout.flush()
    except OSError:
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


# --- keys in text output ------------------------------------------------------

# Control characters: C0, DEL and C1. A terminal acts on some of them (ESC
# starts a colour or cursor sequence), so none is printed as it is.
_CONTROLS = (*range(0x20), 0x7F, *range(0x80, 0xA0))
_MESSAGE_ESCAPES = {c: f"\\x{c:02x}" for c in _CONTROLS} | {
    ord("\t"): "\\t",
    ord("\n"): "\\n",
    ord("\r"): "\\r",
    0: "\\0",
}
_FIELD_ESCAPES = _MESSAGE_ESCAPES | {ord("\\"): "\\\\"}


def escaped(text: str, *, backslash: bool = True) -> str:
    """A key (or any text) as one field of a tab-separated line, byte for byte.

    Backslash, tab, newline, carriage return and NUL become \\\\, \\t, \\n, \\r
    and \\0 (as in PostgreSQL's text COPY format); every other control
    character (C0, DEL, C1: what a terminal may act on, ESC included) becomes
    \\xNN, the character U+00NN. Nothing is dropped, so the field reads back
    exactly. Every command that prints keys in text form prints them through
    this (--json prints them as JSON strings). ``backslash=False``, for
    messages: control characters only, so a message stays one line.
    """
    if text.isprintable() and (not backslash or "\\" not in text):
        return text
    return text.translate(_FIELD_ESCAPES if backslash else _MESSAGE_ESCAPES)


def reported(func: F) -> F:
    """Turn expected failures into one line ``Error: ...`` and exit code 2."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (SimIndexError, UserError) as exc:
            fail(str(exc))
        except UnicodeDecodeError as exc:
            fail(f"input is not valid UTF-8 (byte {exc.start}): {exc.reason}")
        except UnicodeEncodeError:
            fail("an argument is not valid UTF-8 text")
        except BrokenPipeError:  # the reader went away (| head): stop quietly
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise typer.Exit(EXIT_OK) from None
        except OSError as exc:
            where = f" {exc.filename}" if exc.filename else ""
            fail(f"cannot read or write{where}: {exc.strerror or exc}")
        except KeyboardInterrupt:
            _interrupted("Interrupted; nothing of the unfinished transaction was kept.")
            raise typer.Exit(EXIT_INTERRUPTED) from None

    return wrapper  # type: ignore[return-value]


_told = {"interrupted": False}  # whether this run has said it was interrupted


def _interrupted(message: str = "Interrupted.") -> None:
    """Say on stderr that the command was interrupted (once a run, see main)."""
    typer.echo(message, err=True)
    _told["interrupted"] = True


def utf8_size(text: str) -> int:
    """Bytes of a text in UTF-8 (lone surrogates from undecodable arguments count too)."""
    return len(text.encode("utf-8", "surrogatepass"))


def emit_json(value: Any) -> None:
    typer.echo(_json_line(value), nl=False)


# --- shared options ---------------------------------------------------------

IndexArg = Annotated[str, typer.Argument(help="Index file path, ':memory:' or a database URL.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
KOpt = Annotated[
    int | None,
    typer.Option(
        "--k",
        "-k",
        help="Largest Hamming distance the new index answers from its "
        f"blocks (0-15; default {DEFAULT_K}). An existing index keeps its own.",
    ),
]
BlocksOpt = Annotated[
    int | None,
    typer.Option(
        "--blocks",
        help="Blocks for a new index (default: k + 1 up to k = 3, then the cheapest probed "
        "layout); more blocks, more database indexes, fewer candidates per query; k or "
        "fewer blocks are probed: see simindex advise.",
    ),
]
NgramOpt = Annotated[
    int | None,
    typer.Option("--ngram", help="Features: 1 = word unigrams (default), n = word n-grams."),
]
WeightingOpt = Annotated[
    str | None,
    typer.Option(
        "--weighting",
        help=f"Feature weights: {', '.join(WEIGHTINGS)} (default {DEFAULT_CONFIG.weighting}).",
    ),
]
StopOpt = Annotated[bool, typer.Option("--keep-stopwords", help="Keep stop words as features.")]
CjkOpt = Annotated[
    str | None,
    typer.Option(
        "--cjk",
        help=f"Chinese and Japanese features: {', '.join(CJK_MODES)} (default "
        f"{DEFAULT_CONFIG.cjk}: characters and character bigrams; words: jieba words).",
    ),
]
# How a document read from a file is keyed, said once for add, rebuild and dedup.
KEYS_HELP = (
    "A file given by name is one document keyed by its path as given; a file found in a "
    "folder by the path that opens it: the folder as given, then its path inside it "
    "(docs -> docs/a/b.txt, /srv/docs/ -> /srv/docs/a/b.txt). Hidden files are skipped."
)
FormatOpt = Annotated[
    str,
    typer.Option(
        "--format",
        help="auto, text (a file is a document), lines (a line is a document, keyed "
        "FILE:LINE, FILE the file's key as in text), jsonl or csv. auto: .jsonl/.ndjson, "
        ".csv by name, else text.",
    ),
]
KeyFieldOpt = Annotated[
    str, typer.Option("--key-field", help="JSON Lines field (CSV column) of the key.")
]
TextFieldOpt = Annotated[
    str, typer.Option("--text-field", help="JSON Lines field (CSV column) of the text.")
]
WORKERS_PER_CPU = 4  # --workers above this many a usable CPU is capped (with a warning)
WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers",
        "-w",
        help="Processes that fingerprint (default: the CPUs this process may use; at least "
        f"1, at most {WORKERS_PER_CPU} a CPU: more is capped, with a warning).",
    ),
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]


def config_from(
    ngram: int | None, weighting: str | None, keep_stopwords: bool, cjk: str | None = None
) -> FingerprintConfig | None:
    """A configuration if any option was given, else None (use the index's own).
    The options not given are DEFAULT_CONFIG's."""
    if ngram is None and weighting is None and not keep_stopwords and cjk is None:
        return None
    return FingerprintConfig(
        ngram=DEFAULT_CONFIG.ngram if ngram is None else ngram,
        weighting=weighting or DEFAULT_CONFIG.weighting,
        stopwords=not keep_stopwords,
        tokenizer=DEFAULT_CONFIG.tokenizer,
        cjk=cjk or DEFAULT_CONFIG.cjk,
    )


def layout_text(ix: SimIndex) -> str:
    """The layout in words, with how a query at the index's k looks it up."""
    radius = probe_radius(ix.layout, ix.k) if ix.k > ix.layout.k else 0
    probed = f", probed within {radius} bit{'s' * (radius > 1)}" if radius else ""
    return ix.layout.describe() + probed


def open_index(
    location: str,
    *,
    create: bool = False,
    readonly: bool = False,
    k: int | None = None,
    blocks: int | None = None,
    config: FingerprintConfig | None = None,
) -> SimIndex:
    try:
        # Commands that only read open a SQLite file read-only: they never
        # migrate or change it, and they work on a file they may not write.
        ro = readonly and "://" not in location and location != ":memory:"
        return SimIndex(location, k=k, blocks=blocks, config=config, create=create, readonly=ro)
    except NotAnIndexError as exc:
        if str(exc).startswith("no index at"):
            shown = storage.locate(location)  # the URL with its password hidden
            raise UserError(f"{exc} (create one with: simindex init {shown})") from exc
        raise


def read_text_file(path: str) -> str:
    """A whole file ('-' for stdin) as UTF-8 text."""
    if path == "-":
        data = sys.stdin.buffer.read()
        name = "standard input"
    else:
        p = Path(path)
        if not p.exists():
            raise UserError(f"no such file: {path}")
        if p.is_dir():
            raise UserError(f"{path} is a folder, not a file")
        data = p.read_bytes()
        name = path
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UserError(f"{name} is not valid UTF-8 (byte {exc.start})") from exc


def workers_option(workers: int | None) -> int | None:
    """--workers checked: at least 1, and capped at WORKERS_PER_CPU a usable CPU
    (fingerprinting is CPU-bound: more processes only cost memory and start-up)."""
    if workers is None:
        return None
    if workers < 1:
        raise UserError(f"--workers must be at least 1, not {workers}")
    cpus = ingest.usable_cpus()
    cap = WORKERS_PER_CPU * cpus
    if workers > cap:
        typer.echo(
            f"Warning: --workers {workers} is more than {WORKERS_PER_CPU} a CPU "
            f"({cpus} CPU{'s' * (cpus != 1)} here); using {cap}",
            err=True,
        )
        return cap
    return workers


SETTLE_S = 1.0  # the progress bar shows a rate and time left only after this long


@functools.cache
def _settled_columns() -> tuple[type[Any], type[Any]]:
    """The rate and time-left columns of the progress bar, which show nothing
    until SETTLE_S has passed: a rate measured over the first few
    milliseconds means nothing (the first frame of an add once showed
    6.5 GB/s). Made on first use, so rich loads only when a bar is drawn."""
    from rich.progress import Task, TimeRemainingColumn, TransferSpeedColumn
    from rich.text import Text

    def settled(task: Task) -> bool:
        return task.elapsed is not None and task.elapsed >= SETTLE_S

    class Rate(TransferSpeedColumn):
        def render(self, task: Task) -> Text:
            return super().render(task) if settled(task) else Text("")

    class TimeLeft(TimeRemainingColumn):
        def render(self, task: Task) -> Text:
            if settled(task):
                return super().render(task)
            return Text("-:--:--", style="progress.remaining")

    return Rate, TimeLeft


def _progress(total: int | None, quiet: bool) -> Any:
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

    rate, time_left = _settled_columns()
    console = Console(stderr=True)
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        rate(),
        TextColumn("{task.fields[docs]:,} docs"),
        time_left(),
        console=console,
        disable=quiet or not console.is_terminal,
        transient=True,
    )


def _fingerprinted(
    docs: Iterable[ingest.Doc],
    config: FingerprintConfig,
    workers: int | None,
    bar: Any,
    task: Any,
    skipped: list[str],
    skip_empty: bool,
) -> Iterator[tuple[str, int]]:
    """(key, fingerprint) of each document, fingerprinted by worker processes,
    advancing the progress bar. A document with no words is an error, or,
    with skip_empty, its key goes to `skipped`."""
    stream = ingest.fingerprint_docs(docs, config, workers=workers)
    for n, (doc, fp) in enumerate(stream, 1):
        bar.update(task, advance=doc.size, docs=n)
        if fp is not None:
            yield doc.key, fp
        elif skip_empty:
            skipped.append(doc.key)
        else:
            raise UserError(
                f"{doc.where} ({doc.key}) has no words to fingerprint; the index was left "
                f"as it was (--skip-empty skips such documents)"
            )


# --- the files a command reads and writes ------------------------------------
#
# A command never writes a file it reads: an output (dedup --out, --report)
# that is one of the inputs, lies inside an input folder, is the file standard
# input reads, is an index, or is the other output is refused before anything
# is read; an index is never read as a document (given by name it is refused,
# met in a folder it is skipped). "The same file" is the same resolved path
# or, where both exist, the same st_dev and st_ino (hard links).


def _same_file(a: str, b: str) -> bool:
    """Whether two paths name one file: through symbolic or hard links too."""
    first, second = ingest.identity(a), ingest.identity(b)
    if first is not None and first == second:
        return True
    return os.path.realpath(a) == os.path.realpath(b)


def _inside(path: str, folder: str) -> bool:
    """Whether a path is in a folder or under it (symbolic links resolved)."""
    real, top = os.path.realpath(path), os.path.realpath(folder)
    try:
        return os.path.commonpath([real, top]) == top
    except ValueError:  # different drives
        return False


def _is_stdin(path: str) -> bool:
    """Whether standard input is the file a path names (a redirection from it)."""
    try:
        st = os.fstat(sys.stdin.fileno())
    except (AttributeError, OSError, ValueError):  # no file behind it (a test's stream)
        return False
    return (st.st_dev, st.st_ino) == ingest.identity(path)


def _index_files(index: str) -> list[str]:
    """A SQLite index's file and the files SQLite keeps beside it; [] for others."""
    path = storage.locate(index).path
    if path is None:
        return []
    return [str(path), *(f"{path}{suffix}" for suffix in ("-wal", "-shm", "-journal"))]


def _check_sources(index: str, paths: list[str]) -> list[str]:
    """Refuse a source that is the index (or its -wal, -shm, -journal); the
    index's files, for read_docs to skip where they are met in a folder."""
    own = _index_files(index)
    for source in paths:
        if source == ingest.STDIN:
            if any(_is_stdin(f) for f in own):
                raise UserError("standard input reads the index itself; it cannot be a document")
        elif not os.path.isdir(source) and any(_same_file(source, f) for f in own):
            raise UserError(f"{source} is the index (or one of its files); it cannot be a document")
    return own


def _partial_name(path: str) -> str:
    final = Path(path)
    return str(final.with_name(f".{final.name}.partial"))


def _check_outputs(outputs: list[tuple[str, str | None]], sources: list[str]) -> list[str]:
    """Refuse, before anything is read, outputs ((option, path), '-' for
    stdout) that would write over an input, an index or each other. Returns
    the output files (and their .partial files), for read_docs to skip."""
    files: list[tuple[str, str]] = []
    for option, path in outputs:
        if path is None:
            continue
        if path == "-":
            if any(p == "-" for _, p in files):
                raise UserError("--out and --report cannot both be '-' (standard output)")
            files.append((option, path))
            continue
        final = Path(path)
        if final.is_dir():
            raise UserError(f"{option} {path} is a folder; give a file name")
        if not final.parent.is_dir():
            there = "is not a folder" if final.parent.exists() else "does not exist"
            raise UserError(f"cannot write {path}: its folder {final.parent} {there}")
        if _is_sqlite(final):
            raise UserError(f"{option} {path} is a SQLite database (an index?); it is left alone")
        for source in sources:
            if source == ingest.STDIN:
                if _is_stdin(path):
                    raise UserError(f"{option} {path} is the file standard input reads")
            elif os.path.isdir(source):
                if _inside(path, source):
                    raise UserError(
                        f"{option} {path} is inside the input folder {source}: it would be "
                        f"read as input; write it elsewhere"
                    )
            elif _same_file(path, source):
                raise UserError(f"{option} {path} is also an input ({source}); write it elsewhere")
        for other_option, other in files:
            if other != "-" and any(
                _same_file(a, b)
                for a in (path, _partial_name(path))
                for b in (other, _partial_name(other))
            ):
                raise UserError(
                    f"{other_option} {other} and {option} {path} are the same file; give two"
                )
        files.append((option, path))
    return [name for _, p in files if p != "-" for name in (p, _partial_name(p))]


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


class _Skipped:
    """The command's own files skipped in folders, told once on stderr at the end."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.paths: list[str] = []

    def __call__(self, path: str) -> None:
        self.paths.append(path)

    def tell(self) -> None:
        if self.paths:
            shown = ", ".join(escaped(p, backslash=False) for p in self.paths)
            typer.echo(f"Note: skipped {self.what} found in the folders given: {shown}", err=True)


class _Writer:
    """A text stream of an output: a write that fails names the output."""

    def __init__(self, stream: IO[str], name: str) -> None:
        self.stream = stream
        self.name = name

    def write(self, text: str) -> None:
        try:
            self.stream.write(text)
        except OSError as exc:
            if self.stream is sys.stdout:
                raise
            raise UserError(f"cannot write {self.name}: {exc.strerror or exc}") from exc


class _Outputs:
    """The files a command writes, each written beside its final name as
    .NAME.partial and renamed into place only when all of them are complete.

    A run that fails in any way (an error, a full disk, Ctrl-C) removes every
    .partial and leaves the final names as they were. If a rename fails at
    the very end, the outputs already renamed are removed too: a failed run
    leaves no output behind (a file the run had replaced is gone then).
    """

    def __init__(self) -> None:
        self._files: list[tuple[Path, Path, IO[str]]] = []

    def open(self, path: str | None) -> _Writer | None:
        if path is None:
            return None
        if path == "-":
            return _Writer(sys.stdout, "standard output")
        final = Path(path)
        partial = Path(_partial_name(path))
        try:
            stream = open(partial, "w", encoding="utf-8")  # noqa: SIM115 (closed in commit/discard)
        except OSError as exc:
            raise UserError(f"cannot write {path}: {exc.strerror or exc}") from exc
        self._files.append((final, partial, stream))
        return _Writer(stream, path)

    def commit(self) -> None:
        try:
            sys.stdout.flush()  # what went to stdout ('-') fails here, if it fails
            for final, _, stream in self._files:
                try:
                    stream.close()  # flushes: a full disk may show only here
                except OSError as exc:
                    raise UserError(f"cannot write {final}: {exc.strerror or exc}") from exc
        except BaseException:
            self.discard()
            raise
        renamed: list[Path] = []
        try:
            for final, partial, _ in self._files:
                os.replace(partial, final)
                renamed.append(final)
        except BaseException as exc:
            for done in renamed:
                with contextlib.suppress(OSError):
                    done.unlink()
            self.discard()
            if isinstance(exc, OSError):
                raise UserError(f"cannot write {final}: {exc.strerror or exc}") from exc
            raise
        self._files.clear()

    def discard(self) -> None:
        for _, partial, stream in self._files:
            with contextlib.suppress(OSError):
                stream.close()
            with contextlib.suppress(OSError):
                partial.unlink(missing_ok=True)
        self._files.clear()


@contextlib.contextmanager
def _outputs() -> Iterator[_Outputs]:
    """Outputs committed together when the block ends, discarded if it raises."""
    outputs = _Outputs()
    try:
        yield outputs
    except BaseException:
        outputs.discard()
        raise
    outputs.commit()


# --- commands ----------------------------------------------------------------


@app.command()
@reported
def init(
    index: IndexArg,
    k: KOpt = None,
    blocks: BlocksOpt = None,
    ngram: NgramOpt = None,
    weighting: WeightingOpt = None,
    keep_stopwords: StopOpt = False,
    cjk: CjkOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Create an index (or check that an existing one has these settings)."""
    config = config_from(ngram, weighting, keep_stopwords, cjk)
    with open_index(index, create=True, k=k, blocks=blocks, config=config) as ix:
        if as_json:
            emit_json(
                {
                    "index": ix.location,
                    "k": ix.k,
                    "blocks": list(ix.layout.widths),
                    "tables": [list(t) for t in ix.layout.tables],
                    "fingerprint": json.loads(ix.config.to_json()),
                    "count": len(ix),
                }
            )
        else:
            typer.echo(
                f"{ix.location}: k={ix.k}, {layout_text(ix)}, "
                f"{ix.config.describe()}, {len(ix)} fingerprints"
            )


@app.command()
@reported
def add(
    index: IndexArg,
    inputs: Annotated[
        list[str] | None,
        typer.Argument(
            help="Files and folders to add ('-' for stdin). "
            + KEYS_HELP
            + " .jsonl/.ndjson files hold one JSON object per line, .csv files a record a "
            "row (keyed by --key-field). The index's own files are skipped in folders."
        ),
    ] = None,
    text: Annotated[
        str | None, typer.Option("--text", "-t", help="Add this text (needs --key).")
    ] = None,
    key: Annotated[
        str | None, typer.Option("--key", help="Key for --text or for a document on stdin.")
    ] = None,
    fmt: FormatOpt = "auto",
    key_field: KeyFieldOpt = "id",
    text_field: TextFieldOpt = "text",
    skip_empty: Annotated[
        bool, typer.Option("--skip-empty", help="Skip documents with no words instead of failing.")
    ] = False,
    batch_size: Annotated[
        int | None,
        typer.Option(
            "--batch-size",
            help="Commit every N documents: an import that stops keeps the batches "
            "before it (resume it with --skip-existing). Default: one transaction.",
        ),
    ] = None,
    skip_existing: Annotated[
        bool,
        typer.Option("--skip-existing", help="Leave keys that are already stored as they are."),
    ] = False,
    workers: WorkersOpt = None,
    k: KOpt = None,
    blocks: BlocksOpt = None,
    ngram: NgramOpt = None,
    weighting: WeightingOpt = None,
    keep_stopwords: StopOpt = False,
    cjk: CjkOpt = None,
    quiet: QuietOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Add documents, creating the index if needed.

    Files, folders (every file in them), JSON Lines, CSV or stdin, read as a
    stream and fingerprinted in parallel. All or nothing: on any error the
    index is left as it was (with --batch-size, the batches committed before
    the error stay). A key that is already there gets the new text, unless
    --skip-existing.
    """
    if batch_size is not None and batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, not {batch_size}")
    paths = list(inputs or [])
    if text is None and not paths:
        raise UserError("nothing to add: give files, '-' for stdin, or --text with --key")
    if text is not None and not key:
        raise UserError("--text needs a --key")
    if "-" in paths and fmt in ("auto", "text") and text is None and not key:
        raise UserError("give the document read from standard input a key with --key")
    config = config_from(ngram, weighting, keep_stopwords, cjk)
    workers = workers_option(workers)
    # Check the sources before the index is created or locked.
    own = _check_sources(index, paths)
    own_skipped = _Skipped("the index's own files")
    docs: list[Iterable[ingest.Doc]] = []
    if text is not None:
        assert key is not None
        docs.append([ingest.Doc(key, text, "--text", utf8_size(text))])
    if paths:
        stdin_key = key if text is None else None
        docs.append(
            ingest.read_docs(
                paths,
                fmt=fmt,
                key_field=key_field,
                text_field=text_field,
                stdin_key=stdin_key,
                folder_keys="path",
                skip=own,
                on_skip=own_skipped,
            )
        )
    total = ingest.source_size(paths, skip=own) or None
    skipped: list[str] = []
    new_file = _new_index_file(index)
    try:
        with open_index(index, create=True, k=k, blocks=blocks, config=config) as ix:
            with _progress(total, quiet) as bar:
                task = bar.add_task("adding", total=total, docs=0)

                stream = _fingerprinted(
                    chain.from_iterable(docs), ix.config, workers, bar, task, skipped, skip_empty
                )
                added = ix.add_fingerprints(
                    stream, batch_size=batch_size, skip_existing=skip_existing
                )
            count, location = len(ix), ix.location
    except BaseException:
        if new_file is not None and batch_size is None:  # no new, empty index left behind
            for leftover in (
                new_file,
                *(new_file.with_name(new_file.name + s) for s in ("-wal", "-shm")),
            ):
                leftover.unlink(missing_ok=True)
        raise
    own_skipped.tell()
    if as_json:
        emit_json({"index": location, "added": added, "skipped": skipped, "count": count})
    else:
        typer.echo(
            f"added {added} document{'s' * (added != 1)} to {location} ({count} in all)"
            + (f"; skipped {len(skipped)} with no words" if skipped else "")
        )


def _new_index_file(index: str) -> Path | None:
    """The file an index path would create, or None if it exists or is no file path."""
    if index == ":memory:" or "://" in index:
        return None
    path = Path(index)
    return None if path.exists() else path


def _parse_fingerprint(value: str, hint: str = "") -> int:
    text = value.strip().lower()
    try:
        number = int(text[2:], 16) if text.startswith("0x") else int(text, 10)
    except ValueError:
        raise UserError(
            f"not a fingerprint: {value!r} (give a decimal or 0x-hex number){hint}"
        ) from None
    if not 0 <= number < 1 << 64:
        raise UserError(f"a fingerprint is in [0, 2**64), not {value}")
    return number


def _query_input(text: str | None, file: str | None, fingerprint: str | None) -> str | int:
    given = [x for x in (text, file, fingerprint) if x is not None]
    if len(given) != 1:
        raise UserError("give exactly one of: TEXT, --file FILE ('-' for stdin), --fingerprint FP")
    if fingerprint is not None:
        return _parse_fingerprint(fingerprint)
    if file is not None:
        return read_text_file(file)
    assert text is not None
    return text


@app.command()
@reported
def query(
    index: IndexArg,
    text: Annotated[str | None, typer.Argument(help="The text to look for.")] = None,
    file: Annotated[
        str | None, typer.Option("--file", "-f", help="Read the text from a file ('-' for stdin).")
    ] = None,
    fingerprint: Annotated[
        str | None,
        typer.Option("--fingerprint", help="Look for a fingerprint (decimal or 0x-hex)."),
    ] = None,
    k: Annotated[
        int | None, typer.Option("--k", "-k", help="Largest distance (default: the index's k).")
    ] = None,
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", help="At most this many matches.")
    ] = None,
    batch: Annotated[
        str | None,
        typer.Option(
            "--batch",
            help="Answer many queries: a JSON Lines file ('-' for stdin) of "
            '{"id": ..., "text": ...} or {"id": ..., "fingerprint": N}; prints one JSON '
            'line per query: {"id": ..., "matches": [...]}.',
        ),
    ] = None,
    key_field: Annotated[
        str, typer.Option("--key-field", help="--batch: field echoed back as id.")
    ] = "id",
    text_field: Annotated[str, typer.Option("--text-field", help="--batch: text field.")] = "text",
    as_json: JsonOpt = False,
) -> None:
    """Print the stored documents near a text: distance and key, nearest first.

    Exits 1 when there are none (with --batch: when no query found any), like grep.
    """
    if k is not None and not 0 <= k <= 64:
        raise UserError(f"--k must be from 0 to 64, not {k}")
    if limit is not None and limit < 1:
        raise UserError(f"--limit must be at least 1, not {limit}")
    if batch is not None:
        if text is not None or file is not None or fingerprint is not None:
            raise UserError(
                "--batch reads its queries from the file; give no TEXT, --file or --fingerprint"
            )
        found = _query_batch(index, batch, k, limit, key_field, text_field)
        raise typer.Exit(EXIT_OK if found else EXIT_NOT_FOUND)
    what = _query_input(text, file, fingerprint)
    with open_index(index) as ix:
        fp = what if isinstance(what, int) else ix.fingerprint(what)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FullScanWarning)
            matches = ix.query(fp, k=k, limit=limit)
        used_k = ix.k if k is None else k
    for w in caught:
        if issubclass(w.category, FullScanWarning):
            typer.echo(f"Warning: {w.message}", err=True)
    if as_json:
        emit_json({"fingerprint": fp, "k": used_k, "matches": [m._asdict() for m in matches]})
    else:
        for m in matches:
            typer.echo(f"{m.distance}\t{escaped(m.key)}")
    if not matches:
        raise typer.Exit(EXIT_NOT_FOUND)


_BATCH_QUERIES = 50_000  # queries answered per pass of query --batch (bounds memory)


def _query_batch(
    index: str, source: str, k: int | None, limit: int | None, key_field: str, text_field: str
) -> bool:
    """Stream JSON Lines of queries through query_many; True if any matched."""
    ingest.check_paths([source])
    any_found = False
    with open_index(index) as ix:

        def answer(ids: list[Any], queries: list[int]) -> None:
            nonlocal any_found
            for qid, matches in zip(ids, ix.query_many(queries, k=k, limit=limit), strict=True):
                any_found = any_found or bool(matches)
                emit_json({"id": qid, "matches": [m._asdict() for m in matches]})

        ids: list[Any] = []
        queries: list[int] = []
        name = "standard input" if source == "-" else source
        for number, line, _ in ingest.read_lines(source):
            if not line.strip():
                continue
            where = f"{name} line {number}"
            record = ingest.json_object(line, where)
            if "fingerprint" in record:
                value = record["fingerprint"]
                query = _parse_fingerprint(value) if isinstance(value, str) else value
                if type(query) is not int or not 0 <= query < 1 << 64:
                    raise UserError(f"{where}: fingerprint must be in [0, 2**64), not {value!r}")
            elif isinstance(text := record.get(text_field), str):
                try:
                    query = ix.fingerprint(text)
                except EmptyTextError:
                    raise UserError(f"{where} has no words to look for") from None
            else:
                raise UserError(f"{where} has neither a {text_field!r} text nor a fingerprint")
            ids.append(record.get(key_field, number))
            queries.append(query)
            if len(queries) >= _BATCH_QUERIES:
                answer(ids, queries)
                ids, queries = [], []
        if queries:
            answer(ids, queries)
    return any_found


@app.command()
@reported
def remove(
    index: IndexArg,
    keys: Annotated[list[str], typer.Argument(help="Keys to remove.")],
    as_json: JsonOpt = False,
) -> None:
    """Remove documents by key (in one transaction)."""
    with open_index(index) as ix:
        removed = ix.remove_many(keys)
    if as_json:
        emit_json({"removed": removed, "missing": len(set(keys)) - removed})
    else:
        typer.echo(f"removed {removed} of {len(set(keys))} key{'s' * (len(set(keys)) != 1)}")


@app.command()
@reported
def stats(index: IndexArg, as_json: JsonOpt = False) -> None:
    """Describe an index: size, k, layout, fingerprint configuration, buckets.

    The largest block bucket of each lookup index is listed, with a warning
    when one holds a large share of the fingerprints.
    """
    with open_index(index, readonly=True) as ix:
        info = ix.stats()
        info.pop("held_in_memory_bytes")  # this process has just opened it: nothing held
    if as_json:
        emit_json(info)
        return
    for name, value in info.items():
        if name == "warnings":
            continue
        shown = json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else value
        typer.echo(f"{name}: {shown}")
    for warning in info["warnings"]:
        typer.echo(f"Warning: {warning}", err=True)


@app.command()
@reported
def rebuild(
    index: IndexArg,
    sources: Annotated[
        list[str] | None,
        typer.Argument(
            help="The texts to rebuild from (files, folders, JSON Lines, CSV, '-'); "
            "without them, the stored fingerprints are laid out anew. " + KEYS_HELP
        ),
    ] = None,
    k: Annotated[int | None, typer.Option("--k", "-k", help="A new k (0-15).")] = None,
    blocks: BlocksOpt = None,
    ngram: NgramOpt = None,
    weighting: WeightingOpt = None,
    keep_stopwords: StopOpt = False,
    cjk: CjkOpt = None,
    fmt: FormatOpt = "auto",
    key_field: KeyFieldOpt = "id",
    text_field: TextFieldOpt = "text",
    skip_empty: Annotated[
        bool, typer.Option("--skip-empty", help="Leave out documents with no words.")
    ] = False,
    workers: WorkersOpt = None,
    quiet: QuietOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Lay an index out anew (--k, --blocks), or rebuild it from its texts.

    With SOURCES the index becomes exactly those documents, fingerprinted with
    the fingerprint options given (default: the index's own): documents not
    in them are removed. Queries are answered from the old index meanwhile,
    which switches to the new content in one step; writers wait (up to their
    timeout). If the rebuild fails, the old index is left as it was.
    """
    config = config_from(ngram, weighting, keep_stopwords, cjk)
    workers = workers_option(workers)
    paths = list(sources or [])
    own = _check_sources(index, paths)
    own_skipped = _Skipped("the index's own files")
    docs = (
        ingest.read_docs(
            paths,
            fmt=fmt,
            key_field=key_field,
            text_field=text_field,
            folder_keys="path",
            skip=own,
            on_skip=own_skipped,
        )
        if paths
        else None
    )
    with open_index(index) as ix:
        if docs is None:
            if config is not None and config != ix.config:
                raise UserError("a new fingerprint configuration needs the texts: give SOURCES")
            rows = ix.rebuild(k=k, blocks=blocks)
        else:
            wanted = config or ix.config
            total = ingest.source_size(paths, skip=own) or None
            skipped: list[str] = []
            with _progress(total, quiet) as bar:
                task = bar.add_task("rebuilding", total=total, docs=0)

                stream = _fingerprinted(docs, wanted, workers, bar, task, skipped, skip_empty)
                rows = ix.rebuild(fingerprints=stream, k=k, blocks=blocks, config=wanted)
        summary = {
            "index": ix.location,
            "count": rows,
            "k": ix.k,
            "blocks": list(ix.layout.widths),
            "fingerprint": json.loads(ix.config.to_json()),
        }
    own_skipped.tell()
    if as_json:
        emit_json(summary)
    else:
        typer.echo(
            f"rebuilt {ix.location}: {rows} fingerprints, k={ix.k}, {layout_text(ix)}, "
            f"{ix.config.describe()}"
        )


@app.command()
@reported
def check(
    index: IndexArg,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Fix what is safe to fix: recompute block columns, recreate missing "
            "lookup indexes.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Check an index for damage; --repair fixes what is safe to fix.

    Runs SQLite's integrity check, compares the schema with the index's
    settings, and every block column with its fingerprint. Exits 0 when all
    is well, 1 when something is wrong (listed), 2 on error.
    """
    try:
        with open_index(index, readonly=not repair) as ix:
            report = ix.check(repair=repair)
        location = ix.location
    except DamagedIndexError as exc:  # too damaged to open: that is what check reports
        report, location = CheckReport(False, [str(exc)], []), str(exc.path)
    if as_json:
        emit_json(report._asdict())
    else:
        for line in report.repaired:
            typer.echo(f"repaired: {line}")
        for line in report.problems:
            typer.echo(f"problem: {line}")
        if report.ok:
            typer.echo(f"{location}: ok")
    if not report.ok:
        raise typer.Exit(EXIT_NOT_FOUND)


@app.command()
@reported
def compact(index: IndexArg, as_json: JsonOpt = False) -> None:
    """Reclaim free space (VACUUM) and fold the write-ahead log into the file."""
    with open_index(index) as ix:
        sizes = ix.compact()
    if as_json:
        emit_json({"index": ix.location} | sizes)
    else:
        typer.echo(f"{ix.location}: {sizes['before']:,} -> {sizes['after']:,} bytes")


@app.command()
@reported
def dedup(
    sources: Annotated[
        list[str],
        typer.Argument(
            help="An index; or, with --out, a corpus: files, folders, JSON Lines, CSV, '-'. "
            + KEYS_HELP
        ),
    ],
    k: Annotated[
        int | None,
        typer.Option(
            "--k", "-k", help=f"Largest distance, 0-15 (default: the index's k, or {DEFAULT_K})."
        ),
    ] = None,
    clusters: Annotated[
        bool,
        typer.Option(
            "--clusters",
            help="Print groups instead of pairs: documents linked by chains of pairs, "
            "the first added one first.",
        ),
    ] = False,
    out: Annotated[
        str | None,
        typer.Option(
            "--out",
            "-o",
            help="Corpus mode: write the documents that are not near-duplicates of an "
            "earlier one to this JSON Lines file ('-' for stdout); never one of the inputs "
            "or inside an input folder.",
        ),
    ] = None,
    report: Annotated[
        str | None,
        typer.Option(
            "--report", help="Corpus mode: write what was dropped, and why, as JSON Lines."
        ),
    ] = None,
    fmt: FormatOpt = "auto",
    key_field: KeyFieldOpt = "id",
    text_field: TextFieldOpt = "text",
    workers: WorkersOpt = None,
    ngram: NgramOpt = None,
    weighting: WeightingOpt = None,
    keep_stopwords: StopOpt = False,
    cjk: CjkOpt = None,
    quiet: QuietOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Find near-duplicates: every pair in an index, or drop them from a corpus.

    `simindex dedup INDEX` prints each near-duplicate pair: distance, key, key;
    with --clusters, one group a line: the canonical (first added) key, then
    each other one as KEY:DISTANCE (its distance to the canonical one).
    Fields are separated by tabs; in keys, tab, newline, CR, NUL and
    backslash are written \\t \\n \\r \\0 \\\\ and other control
    characters \\xNN (--json gives them as they are).

    `simindex dedup CORPUS... --out unique.jsonl` streams a corpus and writes
    only the documents that are not within k of an earlier kept one (and, with
    --report, a JSON line for each dropped one: its key, the key it duplicates
    and the distance). Documents with no words are dropped as "no words".
    """
    if k is not None and not 0 <= k <= 15:
        raise UserError(f"--k must be from 0 to 15, not {k}")
    workers = workers_option(workers)
    if out is not None:
        _dedup_corpus(
            sources,
            out,
            report,
            k,
            fmt,
            key_field,
            text_field,
            workers,
            config_from(ngram, weighting, keep_stopwords, cjk),
            quiet,
            as_json,
        )
        return
    if report is not None:
        raise UserError("--report goes with --out (corpus mode)")
    if len(sources) != 1:
        raise UserError("give one index (or a corpus with --out)")
    with open_index(sources[0]) as ix:
        used_k = ix.k if k is None else k
        if clusters:
            groups = ix.clusters(k)
            if as_json:
                emit_json(
                    {
                        "k": used_k,
                        "clusters": [
                            {"canonical": c.canonical, "members": [list(m) for m in c.members]}
                            for c in groups
                        ],
                    }
                )
            else:
                for c in groups:
                    members = (f"{escaped(key)}:{d}" for key, d in c.members[1:])
                    typer.echo("\t".join((escaped(c.canonical), *members)))
            return
        pairs = ix.duplicates(k)
    if as_json:
        emit_json({"k": used_k, "pairs": [p._asdict() for p in pairs]})
    else:
        for p in pairs:
            typer.echo(f"{p.distance}\t{escaped(p.key_a)}\t{escaped(p.key_b)}")


def _dedup_corpus(
    sources: list[str],
    out: str,
    report: str | None,
    k: int | None,
    fmt: str,
    key_field: str,
    text_field: str,
    workers: int | None,
    config: FingerprintConfig | None,
    quiet: bool,
    as_json: bool,
) -> None:
    """Stream a corpus; keep each document unless it is near an earlier kept one."""
    from simindex.query import Seen

    if "-" in sources and fmt in ("auto", "text"):
        raise UserError("read a corpus from stdin with --format lines, jsonl or csv")
    ingest.check_paths(sources)
    own = _check_outputs([("--out", out), ("--report", report)], sources)
    own_skipped = _Skipped("this command's own output files")
    docs = ingest.read_docs(
        sources,
        fmt=fmt,
        key_field=key_field,
        text_field=text_field,
        folder_keys="path",
        skip=own,
        on_skip=own_skipped,
    )
    seen = Seen(DEFAULT_K if k is None else k)
    kept_keys: list[str] = []
    counts = {"read": 0, "kept": 0, "dropped": 0, "no_words": 0}
    total = ingest.source_size(sources, skip=own) or None
    with _outputs() as outputs:
        unique = outputs.open(out)
        dropped = outputs.open(report)
        assert unique is not None
        with _progress(total, quiet or out == "-") as bar:
            task = bar.add_task("dedup", total=total, docs=0)
            stream = ingest.fingerprint_docs(docs, config or DEFAULT_CONFIG, workers=workers)
            for doc, fp in stream:
                counts["read"] += 1
                bar.update(task, advance=doc.size, docs=counts["read"])
                if fp is None:
                    counts["no_words"] += 1
                    if dropped is not None:
                        dropped.write(_json_line({"id": doc.key, "reason": "no words"}))
                    continue
                nearest = seen.nearest(fp)
                if nearest is None:
                    seen.add(fp)
                    kept_keys.append(doc.key)
                    counts["kept"] += 1
                    unique.write(_json_line({key_field: doc.key, text_field: doc.text}))
                else:
                    counts["dropped"] += 1
                    if dropped is not None:
                        position, distance = nearest
                        dropped.write(
                            _json_line(
                                {
                                    "id": doc.key,
                                    "duplicate_of": kept_keys[position],
                                    "distance": distance,
                                }
                            )
                        )
    own_skipped.tell()
    summary = counts | {"k": seen.k}
    if as_json:
        typer.echo(json.dumps(summary), err=out == "-")
    else:
        typer.echo(
            f"read {counts['read']}, kept {counts['kept']}, dropped {counts['dropped']} "
            f"near-duplicates (k={seen.k}) and {counts['no_words']} with no words",
            err=True,
        )


def _json_line(value: Any) -> str:
    """One JSON line; text that is not valid Unicode (a lone surrogate read
    from a JSON escape) is written escaped, so the output stays valid UTF-8."""
    line = json.dumps(value, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(value)
    return line + "\n"


@app.command()
@reported
def advise(
    n: Annotated[int, typer.Option("--n", help="How many fingerprints the index will hold.")],
    k: Annotated[
        int, typer.Option("--k", "-k", help="The distance it must answer (0-15).")
    ] = DEFAULT_K,
    as_json: JsonOpt = False,
) -> None:
    """Compare block layouts for an index of n fingerprints, and recommend one.

    For each number of blocks: the database indexes it needs, the expected
    candidate rows per query (for well-spread fingerprints), the index seeks
    per query (probes included, for k or fewer blocks), the estimated bytes
    per fingerprint and query time (microseconds, from costs measured at a
    million fingerprints). Create the recommended one with:
    simindex init INDEX --k K --blocks B.
    """
    from simindex.blocks import advise as advise_layouts

    if n < 0:
        raise UserError(f"--n must be at least 0, not {n}")
    if not 0 <= k <= 15:
        raise UserError(f"--k must be from 0 to 15, not {k}")
    layouts = advise_layouts(n, k)
    best = layouts[0]
    rows = [
        {
            "blocks": a.blocks,
            "indexes": len(a.layout.tables),
            "widths": list(a.layout.widths),
            "candidates_per_query": round(a.candidates, 3),
            "seeks_per_query": a.seeks,
            "bytes_per_fingerprint": a.bytes_per_fingerprint,
            "cost": round(a.cost, 2),
            "recommended": a is best,
        }
        for a in sorted(layouts, key=lambda a: a.blocks)
    ]
    if as_json:
        emit_json({"n": n, "k": k, "layouts": rows, "recommended_blocks": best.blocks})
        return
    typer.echo(f"layouts for n={n:,} fingerprints, k={k}:")
    typer.echo(
        f"{'blocks':>6} {'indexes':>7} {'candidates/query':>16} {'seeks':>6} {'bytes/fp':>8} "
        f"{'est. us':>8}"
    )
    for r in rows:
        mark = "  <- recommended" if r["recommended"] else ""
        typer.echo(
            f"{r['blocks']:>6} {r['indexes']:>7} {r['candidates_per_query']:>16,.3f} "
            f"{r['seeks_per_query']:>6} {r['bytes_per_fingerprint']:>8.0f} {r['cost']:>8.1f}{mark}"
        )
    typer.echo(f"create it with: simindex init INDEX --k {k} --blocks {best.blocks}")


# fingerprint, distance and explain take their inputs as arguments, and the
# same two flags say what the arguments are: --text (texts) or --file (files,
# '-' for stdin). Without them each takes what it is most used with:
# fingerprint a text (like query), distance fingerprints, explain files.
def _text_flag(words: str) -> Any:
    return typer.Option("--text", "-t", help=words, show_default=False)


def _file_flag(words: str) -> Any:
    return typer.Option("--file", "-f", help=words, show_default=False)


def _inputs_kind(as_text: bool, as_file: bool, default: str) -> str:
    if as_text and as_file:
        raise UserError("give --text or --file, not both")
    return "text" if as_text else "file" if as_file else default


def _read_input(value: str, kind: str, hint: str = "") -> str:
    """An argument as a text: itself, or the file it names."""
    if kind == "text":
        return value
    if value != "-" and not os.path.lexists(value):
        raise UserError(f"no such file: {value}{hint}")
    return read_text_file(value)


@app.command("fingerprint")
@reported
def fingerprint_cmd(
    value: Annotated[
        str | None,
        typer.Argument(
            metavar="TEXT", help="The text; with --file, a file to read ('-' for stdin)."
        ),
    ] = None,
    as_text: Annotated[bool, _text_flag("TEXT is a text (the default).")] = False,
    as_file: Annotated[bool, _file_flag("TEXT is a file to read ('-' for stdin).")] = False,
    index: Annotated[
        str | None,
        typer.Option("--index", "-i", help="Use this index's fingerprint configuration."),
    ] = None,
    ngram: NgramOpt = None,
    weighting: WeightingOpt = None,
    keep_stopwords: StopOpt = False,
    cjk: CjkOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print a text's 64-bit fingerprint (decimal, and 0x-hex with --json).

    simindex fingerprint TEXT, or --text TEXT, or --file FILE ('-' for stdin).
    """
    kind = _inputs_kind(as_text, as_file, "text")
    if value is None:
        raise UserError("give the text to fingerprint, or --file FILE ('-' for stdin)")
    if kind == "text" and not as_text and os.path.isfile(value):
        typer.echo(
            f"Warning: fingerprinting the text {value!r}, not the file of that name "
            "(give --file to read it)",
            err=True,
        )
    what = _read_input(value, kind)
    config = config_from(ngram, weighting, keep_stopwords, cjk)
    if index is not None:
        with open_index(index, config=config) as ix:
            fp = ix.fingerprint(what)
    else:
        fp = simhash(what, config or DEFAULT_CONFIG)
    if as_json:
        emit_json({"fingerprint": fp, "hex": f"0x{fp:016x}"})
    else:
        typer.echo(str(fp))


@app.command()
@reported
def distance(
    a: Annotated[
        str,
        typer.Argument(
            help="A fingerprint (decimal or 0x-hex); a text with --text, a file with --file."
        ),
    ],
    b: Annotated[str, typer.Argument(help="Another one.")],
    as_text: Annotated[bool, _text_flag("A and B are texts.")] = False,
    as_file: Annotated[bool, _file_flag("A and B are files (one may be '-', stdin).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Print the Hamming distance between two fingerprints, texts (--text) or files (--file)."""
    kind = _inputs_kind(as_text, as_file, "fingerprint")
    if kind == "fingerprint":
        hint = " (or give --text or --file to compare texts or files)"
        fa, fb = (_parse_fingerprint(x, hint) for x in (a, b))
    else:
        if kind == "file" and a == "-" and b == "-":
            raise UserError("only one of A and B can be '-' (standard input)")
        fa, fb = (simhash(_read_input(x, kind)) for x in (a, b))
    d = hamming(fa, fb)
    if as_json:
        emit_json({"distance": d, "a": fa, "b": fb})
    else:
        typer.echo(str(d))


@app.command("explain")
@reported
def explain_cmd(
    a: Annotated[str, typer.Argument(help="A file ('-' for stdin); a text with --text.")],
    b: Annotated[str, typer.Argument(help="Another one.")],
    as_text: Annotated[bool, _text_flag("A and B are texts.")] = False,
    as_file: Annotated[
        bool, _file_flag("A and B are files (the default; one may be '-', stdin).")
    ] = False,
    index: Annotated[
        str | None,
        typer.Option(
            "--index", "-i", help="Use this index's fingerprint configuration, blocks and k."
        ),
    ] = None,
    k: Annotated[
        int | None,
        typer.Option(
            "--k", "-k", help=f"Largest distance (default: the index's k, or {DEFAULT_K})."
        ),
    ] = None,
    blocks: Annotated[
        int | None,
        typer.Option(
            "--blocks", help="Without --index: blocks of the layout (default: a new index's)."
        ),
    ] = None,
    top: Annotated[
        int, typer.Option("--top", "-n", help="Features listed on each side (default 10).")
    ] = 10,
    ngram: NgramOpt = None,
    weighting: WeightingOpt = None,
    keep_stopwords: StopOpt = False,
    cjk: CjkOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Explain why two files (or texts, with --text) are, or are not, near-duplicates.

    Prints the distance beside k, which blocks of the layout agree, which of
    its lookup indexes ("tables") would find one text from the other, the
    similarity of the two texts' features with the distance it predicts, and
    the features credited with the bits that agree (in both texts) and with
    the bits that differ (in one text, or weighed differently). A feature's
    score is in bits: the apart scores add up to the distance.
    """
    if k is not None and not 0 <= k <= 64:
        raise UserError(f"--k must be from 0 to 64, not {k}")
    if top < 0:
        raise UserError(f"--top must be at least 0, not {top}")
    if index is not None and blocks is not None:
        raise UserError("an index has its own blocks: give --blocks without --index")
    if index is None and k is not None and k > MAX_INDEX_K:
        raise UserError(
            f"without --index, --k goes up to {MAX_INDEX_K} (a layout's limit), not {k}"
        )
    kind = _inputs_kind(as_text, as_file, "file")
    if kind == "file" and a == "-" and b == "-":
        raise UserError("only one of A and B can be '-' (standard input)")
    hint = " (give --text to explain two texts)"
    texts = (_read_input(a, kind, hint), _read_input(b, kind, hint))
    config = config_from(ngram, weighting, keep_stopwords, cjk)
    if index is not None:
        with open_index(index, readonly=True, config=config) as ix:
            result = ix.explain(*texts, k=k, top=top)
    else:
        distance = DEFAULT_K if k is None else k
        layout = BlockLayout.for_k(distance, blocks)
        result = explain(
            *texts, k=distance, layout=layout, config=config or DEFAULT_CONFIG, top=top
        )
    if as_json:
        emit_json(result.to_dict())
    else:
        for line in _explanation_lines(result):
            typer.echo(line)


def _explanation_lines(e: Explanation) -> Iterator[str]:
    """The human report of an explanation."""
    yield e.verdict()
    yield f"fingerprints: a 0x{e.fingerprint_a:016x}  b 0x{e.fingerprint_b:016x}"
    yield "blocks: " + "  ".join(
        f"{b.width} ✓" if b.agrees else f"{b.width} ✗({b.differing})" for b in e.blocks
    )
    matched = [
        f"{i} (block{'s' * (len(e.tables[i]) > 1)} {'+'.join(map(str, e.tables[i]))})"
        for i in e.matching_tables
    ]
    yield (
        f"tables: {len(matched)} of {len(e.tables)} match: {', '.join(matched)}"
        if matched
        else f"tables: none of {len(e.tables)} matches"
    )
    if e.cosine is None or e.weighted_jaccard is None or e.expected_distance is None:
        return
    yield (
        f"features: {e.features_a} in a, {e.features_b} in b, {e.shared_features} shared; "
        f"cosine {e.cosine:.3f}, weighted Jaccard {e.weighted_jaccard:.3f}: "
        f"expected distance ~{e.expected_distance:.1f}"
    )
    for title, effects in (
        ("pulled together (in both texts)", e.together),
        ("pulled apart (in one text, or weighed differently)", e.apart),
    ):
        if not effects:
            continue
        names = [f if len(f) <= 40 else f[:39] + "…" for f in (x.feature for x in effects)]
        width = max(len("feature"), *map(len, names))
        yield ""
        yield f"{title}:"
        yield f"  {'feature':<{width}} {'a':>6} {'b':>6} {'bits':>6}"
        for name, x in zip(names, effects, strict=True):
            yield f"  {name:<{width}} {x.weight_a:>6} {x.weight_b:>6} {x.score:>6.2f}"


def main(argv: list[str] | None = None) -> None:
    """Run the command (``python cli.py``; the ``simindex`` command runs it
    through simindex.__main__, which also catches a Ctrl-C while this module
    is still being imported).

    Usage mistakes (an unknown option, a missing argument) become one line
    ``Error: ...`` and exit code 2, like every other error; Ctrl-C, one line
    and exit code 130.
    """
    _told["interrupted"] = False
    command = typer.main.get_command(app)
    try:
        code = command.main(args=argv, prog_name="simindex", standalone_mode=False)
    except KeyboardInterrupt:
        _interrupted()
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:
        message = getattr(exc, "format_message", None)
        if not callable(message) or not isinstance(getattr(exc, "exit_code", None), int):
            raise  # not a usage error: a bug, shown in full
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare "simindex": the help
            typer.echo(message(), err=True)
        else:
            ctx = getattr(exc, "ctx", None)
            hint = f" (see: {ctx.command_path} -h)" if ctx is not None else ""
            typer.echo(f"Error: {message()}{hint}", err=True)
        sys.exit(EXIT_ERROR)
    if code == EXIT_INTERRUPTED and not _told["interrupted"]:
        # typer turns a Ctrl-C outside the command's own code (parsing the
        # arguments, entering or leaving its context) into exit 130, silently.
        _interrupted()
    sys.exit(code if isinstance(code, int) else EXIT_OK)


__all__ = ["app", "main", "InvalidArgumentError"]

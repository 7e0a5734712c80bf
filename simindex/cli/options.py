"""The options several commands share, and what the arguments they are given become.

Each option is an ``Annotated`` type written once (its flags and help), so
that the commands that take it say it the same way. The functions turn what
a command was given into the library's values (a FingerprintConfig, a
SimIndex, a text, a fingerprint), raising UserError for a mistake.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Annotated

import typer

from simindex.cli.errors import UserError
from simindex.cli.output import counted

if TYPE_CHECKING:
    from simindex.fingerprint import FingerprintConfig
    from simindex.index import SimIndex

# The options' help states the library's defaults in words, so that showing
# a command's help (building its options) imports none of the library: a
# test holds the words to the constants (blocks.DEFAULT_K, fingerprint's
# WEIGHTINGS and DEFAULT_CONFIG, signature.DEFAULT_THRESHOLD and its
# characters_threshold, tokenize.CJK_MODES).
DEFAULT_K = 8
WEIGHTINGS = ("tf", "sublinear", "binary")
DEFAULT_WEIGHTING = "tf"
DEFAULT_THRESHOLD = 0.78
CHARACTERS_THRESHOLD = "0.7492"  # signature.characters_threshold(DEFAULT_THRESHOLD), shown
CJK_MODES = ("words", "chars")
DEFAULT_CJK = "chars"

# --- shared options -------------------------------------------------------------

IndexArg = Annotated[str, typer.Argument(help="Index file path, ':memory:' or a database URL.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")]
KOpt = Annotated[
    int | None,
    typer.Option(
        "--k",
        "-k",
        metavar="K",
        help="Largest Hamming distance the new index answers from its "
        f"blocks (0-15; default {DEFAULT_K}). An existing index must have the same "
        "(else an error).",
    ),
]
BlocksOpt = Annotated[
    int | None,
    typer.Option(
        "--blocks",
        metavar="N",
        help="Blocks for a new index (default: k + 1 up to k = 3, then the cheapest probed "
        "layout); more blocks, more database indexes, fewer candidates per query; k or "
        "fewer blocks are probed: see simindex advise.",
    ),
]
NgramOpt = Annotated[
    int | None,
    typer.Option(
        "--ngram", metavar="N", help="Features: 1 = word unigrams (default), n = word n-grams."
    ),
]
WeightingOpt = Annotated[
    str | None,
    typer.Option(
        "--weighting",
        metavar="NAME",
        help=f"Feature weights: {', '.join(WEIGHTINGS)} (default {DEFAULT_WEIGHTING}).",
    ),
]
StopOpt = Annotated[bool, typer.Option("--keep-stopwords", help="Keep stop words as features.")]
# What every --threshold's help adds (signature.threshold_for).
CHARACTERS_HELP = (
    " Two longer texts of CJK characters need the same share of edits counted in "
    f"characters ({CHARACTERS_THRESHOLD} for {DEFAULT_THRESHOLD})."
)
NewThresholdOpt = Annotated[
    float | None,
    typer.Option(
        "--threshold",
        metavar="SIMILARITY",
        help="Similarity (0-1) a candidate needs, by the documents' verification "
        f"signatures, to be a near-duplicate, for the new index (default {DEFAULT_THRESHOLD}; "
        "0: distance alone). An existing index must have the same (else an error)."
        + CHARACTERS_HELP,
    ),
]
ThresholdOpt = Annotated[
    float | None,
    typer.Option(
        "--threshold",
        metavar="SIMILARITY",
        help="Similarity (0-1) a candidate needs, by the verification signatures "
        "(default: the index's; 0: distance alone)." + CHARACTERS_HELP,
    ),
]
CjkOpt = Annotated[
    str | None,
    typer.Option(
        "--cjk",
        metavar="MODE",
        help=f"Chinese and Japanese features: {', '.join(CJK_MODES)} (default "
        f"{DEFAULT_CJK}: characters and character bigrams; words: jieba words).",
    ),
]
# How a document read from a file is keyed, said once for add, rebuild and dedup.
KEYS_HELP = (
    "A file given by name is one document keyed by its path as given; a file found in a "
    "folder by the path that opens it: the folder as given, then its path inside it "
    "(docs -> docs/a/b.txt, /srv/docs/ -> /srv/docs/a/b.txt). Hidden files are skipped. "
    "A compressed file (.gz, .zst, .bz2, .xz, or known by its first bytes) is read as the "
    "text it holds (keyed by its name, suffix included)."
)
FormatOpt = Annotated[
    str,
    typer.Option(
        "--format",
        metavar="FORMAT",
        help="auto (the default), text (a file is a document), lines (a line is a document, keyed "
        "FILE:LINE, FILE the file's key as in text), jsonl, csv or parquet. auto: "
        ".jsonl/.ndjson, .csv, .parquet/.pq by name (a compression suffix left out), "
        "Parquet by content, else text.",
    ),
]
KeyFieldOpt = Annotated[
    str,
    typer.Option(
        "--key-field",
        metavar="FIELD",
        help="JSON Lines field (CSV, Parquet column) of the key (default id).",
    ),
]
TextFieldOpt = Annotated[
    str,
    typer.Option(
        "--text-field",
        metavar="FIELD",
        help="JSON Lines field (CSV, Parquet column) of the text (default text).",
    ),
]
WORKERS_PER_CPU = 4  # --workers above this many a usable CPU is capped (with a warning)
WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers",
        "-w",
        metavar="N",
        help="Processes that fingerprint (default: the CPUs this process may use; at least "
        f"1, at most {WORKERS_PER_CPU} a CPU: more is capped, with a warning).",
    ),
]
OverlapsOpt = Annotated[
    bool,
    typer.Option(
        "--overlaps",
        help="A new index keeps its documents' passages, which simindex overlaps needs "
        "(about 1.1 KB of database a KB of text). An existing index must keep them "
        "already (else an error: simindex rebuild INDEX SOURCES --overlaps makes them).",
    ),
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")]

# --timeout: seconds to wait for another process's write lock, kept for
# open_index by the option's callback (click calls it for every run, given or
# not), so the commands pass it on without naming it.
_lock_wait: list[float | None] = [None]


def _timeout_given(value: float | None) -> None:
    if value is not None and not value >= 0:  # (NaN too)
        raise typer.BadParameter(f"must be 0 or more seconds, not {value:g}")
    _lock_wait[0] = value


TimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        metavar="SECONDS",
        help="How long to wait for another process that is writing to the index "
        "(its write lock) before giving up with an error (default 30; 0: not at all).",
        callback=_timeout_given,
        expose_value=False,
    ),
]


def lock_wait() -> float:
    """--timeout's seconds, or SimIndex's default."""
    from simindex.index_files import BUSY_TIMEOUT_S

    given = _lock_wait[0]
    return BUSY_TIMEOUT_S if given is None else given


StrictOpt = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="A file in a folder that cannot be read as text (unreadable, binary, not "
        "UTF-8, a broken link) or has no words (empty) is an error. By default it is "
        "skipped, counted and the first few named on stderr.",
    ),
]


# --- what the options and arguments become ------------------------------------------


def config_from(
    ngram: int | None, weighting: str | None, keep_stopwords: bool, cjk: str | None = None
) -> FingerprintConfig | None:
    """A configuration if any option was given, else None (use the index's own).
    The options not given are DEFAULT_CONFIG's."""
    from simindex.fingerprint import DEFAULT_CONFIG

    if ngram is None and weighting is None and not keep_stopwords and cjk is None:
        return None
    return replace(
        DEFAULT_CONFIG,
        ngram=DEFAULT_CONFIG.ngram if ngram is None else ngram,
        weighting=weighting or DEFAULT_CONFIG.weighting,
        stopwords=not keep_stopwords,
        cjk=cjk or DEFAULT_CONFIG.cjk,
    )


def open_index(
    location: str,
    *,
    create: bool = False,
    readonly: bool = False,
    k: int | None = None,
    blocks: int | None = None,
    config: FingerprintConfig | None = None,
    threshold: float | None = None,
    overlaps: bool | None = None,
) -> SimIndex:
    """The index an INDEX argument names, waiting --timeout seconds for a
    writer's lock; "no index" says how to create one."""
    from simindex.errors import NoIndexError
    from simindex.index import SimIndex
    from simindex.index_files import shown

    check_threshold_option(threshold)
    try:
        # Commands that only read open a SQLite file read-only: they never
        # migrate or change it, and they work on a file they may not write.
        ro = readonly and "://" not in location and location != ":memory:"
        return SimIndex(
            location,
            k=k,
            blocks=blocks,
            config=config,
            threshold=threshold,
            create=create,
            readonly=ro,
            overlaps=overlaps,
            timeout=lock_wait(),
        )
    except NoIndexError as exc:
        where = shown(location)  # a URL with its password hidden
        raise UserError(f"{exc} (create one with: simindex init {where})") from exc


def read_text_file(path: str, index: str | None = None) -> str:
    """A whole file ('-' for stdin) as UTF-8 text, read as ``add`` reads a
    file given by name (compressed files too: simindex.ingest). ``index``:
    the index the command opens; a file that is it (or its -wal, -shm),
    known by identity and never opened, is refused."""
    from simindex import ingest
    from simindex.cli.files import check_sources

    if index is not None:
        check_sources(index, [path])
    return ingest.read_text(path)


def workers_option(workers: int | None) -> int | None:
    """--workers checked: at least 1, and capped at WORKERS_PER_CPU a usable CPU
    (fingerprinting is CPU-bound: more processes only cost memory and start-up)."""
    if workers is None:
        return None
    if workers < 1:
        raise UserError(f"--workers must be at least 1, not {workers}")
    from simindex import ingest

    cpus = ingest.usable_cpus()
    cap = WORKERS_PER_CPU * cpus
    if workers > cap:
        typer.echo(
            f"Warning: --workers {workers} is more than {WORKERS_PER_CPU} a CPU "
            f"({counted(cpus, 'CPU')} here); using {cap}",
            err=True,
        )
        return cap
    return workers


def parse_fingerprint(value: str, hint: str = "") -> int:
    """A fingerprint given as a decimal or 0x-hex number; `hint` ends the error."""
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


def check_k(k: int | None, most: int) -> int | None:
    """--k: a whole number from 0 to ``most`` (a UserError otherwise), said
    the same way by every command."""
    if k is not None and not 0 <= k <= most:
        raise UserError(f"--k must be from 0 to {most}, not {k}")
    return k


def check_fields(fmt: str, key_field: str, text_field: str) -> None:
    """--key-field and --text-field name a record's fields: refused with
    --format text or lines, which read no records (the defaults pass)."""
    for option, given, default in (
        ("--key-field", key_field, "id"),
        ("--text-field", text_field, "text"),
    ):
        if fmt in ("text", "lines") and given != default:
            raise UserError(
                f"{option} names a field of records (--format jsonl, csv, parquet, or auto "
                f"for such files); --format {fmt} reads no records"
            )


def check_threshold_option(threshold: float | None) -> float | None:
    """--threshold: a number from 0 to 1 (a UserError otherwise)."""
    if threshold is not None and not 0.0 <= threshold <= 1.0:  # NaN fails too
        raise UserError(f"--threshold must be from 0 to 1, not {threshold}")
    return threshold


def has_words(text: str, config: FingerprintConfig) -> bool:
    """Whether a text has a word to fingerprint (else queries of it raise EmptyTextError)."""
    from simindex.fingerprint import prepare
    from simindex.tokenize import words

    return bool(words(prepare(text, config), "chars"))

"""The files a command reads and writes, and the outputs it writes all or nothing.

A command never writes a file it reads: an output (dedup --out, --report)
that is one of the inputs, lies inside an input folder, is the file standard
input reads, is an index, or is the other output is refused before anything
is read; an index is never read as a document (given by name it is refused,
met in a folder it is skipped). "The same file" is the same resolved path
or, where both exist, the same st_dev and st_ino (hard links).

An output is written beside its final name as .NAME.partial and renamed into
place only when every output of the run is complete (``written_together``).
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import typer

from simindex import ingest
from simindex.cli.errors import UserError
from simindex.cli.output import counted, escaped

# --- what may be read, and what written ---------------------------------------------


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


def check_sources(index: str, paths: list[str]) -> list[str]:
    """Refuse a source that is the index (or its -wal, -shm, -journal); the
    index's files, for read_docs to skip where they are met in a folder."""
    from simindex.index_files import files_of, is_sqlite

    own = files_of(index)
    for source in paths:
        if source == ingest.STDIN:
            if any(_is_stdin(f) for f in own):
                raise UserError("standard input reads the index itself; it cannot be a document")
        elif not os.path.isdir(source) and any(_same_file(source, f) for f in own):
            raise UserError(f"{source} is the index (or one of its files); it cannot be a document")
        elif os.path.isfile(source) and is_sqlite(Path(source)):  # (never a pipe: isfile)
            raise UserError(f"{source} is a SQLite database (an index?), not a document")
    return own


def input_size(paths: list[str], skip: list[str] | None = None) -> int | None:
    """The bytes of text the sources hold, for a progress bar (None: not
    known, as for stdin). A command that fingerprints them says so to the
    compiled pass's switch (compiling.expect): a large input turns it on at
    the first text."""
    from simindex import compiling

    total = ingest.source_size(paths, skip=skip or ())
    compiling.expect(total)
    return total or None


def partial_name(path: str) -> str:
    """Where an output is written until the end: beside the file it names (a
    symbolic link's target: the link stays a link)."""
    final = Path(os.path.realpath(path))
    return str(final.with_name(f".{final.name}.partial"))


def in_place(path: str) -> bool:
    """Whether an output is written as it goes rather than renamed into place:
    a device, a pipe or a socket, or a name under /dev or /proc or a link
    into them (/dev/stdout is a link to a file descriptor: renaming over it
    would replace the link, and the output would not reach the descriptor)."""
    if stream_kind(path) is not None:
        return True
    if os.path.abspath(path).startswith(("/dev/", "/proc/")):
        return True
    return os.path.islink(path) and os.readlink(path).startswith(("/dev/", "/proc/"))


def standard_output(path: str) -> bool:
    """Whether an output is this process's standard output: '-', or a name
    of it (/dev/stdout, /dev/fd/1, /proc/self/fd/1 ...: the same file as
    descriptor 1), which a command gives to check_outputs and Outputs as
    '-', to be written through the descriptor: opening the name anew would
    truncate a file stdout is redirected to and write over what the shell
    wrote there before and after."""
    if path == "-":
        return True
    if not os.path.abspath(path).startswith(("/dev/", "/proc/")):
        return False
    try:
        return os.path.samestat(os.stat(path), os.fstat(sys.stdout.fileno()))
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return False


def check_outputs(outputs: list[tuple[str, str | None]], sources: list[str]) -> list[str]:
    """Refuse, before anything is read, outputs ((option, path), '-' for
    stdout) that would write over an input, an index or each other. Returns
    the output files (and their .partial files), for read_docs to skip."""
    from simindex.index_files import is_sqlite  # (SQLite reads the header, never open())

    files: list[tuple[str, str]] = []
    for option, path in outputs:
        if path is None:
            continue
        if path == "-":
            if any(p == "-" for _, p in files):
                raise UserError("--out and --report are the same file (standard output); give two")
            files.append((option, path))
            continue
        final = Path(path)
        if final.is_dir():
            raise UserError(f"{option} {path} is a folder; give a file name")
        kind = stream_kind(path)
        if kind == "block device":
            raise UserError(f"{option} {path} is a block device (a disk?); it is left alone")
        if not final.parent.is_dir():
            there = "is not a folder" if final.parent.exists() else "does not exist"
            raise UserError(f"cannot write {path}: its folder {final.parent} {there}")
        if kind is None and is_sqlite(final):  # (a pipe is never opened to look)
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
                for a in (path, partial_name(path))
                for b in (other, partial_name(other))
            ):
                raise UserError(
                    f"{other_option} {other} and {option} {path} are the same file; give two"
                )
        files.append((option, path))
    return [name for _, p in files if p != "-" for name in (p, partial_name(p))]


def stream_kind(path: str) -> str | None:
    """What an existing output that is not a regular file is ("character
    device", "pipe", "socket", "block device"), else None. Such an output is
    written in place: a device or pipe cannot be replaced by a renamed file
    (and must not be: `--out /dev/null` would become a file)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    for test, kind in (
        (stat.S_ISCHR, "character device"),
        (stat.S_ISFIFO, "pipe"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISBLK, "block device"),
    ):
        if test(mode):
            return kind
    return None


class Skipped:
    """Paths met in folders and passed over, told in one Note on stderr at
    the end: here the command's own files (``what``), or by the sentence
    ``say`` makes of the paths shown (see folders_without_files)."""

    def __init__(self, what: str, say: Callable[[list[str], str], str] | None = None) -> None:
        self.what = what
        self.say = say
        self.paths: list[str] = []

    def __call__(self, path: str) -> None:
        self.paths.append(path)

    def said(self, shown: str) -> str:
        if self.say is not None:
            return self.say(self.paths, shown)
        return f"skipped {self.what} found in the folders given: {shown}"

    def tell(self) -> None:
        if self.paths:
            shown = ", ".join(escaped(p, backslash=False) for p in self.paths)
            typer.echo(f"Note: {self.said(shown)}", err=True)


class NotText:
    """Files met in folders that cannot be read as text (read_docs'
    on_unreadable) or that have no words (``no_words``), skipped: counted,
    the first few kept, told once on stderr at the end and given in --json
    output."""

    FIRST = 5  # files named, with their reasons

    def __init__(self) -> None:
        self.count = 0
        self.first: list[tuple[str, str]] = []

    def __call__(self, path: str, reason: str) -> None:
        self.count += 1
        if len(self.first) < self.FIRST:
            self.first.append((path, reason))

    def tell(self) -> None:
        if not self.count:
            return
        shown = ", ".join(f"{escaped(p, backslash=False)} ({why})" for p, why in self.first)
        more = f", and {self.count - len(self.first)} more" if self.count > len(self.first) else ""
        typer.echo(
            f"Note: skipped {counted(self.count, 'file')} found in the folders given that cannot "
            f"be read as text or have no words: {shown}{more} (--strict makes them errors)",
            err=True,
        )

    def no_words(self, doc: ingest.Doc) -> None:
        """A file found in a folder that has no words, skipped as the others are."""
        self(doc.where, "no words" if doc.text.strip() else "empty")

    def as_json(self) -> dict[str, object]:
        return {
            "count": self.count,
            "first": [{"file": path, "reason": why} for path, why in self.first],
        }


def _no_file_found(paths: list[str], shown: str) -> str:
    folders = "folder" if len(paths) == 1 else "folders"
    return f"found no file to read in the {folders} {shown} (hidden files are not read)"


def folders_without_files() -> Skipped:
    """Folders given in which no file was found to read (read_docs'
    on_empty_folder), told in one Note on stderr at the end."""
    return Skipped("folders with no file to read", _no_file_found)


# --- writing ------------------------------------------------------------------------


class Writer:
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


class Outputs:
    """The files a command writes, each written beside its final name as
    .NAME.partial and renamed into place only when all of them are complete.
    ``open`` gives a text stream; ``open_bytes`` a binary one, for an output
    compressed or in a binary format (simindex.cli.records writes those).

    A run that fails in any way (an error, a full disk, Ctrl-C) removes every
    .partial and leaves the final names as they were. If a rename fails at
    the very end, the outputs already renamed are removed too: a failed run
    leaves no output behind (a file the run had replaced is gone then).
    """

    def __init__(self) -> None:
        self._files: list[tuple[Path, Path, IO[Any]]] = []
        self._streams: list[tuple[str, IO[Any]]] = []  # devices and pipes, written in place

    def open(self, path: str | None) -> Writer | None:
        if path is None:
            return None
        if path == "-":
            return Writer(sys.stdout, "standard output")
        return Writer(self._open(path, "w"), path)

    def open_bytes(self, path: str) -> IO[bytes]:
        """A binary stream of an output ('-': standard output's bytes, not
        closed at the end)."""
        if path == "-":
            sys.stdout.flush()
            return sys.stdout.buffer
        return self._open(path, "wb")

    def _open(self, path: str, mode: str) -> IO[Any]:
        encoding = None if "b" in mode else "utf-8"
        if in_place(path):  # /dev/null, a pipe, /dev/stderr: written as it goes
            try:
                direct = open(path, mode, encoding=encoding)  # noqa: SIM115 (closed in commit/discard)
            except OSError as exc:
                raise UserError(f"cannot write {path}: {exc.strerror or exc}") from exc
            self._streams.append((path, direct))
            return direct
        final = Path(os.path.realpath(path))  # through a link: its target is replaced
        partial = Path(partial_name(path))
        try:
            stream = open(partial, mode, encoding=encoding)  # noqa: SIM115 (closed in commit/discard)
        except OSError as exc:
            raise UserError(f"cannot write {path}: {exc.strerror or exc}") from exc
        self._files.append((final, partial, stream))
        return stream

    def commit(self) -> None:
        try:
            sys.stdout.flush()  # what went to stdout ('-') fails here, if it fails
            for name, direct in self._streams:
                try:
                    direct.close()
                except OSError as exc:
                    raise UserError(f"cannot write {name}: {exc.strerror or exc}") from exc
            self._streams.clear()
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
        for _, direct in self._streams:
            with contextlib.suppress(OSError):
                direct.close()
        self._streams.clear()
        for _, partial, stream in self._files:
            with contextlib.suppress(OSError):
                stream.close()
            with contextlib.suppress(OSError):
                partial.unlink(missing_ok=True)
        self._files.clear()


@contextlib.contextmanager
def written_together() -> Iterator[Outputs]:
    """Outputs committed together when the block ends, discarded if it raises."""
    outputs = Outputs()
    try:
        yield outputs
    except BaseException:
        outputs.discard()
        raise
    outputs.commit()

"""Fingerprinting documents in worker processes, in order, with bounded memory.

``fingerprint_docs`` computes their fingerprints in worker processes, in
chunks, with a bounded number of chunks in flight: it reads its input only a
few chunks ahead of its consumer, and yields exactly what fingerprinting in
this process would, in the same order (then raises the same error, if any).

Start method: "forkserver" where the platform has it (Linux, macOS), else
"spawn" (Windows); never "fork", which copies the parent's threads' locks in
whatever state they are in (a progress bar's refresh thread, SQLAlchemy's pool)
and can deadlock. Almost all of a worker's start-up is ``import simindex``
(0.3 s, mostly SQLAlchemy and numpy): "spawn" pays it in every worker, every
pool; "forkserver" pays it once, in the server, which preloads this module, and
forks warm workers from it. Measured on 2 cores (Python 3.11), 2 workers, time
to the first results and to shut down: spawn 0.50 s + 0.15 s for every pool;
forkserver 0.33 s + 0.01 s for the first pool, 0.01 s + 0.01 s for each later
one. (Python 3.11's server ignores the parent's sys.path; if simindex is not
importable there, e.g. a checkout run from another directory, the preload is
skipped and each worker imports simindex itself, as with "spawn".) jieba
(0.8 s, 125 MB a process) is loaded by a worker only when it meets Chinese or
Japanese text.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import traceback
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

from simindex import compiling, fastmarks
from simindex.costs import usable_cpus as usable_cpus  # (simindex.ingest gives it)
from simindex.errors import EmptyTextError, InvalidArgumentError
from simindex.fingerprint import DEFAULT_CONFIG, FingerprintConfig
from simindex.ingest.doc import Doc
from simindex.signals import starting_processes
from simindex.signature import fingerprint_and_signature, marks_of_many

_MAX_CHUNK_CHARS = 1 << 20  # a chunk also ends at this many characters: big documents


def fingerprint_docs(
    docs: Iterable[Doc],
    config: FingerprintConfig,
    *,
    workers: int | None = None,
    chunk_size: int = 256,
    ahead: bool = True,
) -> Iterator[tuple[Doc, int | None, bytes | None]]:
    """Each document with its fingerprint and verification signature (both
    None if it has no words), in input order.

    ``workers``: processes to use (default: the CPUs this process may use);
    1 or fewer fingerprints here, with no pool. Documents are fingerprinted in
    chunks of ``chunk_size`` (or fewer, up to about a million characters), a
    chunk in one call of the compiled pass where it serves: here, a chunk
    read only once the consumer asks past the one before (a document waits
    for no input after its chunk's: add_many's batches), but with ``ahead``
    while the compiled pass runs, a chunk ahead, fingerprinted in a thread
    while the consumer takes the one before (the loop lets go of the GIL);
    in the workers, at
    most two chunks a worker in flight, so the input is read only that far
    ahead. An input that fits in one chunk is done here: a pool would
    only add its start-up. An error (other than no words) stops it after the
    documents before the one that failed, as it would in one process; so does an
    error raised by ``docs`` itself. Stopping early (``close()``, an exception,
    Ctrl-C) cancels the queued chunks and waits for the workers to exit.
    """
    if not isinstance(config, FingerprintConfig):
        raise InvalidArgumentError(
            f"config must be a FingerprintConfig, not {type(config).__name__}"
        )
    for name, value in (("workers", workers), ("chunk_size", chunk_size)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise InvalidArgumentError(f"{name} must be a whole number, not {value!r}")
    if chunk_size < 1:
        raise InvalidArgumentError(f"chunk_size must be at least 1, not {chunk_size}")
    count = usable_cpus() if workers is None else workers
    if count <= 1:
        return _serial(_Chunks(iter(docs), chunk_size, BaseException), config, ahead=ahead)
    return _parallel(iter(docs), config, count, chunk_size)


Marks = tuple[int, bytes] | tuple[None, None]  # a fingerprint and a signature, or neither


def _fingerprint(text: str, config: FingerprintConfig) -> Marks:
    try:
        return fingerprint_and_signature(text, config)
    except EmptyTextError:
        return None, None


def _marks_of(texts: list[str], config: FingerprintConfig) -> _Result:
    """Fingerprints and signatures of texts, up to the first error: (done,
    error, its traceback). All of them in one call where it can
    (signature.marks_of_many); after an error, one at a time to find the
    text that raised it."""
    try:
        return [(None, None) if m is None else m for m in marks_of_many(texts, config)], None, ""
    except Exception:
        pass
    done: list[Marks] = []
    try:
        for text in texts:
            done.append(_fingerprint(text, config))
    except Exception as exc:
        return done, exc, traceback.format_exc()
    return done, None, ""


def _marked(
    chunk: list[Doc], result: _Result, *, worker: bool
) -> Iterator[tuple[Doc, int | None, bytes | None]]:
    """A chunk's documents with their marks, up to the one that failed; then its error."""
    done, error, trace = result
    for doc, (fingerprint, signature) in zip(chunk[: len(done)], done, strict=True):
        yield doc, fingerprint, signature
    if error is not None:
        if worker:
            raise error from _WorkerTraceback(trace)
        raise error


class _Chunks:
    """The source's documents a chunk at a time: ``size`` of them, or fewer
    up to about a million characters. An error the source raises ends the
    chunk it was taking; ``end`` raises it after the documents before it.
    ``held``: what is held so (in this process, a Ctrl-C too: the documents
    read before it are still written, as they were one at a time)."""

    def __init__(
        self, source: Iterator[Doc], size: int, held: type[BaseException] = Exception
    ) -> None:
        self._source = source
        self._size = size
        self._held = held
        self._failure: list[BaseException] = []
        self._ended = False

    def take(self) -> list[Doc]:
        chunk: list[Doc] = []
        chars = 0
        if self._failure or self._ended:
            return chunk
        try:
            for doc in self._source:
                chunk.append(doc)
                chars += len(doc.text) if isinstance(doc.text, str) else 0
                if len(chunk) >= self._size or chars >= _MAX_CHUNK_CHARS:
                    break
            else:
                self._ended = True  # (not asked again: a terminal would wait)
        except self._held as exc:
            self._failure.append(exc)
        return chunk

    def end(self) -> None:
        if self._failure:
            raise self._failure[0]


def _serial(
    chunks: _Chunks, config: FingerprintConfig, *first: list[Doc], ahead: bool = True
) -> Iterator[tuple[Doc, int | None, bytes | None]]:
    """The chunks fingerprinted in this process. With ``ahead``, while the
    compiled pass runs (fastmarks.running), a chunk ahead of the consumer,
    in a thread of its own, as the loop lets go of the GIL (so it
    fingerprints while this thread reads the next chunk and the consumer
    decides or writes). Else a chunk at a time, in this thread (the Python
    path holds the GIL: reading ahead would gain nothing)."""
    pending: deque[tuple[list[Doc], Future[_Result]]] = deque()
    with ThreadPoolExecutor(1, thread_name_prefix="simindex-fingerprints") as pool:

        def threaded() -> bool:  # (the Python path reads no chunk ahead: it would gain nothing)
            return ahead and fastmarks.running(config)

        def submit(chunk: list[Doc]) -> None:
            texts = [d.text for d in chunk]
            if threaded():
                future = pool.submit(_marks_of, texts, config)
            else:
                future = Future()
                future.set_result(_marks_of(texts, config))
            pending.append((chunk, future))

        try:
            for chunk in first:
                if chunk:
                    submit(chunk)
            while True:
                while len(pending) < (2 if threaded() else 1) and (chunk := chunks.take()):
                    submit(chunk)
                if not pending:
                    break
                chunk, future = pending.popleft()
                yield from _marked(chunk, future.result(), worker=False)
            chunks.end()
        finally:
            for _, future in pending:  # (stopped early: the chunk under way ends first)
                future.cancel()


# In a worker process: the configuration, set once by _init_worker.
_worker_config = DEFAULT_CONFIG

_Result = tuple[list[Marks], Exception | None, str]


def _init_worker(config: FingerprintConfig, relay: Any = None, mode: str = "auto") -> None:
    global _worker_config
    # Ctrl-C reaches the whole process group: the parent handles it and stops
    # the pool; a worker interrupted mid-chunk would only print a traceback.
    # (Started by _parallel, a worker has SIGINT blocked from its first
    # instruction; this covers a fork server someone else started.)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker_config = config
    compiling.use(mode)  # the parent's switch for compiled code
    if relay is not None:
        _relayed_to(relay)
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(
            target=_end_with, args=(parent,), name="end-with-parent", daemon=True
        ).start()


def _relayed_to(relay: Any) -> None:
    """In a worker: numba compiling here is told to the parent's listeners
    (through _Relay's queue)."""
    compiling.listen(lambda event, begun: relay.put((event, begun)))


def _end_with(parent: multiprocessing.process.BaseProcess) -> None:
    """In a worker: wait for the parent process to end, however it ends
    (SIGKILL too, which runs none of its clean-up), then end this process at
    once. The parent's end is seen as the end of a pipe only the parent
    holds (multiprocessing's parent sentinel), without polling. A worker that
    outlived its parent would wait for work forever, and keep the fork
    server and the resource tracker alive with it (they end when the last
    process that holds their pipes does)."""
    parent.join()
    os._exit(1)


def _fingerprint_chunk(texts: list[str], switch: bool = False) -> _Result:
    """Fingerprints and signatures of texts, up to the first error: (done,
    error, its traceback). ``switch``: the job has read enough for the
    compiled pass to pay (see _parallel): with the switch at "auto", it
    turns on here now."""
    if switch and compiling.mode() == "auto":
        compiling.use("always")
    return _marks_of(texts, _worker_config)


class _WorkerTraceback(Exception):
    """Where an error happened in a worker process (shown as the error's cause)."""

    def __str__(self) -> str:
        return f'\n"""\n{self.args[0]}"""'


def _context() -> multiprocessing.context.BaseContext:
    """The "forkserver" context, preloading this module, or "spawn" where there is none."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    from multiprocessing import forkserver

    # The server imports simindex once and each worker is a fork of it, warm.
    # The preload list is the process's: add to it, keep what others put there.
    # It is read when the server starts (first use), and an import that fails
    # there is skipped: the workers then import simindex themselves.
    server = getattr(forkserver, "_forkserver", None)
    preload = list(getattr(server, "_preload_modules", None) or ["__main__"])
    if __name__ not in preload:
        forkserver.set_forkserver_preload([*preload, __name__])
    return multiprocessing.get_context("forkserver")


def _start_resource_tracker() -> None:
    """Start multiprocessing's resource tracker now, if it is not running
    (POSIX). Starting it unblocks SIGINT in the thread that starts it: it
    must not start in the middle of starting_processes' block, between the
    block's start and the fork server's."""
    if os.name == "posix":
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()


def _parallel(
    source: Iterator[Doc], config: FingerprintConfig, workers: int, chunk_size: int
) -> Iterator[tuple[Doc, int | None, bytes | None]]:
    chunks = _Chunks(source, chunk_size)
    first = chunks.take()
    second = chunks.take()
    if not second:  # all of it in one chunk: no pool
        yield from _serial(chunks, config, first)
        return

    with starting_processes():
        _start_resource_tracker()
        context = _context()
        relay = _Relay(context) if compiling.listened() else None
        executor = ProcessPoolExecutor(
            max_workers=workers,
            mp_context=context,
            initializer=_init_worker,
            initargs=(config, None if relay is None else relay.queue, compiling.mode()),
        )
    pending: deque[tuple[list[Doc], Future[_Result]]] = deque()
    sent = [0]  # characters sent to the workers

    def submit(chunk: list[Doc]) -> None:
        texts = [d.text for d in chunk]
        # With the switch at "auto", the workers turn the compiled pass on
        # once the job has sent SWITCH_CHARS characters in all (or expects
        # to: compiling.expect), not each after as many of its own.
        switch = fastmarks.due(sent[0])
        sent[0] += sum(len(t) for t in texts if isinstance(t, str))
        with starting_processes():  # a submit may start a worker (the first, the fork server)
            future = executor.submit(_fingerprint_chunk, texts, switch)
        pending.append((chunk, future))

    try:
        submit(first)
        submit(second)
        del first, second
        ended = False
        while pending:
            while not ended and len(pending) < 2 * workers:
                chunk = chunks.take()
                if chunk:
                    submit(chunk)
                else:
                    ended = True
            chunk, future = pending.popleft()
            result = future.result()
            del future
            yield from _marked(chunk, result, worker=True)
        chunks.end()
    finally:
        # Normal end, an error, or the consumer stopped (GeneratorExit): drop
        # the queued chunks, let the workers finish the ones they hold, and
        # wait for them to exit, so no process outlives this generator.
        for _, future in pending:
            future.cancel()
        pending.clear()
        executor.shutdown(wait=True, cancel_futures=True)
        if relay is not None:
            relay.close()


class _Relay:
    """What the workers tell simindex.compiling, told again in this process
    (from a thread of its own, as it comes): a worker that compiles numba's
    loops says so on the parent's progress bar."""

    def __init__(self, context: multiprocessing.context.BaseContext) -> None:
        self.queue = context.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="compiling-relay", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for event, begun in iter(self.queue.get, None):
            compiling.tell(event, begun)

    def close(self) -> None:
        """Once the workers have exited: what they told, told, and the thread ended."""
        self.queue.put(None)
        self._thread.join()
        self.queue.close()

"""The workers of tests/test_stress.py, and the replay that checks what they did.

Run as a script, this is one process of the multi-process stress test::

    python tests/stress_worker.py writer N PLAN.json LOG.jsonl
    python tests/stress_worker.py reader N PLAN.json -
    python tests/stress_worker.py stuck 0 PLAN.json -

It imports only the standard library and simindex (the test puts the same
simindex on PYTHONPATH that it imports itself). A worker opens the index,
says it is ready, waits for the go file, works until its time is up, prints
one JSON line of counts and exits 0; on any exception or broken invariant it
prints the traceback and exits 1. The test imports the same classes to run
them in threads.

Writers log every operation to a JSON Lines file, flushed: an intent line
``{"s": seq, "op": name, "t": start, "e": [[key, fingerprint or null], ...]}``
written before the call and an acknowledgement ``{"a": seq, "t": end}``
written after it returned. ``t`` is ``time.monotonic()``, one clock for every
process of the machine. ``replay`` turns the logs into the final content each
key may have (see its docstring for the rule).
"""

from __future__ import annotations

import json
import random
import re
import sys
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

MASK64 = (1 << 64) - 1
KEY_RE = re.compile(r"(w\d+-(键)?\d+|c-\d+|fixed-\d+)\Z")

# Words for texts: English-like syllable words, and Chinese words (jieba segments them).
_SYLLABLES = ["ka", "lo", "mi", "ren", "tas", "vo", "quel", "dri", "pan", "sot", "ux", "bel"]
_CHINESE = ["今天", "天气", "很好", "我们", "公园", "散步"]
_CHINESE += ["图书馆", "开放", "时间", "调整", "公交", "线路"]


class Violation(AssertionError):
    """A result that breaks an invariant the stress test checks."""


def own_key(writer: int, i: int) -> str:
    return f"w{writer}-键{i}" if i % 5 == 0 else f"w{writer}-{i}"


def contested_key(j: int) -> str:
    return f"c-{j}"


def make_plan(
    path: str,
    *,
    seconds: float,
    writers: int,
    seed: int = 20240901,
    own: int = 150,
    contested: int = 24,
) -> dict[str, Any]:
    """Everything the workers share: the index, the key spaces, fingerprints and texts.

    Fingerprints are a few bits away from a handful of bases (among them 0,
    2**64 - 1 and both sides of 2**63, where signed storage could go wrong),
    so queries find several matches at several distances.
    """
    rng = random.Random(seed)
    bases = [0, MASK64, 1 << 63, (1 << 63) - 1] + [rng.getrandbits(64) for _ in range(20)]
    fixed = {f"fixed-{i}": flip(rng, bases[i % len(bases)], rng.randint(0, 3)) for i in range(48)}
    vocab = list(dict.fromkeys(a + b for a in _SYLLABLES for b in _SYLLABLES))
    texts = [" ".join(rng.choice(vocab) for _ in range(40)) for _ in range(12)]
    texts += ["".join(rng.choice(_CHINESE) for _ in range(30)) for _ in range(3)]
    return {
        "path": path,
        "seconds": seconds,
        "writers": writers,
        "own": own,
        "contested": contested,
        "bases": bases,
        "fixed": fixed,
        "vocab": vocab,
        "texts": texts,
        "seed": seed,
    }


def flip(rng: random.Random, fingerprint: int, bits: int) -> int:
    """The fingerprint with `bits` distinct random bits flipped."""
    for b in rng.sample(range(64), bits):
        fingerprint ^= 1 << b
    return fingerprint


class Log(Protocol):
    def write(self, line: str, /) -> Any: ...
    def flush(self) -> Any: ...


class MemoryLog:
    """A log kept in a list (for threads), with the file API the writer uses."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def write(self, line: str) -> None:
        self.lines.append(line)

    def flush(self) -> None:
        pass


def mutate(rng: random.Random, text: str, plan: dict[str, Any]) -> str:
    """A lightly edited copy: a few words replaced (or characters, for Chinese)."""
    if " " in text:
        words = text.split()
        for _ in range(rng.randint(0, 3)):
            words[rng.randrange(len(words))] = rng.choice(plan["vocab"])
        return " ".join(words)
    chars = list(text)
    for _ in range(rng.randint(0, 2)):
        chars[rng.randrange(len(chars))] = rng.choice("".join(_CHINESE))
    return "".join(chars)


# --- checks shared by readers and writers -------------------------------------


def check_matches(
    query: int,
    matches: list[Any],
    k: int,
    limit: int | None,
    where: str,
    threshold: float | None = None,
) -> None:
    """A result on its own: distances are the popcount of the xor, within k,
    sorted by (distance, key), each key once, at most `limit` of them. A
    text's query (``threshold``, its index's) may also match beyond k a row
    found by its keys (signature.meets), and so with a similarity at least
    the threshold it needs (signature.threshold_for: lower for two texts of
    CJK characters)."""
    from simindex.signature import characters_threshold

    if limit is not None and len(matches) > limit:
        raise Violation(f"{where}: {len(matches)} matches for limit={limit}")
    previous: tuple[int, str] | None = None
    for m in matches:
        if not isinstance(m.fingerprint, int) or not 0 <= m.fingerprint <= MASK64:
            raise Violation(f"{where}: fingerprint out of range in {m}")
        if not isinstance(m.key, str) or not KEY_RE.match(m.key):
            raise Violation(f"{where}: a key no worker wrote: {m.key!r}")
        true = (m.fingerprint ^ query).bit_count()
        if m.distance != true:
            raise Violation(f"{where}: {m} says distance {m.distance}, the xor has {true} bits")
        # (two longer texts of CJK characters need the lower threshold_for)
        least = None if not threshold else min(threshold, characters_threshold(threshold))
        keyed = least is not None and m.similarity is not None and m.similarity >= least
        if m.distance > k and not keyed:
            raise Violation(f"{where}: {m} is further than k={k}")
        order = (m.distance, m.key)
        if previous is not None and order <= previous:
            raise Violation(f"{where}: not sorted by (distance, key) or a key twice: {matches}")
        previous = order


def must_contain(
    matches: list[Any], key: str, fingerprint: int, query: int, limit: int | None, where: str
) -> None:
    """A key that is stored (and does not change) is in a result that reaches it."""
    d = (fingerprint ^ query).bit_count()
    if limit is not None and len(matches) == limit:
        last = matches[-1]
        if (d, key) > (last.distance, last.key):
            return  # cut off by the limit, rightly
    if (key, d, fingerprint) not in [(m.key, m.distance, m.fingerprint) for m in matches]:
        raise Violation(
            f"{where}: {key} ({fingerprint:#x}, distance {d}) is missing from {matches}"
        )


# --- writers -------------------------------------------------------------------


class Writer:
    """Random writes on one writer's own keys and on the keys all writers share.

    Every call is logged (intent, then acknowledgement). The writer knows its
    own keys exactly (nobody else writes them), so it also checks remove's
    answers and reads its own writes back, through this index and through
    ``view`` (another SimIndex on the same file: a separate connection pool,
    as another process would have).
    """

    def __init__(
        self,
        index: Any,
        plan: dict[str, Any],
        n: int,
        rng: random.Random,
        log: Log,
        *,
        view: Any = None,
        reopen: Callable[[Any], Any] | None = None,
    ) -> None:
        self.index, self.plan, self.n, self.rng, self.log = index, plan, n, rng, log
        self.view, self.reopen = view, reopen
        self.model: dict[str, int] = {}  # own key -> fingerprint, as acknowledged
        self.seq = 0
        self.acked: Counter[str] = Counter()
        self.k = index.k

    # keys and values

    def _own(self) -> str:
        return own_key(self.n, self.rng.randrange(self.plan["own"]))

    def _contested(self) -> str:
        return contested_key(self.rng.randrange(self.plan["contested"]))

    def _key(self) -> str:
        return self._contested() if self.rng.random() < 0.2 else self._own()

    def _fingerprint(self) -> int:
        return flip(self.rng, self.rng.choice(self.plan["bases"]), self.rng.randint(0, 6))

    def _is_own(self, key: str) -> bool:
        return key.startswith(f"w{self.n}-")

    # one logged call

    def _do(
        self, op: str, effects: Sequence[tuple[str, int | None]], call: Callable[[], Any]
    ) -> Any:
        self.seq += 1
        seq = self.seq
        self.log.write(json.dumps({"s": seq, "op": op, "t": time.monotonic(), "e": effects}) + "\n")
        self.log.flush()
        result = call()
        self.log.write(json.dumps({"a": seq, "t": time.monotonic()}) + "\n")
        self.log.flush()
        self.acked[op] += 1
        for key, fp in effects:  # in order: the last one for a key wins
            if self._is_own(key):
                if fp is None:
                    self.model.pop(key, None)
                else:
                    self.model[key] = fp
        return result

    def step(self) -> None:
        r = self.rng.random()
        ix = self.index
        if r < 0.22:
            key, fp = self._key(), self._fingerprint()
            self._do("add_fingerprint", [(key, fp)], lambda: ix.add_fingerprint(key, fp))
        elif r < 0.40:
            pairs = [(self._key(), self._fingerprint()) for _ in range(self.rng.randint(1, 8))]
            if self.rng.random() < 0.2:  # a key twice in one batch: the later one wins
                pairs.append((pairs[0][0], self._fingerprint()))
            if self.rng.random() < 0.5:
                source: Iterable[tuple[str, int]] = pairs
            else:  # a stream, as the API allows
                source = iter(pairs)
            got = self._do("add_fingerprints", pairs, lambda: ix.add_fingerprints(source))
            if got != len(pairs):
                raise Violation(f"add_fingerprints of {len(pairs)} pairs returned {got}")
        elif r < 0.52:
            key = self._key()
            text = mutate(self.rng, self.rng.choice(self.plan["texts"]), self.plan)
            expected = ix.fingerprint(text)
            got = self._do("add", [(key, expected)], lambda: ix.add(key, text))
            if got != expected:
                raise Violation(
                    f"add({key!r}) returned {got:#x}, not fingerprint()'s {expected:#x}"
                )
        elif r < 0.66:
            key = self._key()
            was = key in self.model
            removed = self._do("remove", [(key, None)], lambda: ix.remove(key))
            if self._is_own(key) and removed != was:
                raise Violation(f"remove({key!r}) returned {removed}; the key was stored: {was}")
        elif r < 0.78:
            keys = [self._key() for _ in range(self.rng.randint(2, 8))]
            unique = list(dict.fromkeys(keys))
            own_there = sum(1 for k in unique if k in self.model)
            shared = sum(1 for k in unique if not self._is_own(k))
            count = self._do("remove_many", [(k, None) for k in keys], lambda: ix.remove_many(keys))
            if not own_there <= count <= own_there + shared:
                raise Violation(
                    f"remove_many({keys}) returned {count}: {own_there} own keys were stored, "
                    f"and {shared} shared keys may have been"
                )
        elif r < 0.995:
            self.verify()
        elif self.reopen is not None:
            self.index = self.reopen(self.index)
            if self.index.k != self.k:
                raise Violation(f"reopened with k={self.index.k}, not {self.k}")

    def verify(self) -> None:
        """Read this writer's own writes back: get, query and a large query_many."""
        for ix, name in ((self.index, "index"), (self.view, "view")):
            if ix is None:
                continue
            for _ in range(3):
                key = self._own()
                got = ix.get(key)
                want = self.model.get(key)
                if got != want:
                    raise Violation(f"{name}.get({key!r}) = {got!r}, written: {want!r}")
            if not self.model:
                continue
            key, fp = self.rng.choice(list(self.model.items()))
            matches = ix.query(fp)
            check_matches(fp, matches, self.k, None, f"{name}.query({fp:#x})")
            must_contain(matches, key, fp, fp, None, f"{name}.query after writing {key}")
            if self.rng.random() < 0.3:  # large: answered in memory
                sample = self.rng.sample(list(self.model.items()), min(300, len(self.model)))
                queries = [fp for _, fp in sample]
                queries += [self._fingerprint() for _ in range(300 - len(queries))]
                results = ix.query_many(queries)
                for (key, fp), matches in zip(sample, results[: len(sample)], strict=True):
                    check_matches(fp, matches, self.k, None, f"{name}.query_many")
                    must_contain(matches, key, fp, fp, None, f"{name}.query_many after writing")


# --- readers -------------------------------------------------------------------


class Reader:
    """Random reads, each result checked on its own and against the fixed keys
    (stored before the workers start, never written again: every read must see them)."""

    def __init__(
        self,
        index: Any,
        plan: dict[str, Any],
        rng: random.Random,
        *,
        reopen: Callable[[Any], Any] | None = None,
    ) -> None:
        self.index, self.plan, self.rng, self.reopen = index, plan, rng, reopen
        self.fixed: dict[str, int] = plan["fixed"]
        self.fixed_items = list(self.fixed.items())
        self.done: Counter[str] = Counter()
        self.in_memory = 0  # large query_many batches after which a snapshot was kept
        self.k = index.k
        self.max_keys = plan["writers"] * plan["own"] + plan["contested"] + len(self.fixed)

    def _query(self) -> tuple[int, tuple[str, int] | None]:
        """A query fingerprint, and the fixed key it was made from (if any)."""
        r = self.rng.random()
        if r < 0.5:
            key, fp = self.rng.choice(self.fixed_items)
            return flip(self.rng, fp, self.rng.randint(0, self.k)), (key, fp)
        if r < 0.9:
            return flip(self.rng, self.rng.choice(self.plan["bases"]), self.rng.randint(0, 5)), None
        return self.rng.getrandbits(64), None

    def _check(
        self,
        q: int,
        source: tuple[str, int] | None,
        matches: list[Any],
        k: int,
        limit: int | None,
        where: str,
        threshold: float | None = None,
    ) -> None:
        check_matches(q, matches, k, limit, where, threshold)
        for m in matches:
            if m.key in self.fixed and m.fingerprint != self.fixed[m.key]:
                raise Violation(f"{where}: fixed key {m.key} came back as {m.fingerprint:#x}")
        if source is not None and (source[1] ^ q).bit_count() <= k:
            must_contain(matches, source[0], source[1], q, limit, where)

    def step(self) -> None:
        r = self.rng.random()
        ix = self.index
        if r < 0.30:
            q, source = self._query()
            k = self.rng.randint(0, self.k)
            limit = self.rng.choice([None, None, 1, 3])
            self._check(q, source, ix.query(q, k=k, limit=limit), k, limit, f"query({q:#x}, k={k})")
            self.done["query"] += 1
        elif r < 0.38:
            text = mutate(self.rng, self.rng.choice(self.plan["texts"]), self.plan)
            q = ix.fingerprint(text)
            self._check(q, None, ix.query(text), self.k, None, "query(text)", ix.threshold)
            self.done["query_text"] += 1
        elif r < 0.56:
            big = r >= 0.46
            n = self.rng.randint(300, 600) if big else self.rng.randint(2, 40)
            queries = [self._query() for _ in range(n)]
            limit = self.rng.choice([None, None, 2])
            results = ix.query_many([q for q, _ in queries], limit=limit)
            if len(results) != n:
                raise Violation(f"query_many of {n} queries gave {len(results)} results")
            for (q, source), matches in zip(queries, results, strict=True):
                self._check(q, source, matches, self.k, limit, f"query_many[{n}]({q:#x})")
            self.done["query_many_large" if big else "query_many_small"] += 1
            if big and ix.stats()["held_in_memory_bytes"] > 0:
                self.in_memory += 1  # diagnostics only: it reads an internal name
        elif r < 0.76:
            if self.rng.random() < 0.5:
                key, fp = self.rng.choice(self.fixed_items)
                got = ix.get(key)
                if got != fp:
                    raise Violation(f"get({key!r}) = {got!r}, not the fixed {fp:#x}")
                if key not in ix:
                    raise Violation(f"{key!r} in index is False for a fixed key")
            else:
                writer = self.rng.randrange(self.plan["writers"])
                key = own_key(writer, self.rng.randrange(self.plan["own"]))
                got = ix.get(key)
                if got is not None and not (isinstance(got, int) and 0 <= got <= MASK64):
                    raise Violation(f"get({key!r}) = {got!r}")
            self.done["get"] += 1
        elif r < 0.84:
            n = len(ix)
            if not len(self.fixed) <= n <= self.max_keys:
                raise Violation(f"len() = {n}, not between {len(self.fixed)} and {self.max_keys}")
            self.done["len"] += 1
        elif r < 0.92:
            items = list(ix.items())
            keys = [k for k, _ in items]
            if len(set(keys)) != len(keys):
                raise Violation("items() gave a key twice")
            content = dict(items)
            for key, fp in self.fixed_items:
                if content.get(key) != fp:
                    raise Violation(f"items() has {key} as {content.get(key)!r}, not {fp:#x}")
            for key, fp in items:
                if not KEY_RE.match(key) or not 0 <= fp <= MASK64:
                    raise Violation(f"items() gave ({key!r}, {fp!r})")
            self.done["items"] += 1
        elif r < 0.98:
            key, fp = self.rng.choice(self.fixed_items)
            q = flip(self.rng, fp, self.k + 2)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # FullScanWarning, expected
                matches = ix.query(q, k=self.k + 2)
            self._check(q, (key, fp), matches, self.k + 2, None, f"query({q:#x}, k={self.k + 2})")
            self.done["query_full_scan"] += 1
        elif self.reopen is not None:
            self.index = self.reopen(self.index)
            self.done["reopen"] += 1


# --- replay --------------------------------------------------------------------


def parse_log(lines: Iterable[str]) -> list[dict[str, Any]]:
    """A writer's operations in order: {"seq", "op", "start", "end" (None if
    never acknowledged), "effects": {key: fingerprint or None}, last one wins}."""
    ops: dict[int, dict[str, Any]] = {}
    for line in lines:
        if not line.endswith("\n"):
            continue  # a line cut short by a killed process: that op never acked
        record = json.loads(line)
        if "s" in record:
            effects: dict[str, int | None] = {}
            for key, fp in record["e"]:
                effects[key] = fp
            ops[record["s"]] = {
                "seq": record["s"],
                "op": record["op"],
                "start": record["t"],
                "end": None,
                "effects": effects,
            }
        else:
            ops[record["a"]]["end"] = record["t"]
    return [ops[s] for s in sorted(ops)]


def allowed_final(logs: dict[int, list[dict[str, Any]]]) -> dict[str, set[int | None]]:
    """The values each written key may have at the end (None: absent).

    Each operation takes effect at one instant between its start (logged
    before the call) and its end (logged after it returned). For each key
    and writer, only two operations can be the last effect on it: the
    writer's last acknowledged one (A), and an unacknowledged one after it
    (U: the call raised or the process died; it may or may not have taken
    effect). The final value of a key is the effect that came last overall:

    - U's value is always possible;
    - A's value is possible unless some other writer's A' started after A
      ended (then A' certainly took effect later);
    - absent-as-never-written is possible only if no writer has an A.

    For a writer's own keys (one writer) this is exact: the last acknowledged
    value, or also U's. For the contested keys it is stricter than "one of the
    acknowledged values": only a writer's last value on the key qualifies,
    and only if no other writer's last write on it certainly followed.
    """
    per_key: dict[str, dict[int, tuple[dict[str, Any] | None, dict[str, Any] | None]]] = {}
    for writer, ops in logs.items():
        for op in ops:
            for key in op["effects"]:
                last_acked, unacked = per_key.setdefault(key, {}).get(writer, (None, None))
                if op["end"] is not None:
                    per_key[key][writer] = (op, None)
                else:
                    per_key[key][writer] = (last_acked, op)
    allowed: dict[str, set[int | None]] = {}
    for key, writers in per_key.items():
        values: set[int | None] = set()
        acked = {w: a for w, (a, _) in writers.items() if a is not None}
        for w, (a, u) in writers.items():
            if u is not None:
                values.add(u["effects"][key])
            if a is not None and not any(
                other["start"] > a["end"] for v, other in acked.items() if v != w
            ):
                values.add(a["effects"][key])
        if not acked:
            values.add(None)
        allowed[key] = values
    return allowed


def final_problems(
    content: dict[str, int], allowed: dict[str, set[int | None]], fixed: dict[str, int]
) -> list[str]:
    """Where the index's final content breaks the replayed logs."""
    problems = []
    for key, fp in fixed.items():
        if content.get(key) != fp:
            problems.append(f"fixed key {key}: {content.get(key)!r}, stored as {fp:#x}")
    for key, values in sorted(allowed.items()):
        got = content.get(key)
        if got not in values:
            shown = sorted("absent" if v is None else hex(v) for v in values)
            problems.append(
                f"{key}: {'absent' if got is None else hex(got)}, expected one of {shown}"
            )
    for key in sorted(set(content) - set(allowed) - set(fixed)):
        problems.append(f"{key}: stored ({content[key]:#x}) but never written")
    return problems


def acknowledged(ops: list[dict[str, Any]]) -> int:
    return sum(1 for op in ops if op["end"] is not None)


# --- the script ----------------------------------------------------------------


def _wait_for_go(plan: dict[str, Any], name: str) -> None:
    go = Path(plan["go"])
    Path(f"{plan['go']}.ready.{name}").touch()
    deadline = time.monotonic() + 120
    while not go.exists():
        if time.monotonic() > deadline:
            raise TimeoutError("the test never said go")
        time.sleep(0.005)


def _stuck(plan: dict[str, Any]) -> int:
    """Open the index (another process holds the write lock), read, then try
    to write; print what happened as JSON lines."""
    from simindex import SimIndex, StorageError

    timeout = plan["timeout"]
    index = SimIndex(plan["path"], timeout=timeout)
    t = time.monotonic()
    reads = [len(index), index.get("fixed-0"), len(index.query(0))]
    print(json.dumps({"ready": True, "read_s": time.monotonic() - t, "reads": reads}), flush=True)
    t = time.monotonic()
    try:
        index.add_fingerprint("stuck-key", 12345)
    except Exception as exc:  # noqa: BLE001 - reported to the test
        report = {
            "error": type(exc).__name__,
            "storage_error": isinstance(exc, StorageError),
            "message": str(exc),
        }
    else:
        report = {"error": None}
    report["elapsed"] = time.monotonic() - t
    print(json.dumps(report), flush=True)
    index.close()
    return 0


def main(argv: list[str]) -> int:
    role, n, plan_path, log_path = argv[0], int(argv[1]), argv[2], argv[3]
    plan = json.loads(Path(plan_path).read_text(encoding="utf-8"))
    if role == "stuck":
        return _stuck(plan)

    from simindex import SimIndex

    def reopen(old: Any) -> Any:
        old.close()
        return SimIndex(plan["path"])

    rng = random.Random(f"{plan['seed']}-{role}-{n}")
    worker: Writer | Reader | None = None
    log = None
    status = 0
    try:
        index = SimIndex(plan["path"])
        if role == "writer":
            log = open(log_path, "w", encoding="utf-8")  # noqa: SIM115 - closed below
            view = SimIndex(plan["path"])
            worker = Writer(index, plan, n, rng, log, view=view, reopen=reopen)
        else:
            worker = Reader(index, plan, rng, reopen=reopen)
        for text in plan["texts"]:  # load jieba now, not on the clock (a second or more)
            index.fingerprint(text)
        _wait_for_go(plan, f"{role}{n}")
        deadline = time.monotonic() + plan["seconds"]
        while time.monotonic() < deadline:
            worker.step()
    except BaseException:  # noqa: BLE001 - every failure is reported, and exits 1
        traceback.print_exc()
        status = 1
    finally:
        if log is not None:
            log.close()
    report: dict[str, Any] = {"role": role, "n": n, "status": status}
    if isinstance(worker, Writer):
        report["counts"] = dict(worker.acked)
    elif isinstance(worker, Reader):
        report["counts"] = dict(worker.done)
        report["in_memory_batches"] = worker.in_memory
    print(json.dumps(report), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

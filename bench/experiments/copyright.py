#!/usr/bin/env python
"""Precision on a real corpus: the copyright and licence files of this machine.

    python bench/experiments/copyright.py            # every file: about a minute on 2 cores
    python bench/experiments/copyright.py --quick    # the first 120 files: a smoke run
    python bench/experiments/copyright.py --json     # the results as JSON on stdout
    python bench/experiments/copyright.py --no-save  # print only
                          # (else bench/results/experiments/copyright.txt)

Every Debian machine has /usr/share/doc/*/copyright and /usr/share/common-licenses,
and nobody here wrote them. The script reads each file once (a symlink to a file
already read, another package's copyright or a licence, is not read again) and
indexes them through the product itself at its defaults: SimIndex() (in memory),
add_many of (path, text) in one transaction, then duplicates() and clusters(),
which verify every candidate within k = 8 by the signatures (minhash128x4/1,
simindex.signature) at the default threshold (0.8) and cluster by the leader
rule. That is the headline row. A reported pair of distinct texts (not equal
once whitespace is collapsed) is a *false alarm* when the word 5-shingle
Jaccard and containment of the two files are both below 0.3 (words as the
signatures read them, stop words kept); the others are *true pairs*.
Every cluster is checked member by member against its canonical member: how
many members share no word 5-shingle with it at all, and how many are unlike it
(a false alarm beside it: they share no more than a phrase or two, as every pair
of licence files does); the target is read on the latter.

The next row is the fingerprint alone: the same index's duplicates(threshold=0)
and clusters(threshold=0), every candidate within k = 8. Then the same for each
candidate verification of those candidates: kept when a signature's estimate
(bench/experiments/sketches.py) reaches its threshold, the one bench/experiments/quality_hard.py
tuned for English (bench/results/experiments/quality_hard.txt; --threshold overrides it);
the rows `exact` verify with the exact similarity the signature estimates.
Clusters of the verified pairs are made two ways: `linked`, the connected
components of the verified pairs (single linkage), and `leader`, in the order
the files were added, each file joins the first cluster whose canonical member
it has a verified pair with, else starts its own (so every member is verified
against its canonical member; what clusters() does).

The targets set when the verification signature was chosen: at most 2% false
alarms among the reported pairs of distinct texts, at least 150 true pairs
found, no cluster member that shares no text with its canonical member.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
for _p in (str(HERE.parent), str(HERE.parent.parent)):  # common.py and data.py, simindex
    if _p not in sys.path:
        sys.path.insert(0, _p)

import data  # noqa: E402
import numpy as np  # noqa: E402
import sketches as sg  # noqa: E402
from common import log, output_options, print_json, save_output  # noqa: E402

from simindex import EmptyTextError, SimIndex  # noqa: E402
from simindex.fingerprint import DEFAULT_CONFIG, features  # noqa: E402

SWEPT = "minhash128x4/1"  # the signature shown at every threshold of SWEEP
SWEEP = (0.3, 0.4, 0.5, 0.6, 0.65, 0.7, 0.75, 0.78, 0.8, 0.85, 0.9)
FALSE_ALARM = 0.3  # word 5-shingle Jaccard and containment both below: a false alarm
TARGET_SHARE, TARGET_TRUE = 0.02, 150
# The English thresholds bench/experiments/quality_hard.py tuned (seed 2; every negative kind
# <= 1% there), from bench/results/experiments/quality_hard.txt.
TUNED: dict[str, float] = {
    "simhash128/3": 0.85,
    "simhash256/3": 0.83,
    "tf-simhash128": 0.95,
    "tf-simhash256": 0.95,
    "minhash128x4/1": 0.78,
    "minhash256x2/1": 0.77,
    "minhash512x1/1": 0.77,
    "minhash256x4/1": 0.77,
    "minhash128x4/1s": 0.76,
    "minhash128x4/1w": 0.78,
    "minhash256x2/1w": 0.77,
    "minhash512x1/1w": 0.79,
    "minhash256x4/1w": 0.78,
    "minhash128x4/2": 0.72,
    "minhash256x2/2": 0.72,
    "minhash64x8/3": 0.68,
    "minhash128x4/3": 0.67,
    "minhash256x2/3": 0.69,
    "minhash512x1/3": 0.68,
    "minhash256x4/3": 0.67,
    "minhash128x4/5": 0.66,
    "hybrid128x4/3": 0.67,
}
# name, or name@threshold (a threshold chosen for both languages)
DEFAULT_SIGNATURES = (
    "minhash128x4/1",
    "minhash128x4/1@0.80",
    "minhash256x4/1",
    "minhash128x4/1w",
    "minhash128x4/3",
    "hybrid128x4/3",
    "simhash256/3",
    "tf-simhash256",
)


def leader_clusters(order: list[int], edges: set[tuple[int, int]]) -> list[list[int]]:
    """In add order, each document joins the first cluster whose canonical member it
    has an edge with (a verified pair), else starts one; clusters of one dropped."""
    neighbours: dict[int, set[int]] = {}
    for a, b in edges:
        neighbours.setdefault(a, set()).add(b)
        neighbours.setdefault(b, set()).add(a)
    canon_of: dict[int, int] = {}
    members: dict[int, list[int]] = {}
    for d in order:
        if d not in neighbours:
            continue
        home = next(
            (c for c in members if c in neighbours[d]),
            None,
        )
        if home is None:
            members[d] = [d]
            canon_of[d] = d
        else:
            members[home].append(d)
            canon_of[d] = home
    return [m for m in members.values() if len(m) > 1]


def linked_clusters(order: list[int], edges: set[tuple[int, int]]) -> list[list[int]]:
    """Connected components (single linkage), each in add order (canonical first)."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        parent[find(a)] = find(b)
    rank = {d: i for i, d in enumerate(order)}
    groups: dict[int, list[int]] = {}
    for x in parent:
        groups.setdefault(find(x), []).append(x)
    return [sorted(g, key=rank.__getitem__) for g in groups.values() if len(g) > 1]


class Corpus:
    """The files in add order, and what the rows need to judge a pair: the word
    5-shingles (false alarms, clusters), each signature of each text, and the
    exact similarities the signatures estimate (computed when first asked)."""

    def __init__(self, files: list[tuple[str, str]]) -> None:
        self.keys = [p for p, _t in files]
        self.texts = [t for _p, t in files]
        self.flat = [" ".join(t.split()) for t in self.texts]
        self.pos = {key: i for i, key in enumerate(self.keys)}
        self.order = list(range(len(self.texts)))
        self.h5: list[np.ndarray] = []
        self.made: dict[str, list[bytes | None]] = {}
        self._hashes: dict[tuple[str, int], list[np.ndarray]] = {}
        self._feats: list[dict[str, int]] | None = None

    def shingle(self) -> None:
        self.h5 = [np.unique(sg.shingle_hashes(sg.units(t), 5)) for t in self.texts]

    def shares(self, i: int, j: int) -> tuple[float, float]:
        return sg.exact_jaccard(self.h5[i], self.h5[j]), sg.exact_containment(
            self.h5[i], self.h5[j]
        )

    def false_alarm(self, i: int, j: int) -> bool:
        jac, con = self.shares(i, j)
        return jac < FALSE_ALARM and con < FALSE_ALARM

    def in_add_order(self, found) -> set[tuple[int, int]]:
        return {tuple(sorted((self.pos[p.key_a], self.pos[p.key_b]))) for p in found}

    def own(self, found) -> list[list[int]]:
        """An index's clusters as lists of positions, the canonical member first."""
        return [[self.pos[key] for key, _d in c.members] for c in found]

    def sign(self, name: str, s: sg.Signature) -> list[bytes | None]:
        """Every text's signature (None for a text with no word), made once."""
        if name not in self.made:
            out: list[bytes | None] = []
            for t in self.texts:
                try:
                    out.append(s.of(t))
                except EmptyTextError:
                    out.append(None)
            self.made[name] = out
        return self.made[name]

    def exact_sim(self, s: sg.Signature, i: int, j: int) -> float:
        """The similarity signature s estimates, computed exactly."""
        if s.estimates == "tf-cosine":
            if self._feats is None:
                self._feats = [dict(features(t, DEFAULT_CONFIG)) for t in self.texts]
            a, b = self._feats[i], self._feats[j]
            dot = sum(w * b.get(f, 0) for f, w in a.items())
            norm = (sum(w * w for w in a.values()) * sum(w * w for w in b.values())) ** 0.5
            return dot / norm if norm else 0.0
        key = (s.units, s.n)
        if key not in self._hashes:
            self._hashes[key] = [
                np.unique(sg.shingle_hashes(sg.units(t, s.units), s.n)) for t in self.texts
            ]
        ha, hb = self._hashes[key][i], self._hashes[key][j]
        if s.estimates == "jaccard":
            return sg.exact_jaccard(ha, hb)
        return sg.exact_cosine(ha, hb)

    def cluster_check(self, groups: list[list[int]]) -> dict:
        """How many members of the clusters share no text with their canonical member."""
        unlike = none_shared = 0
        for g in groups:
            c = g[0]
            for m in g[1:]:
                jac, con = self.shares(c, m)
                none_shared += con == 0
                unlike += jac < FALSE_ALARM and con < FALSE_ALARM
        largest = max(groups, key=len) if groups else []
        big_none = big_unlike = 0
        for m in largest[1:]:
            jac, con = self.shares(largest[0], m)
            big_none += con == 0
            big_unlike += jac < FALSE_ALARM and con < FALSE_ALARM
        return {
            "clusters": len(groups),
            "largest": len(largest),
            "largest_canonical": self.keys[largest[0]] if largest else None,
            "largest_members_sharing_nothing": big_none,
            "members_sharing_nothing": none_shared,
            "members_unlike_canonical": unlike,
            "largest_members_unlike_canonical": big_unlike,
        }


def index_at_defaults(files: list[tuple[str, str]]) -> dict:
    """Add every file to SimIndex() at its defaults; what the index reports."""
    empty = 0
    with SimIndex() as index:
        try:
            index.add_many(files)  # one transaction: all of them, or none
        except EmptyTextError:  # a file with no word: added one by one, that one left out
            for key, text in files:
                try:
                    index.add(key, text)
                except EmptyTextError:
                    empty += 1
        return {
            "empty": empty,
            "k": index.k,
            "threshold": index.threshold,
            "pairs": index.duplicates(),  # the product: within k, verified at its threshold
            "clusters": index.clusters(),
            "alone": index.duplicates(threshold=0),  # the fingerprint alone: every candidate
            "alone_clusters": index.clusters(threshold=0),
        }


def method_rows(
    args: argparse.Namespace, corpus: Corpus, found: dict, cand: list, product: set
) -> list[tuple[str, float | None, set, list | None]]:
    """label, threshold, the pairs kept, the index's own clusters (None: made here):
    the product, the fingerprint alone, then each signature asked for and the exact
    similarity it estimates, each verifying the same candidates."""
    k, threshold = found["k"], found["threshold"]
    asked = list(args.signatures.split(",")) if args.signatures else list(DEFAULT_SIGNATURES)
    at: list[tuple[str, float | None]] = []
    for item in asked:
        name, _, t = item.partition("@")
        at.append((name, float(t) if t else None))
    sigs = {name: sg.SIGNATURES[name] for name, _t in at}
    log("signatures")
    for name, s in sigs.items():
        corpus.sign(name, s)
    rows: list[tuple[str, float | None, set, list | None]] = [
        (
            f"defaults: SimIndex() (k = {k}, {SWEPT} >= {threshold:.2f})",
            threshold,
            product,
            corpus.own(found["clusters"]),
        ),
        (
            f"fingerprint alone (k = {k}, threshold = 0)",
            None,
            set(cand),
            corpus.own(found["alone_clusters"]),
        ),
    ]
    exact_rows: set[tuple] = set()
    for name, fixed in at:
        s = sigs[name]
        t = args.threshold if args.threshold is not None else fixed or TUNED.get(name)
        if t is None:
            log(f"  {name}: no tuned threshold (run bench/experiments/quality_hard.py): skipped")
            continue
        made = corpus.made[name]

        def est(i: int, j: int, made: list = made, s: sg.Signature = s) -> float:
            a, b = made[i], made[j]
            return s.similarity(a, b) if a is not None and b is not None else 0.0

        rows.append(
            (f"k<=8 + {name} >= {t:.2f}", t, {(i, j) for i, j in cand if est(i, j) >= t}, None)
        )
        what = (s.estimates, s.units, s.n, t) if s.estimates != "tf-cosine" else (s.estimates, t)
        if what in exact_rows:
            continue
        exact_rows.add(what)
        shingles = f" ({s.units}, n={s.n})" if s.estimates != "tf-cosine" else ""
        rows.append(
            (
                f"k<=8 + exact {s.estimates}{shingles} >= {t:.2f}",
                t,
                {(i, j) for i, j in cand if corpus.exact_sim(s, i, j) >= t},
                None,
            )
        )
    return rows


def row_results(rows: list, corpus: Corpus, alarm: dict) -> list[dict]:
    """Each row's pairs, false alarms and clusters, and whether it meets the targets."""
    flat = corpus.flat
    results = []
    for label, t, kept, index_clusters in rows:
        dist = [(i, j) for i, j in kept if flat[i] != flat[j]]
        fa = sum(alarm[p] for p in dist)
        r = {
            "method": label,
            "threshold": t,
            "pairs": len(kept),
            "identical_text_pairs": len(kept) - len(dist),
            "distinct_pairs": len(dist),
            "false_alarms": fa,
            "false_alarm_share": fa / len(dist) if dist else 0.0,
            "true_pairs": len(dist) - fa,
        }
        if index_clusters is not None:  # the index's own clusters
            r["clusters"] = {"index": corpus.cluster_check(index_clusters)}
        else:
            r["clusters"] = {
                "linked": corpus.cluster_check(linked_clusters(corpus.order, kept)),
                "leader": corpus.cluster_check(leader_clusters(corpus.order, kept)),
            }
        r["meets"] = {
            rule: r["false_alarm_share"] <= TARGET_SHARE
            and r["true_pairs"] >= TARGET_TRUE
            and c["members_unlike_canonical"] == 0
            for rule, c in r["clusters"].items()
        }
        results.append(r)
    return results


def threshold_sweep(
    corpus: Corpus, cand: list, alarm: dict
) -> tuple[list[dict], dict[tuple[int, int], float]]:
    """What the threshold trades on this corpus: the recommended signature at
    several; and its similarity for every candidate."""
    sweep = []
    s = sg.SIGNATURES[SWEPT]
    made = corpus.sign(SWEPT, s)
    sims = {}
    for i, j in cand:
        a, b = made[i], made[j]
        sims[i, j] = s.similarity(a, b) if a is not None and b is not None else 0.0
    for t in SWEEP:
        kept = {p for p, v in sims.items() if v >= t}
        dist = [p for p in kept if corpus.flat[p[0]] != corpus.flat[p[1]]]
        fa = sum(alarm[p] for p in dist)
        lead = corpus.cluster_check(leader_clusters(corpus.order, kept))
        link = corpus.cluster_check(linked_clusters(corpus.order, kept))
        sweep.append(
            {
                "threshold": t,
                "distinct_pairs": len(dist),
                "false_alarms": fa,
                "false_alarm_share": fa / len(dist) if dist else 0.0,
                "true_pairs": len(dist) - fa,
                "leader": lead,
                "linked": link,
            }
        )
    return sweep, sims


def measure(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    files = data.copyright_files(distinct=False)
    if args.quick:
        files = files[:120]
    if len(files) < 2:
        print("no copyright files on this machine")
        return 1
    corpus = Corpus(files)
    log(f"{len(files)} files; indexing at the defaults (SimIndex(), add_many)")
    found = index_at_defaults(files)
    k, threshold = found["k"], found["threshold"]
    log(f"{len(found['alone'])} pairs within k = {k}, {len(found['pairs'])} verified; shingling")
    corpus.shingle()
    cand = sorted(corpus.in_add_order(found["alone"]))
    product = corpus.in_add_order(found["pairs"])
    # (the product's pairs include those its signatures' keys find beyond k)
    judged = sorted(set(cand) | set(product))
    distinct = [(i, j) for i, j in judged if corpus.flat[i] != corpus.flat[j]]
    alarm = {(i, j): corpus.false_alarm(i, j) for i, j in distinct}
    rows = method_rows(args, corpus, found, cand, product)
    results = row_results(rows, corpus, alarm)
    sweep, sims = threshold_sweep(corpus, cand, alarm)
    # The product's pairs against the same verification done here
    # (bench/experiments/sketches.py's minhash128x4/1 of every candidate, at the
    # index's threshold).
    same_as_sketch = product == {p for p, v in sims.items() if v >= threshold}
    head_row = results[0]
    c = head_row["clusters"]["index"]
    targets = {
        "false_alarm_share": head_row["false_alarm_share"] <= TARGET_SHARE,
        "true_pairs": head_row["true_pairs"] >= TARGET_TRUE,
        "members_unlike_canonical": c["members_unlike_canonical"] == 0,
    }
    seconds = time.perf_counter() - t0
    out = {
        "files": len(files),
        "empty": found["empty"],
        "k": k,
        "threshold": threshold,
        "seconds": round(seconds, 1),
        "results": results,
        "targets": targets,
        "product_same_as_sketch_row": same_as_sketch,
        "sweep": {"signature": SWEPT, "rows": sweep},
    }
    if args.json:
        print_json(out)
        return 0
    print_report(out, distinct_texts=len(set(corpus.flat)), seconds=seconds)
    return 0


def print_report(out: dict, distinct_texts: int, seconds: float) -> None:
    """The tables and the verdict, from what measure() found."""
    k, threshold, results = out["k"], out["threshold"], out["results"]
    sweep, targets = out["sweep"]["rows"], out["targets"]
    print(
        f"copyright corpus: {out['files']} files of /usr/share/doc/*/copyright and "
        f"/usr/share/common-licenses (each file once), {distinct_texts} distinct texts; "
        f"SimIndex() (in memory) at the defaults, k = {k}, threshold {threshold:.2f}; "
        f"{seconds:.0f} s"
    )
    head_row = results[0]
    mine = head_row["clusters"]["index"]  # (the verdict's: clusters() itself)
    same_as_sketch = out["product_same_as_sketch_row"]
    print()
    head = [
        "method",
        "pairs",
        "same text",
        "distinct",
        "false alarms",
        "share",
        "true pairs",
        "clusters",
        "largest",
        "no shared 5-shingle (largest)",
        "unlike canonical (largest)",
        "meets",
    ]
    table = [head]
    for r in results:
        for rule, c in r["clusters"].items():
            table.append(
                [
                    r["method"] if rule in ("index", "linked") else "",
                    str(r["pairs"]) if rule in ("index", "linked") else "",
                    str(r["identical_text_pairs"]) if rule in ("index", "linked") else "",
                    str(r["distinct_pairs"]) if rule in ("index", "linked") else "",
                    str(r["false_alarms"]) if rule in ("index", "linked") else "",
                    f"{100 * r['false_alarm_share']:.1f}%" if rule in ("index", "linked") else "",
                    str(r["true_pairs"]) if rule in ("index", "linked") else "",
                    f"{rule}: {c['clusters']}",
                    str(c["largest"]),
                    f"{c['members_sharing_nothing']} ({c['largest_members_sharing_nothing']})",
                    f"{c['members_unlike_canonical']} ({c['largest_members_unlike_canonical']})",
                    "yes" if r["meets"][rule] else "no",
                ]
            )
    widths = [max(len(row[c]) for row in table) for c in range(len(head))]
    for n_, row in enumerate(table):
        print(
            "  ".join(
                [row[0].ljust(widths[0])]
                + [x.rjust(w) for x, w in zip(row[1:], widths[1:], strict=True)]
            )
        )
        if n_ == 0:
            print("-" * sum(widths + [2 * (len(widths) - 1)]))
    print()
    print(
        "pairs: reported pairs (within k, and verified); same text: pairs of files with the "
        "same text (whitespace collapsed); false alarms: pairs of distinct texts whose word "
        "5-shingle Jaccard and containment are both below 0.3, share: of the distinct pairs "
        "(target <= 2%); true pairs: the other distinct pairs (target >= 150). clusters: "
        "index = clusters() itself; linked = connected components of the kept pairs; leader "
        "= each file joins the first cluster whose canonical member it has a kept pair with. "
        "no shared 5-shingle: members with no word 5-shingle in common with their "
        "canonical member; unlike canonical: members that would be a false alarm beside "
        "their canonical member (Jaccard and containment below 0.3: they share no text but "
        "a phrase or two; target 0); in brackets, those of the largest cluster. meets: the "
        "three targets, with that clustering rule."
    )
    print()
    print(
        f"k<=8 + {SWEPT} by threshold: distinct pairs kept, false alarms (share), true "
        "pairs; the largest cluster and the members unlike their canonical member, by the "
        "leader rule and by single linkage (linked)"
    )
    for r in sweep:
        lead, link = r["leader"], r["linked"]
        print(
            f"  >= {r['threshold']:.2f}: {r['distinct_pairs']:5d} distinct, "
            f"{r['false_alarms']:4d} false alarms ({100 * r['false_alarm_share']:4.1f}%), "
            f"{r['true_pairs']:5d} true; leader: largest {lead['largest']:3d}, "
            f"{lead['members_unlike_canonical']:3d} unlike; linked: largest "
            f"{link['largest']:3d}, {link['members_unlike_canonical']:3d} unlike"
        )
    print()
    yes = {True: "met", False: "MISSED"}
    print(
        f"the product at its defaults ({head_row['method']}): "
        f"{head_row['false_alarms']} false alarms of {head_row['distinct_pairs']} distinct pairs "
        f"({100 * head_row['false_alarm_share']:.1f}%; target <= {100 * TARGET_SHARE:.0f}%: "
        f"{yes[targets['false_alarm_share']]}), {head_row['true_pairs']} true pairs (target "
        f">= {TARGET_TRUE}: {yes[targets['true_pairs']]}), largest cluster {mine['largest']}, "
        f"{mine['members_unlike_canonical']} members unlike their canonical member (target 0: "
        f"{yes[targets['members_unlike_canonical']]})"
    )
    print(
        f"its pairs are the k<=8 + {SWEPT} >= {threshold:.2f} pairs made here from "
        f"bench/experiments/sketches.py: {'yes' if same_as_sketch else 'NO'}"
    )
    for r in results[:2]:
        c = r["clusters"]["index"]
        print(f"{r['method']}: the largest cluster starts at {c['largest_canonical']}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the first 120 files: a smoke run")
    ap.add_argument("--json", action="store_true", help="JSON on stdout instead of the table")
    ap.add_argument(
        "--signatures",
        help=f"comma-separated names from bench/experiments/sketches.py SIGNATURES "
        f"(default {','.join(DEFAULT_SIGNATURES)})",
    )
    ap.add_argument(
        "--threshold",
        type=float,
        help="verify every signature at this threshold instead of its tuned one",
    )
    output_options(ap)
    args = ap.parse_args(argv)
    return save_output("experiments/copyright", args, lambda: measure(args))


if __name__ == "__main__":
    sys.exit(main())

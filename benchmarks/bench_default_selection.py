"""Whole-run FLOPs, bytes and H100 roofline time projected from k = 10 SeqPoints by the
default selection against candidate defaults, on every paper-table case and on length
sets the project has never used (issue 34, item 6).

Every selection goes through the workflow's own path (``SelectionSection`` ->
``model_cost`` -> ``choose_points``), so "default" is exactly what ``seqpoint run``
selects with an empty ``[selection]``. The truth is every unique signature's exact FLOPs,
bytes and roofline time (``exact_signature_costs``, with the schedule's real lengths as
``model_cost`` passes them), summed over the run; the projection is the SeqPoints'
weighted sum of the same costs. Everything is deterministic: the load of the machine
changes the times only.

Unseen length sets (``--unseen DIR``) are read from the files of the upstream
repositories the bundled data come from, splits that ``src/seqpoint/data`` does not ship:

- ``wikitext-2-test.txt``: pytorch/examples ``word_language_model/data/wikitext-2/test.txt``
  (commit 77f55b9), paragraphs counted as ``bundled:wikitext-2-valid`` counts them;
- ``librispeech-dev-other.csv``, ``librispeech-test-other.csv``: sungnyun/ARMHuBERT
  ``data/len_for_bucket/*.csv`` (commit e687add), 10 ms frames;
- ``m30k-heldout.en`` / ``.de``: multi30k/dataset ``data/task1/raw/{val,test_2016_flickr,
  test_2017_flickr}.{en,de}.gz`` (commit a3d2e0d) concatenated, 3,014 pairs.

Usage: ``.venv/bin/python benchmarks/bench_default_selection.py [--cases a,b] [--presets
tiny,small] [--unseen DIR] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _paper_cases import Scale, det_schedule, select_cases
from seqpoint.batching import replay
from seqpoint.exceptions import SeqPointWarning
from seqpoint.profiling import exact_signature_costs
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SignatureCosts, weighted_projection
from seqpoint.traces import Lengths, count_whitespace_tokens, read_lengths
from seqpoint.workflows import SelectionSection, choose_points, model_cost, signature_shapes
from seqpoint.workloads import load_workload

K = 10
METRICS = ("flops", "bytes", "roofline_h100_s")
#: Candidate defaults: a name and the ``[selection]`` keys it sets (``on``: grouped on that
#: exact cost alone, a proxy no section key names, built here).
CANDIDATES: dict[str, dict[str, Any]] = {
    "attention": {"proxy": "attention"},
    "grouped on FLOPs": {"proxy": "model", "on": "flops"},
    "model h100": {"proxy": "model", "proxy_device": "h100"},
    "default": {},
}


@dataclass(frozen=True)
class Set:
    """One run: a workload on a schedule."""

    name: str
    title: str
    workload: str
    schedule: IterationSchedule = field(repr=False)
    overrides: dict[str, Any] = field(default_factory=lambda: {"threads": 1})


def _wikitext_paragraphs(path: Path) -> Lengths:
    """Non-empty, non-heading lines: whitespace tokens + 1 <eos> (``bundled:wikitext-2-valid``'s rule)."""
    data = path.read_bytes()
    counts = count_whitespace_tokens(data)
    lines = data.decode("utf-8").split("\n")[: len(counts)]
    heading = np.array([ln.strip().startswith("=") and ln.strip().endswith("=") for ln in lines], dtype=bool)
    keep = (counts > 0) & ~heading
    return Lengths(src=counts[keep] + 1, source=f"{path} (paragraph tokens + 1 <eos>)", unit="tokens")


def unseen_sets(folder: Path) -> list[Set]:
    """The runs on length sets the project does not ship (files named in the docstring)."""
    wiki = _wikitext_paragraphs(folder / "wikitext-2-test.txt")
    m30k = read_lengths(folder / "m30k-heldout.en", format="parallel", tgt=folder / "m30k-heldout.de")
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeqPointWarning)
        out.append(Set("u-bert-wiki-test-grouped", "BERT / WikiText-2 test / group_by_length B=8, drop_last",
                       "bert:tiny", replay(wiki, "group_by_length", epochs=3, seed=0, batch_size=8, drop_last=True)))
        out.append(Set("u-bert-wiki-test-packed", "BERT / WikiText-2 test / packing 512 x 8", "bert:tiny",
                       replay(wiki, "packing", epochs=3, seed=0, max_seq_len=512, batch_size=8)))
        for split in ("dev-other", "test-other"):
            frames = read_lengths(folder / f"librispeech-{split}.csv", column="length", sample_rate=16000)
            out.append(Set(f"u-ds2-{split}", f"DeepSpeech2 / LibriSpeech {split} / SortaGrad B=32",
                           "deepspeech2:tiny", replay(frames, "sortagrad", epochs=3, seed=0, batch_size=32)))
        out.append(Set("u-gnmt-m30k-heldout-tokens", "GNMT / Multi30k val+test16+test17 / token budget 4096",
                       "gnmt:tiny", replay(m30k, "token_budget", epochs=3, seed=0, max_tokens=4096)))
        out.append(Set("u-gnmt-m30k-heldout-bucket", "GNMT / Multi30k val+test16+test17 / bucket B=64",
                       "gnmt:tiny", replay(m30k, "bucket", epochs=3, seed=0, batch_size=64)))
    return out


def measure(run: Set) -> dict[str, Any]:
    """k = 10 errors of every candidate on ``run`` (signed fractions), with the times taken."""
    workload = load_workload(run.workload, overrides=run.overrides)
    schedule = run.schedule
    sigs, _, inverse = schedule.unique_signatures()
    t0 = time.perf_counter()
    per_sig, how, *_ = exact_signature_costs(workload, np.asarray(sigs, dtype=np.int64),
                                             shapes=signature_shapes(workload, schedule))
    exact_s = time.perf_counter() - t0
    cost = {m: per_sig[m][inverse] for m in METRICS}
    totals = {m: float(v.sum()) for m, v in cost.items()}
    rows = [tuple(int(v) for v in r) for r in sigs.tolist()]
    out: dict[str, Any] = {"title": run.title, "workload": run.workload, "n_iterations": len(schedule),
                           "n_signatures": len(rows), "exact": how, "exact_s": exact_s, "candidates": {}}
    for name, keys in CANDIDATES.items():
        keys = dict(keys)
        on = keys.pop("on", None)
        sec = SelectionSection(n_points=K, **keys)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SeqPointWarning)
            t0 = time.perf_counter()
            proxy = None
            if on is not None:
                proxy = SignatureCosts(costs=dict(zip(rows, per_sig[on].tolist(), strict=True)), name=f"model({on})")
            elif sec.model_proxy:
                proxy = model_cost(sec, schedule, workload)
            selector, _ = choose_points(sec, schedule, cost=proxy)
            select_s = time.perf_counter() - t0
        out["candidates"][name] = {
            "select_s": select_s,
            "points": selector.points_.tolist(),
            **{m: weighted_projection(cost[m], selector.points_, selector.weights_) / totals[m] - 1 for m in METRICS},
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=None, help="paper-table cases (default: every case of --presets)")
    ap.add_argument("--presets", default="tiny,small")
    ap.add_argument("--unseen", type=Path, default=None, help="folder of the unseen length files")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    scale = Scale.make(False)
    runs = [Set(c.name, c.title, c.workload, det_schedule(c, scale), dict(c.overrides))
            for c in select_cases(args.cases, args.presets)] if args.cases != "none" else []
    if args.unseen is not None:
        runs += unseen_sets(args.unseen)
    results = {}
    head = " | ".join(f"{c} {m}" for c in CANDIDATES for m in ("FLOPs", "bytes", "H100"))
    print(f"| case | iters | sigs | {head} | select s |")
    for run in runs:
        r = measure(run)
        results[run.name] = r
        cells = " | ".join(f"{100 * r['candidates'][c][m]:+.4f}" for c in CANDIDATES for m in METRICS)
        secs = " / ".join(f"{r['candidates'][c]['select_s']:.1f}" for c in CANDIDATES)
        print(f"| `{run.name}` | {r['n_iterations']:,} | {r['n_signatures']:,} | {cells} | {secs} "
              f"(exact {r['exact_s']:.1f}) |", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

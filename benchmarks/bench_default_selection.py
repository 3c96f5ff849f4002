"""Whole-run FLOPs, bytes and H100 roofline time projected from k = 10 SeqPoints by the
default selection against candidate defaults, on every paper-table case and on length
sets the project has never used (issue 34, item 6).

Every selection goes through the workflow's own path (``SelectionSection`` ->
``model_cost`` -> ``choose_points``), so "default" is exactly what ``seqpoint run``
selects with an empty ``[selection]``. The truth is every unique signature's exact FLOPs,
bytes and roofline time (``exact_signature_costs``) summed over the run; the projection is
the SeqPoints' weighted sum of the same costs. Deterministic: the machine's load changes
the times only.

Unseen length sets (``--unseen DIR``) are read from the files of the upstream
repositories the bundled data come from, splits that ``src/seqpoint/data`` does not ship:

- ``wikitext-2-test.txt``: pytorch/examples ``word_language_model/data/wikitext-2/test.txt``
  (commit 77f55b9), paragraphs counted as ``bundled:wikitext-2-valid`` counts them;
- ``librispeech-dev-other.csv``, ``librispeech-test-other.csv``: sungnyun/ARMHuBERT
  ``data/len_for_bucket/*.csv`` (commit e687add), 10 ms frames;
- ``m30k-heldout.en`` / ``.de``: multi30k/dataset ``data/task1/raw/{val,test_2016_flickr,
  test_2017_flickr}.{en,de}.gz`` (commit a3d2e0d) concatenated, 3,014 pairs.

Usage: ``.venv/bin/python benchmarks/bench_default_selection.py [--cases a,b] [--presets
tiny,small] [--unseen DIR] [--quick] [--render]`` (``--quick``: one case at the paper table's
``--quick`` size). A run replaces the rows it measures in ``results/bench_default_selection.json``.
"""

from __future__ import annotations

import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from _paper_cases import Scale, det_schedule, select_cases
from _results import bench_parser, header, load_stored, run_meta, save_json, table, write_section
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
#: The default before (``attention``) and now, and grouping on the exact FLOPs alone (``on``: a
#: proxy no section key names, built here): a name and the ``[selection]`` keys it sets.
CANDIDATES: dict[str, dict[str, Any]] = {
    "attention": {"proxy": "attention"},
    "grouped on FLOPs": {"proxy": "model", "on": "flops"},
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
    with warnings.catch_warnings(action="ignore", category=SeqPointWarning):
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
        with warnings.catch_warnings(action="ignore", category=SeqPointWarning):
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


def render(stored: dict[str, Any]) -> str:
    """The RESULTS.md section: every case's k = 10 errors, the old default against the new."""
    rows, worst = [], {m: [0.0, 0.0] for m in METRICS}
    for name, r in stored["cases"].items():
        c = r["candidates"]
        for m in METRICS:
            worst[m] = [max(worst[m][0], abs(c["attention"][m])), max(worst[m][1], abs(c["default"][m]))]
        rows.append([f"`{name}`", f"{r['n_iterations']:,}", f"{r['n_signatures']:,}",
                     *(f"{100 * c['attention'][m]:+.4f} → {100 * c['default'][m]:+.4f}" for m in METRICS),
                     f"{100 * c['grouped on FLOPs']['flops']:+.4f}",
                     f"{c['attention']['select_s']:.2f} → {c['default']['select_s']:.1f}"])
    met = sum(abs(r["candidates"]["default"]["flops"]) <= 0.001 for r in stored["cases"].values())
    return "\n".join([
        header("Default selection: k = 10 against exact totals, before and after `proxy = \"auto\"` "
               "(issue 34, item 6)", stored["meta"]).rstrip(), "",
        "Every selection is the workflow's (`SelectionSection` → `model_cost` → `choose_points`); the truth is "
        "the exact FLOPs, bytes and H100 roofline time of every unique signature summed over the run; error: the "
        "k = 10 SeqPoints' weighted sum against it, signed %. Deterministic: the machine's load changes the "
        "seconds only. *Before*: `proxy = \"attention\"`; *after*: the default `auto` (the built-in workload's "
        "exact FLOPs and bytes added to the basis). Rows `u-*` are length sets the project does not ship "
        "(`--unseen`, 3 epochs).", "",
        *table(["case", "iterations", "signatures", "FLOPs % before → after", "bytes % before → after",
                "H100 roofline % before → after", "FLOPs %, grouped on exact FLOPs", "select s before → after"],
               rows),
        f"Worst |error| over the {len(rows)} runs, before → after: " + ", ".join(
            f"{label} {100 * b:.3f}% → {100 * a:.3f}%" for label, (b, a) in zip(("FLOPs", "bytes", "H100 roofline"),
                                                                              worst.values(), strict=True))
        + f". FLOPs within 0.1% after: {met} of {len(rows)}. Rows measured on " + ", ".join(
            f"{d} ({n})" for d, n in Counter(r["date"] for r in stored["cases"].values()).items())
        + ". The same selections in measured time: `bench_proxy.py`'s `auto (default)` column."])


def main() -> None:
    ap = bench_parser(__doc__, "gnmt-wmt-bucket at the paper table's --quick size",
                      "rewrite the RESULTS.md section from the stored rows")
    ap.add_argument("--cases", default=None, help="paper-table cases (default: every case of --presets; none: none)")
    ap.add_argument("--presets", default="tiny,small")
    ap.add_argument("--unseen", type=Path, default=None, help="folder of the unseen length files")
    args = ap.parse_args()
    path, stored = load_stored("bench_default_selection.json", {"cases": {}})
    if not args.render:
        cases = "gnmt-wmt-bucket" if args.quick and not args.cases else args.cases
        scale = Scale.make(args.quick)
        runs = [Set(c.name, c.title, c.workload, det_schedule(c, scale), dict(c.overrides))
                for c in select_cases(cases, args.presets)] if cases != "none" else []
        runs += unseen_sets(args.unseen) if args.unseen is not None else []
        for run in runs:
            r = stored["cases"][run.name] = {**measure(run), "date": time.strftime("%Y-%m-%d")}
            print(f"{run.name}: " + ", ".join(f"{c} FLOPs {100 * r['candidates'][c]['flops']:+.4f}%"
                                              for c in CANDIDATES), flush=True)
        stored["meta"] = run_meta(minutes=False)
        save_json(path, stored)
    print(f"RESULTS.md section written: {write_section('default_selection', render(stored))}")


if __name__ == "__main__":
    main()

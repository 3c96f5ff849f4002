"""Steady-state selection error in measured time, ``attention`` against the ``auto`` default
(issue 34, item 6): the per-signature step times that bench_proxy stored
(results/bench_proxy.json.gz, bench_proxy_small.json.gz) summed over every iteration of each
paper case's validation subset are the truth; each proxy's k = 10 SeqPoints project it from
the same times. No timing: it reads stored times, so only the selection differs.

Usage: ``.venv/bin/python benchmarks/replay_default_proxy.py``
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import warnings
from pathlib import Path

import numpy as np

from _paper_cases import select_cases, validation_subset
from seqpoint.exceptions import SeqPointWarning
from seqpoint.selection import weighted_projection
from seqpoint.workflows import choose_points, make_workload, model_cost

RESULTS_DIR = Path(__file__).with_name("results")


def main() -> None:
    for name, presets in (("bench_proxy.json.gz", "tiny"), ("bench_proxy_small.json.gz", "small")):
        stored = json.loads(gzip.decompress((RESULTS_DIR / name).read_bytes()))
        cases = {c.name: c for c in select_cases(None, presets)}
        for i, run in enumerate(stored["runs"]):
            for r in run:
                cfg, schedule = validation_subset(cases[r["case"]], False)
                step = dict(zip(map(tuple, r["rows"]), r["step_s"], strict=True))
                truth = float(np.dot(r["counts"], r["step_s"]))
                errors = {}
                for proxy in ("attention", "auto"):
                    sec = dataclasses.replace(cfg.selection, proxy=proxy)
                    cost = model_cost(sec, schedule, make_workload(cfg.workload)) if proxy == "auto" else None
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", SeqPointWarning)
                        _, points = choose_points(sec, schedule, cost=cost)
                    at = [step[tuple(p.signature)] for p in points.points]
                    projected = weighted_projection(at, None, [p.weight for p in points.points])
                    errors[proxy] = 100 * (projected - truth) / truth
                print(f"{presets} run {i} {r['case']}: "
                      + ", ".join(f"{k} {v:+.3f}%" for k, v in errors.items()), flush=True)


if __name__ == "__main__":
    main()

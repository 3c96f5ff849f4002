"""Where a SeqPoint sits in a protocol worker biases its time against the steady truth (issue 14).

``validate`` times every signature of its subset (the steady-state truth) in the same
worker processes as the SeqPoints. This benchmark times one paper-table case's signatures
by the paper table's protocol (3 worker processes) in three orders: the SeqPoints first,
the SeqPoints last, and the drift check point first with every other signature in
signature order (what ``validate`` does). Truth and projection come from the same run's
times, so a difference between the orders is the order's, not the selection's. Each
order runs ``--rounds`` times, alternated, each in a fresh process with the paper table's
allocator settings.

Usage: ``.venv/bin/python benchmarks/bench_truth_order.py [--quick] [--case ds2-librispeech] [--rounds 2]``
"""

from __future__ import annotations

import argparse
import time
import warnings

from _paper_cases import ALLOCATOR_ENV, harness, select_cases, validation_subset
from _paper_measured import child_env, in_fresh_process
from _results import header, write_section
from seqpoint.exceptions import SeqPointWarning
from seqpoint.measurements import STEADY_TIME
from seqpoint.profiling import ProfileConfig, profile_points
from seqpoint.workflows._stages import (
    choose_points,
    make_workload,
)

ORDERS = ("first", "last", "sorted")


def selection_error(case_name: str, order: str, processes: int) -> tuple[float, float, float]:
    """(selection error, steady truth s, wall s) of one protocol run in ``order``."""
    case = select_cases(case_name)[0]
    cfg, schedule = validation_subset(case)
    warnings.simplefilter("ignore", SeqPointWarning)
    _, points = choose_points(cfg.selection, schedule)
    sigs, counts, _ = schedule.unique_signatures()
    rows = [tuple(int(v) for v in r) for r in sigs.tolist()]
    mine = list(dict.fromkeys(p.signature for p in points.points))
    others = [r for r in rows if r not in set(mine)]
    seq = {"first": mine + others, "last": others + mine,
           "sorted": [mine[0], *sorted(mine[1:] + others)]}[order]
    t0 = time.perf_counter()
    ms = profile_points(make_workload(cfg.workload), seq, ProfileConfig(**harness(processes), metrics=("time",)),
                        progress=False)
    wall = time.perf_counter() - t0
    by_sig = {m.signature: m.metrics[STEADY_TIME] for m in ms.measurements}
    truth = float(sum(by_sig[r] * c for r, c in zip(rows, counts.tolist(), strict=True)))
    projected = float(sum(by_sig[p.signature] * p.weight for p in points.points))
    return (projected - truth) / truth, truth, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", default="ds2-librispeech", help="a paper-table case (default ds2-librispeech)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--processes", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="one round on gnmt-wmt-bucket (15 signatures)")
    args = ap.parse_args()
    if args.quick:
        args.case, args.rounds = "gnmt-wmt-bucket", 1
    errors: dict[str, list[float]] = {o: [] for o in ORDERS}
    for r in range(args.rounds):
        for order in ORDERS:
            with child_env(ALLOCATOR_ENV):
                err, truth, wall = in_fresh_process(selection_error, args.case, order, args.processes)
            errors[order].append(err)
            print(f"round {r + 1}, SeqPoints {order}: selection error {100 * err:+.2f}% "
                  f"(steady truth {truth:.3f} s; {wall:.0f} s)", flush=True)
    lines = [header(f"Steady-state selection error by the SeqPoints' place in the workers ({args.case})"), "",
             f"Every signature of the case's validation subset timed by {args.processes} worker "
             "processes (the paper table's harness); projection and truth from the same run's times. "
             f"{args.rounds} rounds, the orders alternated.", "",
             "| SeqPoints placed | selection error per round |", "|---|---|"]
    lines += [f"| {order} | " + ", ".join(f"{100 * e:+.2f}%" for e in errs) + " |" for order, errs in errors.items()]
    write_section(f"bench_truth_order_{args.case}", "\n".join(lines))


if __name__ == "__main__":
    main()

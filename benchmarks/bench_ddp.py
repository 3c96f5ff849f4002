"""DDP validation: a 2-rank run projected from its SeqPoints against the measured run.

Replays a ``fixed`` (DistributedSampler-dealt) schedule of LibriSpeech dev-clean lengths
over 2 ranks, selects SeqPoints on the rank rows, profiles them (1 thread), projects
every step as the slowest rank's cost plus the gradient synchronisation probed on the
gloo ranks, and runs the real thing with ``torch.distributed`` (gloo, 2 processes, 1
thread each) twice after one discarded cold pass: projected against measured, with
the noise floor of the pair beside the error. Each ``--timer``'s row goes to
``benchmarks/results/bench_ddp.json``; the RESULTS.md section shows every stored row.

Usage: ``.venv/bin/python benchmarks/bench_ddp.py [--quick] [--timer wall|cpu]``
(``--quick``: 6 steps of a tiny model, a smoke run; the default: 40 steps).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from _results import bench_parser, header, load_stored, run_meta, save_json, table, write_section
from seqpoint.workflows import RunConfig, validate_ddp


def config(quick: bool, timer: str, cache: Path) -> RunConfig:
    """The job as its TOML file would hold it."""
    return RunConfig.from_dict({
        "name": "bench-ddp",
        "lengths": {"source": "bundled:librispeech-dev-clean", "max_samples": 96 if quick else 1200},
        "batching": {"policy": "fixed", "params": {"batch_size": 8}, "world_size": 2, "seed": 1},
        "selection": {"n_points": 4 if quick else 10},
        "workload": {"name": "deepspeech2:tiny", "set": {"threads": 1}},
        "profile": {"warmup": 2, "repeats": 3 if quick else 7, "timer": timer, "cache": str(cache)},
        "validation": {"max_iterations": 6 if quick else 40},
    })


def main() -> None:
    parser = bench_parser(__doc__, quick="6 steps, a smoke run")
    parser.add_argument("--timer", choices=("wall", "cpu"), default="wall",
                        help="clock of the profile and the real runs (cpu: robust to load)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        res = validate_ddp(config(args.quick, args.timer, Path(tmp) / "cache.sqlite"), runs=2)
    p, t = res.projection, res.truth
    path, stored = load_stored("bench_ddp.json", {})
    stored[args.timer] = {**run_meta(), "steps": p.n_steps, "projected_s": p.total_s, "runs_s": list(t.runs_s),
                          "error": t.error, "noise_floor": t.noise_floor, "straggler_share": p.straggler_share,
                          "communication_share": p.communication_share}
    save_json(path, stored)
    rows = [[timer, str(r["steps"]), f"{1e3 * r['projected_s']:.1f} ms",
             ", ".join(f"{1e3 * x:.1f}" for x in r["runs_s"]) + " ms", f"{100 * r['error']:+.1f}%",
             f"{100 * r['noise_floor']:.2f}%", f"{100 * r['straggler_share']:.1f}%",
             f"{100 * r['communication_share']:.1f}%", r["date"]] for timer, r in stored.items()]
    body = [header("Data-parallel runs: projection against measured `torch.distributed` runs (issue 15)").rstrip(),
            "", "`deepspeech2:tiny`, LibriSpeech dev-clean, `fixed` batches of 8 dealt to 2 ranks (one process and "
            "thread each, gloo); SeqPoints on the rank rows profiled in one process; each step projected as its "
            "slowest rank plus the all-reduce a probe measures. Truth: two timed `run_ddp` runs after a discarded "
            "one.", "", *table(["timer", "steps", "projected", "measured runs", "error", "noise floor",
                                "straggler share", "all-reduce share", "measured"], rows)]
    print(f"RESULTS.md section written: {write_section('ddp', chr(10).join(body))}")


if __name__ == "__main__":
    main()

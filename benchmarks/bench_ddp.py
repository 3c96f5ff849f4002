"""DDP validation: a 2-rank run projected from its SeqPoints against the measured run.

Replays a ``fixed`` (DistributedSampler-dealt) schedule of LibriSpeech dev-clean lengths
over 2 ranks, selects SeqPoints on the rank rows, profiles them (1 thread), projects
every step as the slowest rank's cost plus the gradient synchronisation probed on the
gloo ranks, and runs the real thing with ``torch.distributed`` (gloo, 2 processes, 1
thread each) twice after one discarded cold pass: projected against measured, with
the noise floor of the pair beside the error.

Usage: ``.venv/bin/python benchmarks/bench_ddp.py [--quick] [--timer wall|cpu] [--json]``
(``--quick``: 6 steps of a tiny model, a smoke run; the default: 40 steps).
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from rich.console import Console

from _results import bench_parser
from seqpoint.reports import ddp_validation_table, rank_projection_table, render
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
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        res = validate_ddp(config(args.quick, args.timer, Path(tmp) / "cache.sqlite"), runs=2)
        took = time.perf_counter() - t0
    if args.json:
        print(json.dumps({**res.to_dict(), "bench_wall_s": took, "timer": args.timer}, indent=2, default=str))
        return
    console = Console()
    console.print(render(rank_projection_table(res.projection),
                         title=f"projected: {res.projection.world_size} ranks, {res.projection.n_steps} steps"))
    console.print(render(ddp_validation_table(res), title=f"DDP validation ({args.timer} time)"))
    console.print(f"{len(res.seqpoints.points)} SeqPoints for {len(res.schedule)} rank rows; "
                  f"benchmark took {took:.1f} s")


if __name__ == "__main__":
    main()

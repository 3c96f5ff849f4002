"""Sweep wall time: 8 configurations x 10 SeqPoints, Ray (local) against serial.

The serial executor runs twice in this (warmed) process (identical runs: their
difference is the noise floor);
the Ray executor once on a local Ray with every CPU of this machine, one fresh worker
process per configuration. No cache is used, so every pair is measured each time. The
Ray figure includes starting Ray (printed apart).

Usage: ``.venv/bin/python benchmarks/bench_sweep.py [--quick] [--num-cpus N]``
(``--quick``: 2 configurations x 3 SeqPoints, fewer repeats).
"""

from __future__ import annotations

import itertools
import os
import time

from _results import bench_parser
from seqpoint.executors import Job, LocalExecutor, RayExecutor
from seqpoint.measurements import Measurements
from seqpoint.profiling import ProfileConfig

WORKLOAD = "deepspeech2:tiny"

#: The sweep's axes: precision x model width x micro-batching (2 x 2 x 2 = 8 configurations).
AXES: dict[str, tuple[object, ...]] = {
    "dtype": ("fp32", "bf16"),
    "rnn_hidden": (32, 64),
    "micro_batches": (1, 2),
}

#: Ten SeqPoints of a speech run: (batch_size, seq_len, tgt_len), lengths 60-420 frames.
POINTS: list[tuple[int, int, int]] = [(8, 60 + 40 * i, 0) for i in range(10)]


def configurations(quick: bool) -> list[dict[str, object]]:
    grid = [dict(zip(AXES, values, strict=True)) for values in itertools.product(*AXES.values())]
    return grid[:2] if quick else grid


def jobs(quick: bool) -> list[Job]:
    config = ProfileConfig(metrics=("time", "flops"), warmup=1 if quick else 2,
                           repeats=2 if quick else 5)
    points = POINTS[:3] if quick else POINTS
    return [Job(workload=WORKLOAD, overrides=o, config=config, points=points)
            for o in configurations(quick)]


def flops(results: list[Measurements]) -> list[list[float]]:
    return [[m.metrics.get("flops", float("nan")) for m in ms.measurements] for ms in results]


def main() -> None:
    parser = bench_parser(__doc__, quick="2 configurations x 3 SeqPoints")
    parser.add_argument("--num-cpus", type=int, default=os.cpu_count() or 1,
                        help="CPUs of the local Ray (default: all)")
    args = parser.parse_args()
    todo = jobs(args.quick)
    n_pairs = sum(len(j.points) for j in todo)  # type: ignore[arg-type]
    print(f"sweep: {len(todo)} configurations x {n_pairs // len(todo)} SeqPoints of {WORKLOAD}, "
          f"{os.cpu_count()} CPUs")

    # Import torch and build one model untimed: both serial runs then start alike (each
    # Ray worker pays that start-up itself, which is part of what Ray costs).
    warm = todo[0]
    LocalExecutor().profile([Job(workload=warm.workload, overrides=warm.overrides,
                                 config=warm.config, points=POINTS[:1])], progress=False)
    serial: list[float] = []
    reference: list[Measurements] = []
    for _ in range(2):
        t0 = time.perf_counter()
        reference = LocalExecutor().profile(todo, progress=False)
        serial.append(time.perf_counter() - t0)
    noise = abs(serial[1] - serial[0]) / (sum(serial) / 2)
    print(f"serial:  {serial[0]:.1f} s, {serial[1]:.1f} s (noise floor {noise:.1%})")

    t0 = time.perf_counter()
    with RayExecutor(num_cpus=args.num_cpus) as ray_ex:
        ray_ex.connect()
        started = time.perf_counter() - t0
        t1 = time.perf_counter()
        got = ray_ex.profile(todo, progress=False)
        swept = time.perf_counter() - t1
    failed = sum(not m.ok for ms in got for m in ms.measurements)
    mean_serial = sum(serial) / 2
    print(f"ray:     {swept:.1f} s sweep + {started:.1f} s to start Ray "
          f"({args.num_cpus} CPUs, {failed} failed points)")
    print(f"speedup: {mean_serial / swept:.2f}x on the sweep, "
          f"{mean_serial / (swept + started):.2f}x with start-up (noise floor {noise:.1%})")
    print(f"FLOPs equal to serial: {flops(got) == flops(reference)}")


if __name__ == "__main__":
    main()

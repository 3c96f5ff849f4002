"""Hugging Face example: projection from 10 SeqPoints against two recorded real runs.

The job is ``examples/hf_trainer.py``'s tiny BERT masked-LM Trainer (600 samples of 8-200
tokens, batch 16, group_by_length, ``pad_to_multiple_of=8``: 38 optimizer steps). Each
real run is ``trainer.train()`` in a fresh process, recorded by ``SeqPointCallback``;
two runs of the same schedule give the noise floor. The 10 SeqPoints are profiled by the
real harness (``profile_points``: campaign start-up, warm-up, first-step and steady
times) on ``workload_from_trainer``'s copy of the model, in this process, and projected
with the first-occurrence term. First-10 is today's practice: the mean of the first 10
steps of run 1, times the number of steps.

torch runs on one thread everywhere: on a shared 2-core machine two OpenMP threads wait
for each other whenever one is descheduled, and a step then costs up to 200x its quiet
time (measured while investigating issue 12), which no sampling method can project.

Usage: ``.venv/bin/python benchmarks/bench_hf.py [--out benchmarks/results/hf.json]``
(about 1-2 minutes).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
N_POINTS = 10


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("hf_trainer_example", ROOT / "examples" / "hf_trainer.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _quiet() -> None:
    import torch

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)


def real_run(path: Path) -> None:
    """One recorded ``trainer.train()`` (run in a fresh process by :func:`main`)."""
    _quiet()
    from seqpoint.integrations.huggingface import SeqPointCallback

    trainer = _example().users_trainer()
    trainer.add_callback(SeqPointCallback(path))
    trainer.train()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "hf.json")
    parser.add_argument("--real-run", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--quick", action="store_true", help="accepted for make bench-quick (this benchmark is already short)")
    ns = parser.parse_args()
    if ns.real_run is not None:
        real_run(ns.real_run)
        return
    _quiet()
    from seqpoint.integrations.huggingface import schedule_from_trainer, workload_from_trainer
    from seqpoint.profiling import ProfileConfig, profile_points
    from seqpoint.selection import SeqPointSelector
    from seqpoint.workflows import validate_trace

    tmp = Path(tempfile.mkdtemp(prefix="bench_hf_"))
    traces, real_wall = [], []
    for i in range(2):
        path = tmp / f"run{i}.csv"
        start = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--real-run", str(path)], check=True,
                       stdout=subprocess.DEVNULL)
        real_wall.append(time.perf_counter() - start)
        traces.append(path)

    trainer = _example().users_trainer()
    schedule = schedule_from_trainer(trainer)
    seqpoints = SeqPointSelector(n_points=N_POINTS).fit(schedule).to_seqpoints(schedule)
    start = time.perf_counter()
    meas = profile_points(workload_from_trainer(trainer), seqpoints, ProfileConfig(), progress=False)
    profile_s = time.perf_counter() - start
    res = validate_trace(schedule, seqpoints, meas, traces, first_n=10)

    lo, hi = res.interval_s
    print(f"HF Trainer example: {res.n_steps} steps, {len(seqpoints)} SeqPoints, torch threads 1")
    print(f"real runs (callback)   {res.measured_runs_s[0]:7.3f} s  {res.measured_runs_s[1]:7.3f} s"
          f"   noise floor {100 * res.noise_floor:5.2f}%")
    print(f"SeqPoints ({res.projected_metric}) {res.projected_s:7.3f} s   error {100 * res.error:+6.2f}%"
          f"   interval {lo:.3f}-{hi:.3f} s")
    print(f"first-10 steps         {res.first_n_s:7.3f} s   error {100 * res.first_n_error:+6.2f}%")
    print(f"wall: real runs {real_wall[0]:.1f} s, {real_wall[1]:.1f} s (process start included); "
          f"profiling the SeqPoints {profile_s:.1f} s")
    ns.out.parent.mkdir(parents=True, exist_ok=True)
    ns.out.write_text(json.dumps({**res.to_dict(), "real_wall_s": real_wall, "profile_wall_s": profile_s},
                                 indent=2, default=float))
    print(f"written to {ns.out}")


if __name__ == "__main__":
    main()

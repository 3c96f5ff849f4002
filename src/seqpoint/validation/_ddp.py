"""The data-parallel ground truth: a per-rank schedule run with ``torch.distributed``.

Every rank is a fresh gloo process of one thread that builds the workload with the same
seed, wraps it in ``DistributedDataParallel`` and steps its own batch of each iteration;
ranks meet at a barrier before each step, and a step lasts as long as its slowest rank.
Steps are timed by :data:`seqpoint.clocks.TIMERS` (``cpu`` stays put on a loaded machine).
"""

from __future__ import annotations

import socket
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from seqpoint._params import Options, check_params
from seqpoint.exceptions import ConfigError, SeqPointError
from seqpoint.validation._full_run import FullRun, FullRunError, fresh_failure

__all__ = ["DDPRun", "check_ddp_device", "run_ddp"]


@dataclass(frozen=True, kw_only=True)
class DDPRun(FullRun):
    """Timed data-parallel runs of a per-rank schedule: full runs whose every step lasts as
    long as its slowest rank (``iteration_s``, derived from ``rank_s``).

    Attributes
    ----------
    rank_s : ndarray of shape (n_runs, world_size, n_iterations)
        Each rank's time of each training step (gradient all-reduce and waiting for the
        other ranks included), seconds.
    allreduce_s : float
        Median time of one all-reduce of the gradients' bytes alone (no compute), seconds.
    gradient_bytes : int
        Bytes of the trainable parameters' gradients (what each step all-reduces).
    wall_s : ndarray of shape (n_runs,)
        Wall time of each run on rank 0, seconds.
    sync_s : float
        What gradient synchronisation adds to one step: the median DDP step of the
        start-up shape minus the median of the same step under ``no_sync()`` (bucket
        copies, hooks and the all-reduce), seconds; the slowest rank's figure.
    """

    iteration_s: NDArray[np.float64] = field(init=False)
    rank_s: NDArray[np.float64]
    allreduce_s: float
    gradient_bytes: int
    sync_s: float = float("nan")

    def __post_init__(self) -> None:
        object.__setattr__(self, "iteration_s", self.rank_s.max(axis=1))

    @property
    def world_size(self) -> int:
        return int(self.rank_s.shape[1])

    def to_dict(self) -> dict[str, Any]:
        return {"world_size": self.world_size, "n_runs": self.n_runs, "n_iterations": int(self.rank_s.shape[2]),
                "totals_s": self.totals_s.tolist(), "total_s": self.total_s, "noise_floor": self.noise_floor,
                "allreduce_s": self.allreduce_s, "gradient_bytes": self.gradient_bytes,
                "wall_s": self.wall_s.tolist(), "sync_s": self.sync_s}


def _rank_run(rank: int, world_size: int, port: int, spec: str, overrides: dict[str, Any],
              signatures: list[tuple[int, ...]], runs: int, warmup: int, allreduce_repeats: int, timer: str
              ) -> dict[str, Any]:  # pragma: no cover - runs in a fresh process
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from seqpoint.clocks import TIMERS
    from seqpoint.workloads import TorchWorkload, load_workload

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=world_size)
    try:
        workload = load_workload(spec, overrides)
        if not isinstance(workload, TorchWorkload):
            raise ConfigError(f"run_ddp needs a reference workload (deepspeech2, gnmt, bert); {spec} is a "
                              f"{type(workload).__name__}.")
        # Through the DDP wrapper every backward all-reduces the gradients, as real DDP training.
        ddp_model = DistributedDataParallel(workload.model)
        workload.use_forward(ddp_model)
        grad_bytes = sum(p.numel() * p.element_size() for p in workload.model.parameters() if p.requires_grad)
        start = workload.make_batch(tuple(workload.warmup_signature))
        for _ in range(warmup):
            workload.step(start)
        clock, device = TIMERS.get(timer)(), ("cpu",)

        def timed(fn: Callable[[], object]) -> float:
            dist.barrier()  # every rank starts together; what came before is untimed
            return clock(fn, device)

        times = np.empty((runs, len(signatures)))
        walls = np.empty(runs)
        for r in range(runs):
            dist.barrier()
            t_run = time.perf_counter()
            for i, sig in enumerate(signatures):
                batch = workload.make_batch(sig)
                times[r, i] = timed(lambda: workload.step(batch))  # noqa: B023 - called at once
            walls[r] = time.perf_counter() - t_run
        flat = torch.zeros(grad_bytes // 4, dtype=torch.float32)
        # The first of each set up the connection (or met the shape cold) and is dropped.
        reduce_s = [timed(lambda: dist.all_reduce(flat)) for _ in range(allreduce_repeats + 1)]
        synced, local = [], []
        for _ in range(allreduce_repeats + 1):
            synced.append(timed(lambda: workload.step(start)))
            with ddp_model.no_sync():  # the same step without gradient synchronisation
                local.append(timed(lambda: workload.step(start)))
        sync = max(statistics.median(synced[1:]) - statistics.median(local[1:]), 0.0)
        return {"times": times.tolist(), "walls": walls.tolist(),
                "allreduce": statistics.median(reduce_s[1:]), "grad_bytes": grad_bytes,
                "sync": sync}
    finally:
        dist.destroy_process_group()


def check_ddp_device(spec: str, overrides: dict[str, Any]) -> None:
    """ConfigError for a workload on a GPU: these ranks are gloo processes on the CPU, whose
    all-reduce and steps are not a GPU run's (NCCL, one device per rank)."""
    from seqpoint.workloads import workload_config

    declared = workload_config(spec, overrides)
    if declared is not None and declared.device != "cpu":
        raise ConfigError(f"The data-parallel validation runs its ranks as gloo processes on the CPU, and {spec} "
                          f"runs on {declared.device}: its all-reduce and step times would not be a GPU run's. "
                          "Validate with device = \"cpu\", or project the GPU run (seqpoint run with [batching] "
                          "world_size) and check it against your own recorded run (seqpoint validate --trace).")


def run_ddp(spec: str, overrides: dict[str, Any], rank_signatures: Sequence[Sequence[Sequence[int]]], *,
            runs: int = 1, warmup: int = 2, allreduce_repeats: int = 5, timeout_s: float = 600.0,
            timer: str = "wall") -> DDPRun:
    """Run ``rank_signatures[r][i]`` (rank ``r``'s signature at iteration ``i``) with
    ``torch.distributed``, ``runs`` times, and time every step on every rank.

    Every rank builds ``spec`` with the same seed and runs one thread; after the runs,
    ``allreduce_repeats`` all-reduces of the gradients' size and pairs of steps with and
    without ``no_sync()`` give ``allreduce_s`` and ``sync_s``. With ``micro_batches`` > 1
    every micro-batch all-reduces. Raises ConfigError for an empty schedule or ranks of
    unequal length, FullRunError (one line) when a rank fails, dies or ``timeout_s`` passes.
    """
    from seqpoint.clocks import in_fresh_process, stop_workers

    check_params("run_ddp", {"timer": [Options(("wall", "cpu"))]}, {"timer": timer})
    check_ddp_device(spec, overrides)
    sigs = [[tuple(int(v) for v in s) for s in rank] for rank in rank_signatures]
    world_size = len(sigs)
    if world_size < 1 or not sigs[0]:
        raise ConfigError("run_ddp needs at least one rank with at least one iteration.")
    if len({len(r) for r in sigs}) != 1:
        raise ConfigError("Every rank of a data-parallel schedule runs the same number of iterations. "
                          f"Got {[len(r) for r in sigs]} iterations per rank.")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    results: dict[int, dict[str, Any]] = {}
    failures: list[SeqPointError] = []

    def rank_main(r: int) -> None:
        try:
            results[r] = in_fresh_process(_rank_run, r, world_size, port, spec, dict(overrides), sigs[r],
                                          runs, warmup, allreduce_repeats, timer)
        except (RuntimeError, ConfigError) as exc:  # a rank's bad input is the caller's one line
            failures.append(exc if isinstance(exc, ConfigError) else
                            fresh_failure(f"Rank {r} of the data-parallel run of {spec}", exc))
            stop_workers()  # the other ranks wait for this one in a collective

    threads = [threading.Thread(target=rank_main, args=(r,), daemon=True) for r in range(world_size)]
    deadline = time.monotonic() + timeout_s
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(max(deadline - time.monotonic(), 0.0))
    finally:
        if any(t.is_alive() for t in threads):
            stop_workers()
            for t in threads:
                t.join()
            if not failures:
                failures.append(FullRunError(f"The data-parallel run of {spec} took over {timeout_s:g} s; "
                                             "give a larger timeout_s or a shorter schedule."))
    if failures:
        raise failures[0]
    ranks = [results[r] for r in range(world_size)]
    return DDPRun(rank_s=np.array([r["times"] for r in ranks]).transpose(1, 0, 2),
                  allreduce_s=float(max(r["allreduce"] for r in ranks)), gradient_bytes=int(ranks[0]["grad_bytes"]),
                  wall_s=np.array(ranks[0]["walls"]), sync_s=float(max(r["sync"] for r in ranks)))

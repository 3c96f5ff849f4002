"""The data-parallel ground truth: a per-rank schedule run with ``torch.distributed``.

Every rank is a spawned process (gloo, one thread) that builds the workload from its
spec with the same seed, wraps the model in ``DistributedDataParallel`` (so backward
really all-reduces the gradients) and steps its own batch of each iteration. Ranks
meet at a barrier before each step, so steps start together; a step's time is the
slowest rank's, since the gradient all-reduce makes every rank wait for it.

``timer="cpu"`` times each step in the rank process's CPU time (``time.process_time``:
the training thread plus gloo's communication threads, not the time spent waiting for
the other rank), which stays put on a loaded machine where wall time does not; the
slowest rank's CPU time is then its compute plus its share of the all-reduce work.
"""

from __future__ import annotations

import queue
import socket
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from seqpoint._params import Options, check_params
from seqpoint.exceptions import ConfigError
from seqpoint.validation._compare import noise_floor
from seqpoint.validation._full_run import FullRunError

__all__ = ["DDPRun", "run_ddp"]


@dataclass(frozen=True, kw_only=True)
class DDPRun:
    """Timed data-parallel runs of a per-rank schedule.

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

    rank_s: NDArray[np.float64]
    allreduce_s: float
    gradient_bytes: int
    wall_s: NDArray[np.float64]
    sync_s: float = float("nan")

    @property
    def world_size(self) -> int:
        return int(self.rank_s.shape[1])

    @property
    def step_s(self) -> NDArray[np.float64]:
        """Each step's time, the maximum over ranks, shape (n_runs, n_iterations), seconds."""
        return self.rank_s.max(axis=1)

    @property
    def totals_s(self) -> NDArray[np.float64]:
        """Sum of step times of each run, seconds."""
        return self.step_s.sum(axis=1)

    @property
    def total_s(self) -> float:
        """Mean over runs of the summed step time: the measured truth."""
        return float(self.totals_s.mean())

    @property
    def noise_floor(self) -> float:
        """Largest relative difference between two identical runs' totals (NaN for one run)."""
        return noise_floor(self.totals_s)

    def to_dict(self) -> dict[str, Any]:
        return {
            "world_size": self.world_size,
            "n_runs": int(self.rank_s.shape[0]),
            "n_iterations": int(self.rank_s.shape[2]),
            "totals_s": self.totals_s.tolist(),
            "total_s": self.total_s,
            "noise_floor": self.noise_floor,
            "allreduce_s": self.allreduce_s,
            "gradient_bytes": self.gradient_bytes,
            "wall_s": self.wall_s.tolist(),
            "sync_s": self.sync_s,
        }


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rank_main(
    rank: int, world_size: int, port: int, spec: str, overrides: dict[str, Any],
    signatures: list[tuple[int, ...]], runs: int, warmup: int, allreduce_repeats: int,
    out: Any, timer: str = "wall",
) -> None:  # pragma: no cover - runs in a spawned process
    try:
        out.put(("ok", rank, _rank_run(rank, world_size, port, spec, overrides, signatures,
                                       runs, warmup, allreduce_repeats, timer)))
    except BaseException as exc:  # report to the parent instead of hanging it
        text = str(exc).strip()
        out.put(("error", rank, f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"))


def _rank_run(
    rank: int, world_size: int, port: int, spec: str, overrides: dict[str, Any],
    signatures: list[tuple[int, ...]], runs: int, warmup: int, allreduce_repeats: int,
    timer: str = "wall",
) -> dict[str, Any]:  # pragma: no cover - runs in a spawned process
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    from seqpoint.workloads import TorchWorkload, load_workload

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=world_size)
    try:
        workload = load_workload(spec, overrides)
        if not isinstance(workload, TorchWorkload):
            raise ConfigError(
                f"run_ddp needs a reference workload (deepspeech2, gnmt, bert); {spec} is a "
                f"{type(workload).__name__}."
            )
        # Through the DDP wrapper every backward all-reduces the gradients, as real DDP training.
        ddp_model = DistributedDataParallel(workload.model)
        workload.use_forward(ddp_model)
        params = [p for p in workload.model.parameters() if p.requires_grad]
        grad_bytes = sum(p.numel() * p.element_size() for p in params)
        start = workload.make_batch(tuple(workload.warmup_signature))
        for _ in range(warmup):
            workload.step(start)
        clock = time.process_time if timer == "cpu" else time.perf_counter
        times = np.empty((runs, len(signatures)))
        walls = np.empty(runs)
        for r in range(runs):
            dist.barrier()
            t_run = time.perf_counter()
            for i, sig in enumerate(signatures):
                batch = workload.make_batch(sig)
                dist.barrier()  # steps start together; batch construction is untimed
                t0 = clock()
                workload.step(batch)
                times[r, i] = clock() - t0
            walls[r] = time.perf_counter() - t_run
        flat = torch.zeros(grad_bytes // 4, dtype=torch.float32)
        reduce_s = []
        for _ in range(allreduce_repeats + 1):  # the first one sets up the connection
            dist.barrier()
            t0 = clock()
            dist.all_reduce(flat)
            reduce_s.append(clock() - t0)
        synced, local = [], []
        for _ in range(allreduce_repeats + 1):
            dist.barrier()
            t0 = clock()
            workload.step(start)
            synced.append(clock() - t0)
            with ddp_model.no_sync():  # the same step without gradient synchronisation
                dist.barrier()
                t0 = clock()
                workload.step(start)
                local.append(clock() - t0)
        sync = max(statistics.median(synced[1:]) - statistics.median(local[1:]), 0.0)
        return {"times": times.tolist(), "walls": walls.tolist(),
                "allreduce": statistics.median(reduce_s[1:]), "grad_bytes": grad_bytes,
                "sync": sync}
    finally:
        dist.destroy_process_group()


def run_ddp(
    spec: str,
    overrides: dict[str, Any],
    rank_signatures: Sequence[Sequence[Sequence[int]]],
    *,
    runs: int = 1,
    warmup: int = 2,
    allreduce_repeats: int = 5,
    timeout_s: float = 600.0,
    timer: str = "wall",
) -> DDPRun:
    """Run a data-parallel schedule with ``torch.distributed`` and time every step on every rank.

    Parameters
    ----------
    spec, overrides : str, dict
        A reference workload, as for :func:`seqpoint.workloads.load_workload`; every
        rank builds it with the same seed (the same weights). Each rank runs one thread.
    rank_signatures : sequence of sequences of signatures
        ``rank_signatures[r][i]``: the ``(batch_size, seq_len, tgt_len)`` rank ``r`` steps
        at iteration ``i``; every rank has the same number of iterations. Its length is
        the world size.
    runs : int
        Repetitions of the whole schedule in the same processes (two or more give the
        noise floor).
    warmup : int
        Untimed steps of the workload's start-up shape before the first run.
    allreduce_repeats : int
        Timed all-reduces of a tensor the size of the gradients, after the runs, and
        pairs of steps with and without gradient synchronisation (``sync_s``).
    timeout_s : float
        Give up (and stop the ranks) after this long, seconds.
    timer : {"wall", "cpu"}
        Time steps and the all-reduce by the wall clock, or by the rank process's CPU
        time (robust to a loaded machine; see the module docstring).

    Returns
    -------
    DDPRun

    Raises
    ------
    ConfigError
        An empty schedule, or ranks with different numbers of iterations.
    FullRunError
        A rank failed (its error, one line) or died, or the run timed out.

    Notes
    -----
    Ranks are started with multiprocessing's spawn method, which re-imports the calling
    script: call this under ``if __name__ == "__main__":`` in a script. With
    ``micro_batches`` > 1 every micro-batch all-reduces (no ``no_sync``).
    """
    import multiprocessing as mp

    check_params("run_ddp", {"timer": [Options(("wall", "cpu"))]}, {"timer": timer})
    sigs = [[tuple(int(v) for v in s) for s in rank] for rank in rank_signatures]
    world_size = len(sigs)
    if world_size < 1 or not sigs[0]:
        raise ConfigError("run_ddp needs at least one rank with at least one iteration.")
    if len({len(r) for r in sigs}) != 1:
        raise ConfigError(
            "Every rank of a data-parallel schedule runs the same number of iterations. "
            f"Got {[len(r) for r in sigs]} iterations per rank."
        )
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    port = _free_port()
    procs = [
        ctx.Process(target=_rank_main, daemon=True,
                    args=(r, world_size, port, spec, dict(overrides), sigs[r], runs, warmup,
                          allreduce_repeats, out, timer))
        for r in range(world_size)
    ]
    for p in procs:
        p.start()
    results: dict[int, dict[str, Any]] = {}
    deadline = time.monotonic() + timeout_s
    try:
        while len(results) < world_size:
            try:
                status, rank, payload = out.get(timeout=0.2)
            except queue.Empty:
                dead = [r for r, p in enumerate(procs) if not p.is_alive() and r not in results]
                if dead and out.empty():
                    raise FullRunError(
                        f"Rank {dead[0]} of the data-parallel run of {spec} died "
                        f"(exit code {procs[dead[0]].exitcode})."
                    ) from None
                if time.monotonic() > deadline:
                    raise FullRunError(
                        f"The data-parallel run of {spec} took over {timeout_s:g} s; "
                        "give a larger timeout_s or a shorter schedule."
                    ) from None
                continue
            if status != "ok":
                raise FullRunError(f"Rank {rank} of the data-parallel run of {spec} failed: {payload}")
            results[rank] = payload
    finally:
        for p in procs:  # a failed rank leaves the others blocked in a collective
            if p.is_alive() and len(results) < world_size:
                p.terminate()
            p.join(timeout=30)
    times = np.array([results[r]["times"] for r in range(world_size)]).transpose(1, 0, 2)
    return DDPRun(
        rank_s=times,
        allreduce_s=float(max(results[r]["allreduce"] for r in range(world_size))),
        gradient_bytes=int(results[0]["grad_bytes"]),
        wall_s=np.array(results[0]["walls"]),
        sync_s=float(max(results[r]["sync"] for r in range(world_size))),
    )

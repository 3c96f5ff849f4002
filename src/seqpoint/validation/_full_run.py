"""The ground truth: every iteration of a schedule executed in order, timed, repeated."""

from __future__ import annotations

import ast
import functools
import queue
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np
from numpy.typing import NDArray

from seqpoint.exceptions import ConfigError, SeqPointError
from seqpoint.schedule import IterationSchedule
from seqpoint.validation._compare import noise_floor
from seqpoint.workloads import Workload

__all__ = ["FullRun", "FullRunError", "run_full_fresh", "run_full_schedule"]


@dataclass(frozen=True, kw_only=True)
class FullRun:
    """Timed full runs of a schedule.

    Attributes
    ----------
    iteration_s : ndarray of shape (n_runs, n_iterations)
        Wall time of every training step, seconds, per run.
    wall_s : ndarray of shape (n_runs,)
        Wall time of each whole run (steps plus batch construction), seconds.
    interleaved : int
        How many of the runs were timed between the measurement protocol's worker
        processes (``validate`` with ``[profile] processes > 1``), so that they cover
        the same stretch of time as the projection's measurements; the others ran after.
    """

    iteration_s: NDArray[np.float64]
    wall_s: NDArray[np.float64]
    interleaved: int = 0

    @classmethod
    def stack(cls, runs: Sequence[FullRun], *, interleaved: int = 0) -> FullRun:
        """The runs of several :class:`FullRun` of one schedule as one, in order."""
        return cls(iteration_s=np.vstack([r.iteration_s for r in runs]),
                   wall_s=np.concatenate([r.wall_s for r in runs]), interleaved=interleaved)

    @property
    def n_runs(self) -> int:
        return int(self.iteration_s.shape[0])

    @property
    def totals_s(self) -> NDArray[np.float64]:
        """Sum of step times of each run, seconds."""
        return self.iteration_s.sum(axis=1)

    @property
    def total_s(self) -> float:
        """Mean over runs of the summed step time: the measured truth."""
        return float(self.totals_s.mean())

    @property
    def noise_floor(self) -> float:
        """Largest relative difference between two identical runs' totals (fraction).

        With one run there is no floor to measure and this is NaN.
        """
        return noise_floor(self.totals_s)

    @property
    def per_iteration_s(self) -> NDArray[np.float64]:
        """Median over runs of each iteration's time, seconds, shape (n_iterations,)."""
        return np.median(self.iteration_s, axis=0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_runs": self.n_runs,
            "n_iterations": int(self.iteration_s.shape[1]),
            "totals_s": self.totals_s.tolist(),
            "wall_s": self.wall_s.tolist(),
            "total_s": self.total_s,
            "noise_floor": self.noise_floor,
            "interleaved": self.interleaved,
        }


def _synchronizer(workload: Workload) -> Callable[[], None]:
    device = str(getattr(getattr(workload, "config", None), "device", "cpu"))
    if device.startswith("cuda"):
        import torch

        return torch.cuda.synchronize
    return lambda: None


def run_full_schedule(
    workload: Workload,
    schedule: IterationSchedule,
    *,
    runs: int = 2,
    warmup: int = 2,
    on_step: Callable[[int, int], None] | None = None,
) -> FullRun:
    """Execute every iteration of ``schedule`` in order, ``runs`` times, and time each step.

    Parameters
    ----------
    workload : Workload
        Provides ``make_batch(signature)`` and ``step(batch)``.
    schedule : IterationSchedule
        The iterations to run, in order.
    runs : int
        Identical repetitions of the whole run (two or more measure the noise floor).
    warmup : int
        Untimed steps on the first iteration's signature before the first run, so that
        one-time start-up cost (allocator, kernel selection) is not charged to the run.
    on_step : callable, optional
        ``on_step(run, iteration_index)`` after every step (progress reporting).

    Notes
    -----
    Only ``step`` is timed: batch construction stands in for the data loader, which a
    training-time projection does not model. The device is synchronised around each
    step when it is a GPU.
    """
    sync = _synchronizer(workload)
    sigs = [tuple(int(v) for v in row) for row in schedule.signature_matrix()]
    first = workload.make_batch(sigs[0])
    for _ in range(warmup):
        workload.step(first)
    sync()
    times = np.empty((runs, len(sigs)), dtype=np.float64)
    walls = np.empty(runs, dtype=np.float64)
    for r in range(runs):
        run_start = time.perf_counter()
        times[r] = _time_steps(workload, sigs, sync,
                               None if on_step is None else functools.partial(on_step, r))
        walls[r] = time.perf_counter() - run_start
    return FullRun(iteration_s=times, wall_s=walls)


def _time_steps(
    workload: Workload, signatures: list[tuple[int, ...]], sync: Callable[[], None],
    on_step: Callable[[int], None] | None,
) -> NDArray[np.float64]:
    """Seconds of ``step`` for each signature in order (batch construction untimed)."""
    times = np.empty(len(signatures), dtype=np.float64)
    for i, sig in enumerate(signatures):
        batch = workload.make_batch(sig)
        sync()
        t0 = time.perf_counter()
        workload.step(batch)
        sync()
        times[i] = time.perf_counter() - t0
        if on_step is not None:
            on_step(i)
    return times


def _warmup_signature(workload: Workload, signatures: list[tuple[int, ...]]) -> tuple[int, ...]:
    """A shape for start-up steps that is not one of the run's signatures."""
    base = tuple(getattr(workload, "warmup_signature", signatures[0]))
    taken = set(signatures)
    sig = base
    while sig in taken:
        sig = (sig[0], sig[1] + 1, *sig[2:])
    return sig


class FullRunError(SeqPointError, RuntimeError):
    """A fresh-process full run failed or its process died (a ``RuntimeError`` too)."""


_MAIN_GUARD = (
    "multiprocessing's spawn start method re-imports the calling script in the new process: "
    'wrap the script\'s top-level code in `if __name__ == "__main__":` (as for any '
    "multiprocessing spawn), or time the run in this process with run_full_schedule"
)


def _main_script() -> str | None:
    """Path of the ``__main__`` script that spawn re-runs in a child, if any."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return path if isinstance(path, str) else None


def _mentions_dunder_name(test: ast.expr) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "__name__" for n in ast.walk(test))


def _guarded(tree: ast.Module, line: int) -> bool:
    """Whether ``line`` lies in an ``if`` whose test reads ``__name__`` (the main guard)."""
    body: list[ast.stmt] = list(tree.body)
    while body:
        stmt = next(
            (s for s in body if s.lineno <= line <= (s.end_lineno or s.lineno)), None
        )
        if stmt is None:
            return False
        if isinstance(stmt, ast.If) and _mentions_dunder_name(stmt.test):
            return True
        body = [c for c in ast.iter_child_nodes(stmt) if isinstance(c, ast.stmt)]
    return False


def _check_main_guard(spec: str) -> None:
    """Refuse to spawn when the call runs in the main script's unguarded top-level code.

    A spawned child re-runs the main script's top level; an unguarded call to
    :func:`run_full_fresh` there would spawn again from the child, which Python stops
    with a RuntimeError about the bootstrapping phase. This finds the main script's
    module-level frame on the stack and checks, from its source, that the statement it
    is executing sits under a ``__name__`` test. Without a readable source (interactive
    sessions, notebooks, frozen apps) there is nothing to check.
    """
    path = _main_script()
    main = sys.modules.get("__main__")
    if path is None or main is None:
        return
    frame = sys._getframe(1)
    while frame is not None and not (
        frame.f_globals is vars(main) and frame.f_code.co_name == "<module>"
    ):
        frame = frame.f_back  # type: ignore[assignment]
    if frame is None:
        return
    line = frame.f_lineno
    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return
    if not _guarded(tree, line):
        raise ConfigError(
            f"run_full_fresh({spec!r}) is called from unguarded top-level code of {path} "
            f"(line {line}); {_MAIN_GUARD}."
        )


def _describe_exit(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (killed, e.g. by the out-of-memory killer)" if name == "SIGKILL" else ""
        return f"exit code {code}, {name}{hint}"
    return f"exit code {code}"


def _child(spec: str, overrides: dict[str, Any], signatures: list[tuple[int, ...]], warmup: int,
           done: Any, out: Any) -> None:  # pragma: no cover - runs in a subprocess
    from seqpoint.workloads import load_workload

    done.value = 0  # the run started: arguments arrived and the main script was imported
    try:
        workload = load_workload(spec, overrides=overrides)
        sync = _synchronizer(workload)
        start = workload.make_batch(_warmup_signature(workload, signatures))
        for _ in range(warmup):
            workload.step(start)
        sync()
        t_run = time.perf_counter()

        def tick(i: int) -> None:
            with done.get_lock():
                done.value = i + 1

        times = _time_steps(workload, signatures, sync, tick)
        out.put(("ok", times.tolist(), time.perf_counter() - t_run))
    except BaseException as exc:  # report any failure to the parent instead of hanging it
        text = str(exc).strip()
        first = text.splitlines()[0] if text else ""
        out.put(("error", f"{type(exc).__name__}: {first}", 0.0))


def run_full_fresh(
    spec: str,
    overrides: dict[str, Any],
    schedule: IterationSchedule,
    *,
    runs: int = 2,
    warmup: int = 3,
    on_progress: Callable[[int, int], None] | None = None,
) -> FullRun:
    """Execute the schedule in order, each run in a fresh process, and time every step.

    A real training run starts in a fresh process, so every shape is new to it the
    first time it appears and the allocator starts empty; running each repetition in
    its own process makes the repetitions identical, so their spread is the noise floor.

    Parameters
    ----------
    spec, overrides : str, dict
        The workload, as for :func:`seqpoint.workloads.load_workload` (rebuilt in the
        child process with the same seed, hence the same weights).
    warmup : int
        Steps of a shape that is not in the schedule, absorbing process start-up.
    on_progress : callable, optional
        ``on_progress(run, steps_done)``, polled while a run is going.

    Raises
    ------
    ConfigError
        When called from a script's top-level code outside an
        ``if __name__ == "__main__":`` block (spawn re-runs that code in the child), or
        when the child dies while re-importing the calling script.
    FullRunError
        When the run fails in the child (the child's error, one line) or the child
        dies (its exit code, e.g. -9 when killed for memory). It is a ``RuntimeError``
        and a :class:`~seqpoint.exceptions.SeqPointError`.
    """
    import multiprocessing as mp

    if getattr(mp.current_process(), "_inheriting", False):
        # Only reachable when the check below was fooled: this is a spawned child
        # re-running its parent's script, which Python would stop with a cryptic error.
        raise ConfigError(
            f"run_full_fresh({spec!r}) was called again while a spawned full-run process "
            f"imported the calling script; {_MAIN_GUARD}."
        )
    _check_main_guard(spec)
    ctx = mp.get_context("spawn")
    signatures = [tuple(int(v) for v in row) for row in schedule.signature_matrix()]
    times = np.empty((runs, len(signatures)))
    walls = np.empty(runs)
    for r in range(runs):
        done = ctx.Value("l", -1)  # -1 until the child has started the run
        out = ctx.Queue()
        proc = ctx.Process(target=_child, args=(spec, overrides, signatures, warmup, done, out),
                           daemon=True)
        proc.start()
        result = None
        while result is None:
            try:
                result = out.get(timeout=0.2)
            except queue.Empty:  # still running, or died without a word
                if not proc.is_alive() and out.empty():
                    break
            if on_progress is not None:
                on_progress(r, max(0, int(done.value)))
        proc.join()
        if result is None:
            _raise_died(spec, r, proc.exitcode, int(done.value), len(signatures))
        status, payload, wall = result
        if status != "ok":
            raise FullRunError(f"Full run {r + 1} of {spec} failed: {payload}")
        times[r] = payload
        walls[r] = wall
    return FullRun(iteration_s=times, wall_s=walls)


def _raise_died(spec: str, run: int, code: int | None, done: int, n_steps: int) -> NoReturn:
    """Raise the one-line error for a child process that ended without a result."""
    script = _main_script()
    if done < 0 and code is not None and code > 0 and script is not None:
        raise ConfigError(
            f"The fresh process of full run {run + 1} of {spec} exited ({_describe_exit(code)}) "
            f"before the run started, most likely while re-importing {script} (its traceback "
            f"is above); {_MAIN_GUARD}."
        )
    where = "before the run started" if done < 0 else f"after {done} of {n_steps} steps"
    fix = (
        "give it more memory or a smaller workload (preset, batches)"
        if code == -signal.SIGKILL
        else "run it in this process with run_full_schedule to see why"
    )
    raise FullRunError(
        f"The fresh process of full run {run + 1} of {spec} died {where} "
        f"({_describe_exit(code)}); {fix}."
    )

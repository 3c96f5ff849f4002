"""``seqpoint speedup``: two configurations measured on the same SeqPoints."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from seqpoint._live import Reporter
from seqpoint.exceptions import ConfigError, SeqPointWarning
from seqpoint.executors import Executor
from seqpoint.measurements import Measurements
from seqpoint.measurements.metrics import INSTRUCTIONS
from seqpoint.projection import Speedup
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import SeqPoints
from seqpoint.validation import MeasuredSpeedup
from seqpoint.workflows._campaign import Campaign
from seqpoint.workflows._config import RunConfig
from seqpoint.workflows._folder import RunFolder
from seqpoint.workflows._validate import timed_full_runs

__all__ = ["SpeedupResult", "speedup"]


@dataclass
class SpeedupResult:
    """Projected speedup of configuration B over A."""

    config_a: RunConfig
    """Configuration A (the baseline)."""
    config_b: RunConfig
    """Configuration B."""
    seqpoints: SeqPoints
    """The SeqPoints both were measured on."""
    measurements_a: Measurements
    """A's measurements of :attr:`seqpoints`."""
    measurements_b: Measurements
    """B's measurements of the same points."""
    speedup: Speedup
    """Projected ``T_a / T_b``."""
    folder: RunFolder
    """Where the outputs are."""
    measured: MeasuredSpeedup | None = None
    """With ``validate``: both configurations' run (its ``[validation]`` part) timed in full,
    ``[validation] runs`` rounds of one fresh-process run each, a and b alternating."""
    n_iterations: int = 0
    """Iterations of the run projected (the validation part with ``validate``)."""
    in_turn: bool = False
    """A's and B's worker processes took turns (both ``[profile] processes > 1``)."""

    def to_dict(self) -> dict[str, Any]:
        """What ``speedup.json`` and ``seqpoint speedup --json`` hold."""
        out = {"n_points": len(self.seqpoints), "n_iterations": self.n_iterations, **self.speedup.to_dict(),
               "workload_a": self.measurements_a.workload, "workload_b": self.measurements_b.workload,
               "in_turn": self.in_turn, "run_folder": str(self.folder.path)}
        if self.measured is not None:
            m, sp = self.measured, self.speedup
            out["measured"] = {**m.to_dict(), "error": m.error_of(sp.value), "interval_holds": m.held_by(sp.interval),
                               "agrees_within_error": m.agrees_with(sp.value, sp.interval, sp.confidence)}
        return out


def _same_run(a: RunConfig, b: RunConfig) -> None:
    for section in ("lengths", "batching", "selection"):
        if getattr(a, section) != getattr(b, section):
            raise ConfigError(f"The two configurations differ in [{section}]; a speedup compares the same run "
                              "on the same SeqPoints, so only [workload] and [profile] may differ.")
    for section in ("validation", "report"):
        if getattr(a, section) != getattr(b, section):
            warnings.warn(f"Config B's [{section}] differs from A's and is not used: a speedup takes its "
                          "[validation] and [report] settings from A.", SeqPointWarning, stacklevel=3)


def speedup(a: RunConfig, b: RunConfig, *, validate: bool = False, reporter: Reporter | None = None,
            executor: Executor | str | None = None) -> SpeedupResult:
    """Measure A and B on the SeqPoints of their shared run (on ``executor``, default A's
    ``[profile] executor``) and project the speedup. With ``validate`` the run is A's
    ``[validation]`` part, then run in full under both, in ``[validation] runs`` rounds
    (a b, b a, ...), for the measured speedup and its noise floor."""
    from seqpoint.projection import project_speedup

    reporter = reporter or Reporter(progress=False)
    _same_run(a, b)
    if (a.profile.timer == INSTRUCTIONS) != (b.profile.timer == INSTRUCTIONS):
        raise ConfigError("A speedup compares A and B in one unit, but one of them has "
                          "[profile] timer = \"instructions\" and the other a clock: give both the same timer.")
    if validate and a.batching.world_size > 1:
        raise ConfigError(f"speedup --validate times single-process full runs, and [batching] world_size = "
                          f"{a.batching.world_size} is data-parallel: check each configuration against "
                          "torch.distributed runs with seqpoint.workflows.validate_ddp instead.")
    folder = RunFolder.new(a.name + "-speedup", a.report.out, command="speedup")
    ca = Campaign(a, reporter=reporter, executor=executor, folder=folder, subset=validate, tag="a")
    ca.seqpoints  # noqa: B018 - chosen (and written) before B's config is checked and anything measured
    cb = ca.under(b, tag="b")
    ma, mb = _measure_both(ca, cb)
    # The whole run (cold steps included) when both have first steps, as the sweep compares.
    sp = project_speedup(ca.schedule, ca.seqpoints, ma, mb)
    result = SpeedupResult(config_a=a, config_b=b, seqpoints=ca.seqpoints, measurements_a=ma,
                           measurements_b=mb, speedup=sp, folder=folder, n_iterations=len(ca.schedule),
                           in_turn=_in_turn(a, b))
    folder.write_json("speedup.json", result.to_dict())  # the projection, before the full runs
    if validate:
        result.measured = _measured(ca, cb, ca.schedule, folder, reporter=reporter)
        folder.write_json("speedup.json", result.to_dict())
    return result


def _in_turn(a: RunConfig, b: RunConfig) -> bool:
    """Whether A's and B's worker processes take turns: both have some."""
    return a.profile.processes > 1 and b.profile.processes > 1


def _measure_both(ca: Campaign, cb: Campaign) -> tuple[Measurements, Measurements]:
    """A's and B's measurements of the shared SeqPoints. With ``[profile] processes > 1`` in
    both, their worker processes take turns, A1 B1 B2 A2 A3 B3 ..., so a drift of the machine's
    speed reaches both; else A, then B."""
    from seqpoint.profiling import EndTurn, take_turns

    def job(c: Campaign, label: str) -> Callable[[EndTurn | None], Measurements]:
        def measure(end_turn: EndTurn | None) -> Measurements:
            reporter = c.reporter.labelled(f"{label} {c.config.workload.name}")
            c.reporter = reporter if end_turn is None else reporter.hooked(lambda _p, _last: end_turn())
            return c.measure_seqpoints()

        return measure

    jobs = [job(ca, "A"), job(cb, "B")]
    pa, pb = ca.config.profile.processes, cb.config.profile.processes
    if _in_turn(ca.config, cb.config):
        if pa != pb:
            more = "A" if pa > pb else "B"
            warnings.warn(f"A has [profile] processes = {pa} and B {pb}: their workers take turns as far as they go, "
                          f"and {more}'s last {abs(pa - pb)} run(s) alone; give both the same number.",
                          SeqPointWarning, stacklevel=3)
        ma, mb = take_turns(jobs)
        return ma, mb
    if pa > 1 or pb > 1:
        warnings.warn(f"Only {'A' if pa > 1 else 'B'} has [profile] processes > 1 (A {pa}, B {pb}): A is measured, "
                      "then B, not in turn; give both processes > 1 to time them over the same stretch of time.",
                      SeqPointWarning, stacklevel=3)
    return jobs[0](None), jobs[1](None)


def _measured(ca: Campaign, cb: Campaign, schedule: IterationSchedule, folder: RunFolder, *,
              reporter: Reporter) -> MeasuredSpeedup:
    """``schedule`` run in full under a and b, in alternating rounds of fresh processes (counted
    under callgrind with the ``instructions`` timer); ``full_runs.json`` holds what has been
    measured after every run."""
    rounds = ca.config.validation.runs
    times: dict[str, list[float]] = {"a": [], "b": []}
    for r in range(rounds):
        for tag in ("a", "b") if r % 2 == 0 else ("b", "a"):
            run = timed_full_runs(ca if tag == "a" else cb, schedule, 1, reporter=reporter,
                                  label=f"full run {r + 1}/{rounds} of {tag.upper()} (fresh process)")
            times[tag].append(run.total_s)
            folder.write_json("full_runs.json", {"runs_a_s": times["a"], "runs_b_s": times["b"]})
    return MeasuredSpeedup(tuple(times["a"]), tuple(times["b"]))

"""``seqpoint speedup``: two configurations measured on the same SeqPoints."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seqpoint.exceptions import ConfigError
from seqpoint.measurements import environment_manifest
from seqpoint.pipeline._config import RunConfig, apply_overrides, load_config
from seqpoint.pipeline._folder import RunFolder
from seqpoint.pipeline._stages import (
    build_schedule,
    choose_points,
    load_lengths,
    make_workload,
    measure,
    open_cache,
)
from seqpoint.selection import SeqPoints, write_seqpoints

__all__ = ["SpeedupResult", "speedup_between", "speedup_configs"]


@dataclass
class SpeedupResult:
    """Projected speedup of configuration B over A."""

    config_a: RunConfig
    config_b: RunConfig
    seqpoints: SeqPoints
    measurements_a: Any
    measurements_b: Any
    speedup: Any
    """``seqpoint.projection.Speedup``."""
    folder: RunFolder

    def to_dict(self) -> dict[str, Any]:
        return {"n_points": len(self.seqpoints), **self.speedup.to_dict(),
                "workload_a": self.measurements_a.workload, "workload_b": self.measurements_b.workload}


def _same_run(a: RunConfig, b: RunConfig) -> None:
    for section in ("lengths", "batching", "selection"):
        if getattr(a, section) != getattr(b, section):
            raise ConfigError(
                f"The two configurations differ in [{section}]; a speedup compares the same run "
                "on the same SeqPoints, so only [workload] and [profile] may differ."
            )


def speedup_configs(
    a: RunConfig, b: RunConfig, *, progress: bool = True, console: Any = None
) -> SpeedupResult:
    """Measure A and B on the SeqPoints of their shared run and project the speedup."""
    from seqpoint.profiling import write_measurements
    from seqpoint.projection import project_speedup

    _same_run(a, b)
    folder = RunFolder.new(a.name + "-speedup", a.report.out)
    folder.write_text("config_a.toml", a.to_toml())
    folder.write_text("config_b.toml", b.to_toml())
    schedule = build_schedule(a.batching, load_lengths(a.lengths))
    _, points = choose_points(a.selection, schedule)
    write_seqpoints(points, folder.file("seqpoints.json"))
    folder.write_json("environment.json", environment_manifest())
    meas = []
    for tag, cfg in (("a", a), ("b", b)):
        ms = measure(cfg, make_workload(cfg.workload), points, cache=open_cache(cfg.profile),
                     progress=progress, console=console)
        write_measurements(ms, folder.file(f"measurements_{tag}.json"))
        meas.append(ms)
    sp = project_speedup(schedule, points, meas[0], meas[1], metric="time_s")
    result = SpeedupResult(config_a=a, config_b=b, seqpoints=points, measurements_a=meas[0],
                           measurements_b=meas[1], speedup=sp, folder=folder)
    folder.write_json("speedup.json", result.to_dict())
    return result


def speedup_between(
    config_a: Path, config_b: Path | None, set_b: list[str], *, progress: bool = True,
    console: Any = None,
) -> SpeedupResult:
    """Speedup of ``config_b`` (or ``config_a`` with ``set_b`` overrides) over ``config_a``."""
    a = load_config(config_a)
    if config_b is None and not set_b:
        raise ConfigError("Give a second config B, or --set-b overrides that turn A into B.")
    b = load_config(config_b) if config_b is not None else a
    if set_b:
        b = apply_overrides(b, set_b)
    return speedup_configs(a, b, progress=progress, console=console)

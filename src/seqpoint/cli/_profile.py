"""``seqpoint profile``: measure the SeqPoints of SEQPOINTS.json on a workload; write MEASUREMENTS.json.

Exit status: 0 when the command ran (points that ran out of memory or failed are
recorded in MEASUREMENTS.json with their status, listed in the table and counted on
stderr); 2 on bad input (unknown workload, preset, setting or metric, a bad value, a
missing or malformed SEQPOINTS file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seqpoint.cli._app import app, console, fail
from seqpoint.cli._options import (
    Address,
    AsJson,
    ExecutorName,
    Quiet,
    UserCode,
    print_json,
    print_warnings,
    reporter,
    with_executor,
    with_sets,
)
from seqpoint.reports import print_measurements

__all__ = ["profile"]


@app.command("profile")
def profile(
    seqpoints: Annotated[Path, typer.Argument(help="SEQPOINTS.json written by 'seqpoint select'.")],
    workload: Annotated[str, typer.Option(
        "--workload", "-w", help="NAME[:PRESET] (deepspeech2, gnmt, bert), path/to/file.py:function, or "
                                 "module:function with --allow-user-code (user code runs with your rights).")],
    output: Annotated[Path, typer.Option("-o", "--output", help="MEASUREMENTS.json to write.")],
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="A run config key, section.key=value: workload.set.KEY (a workload setting: "
                      "workload.set.dtype=bf16, workload.set.threads=2, workload.set.time_strides=[2,2] ...) "
                      "or any [profile] key (profile.processes=3, profile.cold_window=20, ...); repeatable.")] = None,
    metric: Annotated[list[str] | None, typer.Option(
        "--metric", "-m",
        help="time, flops, bytes, breakdown, memory, roofline:<gpu> (the bound) or model:<gpu> (the device model) on v100, a100, h100, h200, b200, ... or a device file .toml; repeatable; default time.")] = None,
    warmup: Annotated[int, typer.Option("--warmup", help="Untimed steps per point.")] = 2,
    repeats: Annotated[int, typer.Option("--repeats", help="Timed steps per point (median reported).")] = 5,
    timer: Annotated[str, typer.Option(
        "--timer", help="wall, cpu, cuda, or instructions (user-space instructions per step under callgrind, "
                        "the AVX2 code path; needs valgrind).")] = "wall",
    cache: Annotated[Path | None, typer.Option(
        "--cache", help="Measurement cache (default $SEQPOINT_CACHE or ~/.cache/seqpoint).")] = None,
    no_cache: Annotated[bool, typer.Option(
        "--no-cache", help="Measure everything; read and write no cache.")] = False,
    executor: ExecutorName = None,
    address: Address = None,
    as_json: AsJson = False,
    quiet: Quiet = False,
    allow_user_code: UserCode = False,
    kineto_dir: Annotated[Path | None, typer.Option(
        "--kineto-dir", help="Write each SeqPoint's profiled step as a Kineto (chrome) trace here, with "
                             "its weight in the metadata (for HTA, TensorBoard, Perfetto).")] = None,
) -> None:
    """Profile the SeqPoints on a workload and write MEASUREMENTS.json."""
    from seqpoint.measurements import write_measurements
    from seqpoint.selection import read_seqpoints
    from seqpoint.workflows import Campaign, ProfileSection, RunConfig, WorkloadSection
    from seqpoint.workloads import check_user_code

    if cache is not None and no_cache:
        fail("--cache and --no-cache exclude each other; give one.")
    # The flags fill the run config's [workload] and [profile]; --set lays any of their keys
    # over them, checked as a TOML file is. The harness default records time only; a run
    # config's [profile] records more by default.
    cfg = RunConfig(workload=WorkloadSection(name=workload), profile=ProfileSection(
        warmup=warmup, repeats=repeats, timer=timer, metrics=tuple(metric) if metric else ("time",),
        kineto_dir=None if kineto_dir is None else str(kineto_dir), cache=None if cache is None else str(cache),
        use_cache=not no_cache))
    cfg = with_sets(cfg, set_, sections=("workload", "profile"), bare="workload.set", command="profile",
                    given=("workload.name",))
    cfg = with_executor(cfg, executor, address)
    check_user_code(workload, allowed=allow_user_code)
    points = read_seqpoints(seqpoints)
    ms = Campaign(cfg, reporter=reporter(quiet, as_json)).measure(points)
    write_measurements(ms, output)

    failed = [m for m in ms.measurements if not m.ok]
    if failed:
        print_warnings([f"{len(failed)} of {len(ms.measurements)} points did not measure "
                        f"({', '.join(sorted({m.status for m in failed}))}); they are recorded in "
                        f"{output} with their status and message."])
    if as_json:
        print_json({"output": str(output), "workload": ms.workload, "n_points": len(ms.measurements),
                    "ok": len(ms.measurements) - len(failed), "failed": len(failed),
                    "metrics": sorted({k for m in ms.measurements for k in m.metrics})})
        return
    print_measurements(console, points, ms)
    console.print(f"wrote {output}", markup=False)

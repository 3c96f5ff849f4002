"""Measuring one point: warm-up, timed repeats, deterministic counts, the operation-category
breakdown and peak memory of one signature (``Profiler.point``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from seqpoint._signature import Signature, signature_fields
from seqpoint.clocks import step_timer, time_stats
from seqpoint.devices import device_key
from seqpoint.exceptions import SeqPointError
from seqpoint.measurements import Measurement
from seqpoint.measurements.metrics import first_of, step_metric
from seqpoint.profiling._breakdown import profile_breakdown, state_bytes
from seqpoint.profiling._config import ProfileConfig
from seqpoint.profiling._counting import count_point
from seqpoint.profiling._failures import guarded, name_of
from seqpoint.profiling._startup import onednn_cache_capacity, onednn_metrics, startup_state
from seqpoint.profiling._state import StartupState, WorkloadState
from seqpoint.workloads import BatchShape, Workload, WorkloadFacts

__all__ = ["kineto_trace_path", "profile_point"]

#: What one point's measurement returns: metrics, seconds per category, raw repeats.
_Measured = tuple[dict[str, float], dict[str, float], dict[str, list[float]]]


def _counted(workload: Workload, signature: Signature, config: ProfileConfig,
             shape: BatchShape | None, state: WorkloadState) -> dict[str, float]:
    """The deterministic metrics asked for (``flops``, ``bytes``, ``roofline_<gpu>_s``, ``model_<gpu>_s``)."""
    gpus = [m.partition(":")[2] for m in config.metrics if m.startswith("roofline:")]
    models = [m.partition(":")[2] for m in config.metrics if m.startswith("model:")]
    counts = count_point(workload, signature, shape=shape, devices=gpus, models=models, state=state)
    keys: list[str] = []
    if "flops" in config.families:
        keys += ["flops", *(k for k in counts if k.startswith("flops_"))]
    if "bytes" in config.families:
        keys += ["bytes", "ops", *(k for k in counts if k.startswith("bytes_"))]
    keys += [f"roofline_{device_key(g)}_s" for g in gpus] + [f"model_{device_key(g)}_s" for g in models]
    return {k: counts[k] for k in keys}


def _timed(workload: Workload, signature: Signature, batch: object, config: ProfileConfig,
           state: StartupState, devices: Sequence[str]) -> tuple[dict[str, float], list[float]]:
    """Warm-up and timed repeats: ``time_s`` statistics (and ``time_s_first`` when cold)."""
    metrics: dict[str, float] = {}
    clock = step_timer(config.timer, devices)
    step = step_metric(config.timer)
    cold = signature not in state.seen
    warm_left = config.warmup
    if cold and warm_left:
        # The first step of a never-seen shape pays one-time costs (kernel and primitive
        # selection, allocator growth), as a real run does once per unique signature.
        metrics[first_of(step)] = clock(lambda: workload.step(batch))
        warm_left -= 1
    for _ in range(warm_left):
        workload.step(batch)
    times: list[float] = []
    for _ in range(config.repeats):
        times.append(clock(lambda: workload.step(batch)))
        if config.max_seconds_per_point and sum(times) >= config.max_seconds_per_point:
            break
    metrics.update(time_stats(times, step))
    metrics.update(onednn_metrics(state.primitives, onednn_cache_capacity()))
    return metrics, times


def kineto_trace_path(kineto_dir: str | Path, iteration: int, signature: Sequence[int]) -> Path:
    """Where the Kineto trace of a point goes: ``it<iteration>_b<B>_s<S>_t<T>.pt.trace.json``
    (the suffix TensorBoard's profiler plugin looks for)."""
    b, s, t = (int(v) for v in (*signature, 0, 0)[:3])
    return Path(kineto_dir) / f"it{int(iteration)}_b{b}_s{s}_t{t}.pt.trace.json"


def _measure(
    workload: Workload, signature: Signature, config: ProfileConfig, iteration: int,
    weight: float | None, shape: BatchShape | None, kept: WorkloadState, facts: WorkloadFacts,
) -> _Measured:
    import torch

    metrics: dict[str, float] = {}
    breakdown: dict[str, float] = {}
    samples: dict[str, list[float]] = {}
    families = config.families
    if families & {"flops", "bytes", "roofline", "model"}:
        metrics.update(_counted(workload, signature, config, shape, kept))
    if not config.stepped:
        return metrics, breakdown, samples
    state = startup_state(workload, kept)
    batch = workload.make_batch(signature if shape is None else shape)  # type: ignore[arg-type]
    if "time" in families:
        timed, times = _timed(workload, signature, batch, config, state, facts.devices)
        metrics.update(timed)
        samples[step_metric(config.timer)] = times
    elif config.warmup:
        for _ in range(config.warmup):
            workload.step(batch)
    state.seen.add(signature)
    host_memory = "memory" in families and not facts.on_cuda
    trace = None if config.kineto_dir is None else kineto_trace_path(config.kineto_dir, iteration, signature)
    if "breakdown" in families or host_memory or trace is not None:
        meta: dict[str, object] = {"seqpoint_iteration": iteration, "seqpoint_signature": list(signature),
                                   "seqpoint_workload": name_of(workload)}
        if weight is not None:
            meta["seqpoint_weight"] = float(weight)
        per_cat, total, peak = profile_breakdown(workload, batch, torch.device(facts.device), config.breakdown_steps,
                                                 host_memory, chrome_trace=trace, trace_metadata=meta)
        if "breakdown" in families:
            breakdown.update(per_cat)
            metrics["breakdown_total_s"] = total
        if host_memory:
            metrics["peak_mem_bytes"] = float(state_bytes(workload, batch) + peak)
    if "memory" in families and facts.on_cuda:
        metrics.update(_cuda_memory(workload, batch, facts.device))
    return metrics, breakdown, samples


def _cuda_memory(workload: Workload, batch: object, device: str) -> dict[str, float]:
    """The step's own peak: its allocations above what was alive before it (another model, a
    trained optimizer) plus its own resident state, and the allocator's reserved peak."""
    import torch

    torch.cuda.synchronize(device)
    alive = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    workload.step(batch)
    torch.cuda.synchronize(device)
    own = torch.cuda.max_memory_allocated(device) - alive + state_bytes(workload, batch)
    return {"peak_mem_bytes": float(own), "peak_reserved_bytes": float(torch.cuda.max_memory_reserved(device))}


def profile_point(workload: Workload, sig: Signature, config: ProfileConfig, *, iteration: int,
                  weight: float | None, shape: BatchShape | None, state: WorkloadState,
                  facts: WorkloadFacts) -> Measurement:
    """One point measured in this process (``Profiler.point`` says what it records)."""
    out = guarded(workload, sig, lambda: _measure(workload, sig, config, iteration, weight, shape, state, facts),
                  reraise=(SeqPointError,))
    if isinstance(out, Measurement):
        return dataclasses.replace(out, iteration=iteration)
    metrics, breakdown, samples = out
    return Measurement(**signature_fields(sig), iteration=iteration, metrics=metrics, breakdown_s=breakdown,
                       samples=samples)

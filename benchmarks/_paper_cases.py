"""The cases of the paper table: one workload on one data set under one batching policy,
and how the benchmarks that time them start their processes.

Every case is replayed twice: a *deterministic* schedule (the whole bundled data set,
several epochs; only its unique signatures are counted, so it can be large) and a
*measured* schedule (a seeded subset small enough that a full run takes ~10-40 s on the
``*:tiny`` presets here), which ``seqpoint.workflows.validate`` executes in full.

The ``tiny`` rows (:data:`CASES`) have steps of a few milliseconds, dominated by framework
overhead rather than by the sequence length the method is about; the ``small`` rows
(:data:`SMALL_CASES`: DS2, GNMT and BERT ``small``, 50 ms to seconds per step) sit beside
them with measured schedules cut so that one full run takes about 1-3 minutes.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import warnings
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from seqpoint.batching import replay
from seqpoint.exceptions import SeqPointWarning
from seqpoint.profiling import ProfileConfig, profile_points
from seqpoint.schedule import IterationSchedule
from seqpoint.traces import Lengths, read_lengths
from seqpoint.workflows import RunConfig
from seqpoint.workloads import load_workload

#: Every selector compared at equal budget (the SeqPoint one first).
METHODS = ("seqpoint", "first", "random", "stride", "mean", "median", "mode", "simpoint", "stratified")
#: Selectors whose choice depends on the seed: their error is mean |error| over seeds.
RANDOMISED = frozenset({"random", "stratified", "simpoint"})
#: Baselines that ``validate`` measures at the SeqPoints' budget.
BASELINES = ("first", "random", "stride", "mean", "median", "simpoint", "stratified")
#: Deterministic metrics checked against exact totals (``count_point`` names).
EXACT_METRICS = ("flops", "roofline_h100_s", "roofline_v100_s")
#: Training steps the harness executes per profiled point (warm-up + repeats).
WARMUP, REPEATS = 2, 5
BASE = {"threads": 1}
#: glibc keeps freed memory instead of returning it to the OS between steps: without it, mmap/munmap
#: churn makes the same step of a larger shape swing by up to 2× (benchmarks/history).
ALLOCATOR_ENV = {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "1073741824"}


@dataclass(frozen=True, kw_only=True)
class Pair:
    """A configuration pair a -> b for a speedup: b is the case's workload plus ``change``."""

    label: str  # How the table names the change
    change: dict[str, Any]  # Workload config overrides of configuration b


@dataclass(frozen=True, kw_only=True)
class Case:
    """One row of the paper table."""

    name: str  # Short id (``--cases``)
    title: str  # Workload, data and policy in words
    workload: str  # ``name:preset`` of the reference workload
    source: str  # ``bundled:NAME`` lengths
    policy: str  # Batching policy
    params: dict[str, Any]  # Policy parameters
    det_epochs: int  # Epochs of the deterministic schedule
    det_samples_quick: int | None  # Samples of the deterministic schedule under --quick (None: all)
    val_samples: int | None  # Samples of the measured schedule (None: all)
    val_epochs: int  # Epochs of the measured schedule
    val_samples_quick: int  # Samples of the measured schedule under --quick
    pairs: tuple[Pair, ...] = ()  # Speedup pairs measured on this case (one case per workload has them)
    quick_measured: bool = False  # Also measured under --quick
    overrides: dict[str, Any] = field(default_factory=lambda: dict(BASE))  # Workload config of configuration a


_THREADS = Pair(label="threads 1 -> 2", change={"threads": 2})
_BF16 = Pair(label="fp32 -> bf16 autocast", change={"dtype": "bf16"})
_MICRO = Pair(label="micro_batches 1 -> 2", change={"micro_batches": 2})

#: GNMT's data sets: title, source, det_epochs, det_samples_quick, val_samples_quick.
_GNMT_DATA = {"wmt": ("WMT en-de sample", "bundled:wmt-en-de-sample", 5, 3000, 1500),
              "m30k": ("Multi30k en-de", "bundled:multi30k-en-de", 3, 5000, 3000)}
#: GNMT's policies: title, policy, params.
_GNMT_POLICIES = {"bucket": ("bucket B=64", "bucket", {"batch_size": 64}),
                  "tokens": ("token budget 4096", "token_budget", {"max_tokens": 4096})}


def _gnmt(data: str, policy: str, **more: Any) -> Case:
    """The GNMT case of one data set under one policy (the whole data set is measured)."""
    title, source, det_epochs, det_quick, val_quick = _GNMT_DATA[data]
    words, name, params = _GNMT_POLICIES[policy]
    return Case(name=f"gnmt-{data}-{policy}", title=f"GNMT / {title} / {words}", workload="gnmt:tiny",
                source=source, policy=name, params=dict(params), det_epochs=det_epochs,
                det_samples_quick=det_quick, val_samples=None, val_samples_quick=val_quick, **more)


CASES: tuple[Case, ...] = (
    Case(name="ds2-librispeech", title="DeepSpeech2 / LibriSpeech train-clean-100 / SortaGrad B=32",
         workload="deepspeech2:tiny", source="bundled:librispeech-train-clean-100", policy="sortagrad",
         params={"batch_size": 32}, det_epochs=3, det_samples_quick=3000, val_samples=5000,
         val_epochs=2, val_samples_quick=600, quick_measured=True,
         pairs=(Pair(label="rnn_hidden 16 -> 32", change={"rnn_hidden": 32}), _THREADS, _BF16, _MICRO)),
    _gnmt("wmt", "bucket", val_epochs=2, quick_measured=True,
          pairs=(Pair(label="hidden 32 -> 64", change={"hidden": 64}), _THREADS, _BF16, _MICRO,
                 Pair(label="adam -> lamb", change={"optimizer": "lamb"}))),
    _gnmt("wmt", "tokens", val_epochs=2),
    _gnmt("m30k", "bucket", val_epochs=1),
    _gnmt("m30k", "tokens", val_epochs=2),
    Case(name="bert-wiki-grouped", title="BERT / WikiText-2 / group_by_length B=8, drop_last",
         workload="bert:tiny", source="bundled:wikitext-2-valid", policy="group_by_length",
         params={"batch_size": 8, "drop_last": True}, det_epochs=3, det_samples_quick=None,
         val_samples=None, val_epochs=2, val_samples_quick=400, quick_measured=True,
         pairs=(Pair(label="hidden 32 -> 64, ffn 64 -> 128", change={"hidden": 64, "ffn": 128}),
                _THREADS, _BF16, _MICRO,
                Pair(label="lamb -> adamw", change={"optimizer": "adamw"}))),
    Case(name="bert-wiki-packed", title="BERT / WikiText-2 / packing 512 x 8",
         workload="bert:tiny", source="bundled:wikitext-2-valid", policy="packing",
         params={"max_seq_len": 512, "batch_size": 8}, det_epochs=3, det_samples_quick=None,
         val_samples=None, val_epochs=1, val_samples_quick=600),
)


@dataclass(frozen=True, kw_only=True)
class Scale:
    """How much of everything a mode runs."""

    quick: bool  # --quick: smaller schedules, fewer k, seeds, cases and pairs
    ks: tuple[int, ...]  # Budgets k of the error curves
    seeds: int  # Seeds averaged for randomised selectors
    runs: int  # Identical full runs per measured configuration (2 = noise floor)
    k_measured: int  # SeqPoints (and baseline budget) of the measured section
    pairs_per_workload: int  # Speedup pairs measured per workload
    spread_processes: int  # Fresh processes that profile the SeqPoints again (spread of the projection)
    default_allocator: bool  # Also validate every measured case with glibc's default allocator settings
    processes: int = 1  # Worker processes that time each SeqPoint (``[profile] processes``; 1: serial)

    @classmethod
    def make(cls, quick: bool, processes: int = 1) -> Scale:
        if quick:
            return cls(quick=True, ks=(1, 2, 3, 5, 10), seeds=2, runs=2, k_measured=5,
                       pairs_per_workload=1, spread_processes=2, default_allocator=False,
                       processes=processes)
        return cls(quick=False, ks=tuple(range(1, 21)), seeds=5, runs=2, k_measured=10,
                   pairs_per_workload=5, spread_processes=2, default_allocator=True, processes=processes)


def harness(processes: int) -> dict[str, int]:
    """The timing harness of every measured section (``ProfileConfig`` keywords): WARMUP and
    REPEATS, the repeats spread over ``processes`` worker processes (at least one each)."""
    return {"warmup": WARMUP, "repeats": max(REPEATS, processes), "processes": processes}


@contextlib.contextmanager
def child_env(env: dict[str, str]) -> Iterator[None]:
    """Processes started inside see ``env`` (glibc reads ``MALLOC_*`` at start-up)."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def in_fresh_process(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` in a new (spawned) Python process; its result comes back pickled."""
    with ProcessPoolExecutor(max_workers=1, mp_context=mp.get_context("spawn")) as pool:
        return pool.submit(fn, *args).result()


def profile_child(spec: str, overrides: dict[str, Any], points: Any, processes: int = 1) -> list[dict[str, Any]]:
    """The SeqPoints timed (no cache) by the paper table's harness, in this process or ``processes`` workers."""
    # warnings off: the spread of these timings is the caller's figure
    with warnings.catch_warnings(action="ignore", category=SeqPointWarning):
        ms = profile_points(load_workload(spec, overrides=overrides), points,
                            ProfileConfig(**harness(processes), metrics=("time",)), progress=False)
    return [m.to_dict() for m in ms.measurements]


def lengths_subset(source: str, n: int | None, seed: int = 0) -> Lengths:
    """``source``'s lengths, or a seeded random subset of ``n`` samples (in file order)."""
    lengths = read_lengths(source)
    if n is None or n >= lengths.n_samples:
        return lengths
    idx = np.sort(np.random.default_rng(seed).choice(lengths.n_samples, size=n, replace=False))
    return lengths.take(idx)


def det_schedule(case: Case, scale: Scale) -> IterationSchedule:
    """The deterministic schedule of ``case``."""
    n = case.det_samples_quick if scale.quick else None
    epochs = min(case.det_epochs, 2) if scale.quick else case.det_epochs
    with warnings.catch_warnings(action="ignore", category=SeqPointWarning):
        return replay(lengths_subset(case.source, n), case.policy, epochs=epochs, seed=0, **case.params)


def run_config(case: Case, scale: Scale, out: Path, cache: Path) -> RunConfig:
    """The ``RunConfig`` whose whole schedule ``validate`` executes (twice) in full."""
    n = case.val_samples_quick if scale.quick else case.val_samples
    return RunConfig.from_dict({
        "name": f"paper-{case.name}",
        "lengths": {"source": case.source, "max_samples": n, "seed": 0},
        "batching": {"policy": case.policy, "epochs": case.val_epochs, "seed": 0, "params": dict(case.params)},
        "selection": {"method": "seqpoint", "n_points": scale.k_measured, "seed": 0},
        "workload": {"name": case.workload, "set": dict(case.overrides)},
        "profile": {**harness(scale.processes), "metrics": ["time", "breakdown"], "cache": str(cache)},
        "validation": {"runs": scale.runs, "baselines": list(BASELINES)},
        "report": {"out": str(out / case.name), "plots": False, "html": False},
    })


def validation_subset(case: Case, quick: bool = False) -> tuple[RunConfig, IterationSchedule]:
    """``case``'s ``RunConfig`` (no cache, no output) and the schedule that ``validate`` runs in full."""
    from seqpoint.workflows import Campaign

    cfg = run_config(case, Scale.make(quick), Path("."), Path("unused-cache.sqlite"))
    with warnings.catch_warnings(action="ignore", category=SeqPointWarning):
        return cfg, Campaign(cfg, subset=True).schedule


@dataclass(frozen=True, kw_only=True)
class PaperRun:
    """A paper-scale run, synthesised by resampling a bundled length distribution."""

    title: str  # What it stands for
    source: str  # Bundled lengths resampled (with replacement)
    n_samples: int  # Samples of the synthesised data set
    policy: str  # Batching policy
    params: dict[str, Any]  # Policy parameters
    epochs: int  # Training epochs
    note: str  # Where the sizes come from


PAPER_RUNS: tuple[PaperRun, ...] = (
    PaperRun(title="DeepSpeech2, LibriSpeech 960 h, SortaGrad B=64, 20 epochs",
             source="bundled:librispeech-train-clean-100", n_samples=281_241, policy="sortagrad",
             params={"batch_size": 64}, epochs=20,
             note="281,241 utterances resampled from train-clean-100's 28,539 lengths"),
    PaperRun(title="GNMT, WMT16 en-de 4.5M pairs, bucket B=128, 5 epochs",
             source="bundled:wmt-en-de-sample", n_samples=4_500_000, policy="bucket",
             params={"batch_size": 128}, epochs=5,
             note="4.5M (src, tgt) pairs resampled from the 9,999-pair WMT sample"),
    PaperRun(title="GNMT, WMT16 en-de 4.5M pairs, token budget 8192, 5 epochs",
             source="bundled:wmt-en-de-sample", n_samples=4_500_000, policy="token_budget",
             params={"max_tokens": 8192}, epochs=5,
             note="4.5M (src, tgt) pairs resampled from the 9,999-pair WMT sample"),
)


def paper_schedule(run: PaperRun) -> IterationSchedule:
    """The synthesised paper-scale schedule (seconds to build: only lengths are replayed)."""
    lengths = read_lengths(run.source)
    idx = np.random.default_rng(0).integers(0, lengths.n_samples, size=run.n_samples)
    return replay(lengths.take(idx), run.policy, epochs=run.epochs, seed=0, **run.params)


def small_case(case: Case, *, val_samples: int, val_epochs: int = 1, val_samples_quick: int = 64) -> Case:
    """``case`` on the workload's ``small`` preset (``<name>-small``), with a measured schedule
    of ``val_samples`` samples; no speedup pairs (their full runs would double the cost)."""
    family = case.workload.partition(":")[0]
    return replace(case, name=f"{case.name}-small", title=f"{case.title} [small]", workload=f"{family}:small",
                   val_samples=val_samples, val_epochs=val_epochs, val_samples_quick=val_samples_quick,
                   pairs=(), quick_measured=False)


def _case(name: str) -> Case:
    return next(c for c in CASES if c.name == name)


#: The ``small`` rows: their sample counts give ~50-200 iterations of 0.3-3 s steps at 1 thread,
#: about 1-3 minutes per full run.
SMALL_CASES: tuple[Case, ...] = (
    small_case(_case("ds2-librispeech"), val_samples=1600),
    small_case(_case("gnmt-wmt-bucket"), val_samples=6400),
    small_case(_case("bert-wiki-grouped"), val_samples=1600),
)

#: Every case, tiny rows first (the table's order).
ALL_CASES: tuple[Case, ...] = CASES + SMALL_CASES
#: Presets ``--presets`` accepts.
PRESETS = ("tiny", "small")


def select_cases(names: str | None, presets: str | None = None) -> tuple[Case, ...]:
    """The cases named in a comma-separated list (all of ``presets``, a comma-separated subset of
    ``tiny,small``, default ``tiny``, when None)."""
    chosen = [p.strip() for p in (presets or "tiny").split(",") if p.strip()]
    bad = [p for p in chosen if p not in PRESETS]
    if bad or not chosen:
        raise SystemExit(f"Unknown preset(s) {', '.join(bad) or repr(presets)}. Valid presets: {', '.join(PRESETS)}.")
    pool = tuple(c for c in ALL_CASES if c.workload.partition(":")[2] in chosen)
    if not names:
        return pool
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    known = {c.name: c for c in ALL_CASES}
    bad = [n for n in wanted if n not in known]
    if bad:
        raise SystemExit(f"Unknown case(s) {', '.join(bad)}. Valid cases: {', '.join(known)}.")
    return tuple(known[n] for n in wanted)

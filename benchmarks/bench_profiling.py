"""Benchmark of the profiling harness (stage 5).

Measures, on this machine:

1. the per-point overhead of ``profile_point`` over a bare ``step()`` loop (goal <= 2%),
   A/B interleaved, with the bare loop's own round-to-round spread as the noise floor;
2. the repeat-to-repeat spread of each timer (``wall``, ``cpu``) per workload: the noise
   floor every later error is compared with;
3. FLOPs (counted) and measured time against seq_len for each workload (plot);
4. the cost of ``count_point`` per signature (tiny and paper presets, meta device).

Run: ``.venv/bin/python benchmarks/bench_profiling.py [--quick]``.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch

from _results import bench_parser, figure_path, header, write_section
from seqpoint.profiling import ProfileConfig, count_point, profile_point
from seqpoint.workloads import load_workload

SIGS = {"deepspeech2:tiny": (16, 1200, 0), "gnmt:tiny": (32, 30, 32), "bert:tiny": (16, 128, 0)}
GRID = {
    "deepspeech2:tiny": [(16, n, 0) for n in (200, 400, 800, 1200, 1600, 2000, 2450)],
    "gnmt:tiny": [(32, n, n) for n in (5, 10, 20, 30, 40, 60, 80)],
    "bert:tiny": [(16, n, 0) for n in (16, 32, 64, 128, 256, 384, 512)],
}


def overhead(spec: str, rounds: int, steps: int) -> dict[str, float]:
    wl = load_workload(spec, {"threads": 1})
    sig = SIGS[spec]
    cfg = ProfileConfig(warmup=1, repeats=steps - 1)
    batch = wl.make_batch(sig)
    for _ in range(3):
        wl.step(batch)
    bare, harness = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        b = wl.make_batch(sig)
        for _ in range(steps):
            wl.step(b)
        bare.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        profile_point(wl, sig, cfg)
        harness.append(time.perf_counter() - t0)
    ratios = [h / b - 1 for h, b in zip(harness, bare, strict=True)]
    bare_med = statistics.median(bare)
    return {
        "bare_s": bare_med,
        "harness_s": statistics.median(harness),
        "overhead": statistics.median(ratios),
        "noise": (max(bare) - min(bare)) / bare_med,
    }


def spread(spec: str, timer: str, repeats: int) -> dict[str, float]:
    wl = load_workload(spec, {"threads": 1})
    m = profile_point(wl, SIGS[spec], ProfileConfig(warmup=3, repeats=repeats, timer=timer))
    med = m.metrics["time_s"]
    return {
        "median_ms": med * 1e3,
        "iqr_pct": 100 * m.metrics["time_s_iqr"] / med,
        "std_pct": 100 * m.metrics["time_s_std"] / med,
        "range_pct": 100 * (m.metrics["time_s_max"] - m.metrics["time_s_min"]) / med,
    }


def curves(spec: str, repeats: int) -> list[tuple[int, float, float]]:
    wl = load_workload(spec, {"threads": 1})
    out = []
    for sig in GRID[spec]:
        f = count_point(wl, sig)["flops"]
        t = profile_point(wl, sig, ProfileConfig(warmup=1, repeats=repeats)).metrics["time_s"]
        out.append((sig[1], f, t))
    return out


def count_cost(spec: str, sigs: list[tuple[int, ...]]) -> tuple[float, float]:
    wl = load_workload(spec, {"threads": 1}) if spec.endswith("tiny") else None
    if wl is None:
        # paper presets: only the meta clone is needed; build the workload on meta directly
        from seqpoint.workloads import WORKLOADS

        name, preset = spec.split(":")
        cls = WORKLOADS.get(name)
        import dataclasses

        cfg = dataclasses.replace(cls.Config.PRESETS[preset], device="meta")
        wl = cls(cfg, preset=preset)
    t0 = time.perf_counter()
    count_point(wl, sigs[0])
    first = time.perf_counter() - t0
    t0 = time.perf_counter()
    for s in sigs[1:]:
        count_point(wl, s)
    return first, (time.perf_counter() - t0) / max(1, len(sigs) - 1)


def main() -> None:
    ap = bench_parser(__doc__, quick="fewer rounds and repeats")
    args = ap.parse_args()
    torch.set_num_threads(1)
    rounds, steps, reps = (5, 10, 10) if args.quick else (9, 20, 30)

    lines = [header("Profiling harness (bench_profiling)"), ""]
    lines += [
        "### Harness overhead over a bare step() loop",
        "",
        f"Each round: `make_batch` + {steps} bare `step()` calls, then `profile_point` with "
        f"warmup 1 + {steps - 1} repeats (same steps, wall timer); {rounds} rounds, A/B interleaved, threads=1.",
        "Noise = (max - min) / median of the bare loop over the rounds.",
        "",
        "| workload | signature | bare loop | harness | overhead (median of rounds) | bare-loop noise |",
        "|---|---|---|---|---|---|",
    ]
    for spec in SIGS:
        o = overhead(spec, rounds, steps)
        print(spec, "overhead", o, flush=True)
        lines.append(
            f"| {spec} | {SIGS[spec]} | {o['bare_s'] * 1e3:.1f} ms | {o['harness_s'] * 1e3:.1f} ms | "
            f"{100 * o['overhead']:+.2f}% | {100 * o['noise']:.1f}% |"
        )
    lines += [
        "",
        "### Repeat-to-repeat spread of each timer (the noise floor)",
        "",
        f"{reps} timed repeats after 3 warm-up steps, threads=1; spread relative to the median. "
        "The `cuda` timer needs a GPU (none here).",
        "",
        "| workload | timer | median | IQR | std | max - min |",
        "|---|---|---|---|---|---|",
    ]
    for spec in SIGS:
        for timer in ("wall", "cpu"):
            s = spread(spec, timer, reps)
            print(spec, timer, s, flush=True)
            lines.append(
                f"| {spec} | {timer} | {s['median_ms']:.2f} ms | {s['iqr_pct']:.2f}% | "
                f"{s['std_pct']:.2f}% | {s['range_pct']:.2f}% |"
            )

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    lines += [
        "",
        "### FLOPs and measured time against seq_len",
        "",
        "FLOPs from `count_point` (meta device, exact), time = median wall time "
        f"({3 if args.quick else 7} repeats). Plot: `benchmarks/{figure_path(Path('profiling_flops_time_vs_seq_len.png')).name}`.",
        "",
        "| workload | seq_len | GFLOPs | time | GFLOP/s |",
        "|---|---|---|---|---|",
    ]
    for ax, spec in zip(axes, GRID, strict=True):
        pts = curves(spec, 3 if args.quick else 7)
        print(spec, pts, flush=True)
        xs = [p[0] for p in pts]
        ax.plot(xs, [p[1] / 1e9 for p in pts], "o-", color="tab:blue", label="GFLOPs")
        ax.set_xlabel("seq_len" + (" (frames)" if "speech" in spec else " (tokens)"))
        ax.set_ylabel("GFLOPs per step", color="tab:blue")
        ax2 = ax.twinx()
        ax2.plot(xs, [p[2] * 1e3 for p in pts], "s--", color="tab:red", label="time")
        ax2.set_ylabel("time per step (ms)", color="tab:red")
        ax.set_title(f"{spec}, batch {GRID[spec][0][0]}")
        for n, f, t in pts:
            lines.append(f"| {spec} | {n} | {f / 1e9:.3f} | {t * 1e3:.2f} ms | {f / t / 1e9:.2f} |")
    fig.tight_layout()
    fig.savefig(figure_path(Path(__file__).with_name("profiling_flops_time_vs_seq_len.png")), dpi=110)

    lines += [
        "",
        "### Cost of `count_point` per signature",
        "",
        "Meta device (no arithmetic); recurrent layers counted as c(1) + (T-1)(c(2)-c(1)) (exact, "
        "tested against a full meta run). First call builds the meta clone and the RNN memo; "
        "the rest is the steady cost per new signature.",
        "",
        "| workload | first signature | each further signature |",
        "|---|---|---|",
    ]
    count_sigs = {
        "deepspeech2:tiny": [(32, 200 + 97 * i, 0) for i in range(8)],
        "gnmt:tiny": [(64, 10 + 7 * i, 12 + 5 * i) for i in range(8)],
        "bert:tiny": [(32, 32 + 50 * i, 0) for i in range(8)],
        "deepspeech2:paper": [(32, 200 + 97 * i, 0) for i in range(4)],
        "gnmt:paper": [(128, 10 + 7 * i, 12 + 5 * i) for i in range(4)],
        "bert:paper": [(32, 64 + 64 * i, 0) for i in range(4)],
    }
    for spec, sigs in count_sigs.items():
        first, each = count_cost(spec, sigs)
        print(spec, "count", first, each, flush=True)
        lines.append(f"| {spec} | {first:.2f} s | {each * 1e3:.0f} ms |")
    write_section("profiling", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()

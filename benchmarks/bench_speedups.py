"""Projected against measured speedups, both timed in interleaved rounds (issue 14, item 5).

The paper table measures each speedup pair's truth from two full runs of a (timed with
the case's validation) and two of b (timed minutes later), and projects from two
profiling rounds. On this shared 2-core machine its noise floors came out at 2.8-12%,
so a projected error of 5% could not be told from noise. Here every round times, for a
pair a -> b, in this order (b first in odd rounds, so a linear drift of the machine's
speed cancels):

* a's SeqPoints (the paper table's harness: 3 worker processes) and an in-sequence window
  of the run's first ``--window`` iterations, in one fresh process;
* a's full run in a fresh process;
* the same two for b.

The measured speedup is the ratio of the mean full runs; its noise floor is the spread
of a/b over every pairing of a's and b's runs (as in the paper table), and its standard
error the spread of the per-round ratios over sqrt(rounds). The projected speedup is
the ratio of the mean projections, under each calibration of the whole-run time:

* ``steady``: the steady state alone (``time_s``);
* ``first_step``: steady state plus the cold-step term from each point's first step;
* ``window``: the cold-step term from the window;
* ``window+in-run``: that, with the steady state scaled by the window's in-run ratio
  (``project(in_run_correction=True)``).

Each round keeps both configurations' SeqPoint measurements (per-process values
included), so a later interval rule can be judged on the same rounds offline. Results go
to ``benchmarks/results/speedups.json.gz`` and the ``speedups`` section of
RESULTS.md (``--render-only`` rewrites the section from the JSON).

``--paired`` also times, in every round between the two configurations, both
configurations' SeqPoints the way ``seqpoint speedup`` does with ``[profile] processes >
1``: one fresh process whose A and B worker processes take turns (A1 B1 B2 A2 A3 B3,
B first in odd rounds; ``seqpoint.profiling.take_turns``). The round is then

    first's SeqPoints, first's full run, [both SeqPoints in turn], second's SeqPoints, second's full run

and both projections are compared with the same full runs (``speedups_paired.json.gz``,
section ``speedups-paired``).

Usage::

    .venv/bin/python benchmarks/bench_speedups.py [--quick] [--rounds 3] [--window 100]
        [--cases ds2-librispeech,bert-wiki-grouped] [--paired] [--render-only] [--rejudge]
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import json
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from statistics import median
from typing import Any
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _paper_cases import (
    ALLOCATOR_ENV,
    CASES,
    Case,
    child_env,
    harness,
    in_fresh_process,
    validation_subset,
)
from _results import (
    MACHINE,
    bench_parser,
    command_line,
    measurements_from_dict,
    quick_mode,
    write_section,
)
from bench_cold import profile_child, projections
from seqpoint.exceptions import InputError, SeqPointWarning
from seqpoint.measurements import Measurements
from seqpoint.profiling import ProfileConfig, profile_points, profile_window, take_turns
from seqpoint.projection import _project as project_module
from seqpoint.projection import project_speedup
from seqpoint.validation import MeasuredSpeedup, run_full_fresh
from seqpoint.workflows import choose_points
from seqpoint.workloads import load_workload

RESULTS = Path(__file__).with_name("results")
PROCESSES = 3
#: The projections compared, in table order (``steady`` is ``time_s`` of the first).
LABELS = ("steady", "first_step", "window", "window+in-run")


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".strip().splitlines()[0][:240]


def one_config(case: Case, overrides: dict[str, Any], schedule: Any, points: Any,
               sigs: list[tuple[int, ...]]) -> tuple[dict[str, Any], Measurements]:
    """One configuration's projections (fresh process) and full run (another fresh
    process), and its SeqPoints' measurements."""
    pc = ProfileConfig(**harness(PROCESSES), metrics=("time",))
    t0 = time.perf_counter()
    child = in_fresh_process(profile_child, case.workload, dict(overrides), points, pc, sigs)
    ms = measurements_from_dict(child["measurements"])
    bad = [m for m in ms.measurements if not m.ok]
    if bad:
        raise RuntimeError(f"{len(bad)} point(s) failed: {bad[0].message}")
    out = projected(schedule, points, ms)
    out["profile_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    out["full_s"] = float(run_full_fresh(case.workload, dict(overrides), schedule, runs=1).total_s)
    out["full_wall_s"] = time.perf_counter() - t0
    return out, ms


#: The interval rules compared: ``processes`` is the projection's own (the worker
#: processes' run totals, Student's t, since 2026-11-25); ``points`` leaves those totals out,
#: as before (each point's standard error, independent, times z).
RULES = ("processes", "points")
#: The speedup's rules: ``pairs`` (a's worker p with b's, the ratios' spread × t;
#: ``project_speedup(noise="pairs")``), and RULES' whole-run intervals combined as independent.
SPEEDUP_RULES = ("pairs", *RULES)


@contextlib.contextmanager
def interval_rule(rule: str) -> Iterator[None]:
    """Project under ``rule``: ``points`` hides the per-process values from the noise half-width."""
    if rule == "processes":
        yield
        return
    with mock.patch.object(project_module, "per_process_values", lambda ok, name: None):
        yield


def half_width(interval: Any, centre: float | None) -> float:
    """Half-width relative to ``centre`` (the upper side: since 2026-11-25 the low end is cut
    at 0); rounds stored without their centre use the midpoint."""
    lo, hi = interval
    return (hi - centre) / centre if centre else (hi - lo) / (hi + lo)


def projected(schedule: Any, points: Any, ms: Measurements) -> dict[str, Any]:
    """One configuration's whole-run projection under every calibration of LABELS, and the
    whole run's (first_step) interval under each of RULES."""
    proj = projections(schedule, points, ms)
    out: dict[str, Any] = {label: proj[label]["projected_s"] for label in LABELS[1:]}
    out["steady"] = proj["first_step"]["steady_s"]
    out["in_run_ratio"] = proj["window+in-run"]["cold_term"].get("in_run_ratio")
    out["intervals"] = {}
    for rule in RULES:
        with interval_rule(rule):
            out["intervals"][rule] = projections(schedule, points, ms)["first_step"]["interval_s"]
    return out


def profile_pair_child(spec: str, overrides: dict[str, dict[str, Any]], order: tuple[str, str], points: Any,
                       config: ProfileConfig, window_sigs: list[tuple[int, ...]]) -> dict[str, Any]:
    """Both configurations' SeqPoints, their worker processes in turn (``order[0]``'s
    first), then each one's window, from this fresh process: what ``seqpoint speedup``
    does with ``[profile] processes > 1``."""
    workloads = {tag: load_workload(spec, overrides[tag]) for tag in order}

    def job(tag: str) -> Any:
        return lambda end_turn: profile_points(workloads[tag], points, config, progress=False, end_turn=end_turn)

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeqPointWarning)
        measured = dict(zip(order, take_turns([job(tag) for tag in order]), strict=True))
    out: dict[str, Any] = {"profile_s": time.perf_counter() - t0}
    for tag in sorted(order):
        ms = measured[tag]
        window = profile_window(workloads[tag], window_sigs, start=0, timer=config.timer)
        out[tag] = dataclasses.replace(ms, window=window).to_dict()
    return out


def paired_configs(case: Case, overrides: dict[str, dict[str, Any]], order: tuple[str, str], schedule: Any,
                   points: Any, sigs: list[tuple[int, ...]]) -> dict[str, Any]:
    """Both configurations' projections with their workers in turn, and the speedup printed."""
    pc = ProfileConfig(**harness(PROCESSES), metrics=("time",))
    child = in_fresh_process(profile_pair_child, case.workload, overrides, order, points, pc, sigs)
    ms = {tag: measurements_from_dict(child[tag]) for tag in ("a", "b")}
    bad = [m for tag in ms for m in ms[tag].measurements if not m.ok]
    if bad:
        raise RuntimeError(f"{len(bad)} point(s) failed: {bad[0].message}")
    out: dict[str, Any] = {tag: projected(schedule, points, ms[tag]) | {"measurements": child[tag]}
                           for tag in ("a", "b")}
    out["speedup"] = projected_speedup(schedule, points, ms["a"], ms["b"])
    out["profile_s"] = child["profile_s"]
    return out


def as_rounds(rounds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A paired run's rounds as :func:`summarise` reads them: the paired projections beside
    the round's full runs."""
    return [{tag: {**r["paired"][tag], "full_s": r[tag]["full_s"]} for tag in ("a", "b")}
            | {"speedup": r["paired"]["speedup"]} for r in rounds]


def projected_speedup(schedule: Any, points: Any, ms_a: Measurements, ms_b: Measurements) -> dict[str, Any]:
    """What ``seqpoint speedup`` reports from one round's two measurement sets: the
    whole-run speedup (first_step calibration: the window is left out) and its interval,
    and the interval under each of RULES."""
    a, b = dataclasses.replace(ms_a, window=None), dataclasses.replace(ms_b, window=None)
    sp = project_speedup(schedule, points, a, b)
    rules = {}
    with contextlib.suppress(InputError):  # pairs need the same worker count at every point
        rules["pairs"] = list(project_speedup(schedule, points, a, b, noise="pairs").interval)
    for rule in RULES:
        with interval_rule(rule):
            rules[rule] = list(project_speedup(schedule, points, a, b, noise="independent").interval)
    return {"value": sp.value, "interval": list(sp.interval), "metric": sp.metric, "intervals": rules}


def summarise(rounds: list[dict[str, dict[str, Any]]]) -> dict[str, Any]:
    """Measured and projected speedups of a pair from its rounds."""
    m = MeasuredSpeedup.from_rounds([(r["a"]["full_s"], r["b"]["full_s"]) for r in rounds])
    measured, per_round = m.value, m.per_round
    out: dict[str, Any] = {
        "measured": measured, "measured_a_s": list(m.runs_a_s), "measured_b_s": list(m.runs_b_s),
        "noise_floor": m.noise_floor, "standard_error": m.standard_error, "projected": {},
    }
    for label in LABELS:
        pa = np.array([r["a"][label] for r in rounds])
        pb = np.array([r["b"][label] for r in rounds])
        value = float(pa.mean() / pb.mean())
        ratios = pa / pb
        # Each round's projected against measured ratio: their spread is the noise of both
        # sides, the error's standard error.
        paired = ratios / per_round - 1
        out["projected"][label] = {
            "value": value, "error": (value - measured) / measured, "per_round": ratios.tolist(),
            "spread": float((ratios.max() - ratios.min()) / ratios.mean()),
            "error_se": float(paired.std(ddof=1) / np.sqrt(len(rounds))) if len(rounds) > 1 else None,
        }
    # The interval `seqpoint speedup` prints, round by round, against the pair's measured speedup.
    # The default rule's interval: a run of 2026-11-25 printed the pairs rule, then the default.
    printed = [{**r["speedup"], "interval": r["speedup"].get("intervals", {}).get("processes", r["speedup"]["interval"])}
               for r in rounds if "speedup" in r]
    if printed:
        out["interval"] = {
            "held": sum(m.held_by(tuple(sp["interval"])) for sp in printed), "rounds": len(printed),
            # the verdict `speedup --validate` prints next: within the measured ratio's own error
            "agreed": sum(bool(m.agrees_with(sp["value"], tuple(sp["interval"]))) for sp in printed),
            "half_widths": [half_width(sp["interval"], sp["value"]) for sp in printed],
        }
    return out


def run_pair(case: Case, pair: Any, schedule: Any, points: Any, sigs: list[tuple[int, ...]],
             rounds: int, paired: bool = False) -> dict[str, Any]:
    over = {"a": dict(case.overrides), "b": {**case.overrides, **pair.change}}
    t0 = time.perf_counter()
    done: list[dict[str, dict[str, Any]]] = []
    for r in range(rounds):
        entry: dict[str, dict[str, Any]] = {}
        ms: dict[str, Measurements] = {}
        order = ("a", "b") if r % 2 == 0 else ("b", "a")
        for c in order:
            entry[c], ms[c] = one_config(case, over[c], schedule, points, sigs)
            # kept, so that a later interval rule can be judged on these rounds offline
            entry[c]["measurements"] = ms[c].to_dict()
            if paired and c == order[0]:  # between the two configurations' own blocks
                entry["paired"] = paired_configs(case, over, order, schedule, points, sigs)
        entry["speedup"] = projected_speedup(schedule, points, ms["a"], ms["b"])
        done.append(entry)
        both = (f", in turn {entry['paired']['a']['first_step']:.2f} / {entry['paired']['b']['first_step']:.2f} s"
                if paired else "")
        print(f"    round {r + 1}: full {entry['a']['full_s']:.2f} / {entry['b']['full_s']:.2f} s, "
              f"first_step {entry['a']['first_step']:.2f} / {entry['b']['first_step']:.2f} s{both}", flush=True)
    out = {"label": pair.label, "change": pair.change, "rounds": done, **summarise(done),
           "seconds": time.perf_counter() - t0}
    if paired:
        out["paired"] = summarise(as_rounds(done))
    return out


def run(cases: list[Case], rounds: int, window: int, quick: bool, paired: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {"cases": {}}
    t_start = time.perf_counter()
    with child_env(ALLOCATOR_ENV):
        for case in cases:
            cfg, schedule = validation_subset(case, quick)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SeqPointWarning)
                _, points = choose_points(cfg.selection, schedule)
            sigs = [tuple(int(v) for v in row) for row in schedule.signature_matrix()[:window]]
            print(f"{case.name}: {len(schedule)} iterations, {len(points.points)} SeqPoints, window {len(sigs)}",
                  flush=True)
            pairs = []
            for pair in case.pairs[: 1 if quick else None]:
                try:
                    pairs.append(run_pair(case, pair, schedule, points, sigs, rounds, paired))
                    p = pairs[-1]
                    errs = ", ".join(f"{lab} {100 * v['error']:+.2f}%" for lab, v in p["projected"].items())
                    if paired:
                        errs += ", in turn: " + ", ".join(
                            f"{lab} {100 * v['error']:+.2f}%" for lab, v in p["paired"]["projected"].items())
                    print(f"  {pair.label}: measured {p['measured']:.4f} (floor {100 * p['noise_floor']:.2f}%); "
                          f"{errs}", flush=True)
                except Exception as exc:  # a configuration this CPU cannot run is reported, not fatal
                    pairs.append({"label": pair.label, "change": pair.change, "error_message": _short(exc)})
                    print(f"  {pair.label}: not run ({pairs[-1]['error_message']})", flush=True)
            data["cases"][case.name] = {"n_iterations": len(schedule), "n_points": len(points.points),
                                        "window": len(sigs), "pairs": pairs}
    data["meta"] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": command_line(),
                    "quick": quick, "rounds": rounds, "window": window, "processes": PROCESSES, "paired": paired,
                    "wall_s": time.perf_counter() - t_start}
    return data


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:+.2f}"


def _header(meta: dict[str, Any], title: str, data_file: str, flags: str) -> list[str]:
    """A section's title and its date, machine, command, run and data lines."""
    return [f"## {title}{' (--quick smoke run)' if quick_mode() else ''}\n",
            f"- date: {meta['date']}", f"- machine: {MACHINE}", f"- command: `{meta['command']}`",
            f"- run: {meta['rounds']} rounds per pair, window {meta['window']} iterations, "
            f"SeqPoints timed by {meta['processes']} worker processes; wall time {meta['wall_s'] / 60:.1f} min",
            f"- data: `benchmarks/results/{data_file}` (re-render with `{flags}`)", ""]


def _ran_pairs(data: dict[str, Any], lines: list[str], columns: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each case's pairs that ran, as (case, pair); a pair that failed gets a 'not run' row of
    ``columns`` cells in ``lines`` instead."""
    for name, c in data["cases"].items():
        for p in c["pairs"]:
            if "error_message" in p:
                lines.append(f"| `{name}` | {p['label']} | not run: {p['error_message']} |" + " |" * (columns - 3))
            else:
                yield name, p


#: How the interleaved rounds are timed and compared.
ROUNDS_TEXT = ("Each round times a's SeqPoints and window, a's full run, b's SeqPoints and window, b's full "
               "run, each in a fresh process (b first in odd rounds). Measured: ratio of the mean full runs; "
               "noise floor: spread of a/b over every pairing of a's and b's runs; s.e.: the per-round "
               "ratios' standard error. Projected: ratio of the mean projections; errors in %, ± the "
               "standard error of the rounds' own errors (each round's projected over measured ratio), "
               "which carries the noise of both sides.")


def render(data: dict[str, Any]) -> str:
    lines = [*_header(data["meta"], "Speedups: projected against measured, both timed in interleaved rounds "
                      "(issue 14)", "speedups.json(.gz)", "--render-only"), ROUNDS_TEXT, "",
             "Interval: rounds whose 95% interval, as `seqpoint speedup` prints it (whole run, first_step), "
             "holds the measured speedup.", "",
             "| case | a -> b | measured | noise floor % | s.e. % | steady | first_step | window | window+in-run "
             "| interval holds |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    within = {label: 0 for label in LABELS}
    one_pct = {label: 0 for label in LABELS}
    biased = {label: 0 for label in LABELS}
    errors: dict[str, list[float]] = {label: [] for label in LABELS}
    held = [0, 0, 0]  # rounds whose interval holds the measured speedup, that agree with it, in all
    half_widths: list[float] = []
    n = 0
    for name, p in _ran_pairs(data, lines, columns=10):
        p = {**p, **summarise(p["rounds"])}  # the figures of this script's summarise
        n += 1
        cells = []
        for label in LABELS:
            e, se = p["projected"][label]["error"], p["projected"][label]["error_se"]
            within[label] += abs(e) <= p["noise_floor"]
            one_pct[label] += abs(e) <= 0.01
            biased[label] += se is not None and abs(e) > 2 * se
            errors[label].append(abs(e))
            cells.append(_pct(e) + ("" if se is None else f" ± {100 * se:.2f}"))
        se = p["standard_error"]
        iv = p.get("interval")
        if iv is not None:
            held[0] += iv["held"]
            held[1] += iv["agreed"]
            held[2] += iv["rounds"]
            half_widths += iv["half_widths"]
        holds = "—" if iv is None else f"{iv['held']} of {iv['rounds']}"
        lines.append(f"| `{name}` | {p['label']} | {p['measured']:.4f} | {100 * p['noise_floor']:.2f} | "
                     f"{'—' if se is None else f'{100 * se:.2f}'} | " + " | ".join(cells) + f" | {holds} |")
    lines += ["", "| projection | within 1% | within the noise floor | more than 2 s.e. off | median abs. error % |",
              "| --- | ---: | ---: | ---: | ---: |"]
    for label in LABELS:
        med = f"{100 * float(np.median(errors[label])):.2f}" if errors[label] else "—"
        lines.append(f"| {label} | {one_pct[label]} of {n} | {within[label]} of {n} | {biased[label]} of {n} | {med} |")
    if held[2]:
        lines += ["", f"The 95% interval `seqpoint speedup` prints held the pair's measured speedup in {held[0]} of "
                  f"{held[2]} rounds; its median half-width was {100 * float(np.median(half_widths)):.2f}%. "
                  f"Counting the measured ratio's own 95% error (`MeasuredSpeedup.agrees_with`), the two "
                  f"agreed in {held[1]} of {held[2]}."]
    return "\n".join([*lines, "", *render_configs(data), "", *render_rules(data)]) + "\n"


def rule_coverage(pairs: list[list[dict[str, Any]]]) -> dict[str, dict[str, list[tuple[bool, float]]]]:
    """For each rule, whether each round's 95% interval held the truth, and its relative
    half-width: speedups (each round's against the pair's measured speedup) and whole runs
    (each round's configuration against the mean of its full runs). ``pairs``: each
    pair's rounds."""
    held: dict[str, dict[str, list[tuple[bool, float]]]] = {rule: {"speedup": [], "run": []}
                                                            for rule in SPEEDUP_RULES}
    for rounds in pairs:
        if "intervals" not in rounds[0]["speedup"]:
            continue
        m = MeasuredSpeedup.from_rounds([(r["a"]["full_s"], r["b"]["full_s"]) for r in rounds])
        truth = {tag: float(np.mean([r[tag]["full_s"] for r in rounds])) for tag in ("a", "b")}
        for r in rounds:
            for rule in SPEEDUP_RULES:
                if rule in r["speedup"]["intervals"]:  # runs before 2026-11-25 have no pairs
                    lo, hi = r["speedup"]["intervals"][rule]
                    held[rule]["speedup"].append((m.held_by((lo, hi)), half_width((lo, hi), r["speedup"]["value"])))
                for tag in ("a", "b"):
                    if rule in r[tag].get("intervals", {}):
                        lo, hi = r[tag]["intervals"][rule]
                        held[rule]["run"].append((lo <= truth[tag] <= hi,
                                                  half_width((lo, hi), r[tag].get("first_step"))))
    return held


def rule_rows(held: dict[str, dict[str, list[tuple[bool, float]]]], view: str = "") -> list[str]:
    """Table rows of :func:`rule_coverage`: held, of, median half-width, for speedups and runs."""
    def cells(xs: list[tuple[bool, float]]) -> str:
        if not xs:
            return "— | —"
        return f"{sum(h for h, _ in xs)} of {len(xs)} | {100 * median([w for _, w in xs]):.2f}"

    return [f"| {view}{rule} | {cells(held[rule]['speedup'])} | {cells(held[rule]['run'])} |"
            for rule in SPEEDUP_RULES if held[rule]["speedup"] or held[rule]["run"]]


RULES_TEXT = ("*pairs* (`project_speedup(noise=\"pairs\")`, judged on 2026-11-25 and not made the default): "
              "a's worker p paired with b's, the spread of the P "
              "ratios of their own run totals times Student's t with P − 1 degrees of freedom, the cold-step "
              "terms' noise added in quadrature; *processes* (the default): each configuration's whole-run interval (at "
              "least the spread of the run totals projected from each worker process's values, times t), "
              "the two combined as independent; *points*: each point's standard error, as if independent, "
              "times z (the interval before 2026-11-25). Same measurements, same truths.")
RULES_HEAD = ["| interval | speedups held | median half-width % | whole runs held | median half-width % |",
              "| --- | ---: | ---: | ---: | ---: |"]


def render_rules(data: dict[str, Any]) -> list[str]:
    """How often each rule's 95% interval held the truth (:func:`rule_coverage`)."""
    rows = rule_rows(rule_coverage([p["rounds"] for c in data["cases"].values() for p in c["pairs"]
                                    if "error_message" not in p]))
    if not rows:
        return []
    return [f"The 95% intervals under each rule (whole run, first_step): {RULES_TEXT}", "", *RULES_HEAD, *rows]


#: Whole-run intervals judged again from each round's stored measurements (``--rejudge``):
#: the cold-step term's calibration, and whether the in-run gap is in the interval.
REJUDGE = (("first_step", {"cold": "first_step"}), ("window", {"cold": "window"}))


def rejudge(data: dict[str, Any]) -> list[str]:
    """Each configuration round's whole-run interval projected again, with this code, from
    its stored measurements (the in-sequence window included): how often it held the mean
    of that configuration's full runs, with the in-run gap (:attr:`Projection.in_run_gap`)
    and without it. Rounds of a ``--paired`` run add their in-turn campaign's."""
    from seqpoint.projection import project

    cases = {c.name: c for c in CASES}
    held: dict[str, list[tuple[bool, float]]] = {}
    for name, c in data["cases"].items():
        pairs = [p for p in c["pairs"] if "error_message" not in p and "measurements" in p["rounds"][0]["a"]]
        if not pairs:
            continue
        cfg, schedule = validation_subset(cases[name], bool(data["meta"]["quick"]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SeqPointWarning)
            _, points = choose_points(cfg.selection, schedule)
        for p in pairs:
            truth = {tag: float(np.mean([r[tag]["full_s"] for r in p["rounds"]])) for tag in ("a", "b")}
            for r in p["rounds"]:
                campaigns = [r] + ([r["paired"]] if "measurements" in r.get("paired", {}).get("a", {}) else [])
                for camp in campaigns:
                    for tag in ("a", "b"):
                        ms = measurements_from_dict(camp[tag]["measurements"])
                        for label, kw in REJUDGE:
                            proj = project(schedule, points, ms, **kw)
                            if "run_time_s" not in proj.totals:
                                continue
                            t, lo, hi = proj.totals["run_time_s"], *proj.interval["run_time_s"]
                            h = hi - t - proj.in_run_gap  # rebuilt from its parts: the low end may be cut at 0
                            for rule, (x, y) in ((f"{label} + in-run gap", (lo, hi)), (label, (max(t - h, 0.0), t + h))):
                                held.setdefault(rule, []).append((x <= truth[tag] <= y, half_width((x, y), t)))
    if not held:
        return []
    lines = ["Whole-run intervals projected again from each round's stored measurements (`--rejudge`), "
             "against the mean of the configuration's full runs: the cold-step term from the points' first "
             f"steps or from the {data['meta']['window']}-step in-sequence window, with and without the in-run gap "
             "(`Projection.in_run_gap`: |r − 1| × the steady state, r the window's warm steps over the "
             "isolated points' time)" + ("; a `--paired` run's rounds count twice, their own campaigns' and "
                                          "the in-turn campaign's projections" if data["meta"]["paired"] else "")
             + ".", "",
             "| interval | whole runs held | median half-width % |", "| --- | ---: | ---: |"]
    for rule, xs in held.items():
        lines.append(f"| {rule} | {sum(h for h, _ in xs)} of {len(xs)} | {100 * median([w for _, w in xs]):.2f} |")
    return lines


#: How the --paired rounds are timed and compared.
PAIRED_TEXT = ("Each round: the first configuration's SeqPoints (3 workers, one fresh process) and its full "
               "run; then both configurations' SeqPoints in one fresh process whose A and B workers take "
               "turns (A1 B1 B2 A2 A3 B3, as `seqpoint speedup` now does with `[profile] processes > 1`); "
               "then the second configuration's SeqPoints and full run. The first is a in even rounds, b in "
               "odd ones. *Separate* is the projection from the configurations' own campaigns (as in the "
               "section above), *in turn* the one from the shared campaign; both against the same measured "
               "speedup. Errors in % (whole run, first_step; and the steady state alone), ± the standard "
               "error of the rounds' own errors.")


def render_paired(data: dict[str, Any]) -> str:
    """The ``--paired`` run: each pair's projection from separate campaigns against the one
    from campaigns whose workers took turns, both against the same full runs."""
    lines = [*_header(data["meta"], "Speedups with A's and B's worker processes in turn (issue 14)",
                      "speedups_paired.json.gz", "--paired --render-only"), PAIRED_TEXT, "",
             "| case | a -> b | measured | s.e. % | first_step separate | first_step in turn | steady separate "
             "| steady in turn | interval holds (separate / in turn) |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    counts = {k: {"one": 0, "floor": 0, "errors": [], "spreads": [], "held": 0, "rounds": 0}
              for k in ("separate", "in turn")}
    n = 0
    for name, p in _ran_pairs(data, lines, columns=9):
        n += 1
        views = {"separate": summarise(p["rounds"]), "in turn": summarise(as_rounds(p["rounds"]))}
        cells, holds = [], []
        for label in ("first_step", "steady"):
            for k, v in views.items():
                e, se = v["projected"][label]["error"], v["projected"][label]["error_se"]
                cells.append(_pct(e) + ("" if se is None else f" ± {100 * se:.2f}"))
                if label == "first_step":
                    counts[k]["one"] += abs(e) <= 0.01
                    counts[k]["floor"] += abs(e) <= v["noise_floor"]
                    counts[k]["errors"].append(abs(e))
                    counts[k]["spreads"].append(v["projected"][label]["spread"])
        for k, v in views.items():
            iv = v["interval"]
            counts[k]["held"] += iv["held"]
            counts[k]["rounds"] += iv["rounds"]
            holds.append(f"{iv['held']} of {iv['rounds']}")
        se = views["separate"]["standard_error"]
        lines.append(f"| `{name}` | {p['label']} | {p['measured']:.4f} | "
                     f"{'—' if se is None else f'{100 * se:.2f}'} | " + " | ".join(cells)
                     + f" | {' / '.join(holds)} |")
    lines += ["", "| first_step projection | within 1% | within the noise floor | median abs. error % | "
              "median spread of the rounds' projected speedups % | interval holds |",
              "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for k, v in counts.items():
        med = f"{100 * float(np.median(v['errors'])):.2f}" if v["errors"] else "—"
        spread = f"{100 * float(np.median(v['spreads'])):.2f}" if v["spreads"] else "—"
        lines.append(f"| {k} | {v['one']} of {n} | {v['floor']} of {n} | {med} | {spread} | "
                     f"{v['held']} of {v['rounds']} |")
    done = [p["rounds"] for c in data["cases"].values() for p in c["pairs"] if "error_message" not in p]
    rows = [*rule_rows(rule_coverage(done), "separate: "), *rule_rows(rule_coverage([as_rounds(r) for r in done]),
                                                                       "in turn: ")]
    if rows:
        lines += ["", f"The 95% intervals under each rule (whole run, first_step): {RULES_TEXT}", "",
                  *RULES_HEAD, *rows]
    return "\n".join(lines) + "\n"


def config_rows(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Each configuration's projections against its own full runs: a once per case (its
    rounds of every pair pooled), each b once."""
    rows = []
    for name, c in data["cases"].items():
        pairs = [p for p in c["pairs"] if "error_message" not in p]
        groups = [("a", [r["a"] for p in pairs for r in p["rounds"]])]
        groups += [(f"b: {p['label']}", [r["b"] for r in p["rounds"]]) for p in pairs]
        for label, rounds in groups:
            if not rounds:
                continue
            full = np.array([r["full_s"] for r in rounds])
            truth = float(full.mean())
            rows.append({
                "case": name, "config": label, "rounds": len(rounds), "measured_s": truth,
                "noise_floor": float((full.max() - full.min()) / truth),
                "errors": {lab: float(np.mean([r[lab] for r in rounds]) / truth - 1) for lab in LABELS},
                "in_run_ratio": [r["in_run_ratio"] for r in rounds],
            })
    return rows


def render_configs(data: dict[str, Any]) -> list[str]:
    """The table of :func:`config_rows` and its counts."""
    rows = config_rows(data)
    lines = ["Each configuration's whole-run time, projected (mean of its rounds) against its own full "
             "runs (their mean; noise floor: their spread). Configuration a pools its rounds of every pair.",
             "", "| case | configuration | rounds | measured s | noise floor % | in-run ratio (median) | "
             + " | ".join(LABELS) + " |", "| --- | --- | ---: | ---: | ---: | ---: |" + " ---: |" * len(LABELS)]
    for r in rows:
        ratios = [x for x in r["in_run_ratio"] if x is not None]
        ratio = f"{float(np.median(ratios)):.3f}" if ratios else "—"
        lines.append(f"| `{r['case']}` | {r['config']} | {r['rounds']} | {r['measured_s']:.2f} | "
                     f"{100 * r['noise_floor']:.2f} | {ratio} | "
                     + " | ".join(_pct(r["errors"][lab]) for lab in LABELS) + " |")
    lines += ["", "| projection | within the noise floor | within 2% | median abs. error % |", "| --- | ---: | ---: | ---: |"]
    for lab in LABELS:
        errs = np.array([abs(r["errors"][lab]) for r in rows])
        floors = np.array([r["noise_floor"] for r in rows])
        lines.append(f"| {lab} | {int((errs <= floors).sum())} of {len(rows)} | {int((errs <= 0.02).sum())} of "
                     f"{len(rows)} | {100 * float(np.median(errs)):.2f} |" if len(rows) else f"| {lab} | — | — | — |")
    return lines


def main() -> None:
    ap = bench_parser(__doc__, quick="the cases' quick subsets, one pair each, 2 rounds")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds per pair (default 3)")
    ap.add_argument("--window", type=int, default=100, help="iterations of the in-sequence window (default 100)")
    ap.add_argument("--cases", help="comma-separated subset of the cases with pairs")
    ap.add_argument("--render-only", action="store_true", help="rewrite the RESULTS.md section from the JSON")
    ap.add_argument("--rejudge", action="store_true",
                    help="project each stored round again with this code and judge its whole-run intervals")
    ap.add_argument("--paired", action="store_true",
                    help="also time both configurations with their workers in turn, between them, every round")
    args = ap.parse_args()
    stem = "speedups_paired" if args.paired else "speedups"
    path = RESULTS / (f"{stem}_quick.json.gz" if args.quick else f"{stem}.json.gz")
    if not path.exists() and path.with_suffix("").exists():  # written before the rounds kept their measurements
        path = path.with_suffix("")
    if not (args.render_only or args.rejudge):
        names = args.cases.split(",") if args.cases else [c.name for c in CASES if c.pairs]
        unknown = [n for n in names if n not in {c.name for c in CASES if c.pairs}]
        if unknown:
            sys.exit(f"--cases: {', '.join(unknown)} has no speedup pairs; "
                     f"choose from {', '.join(c.name for c in CASES if c.pairs)}")
        cases = [c for c in CASES if c.name in names]
        data = run(cases, 2 if args.quick else args.rounds, min(args.window, 20) if args.quick else args.window,
                   args.quick, args.paired)
        RESULTS.mkdir(exist_ok=True)
        # compact and gzipped: every round's measurements make megabytes of JSON
        path = path if path.suffix == ".gz" else path.with_name(path.name + ".gz")
        path.write_bytes(gzip.compress(json.dumps(data, separators=(",", ":")).encode(), mtime=0))
        print(f"wrote {path}")
    raw = path.read_bytes()
    data = json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)
    if args.rejudge:
        title = f"Whole-run intervals of `{path.name}` judged again (issue 14)"
        body = [f"## {title}\n", f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} (the rounds: "
                f"{data['meta']['date']})", f"- machine: {MACHINE}", f"- command: `{command_line()}`", "",
                *rejudge(data)]
        print(f"RESULTS.md section written: {write_section(f'{stem}-rejudged', chr(10).join(body) + chr(10))}")
        return
    if args.paired:
        print(f"RESULTS.md section written: {write_section('speedups-paired', render_paired(data))}")
    else:
        print(f"RESULTS.md section written: {write_section('speedups', render(data))}")


if __name__ == "__main__":
    main()

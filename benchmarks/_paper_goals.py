"""The issue's goals checked against ``paper_table.json``, with the reason for each miss."""

from __future__ import annotations

import math
import statistics
from typing import Any

DET_GOAL = 0.001  # 0.1% at k <= 10
SPEEDUP_GOAL = 0.01  # 1%
SPEEDUP_SHARE = 12 / 14  # ... in at least 12 of 14 pairs (issue 14)
MEASURED_MIN = 0.005  # measured time within max(noise floor, 0.5%) (issue 14)
MEASURED_SHARE = 6 / 7  # ... in at least 6 of 7 cases, per preset
SELECTION_GOAL = 0.005  # steady-state selection error at k = 10
COVERAGE_GOAL = 0.9  # 95% intervals holding the measured truth
HALF_WIDTH_GOAL = 0.02  # median relative half-width of those intervals
FIRST_RATIO_GOAL = 0.2  # SeqPoint error <= 1/5 of first-N's
REDUCTION_GOAL = 1000.0


def _p(x: float, signed: bool = False) -> str:
    if not math.isfinite(x):
        return "n/a"
    digits = 4 if abs(x) < 0.01 else 2
    return f"{100 * x:+.{digits}f}%" if signed else f"{100 * x:.{digits}f}%"


def _curve(ex: dict[str, Any], method: str, metric: str) -> list[tuple[int, float]]:
    return list(zip(ex["ks"], ex["curves"][method][metric], strict=True))


def _deterministic(cases: dict[str, Any]) -> tuple[list[str], list[str]]:
    checks, why = [], []
    for name, c in cases.items():
        ex = c.get("exact")
        if not ex:
            continue
        for metric in ("flops", "roofline_h100_s"):
            curve = _curve(ex, "seqpoint", metric)
            k10 = next(e for k, e in curve if k == min(10, ex["ks"][-1]))
            first_ok = next((k for k, e in curve if abs(e) <= DET_GOAL), None)
            checks.append(f"{name}/{metric}")
            if abs(k10) > DET_GOAL:
                auto = [a for a in ex["auto"] if a["max_error"] == DET_GOAL]
                need = f"; the 0.1% error bound asks for k={auto[0]['k']}" if auto else ""
                reach = f"reached at k={first_ok}" if first_ok else "not reached for k ≤ 20"
                interp = ""
                if "seqpoint_interp" in ex["curves"]:
                    e = dict(_curve(ex, "seqpoint_interp", metric))[min(10, ex["ks"][-1])]
                    interp = f"; the interpolated projection of the same points: {_p(e, True)}"
                why.append(f"`{name}` {metric}: {_p(k10, True)} at k=10, {abs(k10) / DET_GOAL:.1f}× the "
                           f"goal ({reach}; {ex['n_signatures']} unique shapes{need}{interp}). The "
                           "selector groups shapes by a fixed cost proxy (tokens + attention/4608); "
                           "where the model's real cost weighs the terms differently, a group's "
                           "representative is off by the curvature the proxy misses.")
    return checks, why


def _measured_note(name: str, m: dict[str, Any]) -> str:
    """Why a measured-time error exceeds the noise floor, from the run's own diagnostics."""
    st = m.get("steady", {})
    floor = max(m["noise_floor"], 1e-12)
    text = (f"`{name}` measured time: {_p(m['error'], True)} against a noise floor of "
            f"{_p(m['noise_floor'])} ({abs(m['error']) / floor:.1f}× the floor).")
    if "selection_error" not in st:
        return text
    text += (f" Against every unique shape profiled the same way, the steady-state projection is off by "
             f"{_p(st['selection_error'], True)} (the selection error); the full run costs "
             f"{_p(st['in_sequence_overhead'], True)} more than those isolated steps.")
    first = m.get("projection", {}).get("projected", {}).get("first_occurrence_s")
    if first is not None and st.get("total_s"):
        rest = m["measured_s"] / (st["total_s"] + first) - 1
        cold = m.get("projection", {}).get("cold_steps", {})
        what = (f"{cold.get('first', 0)} first occurrences and {cold.get('evicted', 0)} steps re-creating "
                "evicted oneDNN primitives" if cold else f"one cold first step for each of the "
                f"{m['n_signatures']} shapes")
        text += (f" The projection's cold-step term ({what}) adds {_p(first / m['measured_s'])} of the run")
        if rest >= 0:
            text += (f", leaving {_p(rest, True)} unaccounted for: cost a short run pays once while its "
                     "allocator and caches warm up (a second pass over the same schedule in the same process "
                     "is cheaper), steps costing more inside a run than the cold/steady ratio measured at "
                     "the SeqPoints says, and any difference in speed between the profiling process and "
                     "the full runs' processes; this table does not separate them.")
        else:
            text += (f", which over-projects: steady state plus that term is {_p(-rest / (1 + rest))} "
                     "above the measured run, i.e. the cold first steps timed in isolation cost more "
                     "than a shape's first occurrence inside the run, where the previous, similar "
                     "shape has just run.")
    spread = m.get("spread")
    if spread:
        errs = ", ".join(_p(e, True) for e in spread["errors"])
        verdict = ("more than the full runs' noise floor: a process's own speed matters here"
                   if spread["spread"] > m["noise_floor"] else "less than the full runs' noise floor")
        text += (f" Profiled again in {len(spread['errors'])} fresh processes, the same SeqPoints give "
                 f"errors of {errs} (spread {_p(spread['spread'])}, {verdict}).")
    return text


def _speedup_note(name: str, p: dict[str, Any], m: dict[str, Any]) -> str:
    """Why a projected speedup misses the measured one, from the pair's own numbers."""
    err, steady = p["error"], p.get("steady_error", math.nan)
    rounds = p.get("per_round", [])
    spread = (max(rounds) - min(rounds)) / (sum(rounds) / len(rounds)) if len(rounds) > 1 else 0.0
    text = (f"`{name}` speedup {p['label']}: projected {p['projected']:.4f} vs measured {p['measured']:.4f} "
            f"({_p(err, True)}, noise floor {_p(p['noise_floor'])}; steady-state only {_p(steady, True)}; "
            f"the two profiling rounds differ by {_p(spread)}).")
    if "threads" in p["change"]:
        text += (f" b runs 2 threads on a 2-core VM that other jobs share: its full runs took "
                 f"{p['measured_b_s']:.1f} s against a's {p['measured_a_s']:.1f} s. A 2-thread step "
                 "waits whenever the other core is busy, which short isolated profiles rarely catch.")
    elif abs(steady) < abs(err) / 2:
        text += (" The steady-state ratio alone is much closer: the cold-step term does not cancel "
                 "between the two configurations.")
    elif abs(steady) > 2 * abs(err):
        text += (" The cold-step term is what brings it this close (b's cold first steps cost "
                 "relatively more than a's); the remainder is b's steps costing relatively more or less "
                 "inside a run than in isolation.")
    elif spread >= abs(err) / 2:
        text += (" The rounds alone differ by about the error: with 10 points, 5 timed repeats and "
                 "one cold first step each, the projection's process-to-process noise is of that size.")
    else:
        text += (" Both rounds and the steady-state ratio agree, so the gap is systematic: relative to a, "
                 "configuration b's steps cost a different amount inside a run than in isolation.")
    return text


def goals_section(data: dict[str, Any]) -> list[str]:
    cases = data["cases"]
    rows: list[list[str]] = []
    notes: list[str] = []

    checks, why = _deterministic(cases)
    if checks:
        rows.append(["deterministic projection error (FLOPs, H100 roofline) at k = 10", "≤ 0.1%",
                     f"{len(checks) - len(why)} of {len(checks)} case × metric", "yes" if not why else "no"])
        notes += why

    meas = {n: c["measured"] for n, c in cases.items() if c.get("measured")}
    if meas:
        ok = [n for n, m in meas.items() if abs(m["error"]) <= m["noise_floor"]]
        worst = max(meas, key=lambda n: abs(meas[n]["error"]))
        default = {n: c["measured_default"] for n, c in cases.items() if c.get("measured_default")}
        ok_d = [n for n, m in default.items() if abs(m["error"]) <= m["noise_floor"]]
        extra = f"; with glibc's default allocator {len(ok_d)} of {len(default)}" if default else ""
        rows.append(["measured-time projection error", "within the noise floor",
                     f"{len(ok)} of {len(meas)} cases (worst `{worst}` {_p(meas[worst]['error'], True)} "
                     f"vs floor {_p(meas[worst]['noise_floor'])}){extra}",
                     "yes" if len(ok) == len(meas) else "no"])
        for n, m in meas.items():
            if n not in ok:
                notes.append(_measured_note(n, m))

    pairs = [(n, p) for n, c in cases.items() for p in c.get("speedups", []) if "error" in p]
    if pairs:
        bad = [(n, p) for n, p in pairs if abs(p["error"]) > SPEEDUP_GOAL]
        worst_n, worst_p = max(pairs, key=lambda np_: abs(np_[1]["error"]))
        within = sum(abs(p["error"]) <= p["noise_floor"] for _, p in pairs)
        need = math.ceil(SPEEDUP_SHARE * len(pairs) - 1e-9)
        rows.append(["projected vs measured speedup within 1%", f"≥ {need} of {len(pairs)} pairs",
                     f"{len(pairs) - len(bad)} of {len(pairs)} pairs (worst `{worst_n}` {worst_p['label']} "
                     f"{_p(worst_p['error'], True)}); {within} within their noise floor",
                     "yes" if len(pairs) - len(bad) >= need else "no"])
        for n, p in bad:
            notes.append(_speedup_note(n, p, cases[n].get("measured", {})))
    skipped = [(n, p) for n, c in cases.items() for p in c.get("speedups", []) if "error_message" in p]
    for n, p in skipped:
        notes.append(f"`{n}` speedup {p['label']} could not run on this CPU: {p['error_message']}")

    ratios = []
    for n, c in cases.items():
        ex = c.get("exact")
        if not ex:
            continue
        sp, fi = dict(_curve(ex, "seqpoint", "flops")), dict(_curve(ex, "first", "flops"))
        k = min(10, ex["ks"][-1])
        ratios.append((n, abs(sp[k]) / max(abs(fi[k]), 1e-15), abs(sp[k]), abs(fi[k])))
    if ratios:
        bad_r = [r for r in ratios if r[1] > FIRST_RATIO_GOAL]
        rows.append(["SeqPoint vs first-N FLOPs error at equal budget (k = 10)", "≤ 1/5",
                     f"{len(ratios) - len(bad_r)} of {len(ratios)} cases (worst ratio "
                     f"{max(r[1] for r in ratios):.3f})", "yes" if not bad_r else "no"])
        for n, r, s, f in bad_r:
            tiny = " Both are below 0.1%: this schedule's shapes barely vary." if max(s, f) < DET_GOAL else ""
            notes.append(f"`{n}`: SeqPoint |error| {_p(s)} vs first-N {_p(f)} at k=10 (ratio {r:.2f}).{tiny}")

    paper = data.get("paper_scale", [])
    if paper:
        red = [(p["title"], s) for p in paper for s in p["selections"] if s["max_error"] == DET_GOAL]
        bad_red = [(t, s) for t, s in red if s["reduction"] < REDUCTION_GOAL]
        rows.append(["profiling reduction, paper-scale runs at a 0.1% error bound", "≥ 1000×",
                     ", ".join(f"{s['reduction']:,.0f}× (k={s['k']})" for _, s in red),
                     "yes" if not bad_red else "no"])
        for t, s in bad_red:
            notes.append(f"{t}: the 0.1% bound needs k={s['k']}, so {s['reduction']:,.0f}×: token-budget "
                         "batches mix batch sizes, and the bound (worst case over every elementary cost, "
                         "per sequence as well as per token) only falls under 0.1% once most "
                         "(batch size, length) pairs have their own point; at a 1% bound see the table.")
    out = ["### Goals", ""]
    out += ["| goal | target | result | met |", "|---|---|---|---|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    out += [""]
    out += accuracy_goals(cases)
    if notes:
        out += ["Where a goal is missed, by how much and why:", ""] + [f"- {n}" for n in notes] + [""]
    return out


def preset_of(name: str) -> str:
    """``small`` for the small rows (``<case>-small``), else ``tiny``."""
    return "small" if name.endswith("-small") else "tiny"


def _half_width(m: dict[str, Any]) -> float:
    # the upper side: the interval's low end is cut at 0
    return (m["interval_s"][1] - m["projected_s"]) / m["projected_s"]


def accuracy_goals(cases: dict[str, Any]) -> list[str]:
    """Issue 14's goals on the measured rows, one line per preset, each case's figure named."""
    meas = {n: c["measured"] for n, c in cases.items() if c.get("measured")}
    if not meas:
        return []
    rows: list[list[str]] = []
    for preset in ("tiny", "small"):
        group = {n: m for n, m in meas.items() if preset_of(n) == preset}
        if not group:
            continue
        need = math.ceil(MEASURED_SHARE * len(group) - 1e-9)
        hit = {n: abs(m["error"]) <= max(m["noise_floor"], MEASURED_MIN) for n, m in group.items()}
        rows.append([f"measured time at k = 10 within max(noise floor, 0.5%), `{preset}`",
                     f"≥ {need} of {len(group)}",
                     f"{sum(hit.values())} of {len(group)}: " + ", ".join(
                         f"`{n}` {_p(m['error'], True)} (floor {_p(m['noise_floor'])})" for n, m in group.items()),
                     "yes" if sum(hit.values()) >= need else "no"])
        sel = {n: m["steady"]["selection_error"] for n, m in group.items()
               if "selection_error" in m.get("steady", {})}
        if sel:
            rows.append([f"steady-state selection error at k = 10, `{preset}`", "≤ 0.5% in every case",
                         f"{sum(abs(e) <= SELECTION_GOAL for e in sel.values())} of {len(sel)}: "
                         + ", ".join(f"`{n}` {_p(e, True)}" for n, e in sel.items()),
                         "yes" if all(abs(e) <= SELECTION_GOAL for e in sel.values()) else "no"])
    held = [bool(m.get("within_interval")) for m in meas.values()]
    widths = sorted(_half_width(m) for m in meas.values())
    median = statistics.median(widths)
    rows.append(["95% interval holds the measured run; its median half-width", "≥ 90%; ≤ 2%",
                 f"{sum(held)} of {len(held)} ({_p(sum(held) / len(held))}); median ± {_p(median)} "
                 f"(range {_p(widths[0])}–{_p(widths[-1])})",
                 "yes" if sum(held) >= COVERAGE_GOAL * len(held) and median <= HALF_WIDTH_GOAL else "no"])
    out = ["Issue 14's accuracy goals on the measured rows (the `small` rows run the workloads' `small` "
           "presets, 0.1-3 s per step here):", ""]
    out += ["| goal | target | result | met |", "|---|---|---|---|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return [*out, ""]

"""PNG plots of a run: length histogram with SeqPoints, cost against length, error against k,
and operation breakdown (matplotlib, with the Agg backend)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from seqpoint.selection import SeqPoints

__all__ = ["plot_breakdown", "plot_cost_vs_length", "plot_error_vs_k", "plot_length_histogram"]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Any, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _pyplot().close(fig)
    return path


def plot_length_histogram(seq_len: ArrayLike, points: SeqPoints | None, path: str | Path, *,
                          title: str = "Sequence length of every iteration", unit: str = "tokens") -> Path:
    """Histogram of padded ``seq_len`` (shape (n_iterations,)) over iterations, with each
    SeqPoint drawn at its ``seq_len`` as a stem as high as its weight (second axis)."""
    fig, ax = _pyplot().subplots(figsize=(8, 4))
    ax.hist(np.asarray(seq_len), bins=60, color="#9ecae1", edgecolor="#3182bd", linewidth=0.5)
    ax.set(xlabel=f"padded sequence length ({unit})", ylabel="iterations", title=title)
    if points is not None:
        ax2 = ax.twinx()
        xs, ws = [p.seq_len for p in points.points], [p.weight for p in points.points]
        ax2.vlines(xs, 0, ws, color="#e6550d", linewidth=2)
        ax2.plot(xs, ws, "o", color="#e6550d", label=f"{len(points)} SeqPoints (weight)")
        ax2.set_ylabel("SeqPoint weight (iterations represented)", color="#e6550d")
        ax2.set_ylim(0, max(ws) * 1.15)
        ax2.legend(loc="upper right")
    return _save(fig, path)


def plot_cost_vs_length(seq_len: ArrayLike, cost: ArrayLike, path: str | Path, *,
                        fit: tuple[ArrayLike, ArrayLike] | None = None, fit_groups: ArrayLike | None = None,
                        reference: tuple[ArrayLike, ArrayLike] | None = None, unit: str = "tokens",
                        ylabel: str = "time per iteration (s)") -> Path:
    """Measured cost of each SeqPoint against its length; ``fit`` is ``(x, y)`` of the cost model, one line per value of
    ``fit_groups`` (batch size), and ``reference`` an ``(x, y)`` scatter of ground-truth iterations (a full run)."""
    fig, ax = _pyplot().subplots(figsize=(7, 4))
    if reference is not None:
        ax.scatter(*reference, s=6, alpha=0.35, color="#969696", label="every iteration (full run)")
    if fit is not None:
        fx, fy = (np.asarray(a) for a in fit)
        groups = np.asarray(fit_groups) if fit_groups is not None else np.zeros(fx.shape[0])
        # One line per group (batch size): joining shapes of different batch sizes
        # would draw jumps that are not part of the cost model.
        for j, g in enumerate(np.unique(groups)):
            sel = groups == g
            order = np.argsort(fx[sel])
            ax.plot(fx[sel][order], fy[sel][order], color="#3182bd", marker="." if sel.sum() == 1 else "",
                    label="fitted cost model" if j == 0 else None)
    ax.scatter(seq_len, cost, s=40, color="#e6550d", zorder=3, label="SeqPoints (measured)")
    ax.set(xlabel=f"padded sequence length ({unit})", ylabel=ylabel, title="Cost against sequence length")
    ax.legend()
    return _save(fig, path)


def plot_error_vs_k(curves: Mapping[str, tuple[Sequence[int], Sequence[float]]], path: str | Path, *,
                    noise_floor: float | None = None, title: str = "Projection error against profiled iterations",
                    ylabel: str = "|relative error| of projected total") -> Path:
    """Absolute relative error against k of each method (``curves``: name -> ``(ks, errors)``),
    log scale, with ``noise_floor`` as a horizontal line."""
    fig, ax = _pyplot().subplots(figsize=(7, 4.2))
    for name, (ks, errs) in curves.items():
        e = np.maximum(np.abs(np.asarray(errs, dtype=float)), 1e-7) * 100
        style = {"linewidth": 2.5, "color": "#e6550d"} if name == "seqpoint" else {"linewidth": 1}
        ax.plot(ks, e, marker="o", markersize=3, label=name, **style)
    if noise_floor is not None and noise_floor > 0:
        ax.axhline(noise_floor * 100, color="k", linestyle="--", linewidth=1, label="noise floor")
    ax.set(yscale="log", xlabel="profiled iterations k", ylabel=ylabel + " (%)", title=title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    return _save(fig, path)


def plot_breakdown(series: Mapping[str, Mapping[str, float]], path: str | Path, *,
                   title: str = "Operation breakdown of the whole run") -> Path:
    """Grouped horizontal bars per operation category, one per series (label -> category ->
    seconds), each as shares of its total."""
    cats = sorted({c for s in series.values() for c in s}, key=lambda c: -max(
        (s.get(c, 0.0) for s in series.values()), default=0.0))
    n = max(len(series), 1)
    fig, ax = _pyplot().subplots(figsize=(7.5, 0.45 * max(len(cats), 3) + 1.2))
    height = 0.8 / n
    y = np.arange(len(cats))
    for i, (label, values) in enumerate(series.items()):
        total = sum(values.values()) or 1.0
        vals = [values.get(c, 0.0) / total * 100 for c in cats]
        ax.barh(y + i * height, vals, height=height, label=label)
    ax.set_yticks(y + height * (n - 1) / 2, cats)
    ax.invert_yaxis()
    ax.set(xlabel="share of total time (%)", title=title)
    ax.legend()
    return _save(fig, path)

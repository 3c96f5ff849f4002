"""Human formatting of durations, counts and errors, shared by terminal and HTML reports."""

from __future__ import annotations

import math

__all__ = ["fmt_count", "fmt_duration", "fmt_pct", "fmt_ratio"]


def fmt_duration(seconds: float) -> str:
    """``0.0123`` -> ``12.3 ms``; ``5400`` -> ``1.50 h``."""
    if not math.isfinite(seconds):
        return "n/a"
    s = abs(seconds)
    if s < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if s < 1:
        return f"{seconds * 1e3:.1f} ms"
    if s < 120:
        return f"{seconds:.2f} s"
    if s < 7200:
        return f"{seconds / 60:.1f} min"
    if s < 172800:
        return f"{seconds / 3600:.2f} h"
    return f"{seconds / 86400:.2f} d"


def fmt_pct(fraction: float, digits: int = 2) -> str:
    """Signed percentage of a fraction: ``-0.0123`` -> ``-1.23%``."""
    return f"{fraction * 100:+.{digits}f}%" if math.isfinite(fraction) else "n/a"


def fmt_ratio(x: float) -> str:
    """``345.2`` -> ``345×``."""
    return "n/a" if not math.isfinite(x) else f"{x:,.0f}×" if x >= 10 else f"{x:.2f}×"


def fmt_saving(factor: float, unit: str, *, bold: bool = False) -> str:
    """A "less profiling" factor, which says so below 1: ``0.71×  (no saving: profiling took …)``."""
    text = f"[bold]{fmt_ratio(factor)}[/]" if bold else fmt_ratio(factor)
    if math.isfinite(factor) and 0 < factor < 1:
        text += f"  (no saving: profiling took {1 / factor:.2f}× the run's {unit})"
    return text


def fmt_count(n: float) -> str:
    """Engineering count: ``1.2e9`` -> ``1.20 G``."""
    for div, suffix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.2f} {suffix}"
    return f"{n:.0f}"

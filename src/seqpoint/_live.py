"""Whether a rich console shows live progress bars."""

from __future__ import annotations

from typing import Any

__all__ = ["shows_live"]


def shows_live(console: Any | None) -> bool:
    """True on a terminal or in a notebook. Elsewhere (a pipe, a log file) a bar leaves
    only its last frame, or an empty line when transient, so callers draw none there.

    Parameters
    ----------
    console : rich.console.Console or None
        The console the bar would draw on; None is rich's global console.
    """
    from rich import get_console

    out = console or get_console()
    return bool(out.is_terminal or out.is_jupyter)

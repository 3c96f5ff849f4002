"""Whether a rich console shows live progress bars, and the one bar of a profiling campaign."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["live_bar", "shows_live"]


def shows_live(console: Console | None) -> bool:
    """True when ``console`` (None: rich's global one) is a terminal or a notebook. Elsewhere (a
    pipe, a log file) a bar leaves only its last frame, or an empty line when transient, so
    callers draw none there."""
    from rich import get_console

    out = console or get_console()
    return bool(out.is_terminal or out.is_jupyter)


@contextlib.contextmanager
def live_bar(title: str, total: int, console: Console | None,
             enabled: bool = True) -> Iterator[Callable[[int, str | None], None]]:
    """``advance(n, description)`` of one rich ``profile`` bar (every executor draws this
    one); a no-op when disabled, empty, or where :func:`shows_live` says no."""
    if not (enabled and total and shows_live(console)):
        yield lambda n, description: None
        return
    from rich import progress

    columns = (progress.TextColumn("[bold]profile[/] {task.description}"), progress.BarColumn(),
               progress.MofNCompleteColumn(), progress.TimeRemainingColumn())
    with progress.Progress(*columns, console=console, transient=False) as bar:
        task = bar.add_task(title, total=total)

        def advance(n: int, description: str | None) -> None:
            if description is not None:
                bar.update(task, description=description)
            bar.advance(task, n)

        yield advance

"""Where a campaign's progress goes (:class:`Reporter`): one rich console, progress bars on or
off, and the hooks that run after each worker process."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["Advance", "Reporter"]

#: ``advance(n, description)``: ``n`` more steps done; a new description when not None.
Advance = Callable[[int, "str | None"], None]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Reporter:
    """How a campaign reports: progress bars and notes on ``console`` when ``progress``, and
    ``after_worker(p, last)`` hooks run after worker process ``p`` of a campaign measured in fresh workers
    (``validate`` times its full runs there; ``speedup`` hands the turn to the other configuration)."""

    console: Console | None = None
    """Where bars and notes go (None: rich's console on stdout)."""
    progress: bool = True
    """Show progress bars and notes."""
    label: str | None = None
    """What the campaign is called in its bar, notes and warnings (default: the workload's name)."""
    after_worker: tuple[Callable[[int, bool], None], ...] = ()
    """Called after each worker process with its index and whether it was the last."""

    def labelled(self, label: str) -> Reporter:
        """This reporter, naming its campaign ``label``."""
        return dataclasses.replace(self, label=label)

    def hooked(self, hook: Callable[[int, bool], None]) -> Reporter:
        """This reporter with one more ``after_worker`` hook."""
        return dataclasses.replace(self, after_worker=(*self.after_worker, hook))

    def worker_done(self, p: int, last: bool, line: str) -> None:
        """Worker ``p`` ended: print ``line`` (a worker runs for minutes with nothing else on
        the screen), then run the hooks."""
        self.note(line)
        for hook in self.after_worker:
            hook(p, last)

    def note(self, line: str) -> None:
        """One printed line, when progress shows."""
        if self.progress:
            from rich import get_console

            (self.console or get_console()).print(line, highlight=False)

    @contextlib.contextmanager
    def bar(self, title: str, total: int, *, transient: bool = False) -> Iterator[Advance]:
        """One rich progress bar of ``total`` steps; yields ``advance(n, description)`` (a no-op
        when progress is off, nothing is to be done, or the console is no terminal or notebook)."""
        from rich import get_console

        out = self.console or get_console()
        # In a pipe or a log file a bar leaves only its last frame (an empty line when transient).
        if not (self.progress and total and (out.is_terminal or out.is_jupyter)):
            yield lambda n, description: None
            return
        from rich import progress

        columns = (progress.TextColumn("{task.description}"), progress.BarColumn(),
                   progress.MofNCompleteColumn(), progress.TimeRemainingColumn())
        with progress.Progress(*columns, console=self.console, transient=transient) as shown:
            task = shown.add_task(title, total=total)

            def advance(n: int, description: str | None) -> None:
                if description is not None:
                    shown.update(task, description=description)
                shown.advance(task, n)

            yield advance

"""The reporter's bars (the validate workflow's full-run bar among them; its end-to-end runs are
in tests/cli)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from seqpoint import Reporter


@pytest.mark.parametrize("terminal", [False, True])
def test_full_run_bar_leaves_no_empty_line_in_piped_output(terminal: bool) -> None:
    """A transient rich bar prints one empty line on a console that is not a terminal:
    piped ``validate`` output started with one per full run."""
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=80)
    with Reporter(console=console).bar("full run 1/2", 10, transient=True) as advance:
        advance(10, None)
    assert (out.getvalue() == "") is not terminal


def test_a_silent_reporter_draws_and_prints_nothing() -> None:
    out = io.StringIO()
    quiet = Reporter(console=Console(file=out, force_terminal=True, width=80), progress=False)
    with quiet.bar("profile", 3) as advance:
        advance(3, "done")
    quiet.note("a worker ended")
    hooked, seen = quiet.hooked(lambda p, last: seen.append((p, last))), []  # type: ignore[has-type]
    hooked.worker_done(0, True, "line")
    assert out.getvalue() == "" and seen == [(0, True)]

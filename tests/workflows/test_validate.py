"""The validate workflow's own helpers (its end-to-end runs are in tests/cli)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from seqpoint.workflows import progress_bar


@pytest.mark.parametrize("terminal", [False, True])
def test_full_run_bar_leaves_no_empty_line_in_piped_output(terminal: bool) -> None:
    """A transient rich bar prints one empty line on a console that is not a terminal:
    piped ``validate`` output started with one per full run."""
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=80)
    with progress_bar(True, console, "full run 1/2", 10) as advance:
        advance(10)
    assert (out.getvalue() == "") is not terminal

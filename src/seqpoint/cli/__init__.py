"""Stage 9 front end: the ``seqpoint`` command line.

Each command lives in its own module and registers itself on the shared typer app
when imported.
"""

from seqpoint.cli import _cache, _profile, _project, _run, _schedule, _select  # noqa: F401
from seqpoint.cli._app import app, main

__all__ = ["app", "main"]

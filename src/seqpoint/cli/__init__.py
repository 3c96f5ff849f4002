"""Stage 9 front end: the ``seqpoint`` command line.

Each command lives in its own module and registers itself on the shared typer app
when imported; the import order is the order ``seqpoint --help`` lists them in,
the order of the pipeline.
"""

# isort: off
from seqpoint.cli import _schedule, _select, _profile, _project, _breakdown, _run, _sweep, _cache  # noqa: F401
from seqpoint.cli._app import main

# isort: on

__all__ = ["main"]

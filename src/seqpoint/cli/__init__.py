"""Stage 9 front end: the ``seqpoint`` command line.

Each command lives in its own module and registers itself on the shared typer app.
"""

from seqpoint.cli._app import app, main

# Importing a command module registers its commands on ``app``.
from seqpoint.cli import _schedule  # noqa: F401,E402  isort: skip
from seqpoint.cli import _select  # noqa: F401,E402  isort: skip
from seqpoint.cli import _project  # noqa: F401,E402  isort: skip
from seqpoint.cli import _profile  # noqa: F401,E402  isort: skip
from seqpoint.cli import _cache  # noqa: F401,E402  isort: skip
from seqpoint.cli import _run  # noqa: F401,E402  isort: skip

__all__ = ["app", "main"]

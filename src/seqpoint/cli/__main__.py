"""``python -m seqpoint.cli``."""

from seqpoint.cli import main

raise SystemExit(main())

"""Stage 3: the IterationSchedule, one row per training iteration. ``round_up`` and
``rows_path``, imported ``as`` themselves, are plumbing for the other stages."""

from seqpoint._signature import Signature
from seqpoint.schedule._io import read_schedule, write_schedule
from seqpoint.schedule._rows import RowLengths
from seqpoint.schedule._rows import rows_path as rows_path
from seqpoint.schedule._schedule import COLUMNS, IterationSchedule, from_batches
from seqpoint.schedule._schedule import round_up as round_up
from seqpoint.schedule._signatures import (
    ScheduleSummary,
    SignatureTable,
    signature_table,
    summarize,
)

__all__ = [
    "COLUMNS",
    "IterationSchedule",
    "RowLengths",
    "ScheduleSummary",
    "Signature",
    "SignatureTable",
    "from_batches",
    "read_schedule",
    "signature_table",
    "summarize",
    "write_schedule",
]

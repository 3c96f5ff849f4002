"""Stage 3: the IterationSchedule, one row per training iteration."""

from seqpoint._signature import Signature
from seqpoint.schedule._io import read_schedule, write_schedule
from seqpoint.schedule._rows import RowLengths, rows_path
from seqpoint.schedule._schedule import COLUMNS, IterationSchedule, from_batches, round_up
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
    "round_up",
    "rows_path",
    "signature_table",
    "summarize",
    "write_schedule",
]

"""Stage 3: the IterationSchedule, one row per training iteration."""

from seqpoint.schedule._build import from_batches
from seqpoint.schedule._io import read_schedule, write_schedule
from seqpoint.schedule._rows import RowLengths, read_rows, rows_path, write_rows
from seqpoint.schedule._schedule import (
    COLUMNS,
    RANK_COLUMN,
    SIGNATURE_COLUMNS,
    IterationSchedule,
    rank_layout_error,
    round_up,
    set_columns,
)
from seqpoint.schedule._signatures import SignatureTable, signature_table
from seqpoint.schedule._summary import ScheduleSummary, summarize

__all__ = [
    "COLUMNS",
    "RANK_COLUMN",
    "SIGNATURE_COLUMNS",
    "IterationSchedule",
    "RowLengths",
    "ScheduleSummary",
    "SignatureTable",
    "from_batches",
    "rank_layout_error",
    "read_rows",
    "read_schedule",
    "round_up",
    "rows_path",
    "set_columns",
    "signature_table",
    "summarize",
    "write_rows",
    "write_schedule",
]

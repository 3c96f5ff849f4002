"""Stage 3: the IterationSchedule, one row per training iteration, and the run trace of a recorded run
(:class:`RunTrace`: one row per micro-batch, with its measured time), which reads as a schedule."""

from seqpoint.schedule._io import read_schedule, write_schedule
from seqpoint.schedule._rows import RowLengths
from seqpoint.schedule._schedule import IterationSchedule, round_up
from seqpoint.schedule._signatures import (
    ScheduleSummary,
    SignatureTable,
    signature_table,
    summarize,
)
from seqpoint.schedule._trace import RunTrace, read_trace, write_trace

__all__ = ["IterationSchedule", "RowLengths", "RunTrace", "ScheduleSummary", "SignatureTable", "read_schedule",
           "read_trace", "round_up", "signature_table", "summarize", "write_schedule", "write_trace"]

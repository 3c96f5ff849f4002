"""How a training step is measured and where: the timers (:data:`TIMERS`: wall, cpu, cuda
and the ``instructions`` count under callgrind) and fresh worker processes
(:func:`in_fresh_process`). The profiling harness and the ground truth (``validation``)
share them, so the truth does not use the harness it judges. Importing this package does
not import torch."""

from seqpoint.clocks._callgrind import COUNTED_ISA
from seqpoint.clocks._fresh import in_fresh_process, stop_workers
from seqpoint.clocks._timers import TIMERS, check_timer, in_callgrind, step_timer, time_stats

__all__ = ["COUNTED_ISA", "TIMERS", "check_timer", "in_callgrind", "in_fresh_process", "step_timer", "stop_workers",
           "time_stats"]

"""The ``instructions`` timer: a step's user-space instruction count under callgrind.

A worker process runs under ``valgrind --tool=callgrind`` with collection off; the timer
turns it on around one step with torch's own toggles (what
``torch.utils.benchmark.Timer.collect_callgrind`` uses) and reads the count from the dump
that step wrote. The count is deterministic where a clock on a shared machine is not
(repeats agree within 0.05-0.3%). Valgrind hides AVX-512 from the program, so the code
counted is the AVX2 path: the cache key says so (:data:`COUNTED_ISA`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from seqpoint.exceptions import ConfigError

if TYPE_CHECKING:
    import torch

__all__ = ["CALLGRIND_DIR_ENV", "COUNTED_ISA", "callgrind_command", "count_instructions", "read_summary"]

#: Where the worker's callgrind dumps go (set by the parent that started it under valgrind).
CALLGRIND_DIR_ENV = "SEQPOINT_CALLGRIND_DIR"
#: The instruction set the counted code runs: valgrind hides AVX-512 (part of the cache key).
COUNTED_ISA = "avx2 (valgrind hides avx512)"


def callgrind_command(out_dir: str | os.PathLike[str]) -> list[str]:
    """The command prefix that runs a program under callgrind, collection off until toggled,
    one dump per toggle in ``out_dir``. ConfigError (one line) without valgrind."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise ConfigError("The 'instructions' timer runs each worker under valgrind, which is not on PATH; "
                          "install it (apt-get install valgrind) or use --timer wall.")
    return [valgrind, "-q", "--tool=callgrind", "--collect-atstart=no", "--dump-instr=no", "--dump-line=no",
            "--compress-strings=no", f"--callgrind-out-file={Path(out_dir) / 'callgrind.out.%p'}"]


def read_summary(text: str) -> float:
    """The instruction count of one callgrind dump: its ``summary:`` line (the first event,
    ``Ir``). ValueError when the dump has none."""
    for line in text.splitlines():
        if line.startswith("summary:"):
            fields = line.split()
            if len(fields) >= 2 and fields[1].isdigit():
                return float(fields[1])
            break
    raise ValueError("A callgrind dump has no 'summary: <count>' line; was the worker run under callgrind?")


def count_instructions(fn: Callable[[], object], device: torch.device) -> float:
    """Instructions executed in user space by one call of ``fn`` (the ``instructions`` timer's
    body): callgrind collects around the call and dumps; the count is read from that dump,
    which is then removed. ConfigError outside a worker started under callgrind."""
    import torch

    del device  # a CPU count: nothing to synchronise (callgrind sees no GPU work)
    out = os.environ.get(CALLGRIND_DIR_ENV)
    if not out:
        raise ConfigError("The 'instructions' timer counts only in a worker process started under callgrind; "
                          "measure through profile_points (seqpoint profile, seqpoint run), which starts one.")
    pattern = f"callgrind.out.{os.getpid()}.*"
    before = set(Path(out).glob(pattern))
    torch._C._valgrind_toggle()
    fn()
    torch._C._valgrind_toggle_and_dump_stats()
    new = sorted(set(Path(out).glob(pattern)) - before, key=lambda p: int(p.name.rsplit(".", 1)[1]))
    if not new:
        raise RuntimeError(f"callgrind wrote no dump in {out}: the worker is not running under callgrind.")
    count = read_summary(new[-1].read_text())
    for p in new:
        p.unlink()
    return count

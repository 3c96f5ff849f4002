"""The ``instructions`` timer: a step's user-space instruction count under callgrind.

A worker process runs under ``valgrind --tool=callgrind`` with collection off; the timer
turns it on around one step with torch's own toggles (what
``torch.utils.benchmark.Timer.collect_callgrind`` uses) and reads the count from the dump
that step wrote. The count is deterministic where a clock on a shared machine is not
(repeats agree within 0.05-0.3%). Valgrind hides AVX-512 from the program, so the code
counted is the AVX2 path: the cache key says so (:data:`COUNTED_ISA`).

The worker starts uninstrumented (``--instr-atstart=no``: loading torch takes ~30 s, not
~100 s) and callgrind's own ``START_INSTRUMENTATION`` request, which torch does not expose,
is sent before the first counted step (:func:`_client_request`): the counts are the same.
"""

from __future__ import annotations

import ctypes
import functools
import mmap
import os
import platform
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from seqpoint.exceptions import ConfigError

__all__ = ["CALLGRIND_DIR_ENV", "COUNTED_ISA", "callgrind_command", "count_instructions"]

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
    late = ["--instr-atstart=no"] if _client_request() is not None else []  # started by the first count
    return [valgrind, "-q", "--tool=callgrind", *late, "--collect-atstart=no", "--dump-instr=no", "--dump-line=no",
            "--compress-strings=no", f"--callgrind-out-file={Path(out_dir) / 'callgrind.out.%p'}"]


#: Callgrind's START_INSTRUMENTATION request (valgrind's callgrind.h: tool base 'C','T', + 4).
_START_INSTRUMENTATION = 0x43540004
#: valgrind.h's client-request preamble on amd64 as a function ``f(uint64_t args[6]) -> rdx``:
#: rax = args, rdx = 0 (the result outside valgrind); four rotations of rdi by 128 bits in
#: all and ``xchg rbx, rbx`` are no-ops natively, and valgrind's translator reads them as a
#: request.
_REQUEST_AMD64 = bytes.fromhex("534889f831d248c1c70348c1c70d48c1c73d48c1c733" "4887db4889d05bc3")
_STARTED: list[bool] = []  # set once this worker has started instrumenting


@functools.cache
def _client_request() -> Callable[[int], int] | None:
    """A function sending one valgrind client request (no arguments), or None where it cannot
    be built (not amd64, or no executable memory): then workers instrument from the start."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return None
    try:
        page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    except (OSError, AttributeError):  # W^X kernels, platforms without PROT_EXEC
        return None
    page.write(_REQUEST_AMD64)
    raw = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_void_p)(ctypes.addressof(ctypes.c_char.from_buffer(page)))

    def request(code: int, _page: mmap.mmap = page) -> int:  # the default keeps the page alive
        args = (ctypes.c_uint64 * 6)(code, 0, 0, 0, 0, 0)
        return int(raw(ctypes.addressof(args)))

    return request


def _read_summary(text: str) -> float:
    """The instruction count of one callgrind dump: its ``summary:`` line (the first event,
    ``Ir``). ValueError when the dump has none."""
    for line in text.splitlines():
        if line.startswith("summary:"):
            fields = line.split()
            if len(fields) >= 2 and fields[1].isdigit():
                return float(fields[1])
            break
    raise ValueError("A callgrind dump has no 'summary: <count>' line; was the worker run under callgrind?")


def count_instructions(fn: Callable[[], object], devices: Sequence[str]) -> float:
    """Instructions executed in user space by one call of ``fn`` (the ``instructions`` timer's
    body): callgrind collects around the call and dumps; the count is read from that dump,
    which is then removed. ConfigError outside a worker started under callgrind."""
    import torch

    del devices  # a CPU workload's count: nothing to synchronise
    out = os.environ.get(CALLGRIND_DIR_ENV)
    if not out:
        raise ConfigError("The 'instructions' timer counts only in a worker process started under callgrind; "
                          "measure through profile_points (seqpoint profile, seqpoint run), which starts one.")
    if not _STARTED:  # the worker ran uninstrumented until its first counted step
        request = _client_request()
        if request is not None:
            request(_START_INSTRUMENTATION)
        _STARTED.append(True)
    pattern = f"callgrind.out.{os.getpid()}.*"
    before = set(Path(out).glob(pattern))
    torch._C._valgrind_toggle()
    fn()
    torch._C._valgrind_toggle_and_dump_stats()
    new = sorted(set(Path(out).glob(pattern)) - before, key=lambda p: int(p.name.rsplit(".", 1)[1]))
    if not new:
        raise RuntimeError(f"callgrind wrote no dump in {out}: the worker is not running under callgrind.")
    count = _read_summary(new[-1].read_text())
    for p in new:
        p.unlink()
    return count

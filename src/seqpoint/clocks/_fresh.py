"""Fresh worker processes: a call run in a new Python process (:func:`in_fresh_process`),
and the ones still running killed from another thread (:func:`stop_workers`)."""

from __future__ import annotations

import re
import subprocess
import threading
from collections.abc import Callable
from typing import TypeVar, cast

from seqpoint.clocks._callgrind import CALLGRIND_DIR_ENV, callgrind_command
from seqpoint.exceptions import ConfigError

__all__ = ["in_fresh_process", "stop_workers"]

T = TypeVar("T")


def in_fresh_process(fn: Callable[..., T], *args: object, callgrind: bool = False) -> T:
    """``fn(*args)`` in a new Python process, arguments and result pickled; with ``callgrind``
    under valgrind's callgrind, collection off until the ``instructions`` timer turns it on
    (ConfigError without valgrind). The child is a plain ``python -c`` importing ``fn`` by name
    (a ``multiprocessing`` spawn would re-run the caller's ``__main__``) with this ``sys.path``;
    the result comes back through a file, as libraries may write to stdout. RuntimeError with
    the last line of its stderr when the child fails."""
    import os
    import pickle
    import sys
    import tempfile
    from pathlib import Path

    # The folder seqpoint is imported from (src/ of a checkout), without importing the
    # top-level namespace: that would be an import circle through its entry points.
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    with tempfile.TemporaryDirectory(prefix="seqpoint-worker-") as tmp:
        prefix: list[str] = []
        if callgrind:
            prefix = callgrind_command(tmp)
            env[CALLGRIND_DIR_ENV] = tmp
        job, result = Path(tmp) / "job.pkl", Path(tmp) / "result.pkl"
        with job.open("wb") as fh:  # the path first (the call's classes import through it), the call once
            pickle.dump(list(sys.path), fh)
            pickle.dump((fn, args), fh, protocol=pickle.HIGHEST_PROTOCOL)
        # torch.compile's caches (inductor's FX graphs and kernels, Triton's) are the child's own and
        # empty: each process compiles as a job starting on a fresh machine does, whatever ran before.
        for var, sub in (("TORCHINDUCTOR_CACHE_DIR", "inductor"), ("TRITON_CACHE_DIR", "triton")):
            env.setdefault(var, str(Path(tmp) / sub))  # unless the user chose the caches their runs use
        code = "from seqpoint.clocks._fresh import _child_main; _child_main()"
        with subprocess.Popen([*prefix, sys.executable, "-c", code, str(job), str(result)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
            with _LOCK:
                _RUNNING.add(proc)
            try:
                _, err = proc.communicate()
            except BaseException:  # as subprocess.run does: no orphaned worker
                proc.kill()
                raise
            finally:
                with _LOCK:
                    _RUNNING.discard(proc)
        if proc.returncode != 0 or not result.exists():
            raise _failure(proc.returncode, err.decode(errors="replace"))
        return cast("T", pickle.loads(result.read_bytes()))


#: Worker processes running now (from any thread), for :func:`stop_workers`.
_RUNNING: set[subprocess.Popen[bytes]] = set()
_LOCK = threading.Lock()


#: A traceback's last line, ``module.Error: message`` (what a child's stderr ends its failure with
#: unless CUDA appends its advice, "... CUDA_LAUNCH_BLOCKING=1", after it).
_ERROR_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Lost))(?::\s*(.*))?$")


def _failure(code: int, stderr: str) -> Exception:
    """The parent's error for a child that failed: its own ConfigError (bad input the user fixes)
    as one; else a RuntimeError with its exit code and its last error line."""
    lines = [re.sub(r"^\[rank\d+\]:\s*", "", line).strip() for line in stderr.strip().splitlines()]  # torchrun's prefix
    found = next((m for line in reversed(lines) if (m := _ERROR_LINE.match(line))), None)
    if found is not None and found.group(1).endswith("ConfigError"):
        return ConfigError(found.group(2) or found.group(1))
    why = found.group(0) if found is not None else (lines[-1] if lines else "no message")
    return RuntimeError(f"A worker process failed (exit {code}): {why}")


def stop_workers() -> None:
    """Kill every worker process still running: the calling thread was interrupted while
    another thread waits on one (``take_turns``), which would otherwise run on, orphaned."""
    with _LOCK:
        for proc in list(_RUNNING):
            proc.kill()


def _child_main() -> None:
    """The worker's entry: with the parent's ``sys.path``, run the pickled call in ``argv[1]``,
    pickle its result to ``argv[2]``."""
    import pickle
    import sys
    from pathlib import Path

    with open(sys.argv[1], "rb") as fh:
        path = pickle.load(fh)
        sys.path[:] = [*path, *(p for p in sys.path if p not in path)]
        fn, args = pickle.load(fh)
    Path(sys.argv[2]).write_bytes(pickle.dumps(fn(*args)))

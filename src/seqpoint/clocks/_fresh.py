"""Fresh worker processes: a call run in a new Python process (:func:`in_fresh_process`),
and the ones still running killed from another thread (:func:`stop_workers`)."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from typing import TypeVar, cast

from seqpoint.clocks._callgrind import CALLGRIND_DIR_ENV, callgrind_command

__all__ = ["in_fresh_process", "stop_workers"]

T = TypeVar("T")


def in_fresh_process(fn: Callable[..., T], *args: object, callgrind: bool = False) -> T:
    """``fn(*args)`` in a new Python process; arguments and result travel pickled. With
    ``callgrind``, the process runs under valgrind's callgrind, collection off until the
    ``instructions`` timer turns it on (ConfigError without valgrind).

    The child is a plain ``python -c`` that imports ``fn`` by name (a ``multiprocessing``
    spawn would re-run the caller's ``__main__``), with this process's ``sys.path``; the
    result comes back through a file, not stdout, which libraries may write to.

    Raises
    ------
    RuntimeError
        The child failed; the message holds the last line of its stderr.
    """
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
        job.write_bytes(pickle.dumps((list(sys.path), pickle.dumps((fn, args)))))
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
            tail = err.decode(errors="replace").strip().splitlines()
            raise RuntimeError(f"A worker process failed (exit {proc.returncode}): "
                               f"{tail[-1] if tail else 'no message'}")
        return cast("T", pickle.loads(result.read_bytes()))


#: Worker processes running now (from any thread), for :func:`stop_workers`.
_RUNNING: set[subprocess.Popen[bytes]] = set()
_LOCK = threading.Lock()


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

    path, call = pickle.loads(Path(sys.argv[1]).read_bytes())
    sys.path[:] = [*path, *(p for p in sys.path if p not in path)]
    fn, args = pickle.loads(call)
    Path(sys.argv[2]).write_bytes(pickle.dumps(fn(*args)))

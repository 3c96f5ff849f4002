"""Campaigns measured in turn: their worker processes alternate (:func:`take_turns`).

``seqpoint speedup`` measures the same SeqPoints under two configurations; one after the
other, a change of the machine's speed goes straight into the ratio. With ``[profile]
processes > 1`` their workers run A1 B1 B2 A2 A3 B3 ... instead, so a steady drift reaches
both alike. Each campaign runs in a thread of its own, only one at any moment.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from seqpoint._rng import rngs_kept
from seqpoint.clocks import stop_workers

__all__ = ["EndTurn", "take_turns"]

T = TypeVar("T")

#: Called after each worker process: ends the campaign's turn, returns at its next one.
EndTurn = Callable[[], None]


class _Cancelled(Exception):
    """Another campaign failed: this one stops at its next turn."""


class _Turns:
    """Whose turn it is, in the order 0 1 ... n-1, n-1 ... 1 0, 0 1 ... (finished ones skipped)."""

    def __init__(self, n: int) -> None:
        self._cond = threading.Condition()
        self._n = n
        self._slot = 0
        self._turn = 0
        self._done = [False] * n
        self._cancelled = False

    def _owner(self, slot: int) -> int:
        rnd, i = divmod(slot, self._n)
        return i if rnd % 2 == 0 else self._n - 1 - i

    def _advance(self) -> None:
        """Give the turn to the next unfinished campaign of the order (lock held)."""
        if all(self._done):
            return
        self._slot += 1
        while self._done[self._owner(self._slot)]:
            self._slot += 1
        self._turn = self._owner(self._slot)
        self._cond.notify_all()

    def wait(self, j: int) -> None:
        """Block until it is campaign ``j``'s turn; raise if another campaign failed."""
        with self._cond:
            self._cond.wait_for(lambda: self._turn == j or self._cancelled)
            if self._cancelled:
                raise _Cancelled

    def hand_over(self, j: int) -> None:
        """Campaign ``j`` ran a worker: the next one runs, ``j`` waits its turn (torch's
        process-wide thread count, which the other's workload may set, put back)."""
        torch = sys.modules.get("torch")
        threads = torch.get_num_threads() if torch is not None else None
        with self._cond:
            self._advance()
        self.wait(j)
        if torch is not None and threads is not None and torch.get_num_threads() != threads:
            torch.set_num_threads(threads)

    def finish(self, j: int, *, failed: bool) -> None:
        with self._cond:  # re-entrant: cancel() takes it again
            self._done[j] = True
            if failed:
                self.cancel()
            elif self._turn == j:
                self._advance()

    def cancel(self) -> None:
        with self._cond:
            self._cancelled = True
            self._cond.notify_all()


def take_turns(jobs: Sequence[Callable[[EndTurn], T]]) -> list[T]:
    """Run ``jobs`` one at a time, their worker processes alternating; each job's result, in order.

    Each job is called with an :data:`EndTurn` to call after each of its worker processes (a
    :class:`~seqpoint.profiling.Profiler` reporter's hook). The first job's exception is raised (the
    others stop at their next turn); on Ctrl-C the running worker process is killed and every job
    stops at its next turn first. The random states are saved and restored once, around all: the
    jobs' own save and restore (``Profiler.run``) interleave and would not nest.
    """
    turns = _Turns(len(jobs))
    results: list[Any] = [None] * len(jobs)
    errors: list[BaseException | None] = [None] * len(jobs)

    def body(j: int) -> None:
        failed = True
        try:
            turns.wait(j)
            results[j] = jobs[j](functools.partial(turns.hand_over, j))
            failed = False
        except BaseException as exc:  # carried to the calling thread and raised there
            errors[j] = exc
        finally:
            turns.finish(j, failed=failed)

    threads = [threading.Thread(target=body, args=(j,), name=f"seqpoint-turn-{j}", daemon=True)
               for j in range(len(jobs))]
    with rngs_kept():
        for t in threads:
            t.start()
        try:
            for t in threads:
                t.join()
        except BaseException:  # Ctrl-C in the calling thread: stop the jobs, then wait for them
            turns.cancel()
            stop_workers()
            for t in threads:
                t.join()  # a second Ctrl-C leaves at once (the threads are daemons)
            raise
    first = next((e for e in errors if e is not None and not isinstance(e, _Cancelled)), None)
    if first is not None:
        raise first
    return results

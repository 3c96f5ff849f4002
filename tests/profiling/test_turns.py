"""Campaigns in turn: two configurations' worker processes alternate, one thing at a time."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from seqpoint.profiling import take_turns


class Machine:
    """Stands in for the worker processes: records each one run and checks nothing overlaps."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.active = 0
        self.peak = 0

    def busy(self, what: str | None = None, seconds: float = 0.002) -> None:
        self.active += 1
        self.peak = max(self.peak, self.active)
        time.sleep(seconds)
        if what is not None:
            self.log.append(what)
        self.active -= 1

    def job(self, name: str, workers: int, body: list[str] | None = None) -> Any:
        def job(end_turn: Any) -> str:
            if body is not None:
                body.append(f"{name}:start")
            for p in range(workers):
                self.busy(f"{name}{p + 1}")  # a worker process
                end_turn()
                self.busy()  # the campaign's own code between workers
            if body is not None:
                body.append(f"{name}:end")
            return name.lower()
        return job


def test_two_campaigns_alternate_and_reverse_every_other_round() -> None:
    m = Machine()
    assert _within(10, lambda: take_turns([m.job("A", 3), m.job("B", 3)])) == ["a", "b"]
    # A1 B1 B2 A2 A3 B3: a linear drift of the machine's speed reaches both alike
    assert m.log == ["A1", "B1", "B2", "A2", "A3", "B3"]
    assert m.peak == 1  # never two at once: nothing is timed while the other runs


def test_three_campaigns_and_uneven_worker_counts() -> None:
    m = Machine()
    _within(10, lambda: take_turns([m.job("A", 2), m.job("B", 3), m.job("C", 1)]))
    # order 0 1 2 | 2 1 0 | 0 1 2 ..., a finished campaign skipped
    assert m.log == ["A1", "B1", "C1", "B2", "A2", "B3"] and m.peak == 1


def test_a_campaign_without_workers_runs_whole_between_the_others() -> None:
    m = Machine()
    body: list[str] = []
    _within(10, lambda: take_turns([m.job("A", 3, body), m.job("S", 0, body)]))
    assert m.log == ["A1", "A2", "A3"]
    # the serial campaign ran in one turn, after A's first worker and before its second
    assert body == ["A:start", "S:start", "S:end", "A:end"]


def test_a_failure_stops_the_other_campaign_and_is_raised() -> None:
    m = Machine()

    def bad(end_turn: Any) -> None:
        m.busy("B1")
        end_turn()
        raise ValueError("B broke")

    with pytest.raises(ValueError, match="B broke"):
        _within(10, lambda: take_turns([m.job("A", 5), bad]))
    # B failed in its turn (B1, then B2's); A stopped at its next turn instead of running on
    assert m.log == ["A1", "B1"]


@pytest.mark.parametrize("error", [ValueError("bad config"), KeyboardInterrupt()])
def test_a_failure_before_the_first_worker_is_raised(error: BaseException) -> None:
    m = Machine()

    def bad(end_turn: Any) -> None:
        raise error

    with pytest.raises(type(error)):
        _within(10, lambda: take_turns([m.job("A", 3), bad]))
    assert m.log == ["A1"]  # A's next turn never came


def _within(seconds: float, fn: Any) -> Any:
    """``fn()`` in a thread that must end within ``seconds`` (a deadlock fails, not hangs)."""
    out: dict[str, Any] = {}

    def body() -> None:
        try:
            out["value"] = fn()
        except BaseException as exc:
            out["error"] = exc

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(timeout=seconds)
    assert not t.is_alive(), f"take_turns did not end within {seconds} s"
    if "error" in out:
        raise out["error"]
    return out.get("value")


def test_torch_threads_are_put_back_after_the_other_campaigns_turn() -> None:
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    seen: list[int] = []

    def with_threads(n: int) -> Any:
        def job(end_turn: Any) -> None:
            torch.set_num_threads(n)
            for _ in range(2):
                end_turn()
                seen.append(torch.get_num_threads() - n)  # 0: this campaign's own count
        return job

    try:
        take_turns([with_threads(1), with_threads(2)])
    finally:
        torch.set_num_threads(before)
    assert seen == [0, 0, 0, 0]

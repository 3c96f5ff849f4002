"""Exact run totals: the per-operator fit reproduces counting on every signature, and a
model whose operators are not polynomial in its batch dimensions is counted instead."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from seqpoint.devices import Target  # noqa: E402
from seqpoint.exceptions import ConfigError  # noqa: E402
from seqpoint.profiling import Profiler, count_point, exact_totals  # noqa: E402
from seqpoint.schedule import IterationSchedule  # noqa: E402
from seqpoint.workloads import load_workload  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_thread")


def _schedule(n: int, lo: int, hi: int, tgt: bool = False, seed: int = 0, batch: tuple[int, int] = (1, 9),
              ) -> IterationSchedule:
    rng = np.random.default_rng(seed)
    cols = {"batch_size": rng.integers(*batch, n), "seq_len": rng.integers(lo, hi, n),
            "tgt_len": rng.integers(5, 40, n) if tgt else np.zeros(n, dtype=np.int64)}
    return IterationSchedule.from_columns(cols)


def _assert_matches_counting(wl: Any, ex: Any, n: int = 6) -> None:
    rng = np.random.default_rng(1)
    for i in rng.choice(len(ex.signatures), n, replace=False):
        counted = count_point(wl, tuple(int(v) for v in ex.signatures[i]))
        for k, v in counted.items():
            assert ex.per_signature[k][i] == pytest.approx(v, rel=1e-12, abs=1e-30), k
            if not k.startswith("roofline_"):
                assert ex.per_signature[k][i] == v, k  # counts are exact integers
    # totals are the count-weighted sums of the per-signature values
    assert ex.totals["flops"] == pytest.approx(float(ex.per_iteration("flops").sum()), rel=1e-12)


@pytest.mark.parametrize(("spec", "tgt", "batch"), [("bert:tiny", False, (1, 9)), ("gnmt:tiny", True, (1, 9)),
                                                    # an RNN step switches roofline regime with the batch
                                                    ("gnmt:tiny", True, (2, 41))])
def test_fit_matches_counting_on_every_signature(spec: str, tgt: bool, batch: tuple[int, int]) -> None:
    wl = load_workload(spec)
    sched = _schedule(600, 8, 96, tgt, batch=batch)
    ex = exact_totals(wl, sched, method="auto")
    assert "fit" in ex.method
    assert ex.counted < len(ex.signatures) / 2
    assert ex.checked >= 2 and ex.max_residual < 1e-12
    _assert_matches_counting(wl, ex)


def test_lengths_rounded_inside_the_model_are_fitted(ds2: Any) -> None:
    # over 2,000 signatures: their batch dimensions are read on a sample (see exact_totals)
    sched = _schedule(2500, 160, 1600, batch=(2, 41))
    ex = exact_totals(ds2, sched)
    assert len(ex.signatures) > 2000
    assert ex.method == "fit" and ex.counted < len(ex.signatures) / 2
    # the strided convolutions' output lengths, and the transcript's length from the audio's
    assert "(spectrogram.shape[3] + 7) // 8" in ex.note
    assert "targets.shape[1] = spectrogram.shape[3] // 28" in ex.note
    _assert_matches_counting(ds2, ex)


nn: Any = torch.nn


class _Truncating(nn.Module):
    """Reads the first isqrt(frames) frames: a length no polynomial or rounding gives."""

    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.ones(1))

    def forward(self, spectrogram: Any, targets: Any, target_lengths: Any) -> Any:
        return (spectrogram[..., :math.isqrt(spectrogram.shape[-1])] * self.w).sum()


def test_counting_is_used_when_the_fit_does_not_verify(ds2: Any) -> None:
    class Truncating(type(ds2)):  # type: ignore[misc]
        def _build_model(self) -> Any:
            return _Truncating()

    wl = Truncating(ds2.config, preset="tiny")
    sched = _schedule(400, 160, 1600)
    ex = exact_totals(wl, sched)
    assert ex.method == "count" and ex.counted == len(ex.signatures)
    assert "fit not used" in ex.note and "not a polynomial" in ex.note
    with pytest.raises(ConfigError, match="method='fit'.*use method='count'"):
        exact_totals(wl, sched, method="fit")


def test_small_runs_are_counted_and_totals_are_exact() -> None:
    wl = load_workload("bert:tiny")
    sched = IterationSchedule.from_columns(
        {"batch_size": [2, 2, 3, 2], "seq_len": [20, 40, 20, 20], "tgt_len": [0, 0, 0, 0]})
    ex = exact_totals(wl, sched, devices={"cpu": Target.flat(1e11, 2e10)})
    assert ex.method == "count" and ex.counted == 3
    per = [count_point(wl, s) for s in [(2, 20, 0), (2, 40, 0), (3, 20, 0), (2, 20, 0)]]
    assert ex.totals["flops"] == sum(p["flops"] for p in per)
    assert ex.totals["roofline_h100_s"] == pytest.approx(sum(p["roofline_h100_s"] for p in per))
    assert ex.totals["roofline_cpu_s"] > ex.totals["roofline_h100_s"]
    with pytest.raises(ConfigError, match="'method' parameter of exact_totals"):
        exact_totals(wl, sched, method="guess")  # type: ignore[arg-type]


def test_one_profilers_state_counts_its_signatures_once() -> None:
    # the selection's exact costs and the run's exact totals ask for the same signatures
    wl = load_workload("bert:tiny")
    state = Profiler(wl).state
    sched = IterationSchedule.from_columns({"batch_size": [2, 3, 2], "seq_len": [20, 20, 40], "tgt_len": [0, 0, 0]})
    ticks: list[int] = []
    first = exact_totals(wl, sched, progress=lambda: ticks.append(1), state=state)
    again = exact_totals(wl, sched, progress=lambda: ticks.append(1), state=state)
    assert len(ticks) == 3  # counted on the first call only
    assert again.totals == first.totals and again.counted == first.counted == 3
    again.per_signature["flops"][0] = -1.0  # a caller's copy: what is kept stays exact
    assert exact_totals(wl, sched, state=state).totals == first.totals
    exact_totals(wl, sched, progress=lambda: ticks.append(1))
    assert len(ticks) == 6  # without the state it counts afresh: nothing is kept in the module

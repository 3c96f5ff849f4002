"""Micro-batching: gradients equal the whole batch's; more micro-batches than samples clip."""

from __future__ import annotations

import math
import warnings

import pytest

torch = pytest.importorskip("torch")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from seqpoint.exceptions import SeqPointWarning  # noqa: E402
from seqpoint.workloads import load_workload  # noqa: E402

# DeepSpeech2 is left out of the gradient checks: its batch norm normalises each
# micro-batch by that micro-batch's statistics, so its gradients differ by design.
EXACT_SPECS = ("gnmt:tiny", "bert:tiny")


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


def _gradients(spec: str, micro_batches: int, signature: tuple[int, ...]) -> list[torch.Tensor]:
    """The gradients one ``step`` hands to the optimizer (captured before it steps)."""
    wl = load_workload(spec, {"micro_batches": micro_batches, "optimizer": "sgd"})
    seen: list[list[torch.Tensor]] = []
    params = list(wl.model.parameters())
    wl.optimizer.register_step_pre_hook(
        lambda opt, args, kwargs: seen.append(
            [torch.zeros_like(p) if p.grad is None else p.grad.clone() for p in params]
        )
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeqPointWarning)
        wl.step(wl.make_batch(signature))
    assert len(seen) == 1
    return seen[0]


def _assert_same_gradients(spec: str, micro_batches: int, signature: tuple[int, ...]) -> None:
    whole = _gradients(spec, 1, signature)
    split = _gradients(spec, micro_batches, signature)
    assert any(g.abs().max() > 0 for g in whole)
    for a, b in zip(split, whole, strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("spec", EXACT_SPECS)
@pytest.mark.parametrize(
    ("micro_batches", "batch_size"),
    [(2, 5), (3, 4), (4, 3), (4, 2), (3, 1)],  # uneven splits, and more parts than samples
)
def test_micro_batch_gradients_equal_whole_batch(
    spec: str, micro_batches: int, batch_size: int
) -> None:
    _assert_same_gradients(spec, micro_batches, (batch_size, 6, 5))


@settings(max_examples=12, deadline=None)
@given(
    spec=st.sampled_from(EXACT_SPECS),
    batch_size=st.integers(1, 6),
    micro_batches=st.integers(1, 8),
    seq_len=st.integers(2, 9),
    tgt_len=st.integers(1, 9),
)
def test_micro_batch_gradients_property(
    spec: str, batch_size: int, micro_batches: int, seq_len: int, tgt_len: int
) -> None:
    torch.set_num_threads(1)
    _assert_same_gradients(spec, micro_batches, (batch_size, seq_len, tgt_len))


@pytest.mark.parametrize("spec", ["gnmt:tiny", "bert:tiny", "deepspeech2:tiny"])
def test_more_micro_batches_than_samples_runs_one_sample_each(spec: str) -> None:
    wl = load_workload(spec, {"micro_batches": 4})
    parts: list[int] = []
    split = wl._split
    wl._split = lambda batch, n: parts.append(n) or split(batch, n)  # type: ignore[method-assign]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        losses = [wl.step(wl.make_batch((b, 40, 6))) for b in (2, 3, 2, 4, 5)]
    assert all(math.isfinite(x) for x in losses)
    assert parts == [2, 3, 2, 4, 4]
    ours = [w for w in caught if issubclass(w.category, SeqPointWarning)]
    assert len(ours) == 1  # once per workload, not per step
    assert "micro_batches=4 exceeds the batch size 2" in str(ours[0].message)
    assert "min(micro_batches, batch_size)" in str(ours[0].message)


def test_clipped_loss_equals_whole_batch_loss() -> None:
    one = load_workload("gnmt:tiny")
    four = load_workload("gnmt:tiny", {"micro_batches": 4})
    batch = one.make_batch((3, 7, 5))
    with pytest.warns(SeqPointWarning, match="micro_batches=4 exceeds the batch size 3"):
        loss = four.step(batch)
    assert loss == pytest.approx(one.step(batch), rel=1e-5)


def test_counting_clone_shares_the_once_per_workload_warning() -> None:
    wl = load_workload("bert:tiny", {"micro_batches": 3})
    with pytest.warns(SeqPointWarning):
        wl.make_batch((2, 8, 0))
    clone = wl.counting_clone()
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeqPointWarning)
        clone.step(clone.make_batch((1, 8, 0)))


def test_no_warning_when_micro_batches_fit() -> None:
    wl = load_workload("bert:tiny", {"micro_batches": 2})
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeqPointWarning)
        wl.step(wl.make_batch((2, 8, 0)))

"""A profiling campaign leaves torch's global random state as it found it, so profiling
inside a training process never changes the run's random draws."""

from __future__ import annotations

import dataclasses

import pytest

from seqpoint.exceptions import ConfigError
from seqpoint.profiling import ProfileConfig, profile_points, take_turns
from seqpoint.workloads import BatchShape, UserWorkload, WorkloadConfig

torch = pytest.importorskip("torch")

CFG = ProfileConfig(metrics=("time",), warmup=1, repeats=2)


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Config(WorkloadConfig):
    """Defaults only."""


class _Dropout(UserWorkload):
    """A step that draws from the global generator (dropout), as real models do."""

    Config = _Config

    def build_model(self) -> torch.nn.Module:
        return torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.5))

    def build_batch(self, shape: BatchShape, gen: torch.Generator) -> dict[str, torch.Tensor]:
        return {"x": torch.randn(shape.batch_size, shape.seq_len, 4, generator=gen)}

    def compute_loss(self, model, batch):  # type: ignore[no-untyped-def]
        return model(batch["x"]).sum()


def test_a_campaign_leaves_the_global_cpu_generator_where_it_was() -> None:
    workload = _Dropout()
    torch.manual_seed(1234)
    workload.step(workload.make_batch((2, 6, 0)))
    # Stepping does draw from the global generator: without the guard this test fails.
    assert not torch.equal(torch.get_rng_state(), torch.manual_seed(1234).get_state())

    torch.manual_seed(1234)
    want = torch.rand(5)
    torch.manual_seed(1234)
    ms = profile_points(workload, [(2, 6, 0), (3, 8, 0)], CFG, progress=False)
    assert all(m.ok for m in ms.measurements)
    assert torch.equal(torch.rand(5), want)  # the user's next draws are unchanged


class _Raising(_Dropout):
    """Draws, then raises one of seqpoint's own errors, which a campaign does not catch."""

    def compute_loss(self, model, batch):  # type: ignore[no-untyped-def]
        torch.rand(100)
        raise ConfigError("boom")


def test_the_state_comes_back_when_the_campaign_raises() -> None:
    torch.manual_seed(7)
    want = torch.get_rng_state()
    with pytest.raises(ConfigError, match="boom"):
        profile_points(_Raising(), [(2, 6, 0)], CFG, progress=False)
    assert torch.equal(torch.get_rng_state(), want)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_the_cuda_generators_are_kept_too() -> None:
    torch.cuda.manual_seed_all(99)
    want = torch.cuda.get_rng_state_all()

    def job(end_turn: object) -> None:
        torch.rand(1000, device="cuda")
        torch.nn.functional.dropout(torch.ones(1000, device="cuda"), 0.5)

    take_turns([job])
    assert all(torch.equal(a, b) for a, b in zip(torch.cuda.get_rng_state_all(), want, strict=True))

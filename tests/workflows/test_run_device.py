"""``[projection] device``: a run profiled here projected onto a GPU, per operation category,
by the device model's time of each category on the two devices; and what the projection of a run on a
device with one-time compilation (torch.compile) leaves out, said."""

from __future__ import annotations

import dataclasses
import json

import pytest

pytest.importorskip("torch")

from seqpoint.devices import GPU_SPECS, gpu_named
from seqpoint.exceptions import ConfigError, SeqPointWarning
from seqpoint.executors import LocalExecutor
from seqpoint.workflows import ProjectionSection, run


def test_a_run_is_projected_onto_another_gpu_category_by_category(tmp_path, tiny_config, fake_mlflow) -> None:
    cfg = tiny_config(tmp_path, projection=ProjectionSection(device="h200", profiled_on="h100"))
    cfg = dataclasses.replace(cfg, profile=dataclasses.replace(cfg.profile, metrics=("time", "breakdown")))
    res = run(cfg, log_mlflow=True)
    dp = res.device_projection
    assert dp is not None and (dp.profiled_on, dp.device) == ("h100", "h200")
    # The same peaks and kernel costs on both, 1.43x the bandwidth on the H200: no category slower, none
    # faster than the bandwidth.
    memory = GPU_SPECS["h100"].bandwidth / GPU_SPECS["h200"].bandwidth
    totals = res.projection.totals
    moved = 0
    for key, seconds in dp.projection.totals.items():
        if key.startswith("breakdown_s.") and totals[key] > 0:
            ratio = seconds / totals[key]
            assert memory - 1e-9 <= ratio <= 1 + 1e-9, key
            moved += ratio < 1
    assert moved >= 3  # the convolutions, recurrent layers and optimizer at least
    assert dp.interval[0] <= dp.total <= dp.interval[1]
    assert dp.profiled_total == pytest.approx(totals[dp.metric])
    assert 1.0 < dp.speedup < 1 / memory
    saved = json.loads((tmp_path / "run" / "result.json").read_text())["device_projection"]
    assert saved["total"] == pytest.approx(dp.total) and saved["profiled_on"] == "h100"
    logged = fake_mlflow.metrics
    assert logged[f"device.h200.{dp.metric}"] == dp.total and logged["device.h200.speedup"] == dp.speedup

    # Profiled on this CPU (the default here): projected, with the assumption said.
    cpu = dataclasses.replace(cfg, projection=ProjectionSection(device="h200"))
    with pytest.warns(SeqPointWarning, match="profiled on a CPU"):
        mine = run(cpu)
    assert mine.device_projection is not None and mine.device_projection.profiled_on == "cpu"
    assert mine.device_projection.total > 0


class _OnGpu(LocalExecutor):
    """Measures here, and says the points ran on the CUDA device ``name``, as a GPU's measurements do."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def profile(self, jobs, **kw):  # type: ignore[no-untyped-def]
        return [dataclasses.replace(ms, environment={**ms.environment, "device_type": "cuda", "device": self.name})
                for ms in super().profile(jobs, **kw)]


def test_the_profiled_gpu_is_named_by_its_device_file(tmp_path, tiny_config) -> None:
    assert [gpu_named(n) for n in ("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H200")] == [
        "h100", "h100-pcie", "h200"]
    cfg = tiny_config(tmp_path, projection=ProjectionSection(device="h200"))
    cfg = dataclasses.replace(cfg, profile=dataclasses.replace(cfg.profile, metrics=("time", "breakdown")))
    dp = run(cfg, executor=_OnGpu("NVIDIA H100 PCIe")).device_projection
    assert dp is not None and dp.profiled_on == "h100-pcie"
    with pytest.raises(ConfigError, match=r"measured on 'NVIDIA GH200 480GB'.*set \[projection\] profiled_on"):
        run(cfg, executor=_OnGpu("NVIDIA GH200 480GB"))


def test_a_compiled_workload_pays_its_compilations_once_in_the_projection(tmp_path, bert_config) -> None:
    import torch

    torch._dynamo.reset()  # another test's graphs of the same model would be reused here
    cfg = bert_config(tmp_path, "workload.set.compile=true", "workload.set.compile_backend=eager",
                      "lengths.max_samples=24", "selection.n_points=2", "profile.use_cache=true")
    res = run(cfg)
    compiled = res.measurements.compile
    # The start-up's shape compiles static (the start-up's, as in a full run); the next
    # shape recompiles with dynamic sizes: that is the run's.
    assert compiled["graphs"] >= 1 and compiled["seconds"] > 0 and compiled["processes"] == 1
    proj = res.projection
    term, totals = proj.compile_term, proj.totals
    assert totals["compile_s"] == term["total_s"] == compiled["seconds"]
    assert totals["run_time_s"] == pytest.approx(totals["time_s"] + totals["first_occurrence_s"] + totals["compile_s"])
    lo, hi = proj.interval["run_time_s"]
    assert hi - lo >= 2 * term["halfwidth_s"] >= 2 * compiled["seconds"] / compiled["graphs"]
    saved = json.loads((tmp_path / "run" / "measurements.json").read_text())
    assert saved["compile"] == compiled
    assert json.loads((tmp_path / "run" / "result.json").read_text())["projection"]["compile_term"] == term

    # Every point from the cache: nothing compiled here, and the run is told so.
    with pytest.warns(SeqPointWarning, match="compilations are not in the projection.*use_cache = false and executor"):
        again = run(cfg)
    assert not again.measurements.compile and "compile_s" not in again.projection.totals

    # An eager workload after it, in the same process: nothing compiled for it, no term.
    eager = run(bert_config(tmp_path / "eager", "lengths.max_samples=24", "selection.n_points=2"))
    assert eager.measurements.compile == {} and "compile_s" not in eager.projection.totals

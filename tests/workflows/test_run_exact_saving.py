"""`seqpoint run` output: exact whole-run totals, the honest saving, model-aware selection."""

from __future__ import annotations

import io
import json
import re

import pytest

pytest.importorskip("torch")

from rich.console import Console

from seqpoint.reports import print_run
from seqpoint.workflows import (
    BatchingSection,
    LengthsSection,
    RunConfig,
    SelectionSection,
    WorkloadSection,
    run,
)


@pytest.fixture
def _cfg(tiny_config):
    def make(tmp_path, selection: SelectionSection) -> RunConfig:
        return tiny_config(
            tmp_path, "profile.cold_window=10", lengths=LengthsSection(source="bundled:wikitext-2-valid", max_samples=64),
            batching=BatchingSection(policy="group_by_length", epochs=1, params={"batch_size": 8}),
            selection=selection, workload=WorkloadSection(name="bert:tiny", set={"threads": 1}))
    return make


def test_run_reports_exact_totals_and_savings(tmp_path, _cfg) -> None:
    res = run(_cfg(tmp_path, SelectionSection(n_points=3)))
    from seqpoint.profiling import count_point

    out = json.loads((tmp_path / "run" / "result.json").read_text())
    ex = out["exact_totals"]
    sched = res.schedule
    from seqpoint.workloads import load_workload

    wl = load_workload("bert:tiny", overrides={"threads": 1})
    truth = sum(count_point(wl, (int(b), int(s), int(t)))["flops"]
                for b, s, t in zip(sched.batch_size, sched.seq_len, sched.tgt_len, strict=True))
    assert ex["totals"]["flops"] == pytest.approx(truth, rel=1e-12)
    # The default proxy, with a built-in workload, names what it grouped and calibrated on.
    assert "attention + exact flops, bytes" in (tmp_path / "run" / "seqpoints.json").read_text()
    assert ex["projection_error"]["flops"] == pytest.approx(
        res.projection.totals["flops"] / truth - 1, rel=1e-9)
    saving = out["saving"]
    assert saving["steps"] == pytest.approx(res.reduction)
    assert saving["profiling_s"] > 0 and saving["wall_clock"] > 0 and saving["tokens"] > 0
    assert out["uncounted_operators"] == []
    buf = io.StringIO()
    print_run(Console(file=buf, width=200), res)
    text = buf.getvalue()
    assert "less profiling (wall clock)" in text and "less profiling (tokens)" in text
    assert "exact flops (whole run" in text
    # the interval's two parts, which add up to its half-width
    proj = res.projection
    total = proj.totals["run_time_s"]
    rep, noise = proj.representation["run_time_s"] / total, proj.noise["run_time_s"] / total
    assert re.search(rf"= selection\s+│\s+± {rep:.2%}  \(how far 3 points can be from every iteration\)", text)
    assert re.search(rf"\+ timing noise\s+│\s+± {noise:.2%}  \(the points' repeats\)", text)
    import dataclasses

    spread = dataclasses.replace(res, projection=dataclasses.replace(res.projection, processes=3))
    buf = io.StringIO()
    print_run(Console(file=buf, width=200), spread)
    assert "(3 worker processes' spread × 4.30)" in buf.getvalue()
    # the window's in-run gap is its own row
    steps = len(res.measurements.window.times_s)
    assert re.search(rf"\+ in-run gap\s+│\s+± {proj.in_run_gap / total:.2%}  \(the run's first {steps} steps timed", text)
    gapped = dataclasses.replace(res, projection=dataclasses.replace(res.projection, in_run_gap=0.1 * total))
    buf = io.StringIO()
    print_run(Console(file=buf, width=200), gapped)
    assert re.search(rf"\+ in-run gap\s+│\s+± 10\.00%  \(the run's first {steps} steps timed in sequence", buf.getvalue())
    # the profiled steps are the steps the reduction factor counts
    steps = int(re.search(r"profiled steps\s+│\s+([\d,]+) \(", text).group(1).replace(",", ""))
    assert len(res.schedule) / steps == pytest.approx(res.reduction)


def test_run_selects_with_the_model_proxy(tmp_path, _cfg) -> None:
    res = run(_cfg(tmp_path, SelectionSection(n_points=3, proxy="model", proxy_device="h100")),
              )
    meta = json.loads((tmp_path / "run" / "seqpoints.json").read_text())
    assert "model(roofline h100)" in json.dumps(meta)
    assert sum(p.weight for p in res.seqpoints.points) == len(res.schedule)


def test_the_model_proxy_ranks_on_the_workloads_own_device(tmp_path, _cfg, monkeypatch) -> None:
    """Audit row 31: a GPU workload's model proxy is not this CPU's roofline. A CPU workload's
    default is ``cpu``; a GPU's, the shipped GPU its name maps to through ``cuda_names``, and a
    GPU no device file names falls back to ``cpu`` with a warning saying so."""
    import dataclasses

    from seqpoint.exceptions import SeqPointWarning
    from seqpoint.workflows import Campaign

    c = Campaign(_cfg(tmp_path, SelectionSection(n_points=3, proxy="model")))
    assert c.config.selection.proxy_device is None and c._proxy_device() == "cpu"
    c.__dict__["facts"] = dataclasses.replace(c.facts, device="cuda:0", devices=("cuda:0",))
    env = {"device": "NVIDIA H100 80GB HBM3"}
    monkeypatch.setattr(c.profiler, "key", lambda: type("Key", (), {"environment": env})())
    assert c._proxy_device() == "h100"
    env["device"] = "NVIDIA Future GPU"
    with pytest.warns(SeqPointWarning, match=r"'NVIDIA Future GPU', which no shipped device file names"):
        assert c._proxy_device() == "cpu"

"""The model cost proxy: per-signature costs looked up exactly, built from the profiled
model's exact roofline time, refined by a pilot, chosen by ``[selection] cost``."""

from __future__ import annotations

import numpy as np
import pytest

from seqpoint.exceptions import ConfigError, InputError
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import PilotTable, SeqPointSelector, SignatureCosts


def _schedule() -> IterationSchedule:
    return IterationSchedule.from_columns(
        {"batch_size": [2, 2, 4, 2, 4], "seq_len": [10, 30, 10, 10, 50], "tgt_len": [0] * 5})


def describe_cost(proxy) -> str:  # type: ignore[no-untyped-def]
    """How SEQPOINTS.json names the cost proxy a selection used."""
    points = SeqPointSelector(n_points=1, cost=proxy).fit(_schedule()).to_seqpoints(_schedule())
    return str(points.meta["params"]["cost"])


def test_signature_costs_look_up_every_iteration() -> None:
    proxy = SignatureCosts(costs={(2, 10, 0): 1.0, (2, 30, 0): 5.0, (4, 10, 0): 2.0, (4, 50, 0): 9.0})
    assert proxy(_schedule()).tolist() == [1.0, 5.0, 2.0, 1.0, 9.0]
    assert describe_cost(proxy) == "model"
    with pytest.raises(InputError, match=r"no cost for signature \(2, 30, 0\)"):
        SignatureCosts(costs={(2, 10, 0): 1.0})(_schedule())


def test_pilot_rescales_the_model_along_its_range() -> None:
    model = SignatureCosts(costs={(2, 10, 0): 1.0, (2, 30, 0): 5.0, (4, 10, 0): 2.0, (4, 50, 0): 9.0})
    pilot = PilotTable(costs={(2, 10, 0): 2.0, (4, 50, 0): 9.0}, base=model)
    v = pilot(_schedule())
    assert v[0] == 2.0 and v[4] == 9.0  # measured
    assert 1.0 * 5.0 < v[1] < 2.0 * 5.0  # ratio interpolated between 2 and 1
    assert "along model" in describe_cost(pilot)
    sel = SeqPointSelector(n_points=2, cost=pilot).fit(_schedule())
    assert sel.weights_.sum() == 5


def test_model_proxy_is_the_exact_roofline_per_signature() -> None:
    pytest.importorskip("torch")
    from seqpoint.profiling import count_point
    from seqpoint.workflows import SelectionSection, model_cost
    from seqpoint.workloads import load_workload

    wl = load_workload("bert:tiny")
    sec = SelectionSection(proxy="model", proxy_device="h100")
    proxy = model_cost(sec, _schedule(), wl)
    got = proxy(_schedule())
    want = [count_point(wl, (b, s, 0))["roofline_h100_s"] for b, s in
            [(2, 10), (2, 30), (4, 10), (2, 10), (4, 50)]]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert describe_cost(proxy) == "model(roofline h100)"


def test_selection_section_checks_the_proxy_and_reads_its_old_names() -> None:
    from seqpoint.exceptions import SeqPointWarning
    from seqpoint.workflows import RunConfig, SelectionSection

    with pytest.raises(ConfigError, match=r"proxy = 'roofline' is not a cost proxy; use one of attention, "
                                          r"quadratic, seq_len, tokens, model, model\+pilot"):
        SelectionSection(proxy="roofline")
    with pytest.raises(ConfigError, match="needs method = 'seqpoint'"):
        SelectionSection(proxy="model", method="random")
    with pytest.raises(ConfigError, match="needs method = 'seqpoint' or 'stratified'"):
        SelectionSection(proxy="tokens", method="random")
    with pytest.raises(ConfigError, match="proxy_device"):
        SelectionSection(proxy="model", proxy_device="b200")
    assert SelectionSection(proxy="tokens").selector_params()["cost"] == "tokens"
    # One name on flag and TOML: the old ones are read, with a warning each.
    base = {"lengths": {"source": "bundled:wikitext-2-valid"}}
    with pytest.warns(SeqPointWarning, match=r"\[selection\] cost is deprecated; it is \[selection\] proxy now"):
        old = RunConfig.from_dict({**base, "selection": {"cost": "model", "cost_device": "h100"}})
    assert (old.selection.proxy, old.selection.proxy_device) == ("model", "h100")
    with pytest.warns(SeqPointWarning, match=r"params.cost is deprecated"):
        old = RunConfig.from_dict({**base, "selection": {"params": {"cost": "tokens"}}})
    assert old.selection.proxy == "tokens" and "cost" not in old.selection.params

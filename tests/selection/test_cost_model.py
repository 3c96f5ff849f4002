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
    assert describe_cost(proxy) == "model(roofline h100) + exact flops, bytes"
    np.testing.assert_allclose(proxy.component_values(np.array([[4, 50, 0]])),  # type: ignore[union-attr]
                               [[count_point(wl, (4, 50, 0))["flops"], count_point(wl, (4, 50, 0))["bytes"]]])


def test_exact_components_join_the_basis_the_weights_reproduce() -> None:
    # A cost no formula component follows (it jumps at seq_len 30): the calibrated weights
    # of the same points reproduce its run total once it is a component.
    sched = IterationSchedule.from_columns({"batch_size": [2] * 12, "seq_len": list(range(10, 70, 5)),
                                            "tgt_len": [0] * 12})
    jump = {(2, s, 0): float(s + (100 if s >= 30 else 0)) for s in range(10, 70, 5)}
    truth = sum(jump.values())
    plain = SeqPointSelector(n_points=6, cost=SignatureCosts(costs=jump)).fit(sched)
    exact = SeqPointSelector(n_points=6, cost=SignatureCosts(costs=jump, components={"jump": jump})).fit(sched)
    cost = np.array([jump[(2, s, 0)] for s in range(10, 70, 5)])
    assert abs(float(plain.weights_ @ cost[plain.points_]) - truth) > 1e-3 * truth
    assert float(exact.weights_ @ cost[exact.points_]) == pytest.approx(truth, rel=1e-9)
    assert exact.calibrated_error_ == pytest.approx(0, abs=1e-9)


def test_auto_is_attention_with_the_exact_flops_and_bytes_of_a_built_in_workload() -> None:
    pytest.importorskip("torch")
    from seqpoint.profiling import count_point
    from seqpoint.selection import COST_MODELS
    from seqpoint.workflows import SelectionSection, model_cost
    from seqpoint.workloads import load_workload

    sec = SelectionSection()
    assert sec.proxy == "auto" and sec.model_proxy and "cost" not in sec.selector_params()
    wl = load_workload("bert:tiny")
    proxy = model_cost(sec, _schedule(), wl)
    np.testing.assert_allclose(proxy(_schedule()), COST_MODELS.get("attention")()(_schedule()))  # type: ignore[misc]
    assert describe_cost(proxy) == "attention + exact flops, bytes"
    want = [[count_point(wl, (4, 50, 0))[m] for m in ("flops", "bytes")]]
    np.testing.assert_allclose(proxy.component_values(np.array([[4, 50, 0]])), want)  # type: ignore[union-attr]


def test_auto_is_attention_alone_without_a_model() -> None:
    from seqpoint.workflows import SelectionSection

    # Another method, or a user workload (counted on real steps): the formula, as before.
    assert SelectionSection(method="stratified").selector_params()["cost"] == "attention"
    assert not SelectionSection(method="random").model_proxy
    from seqpoint.workflows import model_cost

    user = object()  # not a built-in (torch) workload: never counted for the proxy
    assert model_cost(SelectionSection(), _schedule(), user) is None  # type: ignore[arg-type]


def test_selection_section_checks_the_proxy_and_refuses_its_old_names() -> None:
    from seqpoint.workflows import RunConfig, SelectionSection

    with pytest.raises(ConfigError, match=r"proxy = 'roofline' is not a cost proxy; use one of attention, "
                                          r"quadratic, seq_len, tokens, model, model\+pilot, auto"):
        SelectionSection(proxy="roofline")
    with pytest.raises(ConfigError, match="needs method = 'seqpoint'"):
        SelectionSection(proxy="model", method="random")
    with pytest.raises(ConfigError, match="needs method = 'seqpoint' or 'stratified'"):
        SelectionSection(proxy="tokens", method="random")
    with pytest.raises(ConfigError, match="proxy_device"):
        SelectionSection(proxy="model", proxy_device="b300")
    assert SelectionSection(proxy="tokens").selector_params()["cost"] == "tokens"
    # One name on flag and TOML: an old one is refused with its new name.
    base = {"lengths": {"source": "bundled:wikitext-2-valid"}}
    with pytest.raises(ConfigError, match=r"\[selection\] cost is now \[selection\] proxy; use the new name"):
        RunConfig.from_dict({**base, "selection": {"cost": "model", "cost_device": "h100"}})
    with pytest.raises(ConfigError, match=r"params.cost is now \[selection\] proxy"):
        RunConfig.from_dict({**base, "selection": {"params": {"cost": "tokens"}}})

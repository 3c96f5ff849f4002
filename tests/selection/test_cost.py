"""Cost proxies: values on hand-built schedules, pilot tables, validation."""

from __future__ import annotations

import re

import numpy as np
import pytest

from seqpoint.exceptions import ConfigError, InputError
from seqpoint.schedule import IterationSchedule
from seqpoint.selection import (
    COST_MODELS,
    PilotTable,
    basis_components,
    basis_error,
    cost_proxy,
    weighted_projection,
)


@pytest.fixture
def sched() -> IterationSchedule:
    return IterationSchedule.from_columns({"batch_size": [2, 4], "seq_len": [6, 3], "tgt_len": [1, 2]})


def test_named_proxies(sched: IterationSchedule) -> None:
    assert COST_MODELS.names() == ["attention", "quadratic", "seq_len", "tokens"]
    assert cost_proxy("tokens")(sched).tolist() == [14.0, 20.0]
    # b·s² + b·t² + b·s·t
    assert cost_proxy("quadratic")(sched).tolist() == [72 + 2 + 12, 36 + 16 + 24]
    assert cost_proxy("seq_len")(sched).tolist() == [7.0, 5.0]
    att = COST_MODELS.get("attention")(d_model=1)(sched)
    assert att.tolist() == pytest.approx([14 + 86 / 6, 20 + 76 / 6])
    assert np.allclose(cost_proxy(None)(sched), COST_MODELS.get("attention")(d_model=768)(sched))


def test_packed_uses_sum_sq_len() -> None:
    packed = IterationSchedule.from_columns(
        {"batch_size": [1, 1], "seq_len": [8, 8], "sum_sq_len": [64, 32]}, meta={"packed": True}
    )
    assert cost_proxy("quadratic")(packed).tolist() == [64.0, 32.0]


def test_pilot_table_exact_and_interpolated() -> None:
    sched = IterationSchedule.from_columns({"batch_size": [1, 1, 1, 1], "seq_len": [10, 20, 30, 40]})
    table = PilotTable(costs={(1, 10, 0): 1.0, (1, 30, 0): 6.0}, base=cost_proxy("tokens"))
    # Ratio cost/tokens: 0.1 at 10, 0.2 at 30; 20 gets 0.15 -> 3.0; 40 keeps 0.2 -> 8.0.
    assert table(sched).tolist() == pytest.approx([1.0, 3.0, 6.0, 8.0])


def test_basis_components(sched: IterationSchedule) -> None:
    names, values = basis_components(sched)
    assert names == ("iteration", "sequences", "tokens", "quadratic", "steps")
    assert values.tolist() == [[1, 2, 14, 86, 7], [1, 4, 20, 76, 5]]


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: COST_MODELS.get("attention")(d_model=0), ConfigError, "The 'd_model' parameter of AttentionCost must be an int >= 1. Got 0."),
        (lambda: PilotTable(costs={}), ConfigError, "A PilotTable needs at least one measured signature. Got none."),
        (lambda: PilotTable(costs={(1, 2): 1.0}), ConfigError, "PilotTable signature (1, 2) must be (batch_size, seq_len, tgt_len[, sum_sq_len])."),
        (lambda: PilotTable(costs={(1, 2, 0): 0.0}), ConfigError, "PilotTable cost of signature (1, 2, 0) must be a finite number > 0. Got 0.0."),
        (lambda: cost_proxy(7), ConfigError, "The 'cost' parameter of cost_proxy must be a cost model name (attention, quadratic, seq_len, tokens), a callable f(schedule) or a PilotTable. Got 7."),  # type: ignore[arg-type]
        (lambda: cost_proxy("flops"), ConfigError, "Unknown cost model 'flops'. Valid names: attention, quadratic, seq_len, tokens."),
    ],
)
def test_validation(build, error: type, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=re.escape(message)):
        build()


def test_pilot_table_needs_sum_sq_len_when_packed() -> None:
    packed = IterationSchedule.from_columns({"batch_size": [1], "seq_len": [8], "sum_sq_len": [64]}, meta={"packed": True})
    with pytest.raises(InputError, match="packed, so PilotTable signatures need sum_sq_len"):
        PilotTable(costs={(1, 8, 0): 1.0})(packed)


def test_weighted_projection_of_rows_or_of_point_values() -> None:
    cost = np.array([1.0, 2.0, 3.0, 4.0])
    assert weighted_projection(cost, [1, 3], [2.0, 0.5]) == 2 * 2.0 + 0.5 * 4.0
    assert weighted_projection([2.0, 4.0], None, [2.0, 0.5]) == 6.0


def test_basis_error_is_the_worst_relative_miss() -> None:
    comps = np.array([[1.0, 10.0], [1.0, 30.0]])
    # weights 2, 2 project (4, 80) against totals (4, 100): misses 0 and 20%
    assert basis_error([2.0, 2.0], comps, [4.0, 100.0]) == pytest.approx(0.2)
    assert basis_error([2.0, 2.0], comps[:, :0], np.zeros(0)) == 0.0

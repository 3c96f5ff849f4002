"""The workload contract is explicit: required members and optional abilities checked with
``isinstance``, every built-in and example workload checked, and profiling writes nothing
onto the workload object it is given (issue 33)."""

from __future__ import annotations

import pytest

from seqpoint.exceptions import ConfigError
from seqpoint.workloads import check_workload, load_workload

torch = pytest.importorskip("torch")

EXAMPLES = {
    "deepspeech2:tiny": {"counts_on_meta", "counts_parameters", "sets_threads", "wraps_forward"},
    "gnmt:tiny": {"counts_on_meta", "counts_parameters", "sets_threads", "wraps_forward"},
    "bert:tiny": {"counts_on_meta", "counts_parameters", "sets_threads", "wraps_forward"},
    "examples/ctc_workload.py:CTCModel": {"counts_on_meta", "counts_parameters", "sets_threads", "wraps_forward",
                                          "takes_batch_shape"},
    "examples/custom_workload.py:build": set(),
    "examples/plain_loop.py:Encoder": {"counts_on_meta", "counts_parameters", "sets_threads", "wraps_forward",
                                       "takes_batch_shape"},
}


@pytest.mark.parametrize("spec", list(EXAMPLES))
def test_every_built_in_and_example_workload_keeps_the_contract(spec: str) -> None:
    assert set(check_workload(load_workload(spec))) == EXAMPLES[spec]


def test_an_object_that_is_not_a_workload_is_named_with_what_it_lacks() -> None:
    class Half:
        name = "half"

        def step(self, batch: object) -> float:
            return 0.0

    with pytest.raises(ConfigError, match=r"A Half is not a workload: it lacks config, make_batch"):
        check_workload(Half())


def test_profiling_writes_nothing_onto_the_workload() -> None:
    from seqpoint.profiling import ProfileConfig, count_point, profile_points
    from seqpoint.selection import SeqPoint, SeqPoints

    wl = load_workload("bert:tiny")
    before = dict(vars(wl))
    points = SeqPoints(method="x", n_iterations=4, points=(
        SeqPoint(iteration=0, batch_size=2, seq_len=16, tgt_len=0, weight=2.0),
        SeqPoint(iteration=2, batch_size=2, seq_len=24, tgt_len=0, weight=2.0)))
    profile_points(wl, points, ProfileConfig(warmup=1, repeats=1, metrics=("time", "flops")), progress=False)
    count_point(wl, (2, 16, 0))
    assert set(vars(wl)) == set(before)  # no _seqpoint_startup, _counting_clone or memo attributes

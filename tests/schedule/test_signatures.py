"""Fast signature collapse: the same result as np.unique(axis=0), the plain reference."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import seqpoint.schedule
import seqpoint.selection
from seqpoint.schedule import IterationSchedule, signature_table


def reference(sched: IterationSchedule) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    sig, inverse, counts = np.unique(sched.signature_matrix(), axis=0, return_inverse=True, return_counts=True)
    return sig, counts, inverse.reshape(-1)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 5), st.integers(1, 3000), st.integers(0, 7)), min_size=1, max_size=60),
    st.booleans(),
)
def test_matches_np_unique(rows: list[tuple[int, int, int]], packed: bool) -> None:
    arr = np.array(rows, dtype=np.int64)
    sched = IterationSchedule.from_columns(
        {"batch_size": arr[:, 0], "seq_len": arr[:, 1], "tgt_len": arr[:, 2],
         "sum_sq_len": arr[:, 1] * 7 + arr[:, 2]},
        meta={"packed": packed},
    )
    table = signature_table(sched)
    sig, counts, inverse = reference(sched)
    for got in ((table.signatures, table.counts, table.inverse), sched.unique_signatures()):
        assert all(a.dtype == np.int64 for a in got)
        assert np.array_equal(got[0], sig)
        assert np.array_equal(got[1], counts)
        assert np.array_equal(got[2], inverse)
    assert table.columns == sched.signature_columns()


def test_wide_ranges_use_the_sorting_path() -> None:
    sched = IterationSchedule.from_columns(
        {"batch_size": [1, 10**6, 1, 10**6], "seq_len": [10**9, 3, 10**9, 4], "tgt_len": [0, 10**8, 0, 1]}
    )
    table = signature_table(sched)
    sig, _counts, inverse = reference(sched)
    assert np.array_equal(table.signatures, sig)
    assert table.counts.tolist() == [2, 1, 1]
    assert np.array_equal(table.inverse, inverse)


def test_first_rows_and_as_schedule() -> None:
    sched = IterationSchedule.from_columns({"batch_size": [2, 2, 3, 2, 3], "seq_len": [5, 7, 5, 5, 5]})
    table = signature_table(sched)
    assert table.signatures.tolist() == [[2, 5, 0], [2, 7, 0], [3, 5, 0]]
    assert table.first_rows(np.array([2, 0])).tolist() == [2, 0]
    sub = table.as_schedule()
    assert sub.padded_tokens.tolist() == [10, 14, 15]
    assert sub.sum_sq_len.tolist() == [50, 98, 75]


def test_shape_ids_ignore_sum_sq_len() -> None:
    sched = IterationSchedule.from_columns(
        {"batch_size": [2, 2, 2, 3], "seq_len": [5, 5, 7, 5], "sum_sq_len": [40, 50, 98, 75]},
        meta={"packed": True},
    )
    table = signature_table(sched)
    assert table.signatures.tolist() == [[2, 5, 0, 40], [2, 5, 0, 50], [2, 7, 0, 98], [3, 5, 0, 75]]
    assert table.shape_ids().tolist() == [0, 0, 1, 2]


def test_the_signature_table_has_one_home() -> None:
    # seqpoint.schedule owns it; selection, which builds on it, no longer re-exports it.
    assert {"SignatureTable", "signature_table"} <= set(seqpoint.schedule.__all__)
    assert not {"SignatureTable", "signature_table"} & set(seqpoint.selection.__all__)

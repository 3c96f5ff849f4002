"""Fast signature collapse: same result as IterationSchedule.unique_signatures."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from seqpoint.schedule import IterationSchedule
from seqpoint.selection import signature_table


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 5), st.integers(1, 3000), st.integers(0, 7)), min_size=1, max_size=60),
    st.booleans(),
)
def test_matches_unique_signatures(rows: list[tuple[int, int, int]], packed: bool) -> None:
    arr = np.array(rows, dtype=np.int64)
    sched = IterationSchedule.from_columns(
        {"batch_size": arr[:, 0], "seq_len": arr[:, 1], "tgt_len": arr[:, 2],
         "sum_sq_len": arr[:, 1] * 7 + arr[:, 2]},
        meta={"packed": packed},
    )
    table = signature_table(sched)
    sig, counts, inverse = sched.unique_signatures()
    assert np.array_equal(table.signatures, sig)
    assert np.array_equal(table.counts, counts)
    assert np.array_equal(table.inverse, inverse)
    assert table.columns == sched.signature_columns()


def test_wide_ranges_use_the_sorting_path() -> None:
    sched = IterationSchedule.from_columns(
        {"batch_size": [1, 10**6, 1, 10**6], "seq_len": [10**9, 3, 10**9, 4], "tgt_len": [0, 10**8, 0, 1]}
    )
    table = signature_table(sched)
    sig, _counts, inverse = sched.unique_signatures()
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

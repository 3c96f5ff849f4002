"""The packing policy records each batch's document pieces and the packed row of each:
they sum to the batch's tokens, give its sum_sq_len exactly, and give a varlen step each
row's cu_seqlens and position_ids."""

from __future__ import annotations

import numpy as np
import pytest

from seqpoint.batching import POLICIES
from seqpoint.schedule import read_schedule, write_schedule
from seqpoint.workloads import BatchShape


def _packed(**kw: object):
    lengths = np.random.default_rng(3).integers(1, 90, size=300)
    params = {"max_seq_len": 64, "batch_size": 3, **kw}
    return lengths, POLICIES.get("packing")(**params).replay(lengths, epochs=2, seed=5)


def _shape(s, i: int) -> BatchShape:
    src, _ = s.rows.row(i)
    sig = (int(s.batch_size[i]), int(s.seq_len[i]), 0, int(s.sum_sq_len[i]))
    return BatchShape.of(sig, src, row_of=s.rows.packed_row_of(i))


@pytest.mark.parametrize("kw", [{}, {"drop_last": True}, {"shuffle": False, "pad_to_multiple_of": 48}])
def test_rows_sum_to_the_tokens_and_give_sum_sq_len_exactly(kw: dict) -> None:
    lengths, s = _packed(**kw)
    assert s.rows is not None and len(s.rows) == len(s)
    for i in range(len(s)):
        src, tgt = s.rows.row(i)
        row_of = s.rows.packed_row_of(i)
        assert tgt is None and row_of is not None
        assert int(src.sum()) == s.tokens[i]
        assert int((src * src).sum()) == s.sum_sq_len[i]
        # every packed row of the batch holds pieces, at most max_seq_len tokens of them
        fill = np.bincount(row_of, weights=src, minlength=int(s.batch_size[i]))
        assert fill.shape[0] == s.batch_size[i] and fill.min() > 0 and fill.max() <= 64
    if not kw.get("drop_last"):  # nothing dropped: the pieces of an epoch are its documents' tokens
        epoch0 = s.rows.take(s.epoch == 0).lengths
        assert epoch0.sum() == lengths.sum()


def test_the_pieces_are_the_stream_cut_every_max_seq_len_tokens() -> None:
    # unshuffled documents 50, 30, 70 in rows of 64: [50, 14] [16, 48] [22]
    s = POLICIES.get("packing")(max_seq_len=64, batch_size=2, shuffle=False).replay(
        np.array([50, 30, 70]), epochs=1, seed=0)
    assert [s.rows.row(i)[0].tolist() for i in range(len(s))] == [[50, 14, 16, 48], [22]]
    assert [s.rows.packed_row_of(i).tolist() for i in range(len(s))] == [[0, 0, 1, 1], [0]]
    shape = _shape(s, 0)
    assert [c.tolist() for c in shape.cu_seqlens()] == [[0, 50, 64], [0, 16, 64]]
    pos = shape.position_ids()
    assert pos.shape == (2, 64)
    assert pos[0, :50].tolist() == list(range(50)) and pos[0, 50:].tolist() == list(range(14))
    assert pos[1, 16:].tolist() == list(range(48))
    last = _shape(s, 1)
    assert [c.tolist() for c in last.cu_seqlens()] == [[0, 22]]
    assert last.position_ids()[0, 22:].sum() == 0  # padding past the partial last row


def test_a_padded_batch_is_one_sequence_a_row() -> None:
    shape = BatchShape.of((3, 6, 0), [6, 2, 4])
    assert not shape.packed and shape.row_of is None
    assert [c.tolist() for c in shape.cu_seqlens()] == [[0, 6], [0, 2], [0, 4]]
    assert shape.position_ids()[1].tolist() == [0, 1, 0, 0, 0, 0]


def test_row_of_changes_the_digest_and_is_checked() -> None:
    a = BatchShape.of((2, 8, 0), [4, 4, 8], row_of=[0, 0, 1])
    b = BatchShape.of((2, 8, 0), [4, 4, 8])
    assert a.digest() != b.digest()
    assert [r.tolist() for r in b.packed_rows()] == [[4, 4], [8]]  # laid end to end
    with pytest.raises(ValueError, match="row_of of a packed"):
        BatchShape.of((2, 8, 0), [4, 4, 8], row_of=[0, 1, 1])  # 12 tokens in a row of 8
    with pytest.raises(ValueError, match="row_of of a packed"):
        BatchShape.of((2, 8, 0), [4, 4, 8], row_of=[0, 0, 2])


def test_packed_rows_round_trip_beside_the_schedule_file(tmp_path) -> None:
    _, s = _packed()
    back = read_schedule(write_schedule(s, tmp_path / "s.csv"))
    assert back.rows is not None and back.rows.equals(s.rows)
    assert back.rows.row_of is not None
    assert back.take([3, 1]).rows.packed_row_of(0).tolist() == s.rows.packed_row_of(3).tolist()

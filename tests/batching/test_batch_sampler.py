"""from_batch_sampler: replaying a real PyTorch batch sampler, and its input checks."""

from __future__ import annotations

import numpy as np
import pytest

from seqpoint.batching import from_batch_sampler
from seqpoint.exceptions import ConfigError, InputError
from seqpoint.traces import from_array


def test_plain_list_of_batches() -> None:
    sched = from_batch_sampler([[0, 2], [1], [3, 4]], from_array([5, 3, 8, 2, 7], tgt=[1, 1, 1, 1, 4]))
    assert sched.batch_size.tolist() == [2, 1, 2]
    assert sched.seq_len.tolist() == [8, 3, 7]
    assert sched.tgt_len.tolist() == [1, 1, 4]
    assert sched.meta["policy"] == "batch_sampler" and sched.meta["dropped"] == 0


def test_torch_batch_sampler_random() -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.data import BatchSampler, RandomSampler

    torch.set_num_threads(1)
    lengths = np.random.default_rng(0).integers(1, 300, size=103)
    g = torch.Generator().manual_seed(123)
    sampler = BatchSampler(RandomSampler(range(103), generator=g), batch_size=8, drop_last=True)
    sched = from_batch_sampler(sampler, lengths, epochs=2, pad_to_multiple_of=4)
    # Replay the same pipeline by hand.
    g.manual_seed(123)
    expected = [b for _ in range(2) for b in sampler]
    assert len(sched) == len(expected) == 2 * 12
    assert sched.batch_size.tolist() == [8] * 24
    want = [-(-int(lengths[b].max()) // 4) * 4 for b in expected]
    assert sched.seq_len.tolist() == want
    assert sched.epoch.tolist() == [0] * 12 + [1] * 12
    assert sched.meta["dropped_per_epoch"] == [7, 7]


def test_set_epoch_is_called_on_distributed_sampler() -> None:
    torch = pytest.importorskip("torch")
    from torch.utils.data import BatchSampler, DistributedSampler

    torch.set_num_threads(1)
    lengths = np.arange(1, 41)
    ds = DistributedSampler(range(40), num_replicas=2, rank=0, shuffle=True, seed=3)
    sched = from_batch_sampler(BatchSampler(ds, batch_size=5, drop_last=False), lengths, epochs=2)
    epochs = []
    for e in range(2):
        ds.set_epoch(e)
        epochs.append([int(lengths[b].max()) for b in BatchSampler(ds, 5, False)])
    assert sched.seq_len.tolist() == epochs[0] + epochs[1]
    assert epochs[0] != epochs[1]  # set_epoch reshuffled
    assert sched.meta["dropped_per_epoch"] == [20, 20]  # the other rank's half


def test_bad_samplers() -> None:
    with pytest.raises(InputError, match=r"yielded index 9 \(epoch 0, batch 1\) but the lengths cover 3 samples"):
        from_batch_sampler([[0], [9]], [1, 2, 3])
    with pytest.raises(InputError, match=r"yielded an empty batch \(epoch 0, batch 1\)"):
        from_batch_sampler([[0], []], [1, 2, 3])
    with pytest.raises(InputError, match="yielded no batch"):
        from_batch_sampler([], [1, 2, 3])
    with pytest.raises(ConfigError, match="'pad_to_multiple_of' parameter must be an int >= 1"):
        from_batch_sampler([[0]], [1], pad_to_multiple_of=0)
    with pytest.raises(ConfigError, match="'epochs' parameter"):
        from_batch_sampler([[0]], [1], epochs=0)

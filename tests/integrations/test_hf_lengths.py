"""group_by_length over several epochs, and the real per-sample lengths a Trainer's
replay records and its workload builds batches from."""

import warnings

import numpy as np
import pytest
from test_huggingface import _assert_same, _recorded, _trainer

from seqpoint.exceptions import SeqPointWarning

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning"),
              pytest.mark.filterwarnings("ignore::FutureWarning")]


def _mask_rows(trainer):
    """Record the attention-mask row sums of every training forward (what the model saw)."""
    seen = []

    def hook(module, args, kwargs):
        if module.training and "attention_mask" in kwargs:
            seen.append(kwargs["attention_mask"].sum(-1).tolist())

    trainer.model.register_forward_pre_hook(hook, with_kwargs=True)
    return seen


def test_group_by_length_with_dropout_and_masking_is_exact_over_three_epochs(hf, tmp_path):
    from seqpoint.integrations.huggingface import SeededSampler, schedule_from_trainer

    # Dropout 0.1 on the CPU and MLM masking both draw from the global generator, which a
    # single-process LengthGroupedSampler reads at each epoch; SeededSampler seeds it per
    # epoch in the run and in the replay alike.
    trainer = _trainer(hf, tmp_path, epochs=3, dropout=0.1, train_sampling_strategy="group_by_length",
                       batch_size=4)
    trainer.add_callback(SeededSampler())
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeqPointWarning)
        schedule = schedule_from_trainer(trainer)
    assert schedule.n_epochs == 3
    seen = _mask_rows(trainer)
    trace = _recorded(trainer, tmp_path).trace
    _assert_same(schedule, trace)
    # The per-sample lengths are those of the masks the model received, row for row.
    assert len(schedule.rows) == len(schedule) == len(seen)
    for i, real in enumerate(seen):
        np.testing.assert_array_equal(schedule.rows.row(i)[0], real)
    # The callback records the same rows, and they survive the trace file.
    assert trace.rows is not None and trace.to_schedule().rows.equals(schedule.rows)
    from seqpoint.schedule import read_trace

    assert read_trace(tmp_path / "trace.csv").rows.equals(schedule.rows)
    # Epochs differ: the seeds are per epoch, not one order replayed three times.
    first = [schedule.rows.row(i)[0].tolist() for i in np.flatnonzero(schedule.epoch == 0)]
    second = [schedule.rows.row(i)[0].tolist() for i in np.flatnonzero(schedule.epoch == 1)]
    assert first != second


def test_without_the_seeded_sampler_a_precise_warning_says_why_and_how(hf, tmp_path):
    from seqpoint.integrations.huggingface import schedule_from_trainer

    trainer = _trainer(hf, tmp_path, epochs=2, train_sampling_strategy="group_by_length")
    with pytest.warns(SeqPointWarning, match=r"CPU dropout, random masking.*SeededSampler\(\)"):
        schedule_from_trainer(trainer)


def test_seeded_sampler_leaves_a_seedable_random_sampler_alone(hf, tmp_path):
    from seqpoint.integrations.huggingface import SeededSampler, schedule_from_trainer

    plain = schedule_from_trainer(_trainer(hf, tmp_path, epochs=2))
    trainer = _trainer(hf, tmp_path, epochs=2)
    trainer.add_callback(SeededSampler())
    seeded = schedule_from_trainer(trainer)
    assert plain.equals(seeded) and plain.rows.equals(seeded.rows)


def test_workload_builds_masks_and_labels_from_the_real_lengths(hf, tmp_path):
    from seqpoint.integrations.huggingface import schedule_from_trainer, workload_from_trainer
    from seqpoint.profiling import ProfileConfig, profile_points
    from seqpoint.selection import SELECTORS
    from seqpoint.workloads import BatchShape

    trainer = _trainer(hf, tmp_path, epochs=1, batch_size=4)
    schedule = schedule_from_trainer(trainer)
    points = SELECTORS.get("seqpoint")(n_points=3).fit(schedule).to_seqpoints(schedule)
    assert all(p.lengths is not None and len(p.lengths) == p.batch_size for p in points.points)
    wl = workload_from_trainer(trainer)
    p = points.points[0]
    batch = wl.make_batch(BatchShape.of(p.signature, p.lengths))
    np.testing.assert_array_equal(batch["attention_mask"].sum(-1).numpy(), p.lengths)
    pad = batch["attention_mask"] == 0
    assert (batch["labels"][pad] == -100).all() and (batch["input_ids"][pad] == 0).all()
    assert (batch["labels"][~pad] != -100).all()
    # A bare signature still gives full rows (the old behaviour and cache keys).
    assert int(wl.make_batch(p.signature)["attention_mask"].sum()) == p.batch_size * p.seq_len
    ms = profile_points(wl, points, ProfileConfig(warmup=1, repeats=1), progress=False)
    assert all(m.ok for m in ms.measurements)


def test_flattening_collator_rows_are_the_documents_and_the_batch_restarts_positions(hf, tmp_path):
    from seqpoint.integrations.huggingface import schedule_from_trainer, workload_from_trainer
    from seqpoint.workloads import BatchShape

    trainer = _trainer(hf, tmp_path, collator="flatten", batch_size=4, epochs=1)
    schedule = schedule_from_trainer(trainer)
    src, _ = schedule.rows.row(0)
    assert len(src) == 4 and int(src.sum()) == int(schedule.seq_len[0])
    sig = (1, int(schedule.seq_len[0]), 0, int(schedule.sum_sq_len[0]))
    batch = workload_from_trainer(trainer).make_batch(BatchShape.of(sig, src))
    starts = np.flatnonzero(batch["position_ids"][0].numpy() == 0)
    np.testing.assert_array_equal(np.diff([*starts, sig[1]]), src)
    assert (batch["labels"][0, starts] == -100).all()


def test_plain_loop_recorder_keeps_the_mask_lengths_and_targets(tmp_path):
    import torch

    from seqpoint.integrations import record
    from seqpoint.schedule import read_trace

    with record(tmp_path / "t.parquet", encoder_decoder=True) as rec:
        for lens, tl in (([3, 5], [2, 4]), ([6], [1])):
            mask = torch.tensor([[1] * n + [0] * (max(lens) - n) for n in lens])
            labels = torch.tensor([[7] * t + [-100] * (max(tl) - t) for t in tl])
            with rec.step({"input_ids": mask.clone(), "attention_mask": mask, "labels": labels}):
                pass
    trace = read_trace(tmp_path / "t.parquet")
    assert [trace.rows.row(i)[0].tolist() for i in range(2)] == [[3, 5], [6]]
    assert [trace.rows.row(i)[1].tolist() for i in range(2)] == [[2, 4], [1]]
    with record(tmp_path / "u.csv") as rec, rec.step(torch.zeros(2, 4)):
        pass  # a bare tensor says nothing of its rows
    assert read_trace(tmp_path / "u.csv").rows is None

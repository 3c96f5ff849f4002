import numpy as np
import pytest

from seqpoint.exceptions import AssumedInputWarning, InputError
from seqpoint.integrations import Shape, read_batch, record
from seqpoint.schedule import read_trace

torch = pytest.importorskip("torch")


def test_default_reader_uses_real_lengths_from_the_attention_mask():
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    shape = read_batch({"input_ids": torch.zeros(2, 4, dtype=torch.long), "attention_mask": mask}).shape
    assert shape == (2, 4, 0, 5, 13)
    assert read_batch(torch.zeros(3, 7)).shape == (3, 7, 0, 21, 147)
    assert read_batch([torch.zeros(3, 7), torch.zeros(3)]).shape == (3, 7, 0, 21, 147)


def test_default_reader_reads_targets_and_flattened_documents():
    batch = {"input_ids": torch.zeros(2, 5, dtype=torch.long),
             "labels": torch.tensor([[1, 2, -100], [1, 2, 3]])}
    assert read_batch(batch, encoder_decoder=True).shape == (2, 5, 3, 15, 50)
    assert read_batch(batch).shape == (2, 5, 0, 10, 50)
    packed = {"input_ids": torch.zeros(1, 7, dtype=torch.long),
              "position_ids": torch.tensor([[0, 1, 2, 0, 1, 0, 1]])}
    assert read_batch(packed).shape == (1, 7, 0, 7, 9 + 4 + 4)


def test_lengths_that_do_not_fit_the_batch_shape_are_not_recorded():
    """A speech batch stored channels-first: the shape's seq_len comes from the 80 mel bins,
    the mask's lengths from the 3,000 frames. Recorded, they would make a sidecar that
    read_schedule refuses; they are left out, and the reading says so. Lengths that fit are kept."""
    speech = {"input_features": torch.zeros(2, 80, 3000), "attention_mask": torch.ones(2, 3000, dtype=torch.long)}
    reading = read_batch(speech)
    assert reading.lengths is None and "do not fit the shape (2, 80)" in reading.assumed
    packed = {"input_ids": torch.zeros(1, 7, dtype=torch.long),
              "position_ids": torch.tensor([[0, 1, 2, 0, 1, 0, 1]])}
    assert read_batch(packed).lengths == ([3, 2, 2], None) and read_batch(packed).assumed is None
    text = {"input_ids": torch.zeros(2, 4, dtype=torch.long), "attention_mask": torch.tensor([[1, 1, 1, 0], [1] * 4])}
    assert read_batch(text).lengths == ([3, 4], None)
    # The rejected lengths count for nothing: every row is full, as the model sees it.
    assert reading.shape == (2, 80, 0, 160, 2 * 80 * 80)


def test_a_packed_run_with_a_one_document_micro_batch_keeps_its_rows(tmp_path):
    """One micro-batch holding a single document (an epoch's last sample) is still a packed
    row: its position_ids start at 0; the trace keeps every row and reads back packed."""
    with record(tmp_path / "t.csv") as rec:
        for pos in ([0, 1, 2, 0, 1, 0, 1], [0, 1, 0, 1, 2, 3], [0, 1, 2, 3, 4]):
            batch = {"input_ids": torch.zeros(1, len(pos), dtype=torch.long), "position_ids": torch.tensor([pos])}
            with rec.step(batch):
                pass
    schedule = read_trace(tmp_path / "t.csv").to_schedule()
    assert schedule.rows is not None and schedule.is_packed
    assert [schedule.rows.row(i)[0].tolist() for i in range(3)] == [[3, 2, 2], [2, 4], [5]]
    assert schedule.signature_matrix().shape[1] == 4  # sum_sq_len in the signature


def test_a_batch_without_a_mask_warns_once_naming_the_tensor_and_what_was_assumed(tmp_path):
    """Issue 32: speech features (B, T, 80) with no attention_mask were recorded as T real
    frames per row with no warning."""
    feats = {"input_features": torch.zeros(3, 120, 80), "feature_lens": torch.tensor([120, 90, 40])}
    match = (r"took the shape from 'input_features' \(3, 120, 80\) and counted every row as 120 real "
             r"positions.*'feature_lens' were not read.*shape_fn")
    with pytest.warns(AssumedInputWarning, match=match) as seen, record(tmp_path / "t.csv") as rec:
        for _ in range(3):
            with rec.step(feats):
                pass
    assert len([w for w in seen if w.category is AssumedInputWarning]) == 1
    assert read_trace(tmp_path / "t.csv").rows is None


def test_shape_fn_returns_a_shape_with_real_lengths(tmp_path):
    feats = {"input_features": torch.zeros(3, 120, 80), "feature_lens": torch.tensor([120, 90, 40])}

    def shape_fn(batch):
        x = batch["input_features"]
        return Shape(batch_size=x.shape[0], seq_len=x.shape[1], lengths=batch["feature_lens"].tolist())

    five = lambda b: (3, 120, 0, 250, 120**2 + 90**2 + 40**2)  # noqa: E731  # a trace row's values
    for i, fn in enumerate((shape_fn, five)):
        with record(tmp_path / f"t{i}.csv", shape_fn=fn) as rec, rec.step(feats):
            pass
        trace = read_trace(tmp_path / f"t{i}.csv")
        assert (int(trace.tokens[0]), int(trace.sum_sq_len[0])) == (250, 120**2 + 90**2 + 40**2)
        if fn is shape_fn:
            np.testing.assert_array_equal(trace.rows.row(0)[0], [120, 90, 40])


@pytest.mark.parametrize(("returned", "match"), [
    ({"batch_size": 2, "seq_len": 4}, r"shape_fn returned a dict with keys \['batch_size', 'seq_len'\]: "
                                      r"shape_fn must return seqpoint.integrations.Shape\(batch_size, seq_len.*Shape\(\*\*"),
    ("lengths", r"shape_fn returned str lengths: shape_fn must return"),
    (Shape(2, 4, lengths=[3, 9]), r"lengths \[3, 9\] that do not fit batch_size 2 and seq_len 4"),
])
def test_a_wrong_shape_fn_result_is_one_clear_error(returned, match):
    with pytest.raises(InputError, match=match), record("t.csv", shape_fn=lambda b: returned) as rec:
        rec.shape_of(torch.zeros(2, 4))


@pytest.mark.filterwarnings("ignore::seqpoint.exceptions.AssumedInputWarning")
def test_recorder_trace_round_trips(tmp_path):
    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    path = tmp_path / "trace.csv"
    with record(path) as rec:
        for epoch in range(2):
            rec.set_epoch(epoch)
            for n in (3, 5):
                x = torch.randn(n, 4, 8)
                with rec.step(x):
                    model(x).sum().backward()
                    opt.step()
                    opt.zero_grad()
    trace = read_trace(path)
    np.testing.assert_array_equal(trace.iteration, [0, 1, 2, 3])
    np.testing.assert_array_equal(trace.epoch, [0, 0, 1, 1])
    np.testing.assert_array_equal(trace.batch_size, [3, 5, 3, 5])
    assert np.all(trace.time_s > 0)
    np.testing.assert_array_equal(trace.to_schedule().seq_len, [4, 4, 4, 4])


def test_micro_batches_and_a_user_shape_fn(tmp_path):
    path = tmp_path / "trace.csv"
    with record(path, shape_fn=lambda b: (len(b), max(b), 0, sum(b), sum(x * x for x in b))) as rec:
        for _ in range(2):
            for lengths in ([3, 4], [5]):
                with rec.micro_batch(lengths):
                    pass
            rec.end_step()
    trace = read_trace(path)
    np.testing.assert_array_equal(trace.iteration, [0, 0, 1, 1])
    np.testing.assert_array_equal(trace.micro_batch, [0, 1, 0, 1])
    np.testing.assert_array_equal(trace.sum_sq_len, [25, 25, 25, 25])
    assert trace.step_times_s().shape == (2,)


def test_unreadable_batch_and_empty_loop_are_clear(tmp_path):
    with pytest.raises(InputError, match="pass shape_fn="), record(tmp_path / "t.csv") as rec, \
            rec.step(object()):
        pass
    with pytest.raises(InputError, match="run trace is empty"), record(tmp_path / "t.csv"):
        pass
    assert not (tmp_path / "t.csv").exists()


@pytest.mark.filterwarnings("ignore::seqpoint.exceptions.AssumedInputWarning")
def test_recorder_misuse_gets_one_clear_error(tmp_path):
    x = torch.zeros(2, 3)
    # nested blocks would time the inner step twice
    with record(tmp_path / "n.csv") as rec, rec.step(x), \
            pytest.raises(InputError, match="Recorder blocks cannot nest"), rec.step(x):
        pass
    assert len(read_trace(tmp_path / "n.csv").step_times_s()) == 1
    # record(...) is a context manager, entered once
    rec_cm = record(tmp_path / "o.csv")
    with pytest.raises(InputError, match=r"record\(\.\.\.\) is a context manager: write `with record\("):
        rec_cm.step(x)
    with rec_cm as rec, rec.step(x):
        pass
    with pytest.raises(InputError, match="entered before; call record\\(path\\) again"), rec_cm:
        pass
    with pytest.raises(AttributeError):
        _ = rec_cm.no_such_name

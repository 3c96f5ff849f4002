"""UserWorkload: a user's step from a class, typed --set values, batches from real lengths."""

import dataclasses

import numpy as np
import pytest

pytest.importorskip("torch")

from seqpoint.exceptions import ConfigError, InputError
from seqpoint.workloads import BatchShape, load_workload

EXAMPLE = "examples/ctc_workload.py:CTCModel"


def test_the_example_loads_by_file_and_class_with_typed_settings(monkeypatch):
    from pathlib import Path

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    w = load_workload(EXAMPLE, {"hidden": "8", "dtype": "bf16", "micro_batches": "2"})
    assert w.name == "CTCModel" and w.config.hidden == 8 and w.config.dtype == "bf16"
    with pytest.raises(ConfigError, match="'hidden' parameter of CTCConfig must be an int"):
        load_workload(EXAMPLE, {"hidden": "wide"})
    with pytest.raises(ConfigError, match="Unknown workload setting 'width'.*hidden"):
        load_workload(EXAMPLE, {"width": "8"})
    with pytest.raises(ConfigError, match="dtype"):
        load_workload(EXAMPLE, {"dtype": "fp8"})


def test_batches_follow_the_real_lengths_and_the_step_trains(monkeypatch):
    from pathlib import Path

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    w = load_workload(EXAMPLE, {"hidden": "16", "micro_batches": "2"})
    shape = BatchShape.of((3, 20, 6), [20, 11, 7], [6, 2, 4])
    batch = w.make_batch(shape)
    assert batch["x_len"].tolist() == [20, 11, 7] and batch["y_len"].tolist() == [6, 2, 4]
    again = w.make_batch(BatchShape.of((3, 20, 6), [20, 11, 7], [6, 2, 4]))
    other = w.make_batch(BatchShape.of((3, 20, 6), [20, 12, 7], [6, 2, 4]))
    assert (again["x"] == batch["x"]).all() and not (other["x"] == batch["x"]).all()
    full = w.make_batch((3, 20, 6))  # a bare signature: every row full length
    assert full["x_len"].tolist() == [20, 20, 20]
    losses = [w.step(batch) for _ in range(6)]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]


def test_batch_shape_checks_and_digest():
    a = BatchShape.of((2, 9, 0), [9, 4])
    assert a.exact and a.signature == (2, 9, 0) and a.tgt_lengths.tolist() == [0, 0]
    assert a.digest() == BatchShape.of((2, 9, 0), [9, 4]).digest() != BatchShape.of((2, 9, 0), [9, 5]).digest()
    assert not BatchShape.of((2, 9, 0)).exact
    np.testing.assert_array_equal(a.real_mask().sum(1), [9, 4])
    with pytest.deprecated_call(match=r"True on real positions; call real_mask\(\)"):
        np.testing.assert_array_equal(a.padding_mask(), a.real_mask())  # the old name, same values
    with pytest.raises(InputError, match=r"lie in \[0, seq_len=9\]"):
        BatchShape.of((2, 9, 0), [10, 4])
    with pytest.raises(InputError, match="tgt_lengths as many"):
        BatchShape.of((2, 9, 3), [9, 4], [1])


def test_a_class_with_a_bad_config_or_no_hooks_is_refused(tmp_path):
    import torch

    from seqpoint.workloads import UserWorkload, WorkloadConfig

    code = tmp_path / "bad.py"
    code.write_text("from seqpoint.workloads import UserWorkload\n"
                    "class NoConfig(UserWorkload):\n    Config = dict\n")
    with pytest.raises(ConfigError, match="Config must be a dataclass extending"):
        load_workload(f"{code}:NoConfig")

    class Empty(UserWorkload):
        pass

    with pytest.raises(NotImplementedError, match="build_model"):
        Empty()

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class LinConfig(WorkloadConfig):
        width: int = 2

    class Lin(UserWorkload):
        Config = LinConfig

        def build_model(self):
            return torch.nn.Linear(self.config.width, 2)

    assert Lin().config.width == 2
    with pytest.raises(ConfigError, match="Lin takes a LinConfig config. Got WorkloadConfig"):
        Lin(WorkloadConfig())

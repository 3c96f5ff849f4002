"""Bring your own training job: schedules, workloads and run traces from a
``transformers.Trainer`` (:mod:`seqpoint.integrations.huggingface`, which imports
transformers), lhotse samplers (:mod:`seqpoint.integrations.lhotse`) or a plain PyTorch loop
(:func:`record`). Importing this package imports neither torch, transformers nor lhotse."""

from seqpoint.integrations._recorder import record
from seqpoint.integrations._shapes import Shape, read_batch

__all__ = ["Shape", "read_batch", "record"]

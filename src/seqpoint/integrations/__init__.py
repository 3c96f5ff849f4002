"""Bring your own training job: schedules, workloads and run traces from real pipelines.

* :mod:`seqpoint.integrations.huggingface`: ``schedule_from_trainer``,
  ``workload_from_trainer`` and ``SeqPointCallback`` for a ``transformers.Trainer``
  (importing that module imports transformers).
* :mod:`seqpoint.integrations.lhotse`: ``schedule_from_sampler`` for lhotse samplers.
* :func:`record`: a recorder for a plain PyTorch loop, writing a run trace; its
  ``shape_fn`` returns a :class:`Shape` where the batch does not say its rows' lengths.

Importing this package imports neither torch, transformers nor lhotse.
"""

from seqpoint.integrations._recorder import Recorder, record
from seqpoint.integrations._shapes import Shape, read_batch
from seqpoint.integrations.lhotse import schedule_from_sampler

__all__ = ["Recorder", "Shape", "read_batch", "record", "schedule_from_sampler"]

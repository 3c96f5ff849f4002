"""Hugging Face ``Trainer`` integration (importing this package imports transformers).

* :func:`schedule_from_trainer`: the micro-batches ``trainer.train()`` will see.
* :func:`workload_from_trainer`: the trainer's own step as a workload to profile.
* :class:`SeqPointCallback`: record a real run as a run trace.
* :func:`project_trainer`: all of it in one call, checked against recorded runs.
* :class:`SeededSampler`: seed a single-process ``group_by_length`` order per epoch, so
  the replay is exact in every epoch.
"""

from seqpoint.integrations.huggingface._callback import SeqPointCallback
from seqpoint.integrations.huggingface._replay import SeededSampler, schedule_from_trainer
from seqpoint.integrations.huggingface._workload import project_trainer, workload_from_trainer

__all__ = ["SeededSampler", "SeqPointCallback", "project_trainer", "schedule_from_trainer",
           "workload_from_trainer"]

"""Hugging Face ``Trainer`` integration (importing this package imports transformers).

* :func:`schedule_from_trainer`: the micro-batches ``trainer.train()`` will see.
* :func:`workload_from_trainer`: the trainer's own step as a workload to profile.
* :class:`SeqPointCallback`: record a real run as a run trace.
* :class:`SeededSampler`: seed a single-process ``group_by_length`` order per epoch, so
  the replay is exact in every epoch.
"""

from seqpoint.integrations.huggingface._callback import SeqPointCallback
from seqpoint.integrations.huggingface._replay import schedule_from_trainer
from seqpoint.integrations.huggingface._seeding import SeededSampler
from seqpoint.integrations.huggingface._workload import TrainerWorkload, workload_from_trainer

__all__ = ["SeededSampler", "SeqPointCallback", "TrainerWorkload", "schedule_from_trainer", "workload_from_trainer"]

"""Hugging Face ``Trainer`` integration: the micro-batches ``trainer.train()`` will see, its step as a workload, a
callback recording a real run, and all of it in one call (importing this package imports transformers)."""

from seqpoint.integrations.huggingface._callback import SeqPointCallback
from seqpoint.integrations.huggingface._replay import SeededSampler, schedule_from_trainer
from seqpoint.integrations.huggingface._workload import project_trainer, workload_from_trainer

__all__ = ["SeededSampler", "SeqPointCallback", "project_trainer", "schedule_from_trainer", "workload_from_trainer"]

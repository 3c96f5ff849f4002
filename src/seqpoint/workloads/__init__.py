"""Stage 5a: reference training workloads (DeepSpeech2, GNMT, BERT) and user workloads, built
from a frozen config, offering ``make_batch(signature)`` and ``step(batch)`` (one training
iteration). Importing this package does not import torch; building a workload does."""

from seqpoint.workloads._base import TorchWorkload, Workload, WorkloadConfig
from seqpoint.workloads._bert import packed_document_lengths as packed_document_lengths
from seqpoint.workloads._facts import Trains, WorkloadFacts, describe
from seqpoint.workloads._loading import (
    WORKLOADS,
    WorkloadRecipe,
    check_user_code,
    load_workload,
    workload_config,
)
from seqpoint.workloads._shape import BatchShape, takes_batch_shape
from seqpoint.workloads._user import (
    CountsOnMeta,
    CountsParameters,
    SetsThreads,
    UserWorkload,
    WrapsForward,
    check_workload,
)

__all__ = ["WORKLOADS", "BatchShape", "CountsOnMeta", "CountsParameters", "SetsThreads",
           "TorchWorkload", "Trains", "UserWorkload", "Workload", "WorkloadConfig",
           "WorkloadFacts", "WorkloadRecipe", "WrapsForward", "check_user_code",
           "check_workload", "describe", "load_workload", "takes_batch_shape", "workload_config"]


def __getattr__(name: str) -> object:
    # The optimizers subclass torch.optim.Optimizer, so they are loaded on first use:
    # importing seqpoint.workloads stays torch-free.
    if name in ("LAMB", "make_optimizer"):
        from seqpoint.workloads import _optim

        return getattr(_optim, name)
    raise AttributeError(f"module 'seqpoint.workloads' has no attribute {name!r}")

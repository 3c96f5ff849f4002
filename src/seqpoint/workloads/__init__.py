"""Stage 5a: reference training workloads (DeepSpeech2, GNMT, BERT) and user workloads.

A workload is built from a frozen config and offers ``make_batch(signature)`` and
``step(batch)`` (one full training iteration). Importing this package does not import
torch; building a workload does.
"""

from seqpoint.workloads._base import Signature, TorchWorkload, Workload, WorkloadConfig
from seqpoint.workloads._bert import packed_document_lengths as packed_document_lengths
from seqpoint.workloads._contract import (
    CountsOnMeta,
    CountsParameters,
    SetsThreads,
    WrapsForward,
    check_workload,
)
from seqpoint.workloads._loading import (
    WORKLOADS,
    WorkloadRecipe,
    load_workload,
    workload_recipe,
)
from seqpoint.workloads._loading import check_user_code as check_user_code
from seqpoint.workloads._shape import BatchShape, takes_batch_shape
from seqpoint.workloads._shape import as_batch_shape as as_batch_shape
from seqpoint.workloads._user import UserWorkload

__all__ = ["WORKLOADS", "BatchShape", "CountsOnMeta", "CountsParameters", "SetsThreads",
           "Signature", "TorchWorkload", "UserWorkload", "Workload", "WorkloadConfig",
           "WorkloadRecipe", "WrapsForward", "check_workload", "load_workload", "takes_batch_shape",
           "workload_recipe"]


def __getattr__(name: str) -> object:
    # The optimizers subclass torch.optim.Optimizer, so they are loaded on first use:
    # importing seqpoint.workloads stays torch-free.
    if name in ("LAMB", "make_optimizer"):
        from seqpoint.workloads import _optim

        return getattr(_optim, name)
    raise AttributeError(f"module 'seqpoint.workloads' has no attribute {name!r}")

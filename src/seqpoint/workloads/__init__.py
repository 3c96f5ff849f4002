"""Stage 5a: reference training workloads (DeepSpeech2, GNMT, BERT) and user workloads.

A workload is built from a frozen config and offers ``make_batch(signature)`` and
``step(batch)`` (one full training iteration). Importing this package does not import
torch; building a workload does.
"""

from seqpoint.workloads._base import (
    DEVICES,
    DTYPES,
    OPTIMIZERS,
    Signature,
    TorchWorkload,
    Workload,
    WorkloadConfig,
)
from seqpoint.workloads._bert import Bert, BertConfig, packed_document_lengths
from seqpoint.workloads._contract import (
    CountsOnMeta,
    CountsParameters,
    SetsThreads,
    WrapsForward,
    check_workload,
)
from seqpoint.workloads._deepspeech2 import DeepSpeech2, DeepSpeech2Config
from seqpoint.workloads._gnmt import GNMT, GNMTConfig
from seqpoint.workloads._loading import (
    MAX_THREADS,
    WORKLOADS,
    WorkloadSpec,
    check_user_code,
    config_class,
    is_user_code,
    load_workload,
    parse_overrides,
    workload_recipe,
)
from seqpoint.workloads._recipe import WorkloadRecipe
from seqpoint.workloads._shape import BatchShape, as_batch_shape, takes_batch_shape
from seqpoint.workloads._user import UserWorkload

__all__ = [
    "DEVICES",
    "DTYPES",
    "GNMT",
    "LAMB",
    "MAX_THREADS",
    "OPTIMIZERS",
    "WORKLOADS",
    "BatchShape",
    "Bert",
    "BertConfig",
    "CountsOnMeta",
    "CountsParameters",
    "DeepSpeech2",
    "DeepSpeech2Config",
    "GNMTConfig",
    "SetsThreads",
    "Signature",
    "TorchWorkload",
    "UserWorkload",
    "Workload",
    "WorkloadConfig",
    "WorkloadRecipe",
    "WorkloadSpec",
    "WrapsForward",
    "as_batch_shape",
    "check_user_code",
    "check_workload",
    "config_class",
    "is_user_code",
    "load_workload",
    "make_optimizer",
    "packed_document_lengths",
    "parse_overrides",
    "takes_batch_shape",
    "workload_recipe",
]


def __getattr__(name: str) -> object:
    # The optimizers subclass torch.optim.Optimizer, so they are loaded on first use:
    # importing seqpoint.workloads stays torch-free.
    if name in ("LAMB", "make_optimizer"):
        from seqpoint.workloads import _optim

        return getattr(_optim, name)
    raise AttributeError(f"module 'seqpoint.workloads' has no attribute {name!r}")

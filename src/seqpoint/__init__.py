"""seqpoint: project whole-run training time of sequence models from a few SeqPoints.

``import seqpoint`` needs numpy only; torch, pyarrow and matplotlib are imported by
the stages that use them.
"""

from seqpoint._version import __version__
from seqpoint.exceptions import (
    InputError,
    NotFittedError,
    SeqPointError,
    SeqPointWarning,
)

__all__ = [
    "InputError",
    "NotFittedError",
    "SeqPointError",
    "SeqPointWarning",
    "__version__",
]

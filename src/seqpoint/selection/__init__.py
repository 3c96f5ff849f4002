"""Stage 4: choose SeqPoints (and baselines) from a schedule.

Every selector follows the scikit-learn estimator contract (``fit(schedule)`` returns
``self``; ``points_``, ``weights_``, ``labels_``) and is registered in :data:`SELECTORS`
under its command-line name; :func:`make_selector` builds one by name.
"""

from seqpoint.schedule import SignatureTable, signature_table
from seqpoint.selection._base import SELECTORS, BaseSelector, make_selector
from seqpoint.selection._baselines import (
    FirstSelector,
    MeanSelector,
    MedianSelector,
    ModeSelector,
    RandomSelector,
    StratifiedSelector,
    StrideSelector,
)
from seqpoint.selection._calibration import calibrate_weights
from seqpoint.selection._cost import (
    COST_MODELS,
    AttentionCost,
    CostProxy,
    PilotTable,
    QuadraticCost,
    SeqLenCost,
    SignatureCosts,
    TokensCost,
    basis_components,
    basis_error,
    cost_proxy,
    weighted_projection,
)
from seqpoint.selection._kmeans1d import KMeans1D
from seqpoint.selection._seqpoint_selector import SeqPointSelector, signature_proxy
from seqpoint.selection._seqpoints import SeqPoint, SeqPoints, read_seqpoints, write_seqpoints
from seqpoint.selection._simpoint import SimPointSelector
from seqpoint.selection._simpoint_format import (
    SimPointFiles,
    read_simpoints,
    seqpoints_from_simpoints,
    write_simpoints,
)

__all__ = [
    "COST_MODELS",
    "SELECTORS",
    "AttentionCost",
    "BaseSelector",
    "CostProxy",
    "FirstSelector",
    "KMeans1D",
    "MeanSelector",
    "MedianSelector",
    "ModeSelector",
    "PilotTable",
    "QuadraticCost",
    "RandomSelector",
    "SeqLenCost",
    "SeqPoint",
    "SeqPointSelector",
    "SeqPoints",
    "SignatureCosts",
    "SignatureTable",
    "SimPointFiles",
    "SimPointSelector",
    "StratifiedSelector",
    "StrideSelector",
    "TokensCost",
    "basis_components",
    "basis_error",
    "calibrate_weights",
    "cost_proxy",
    "make_selector",
    "read_seqpoints",
    "read_simpoints",
    "seqpoints_from_simpoints",
    "signature_proxy",
    "signature_table",
    "weighted_projection",
    "write_seqpoints",
    "write_simpoints",
]

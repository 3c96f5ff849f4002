"""Stage 4: choose SeqPoints (and baselines) from a schedule. Every selector follows the
scikit-learn estimator contract (``fit(schedule)`` returns ``self``; ``points_``, ``weights_``,
``labels_``) and is registered in :data:`SELECTORS` under its command-line name, which
:func:`make_selector` takes. The names imported ``as`` themselves are for the tests."""

# Importing a selector's module registers it in SELECTORS, where make_selector finds it.
from seqpoint.selection import _baselines, _simpoint  # noqa: F401
from seqpoint.selection._base import SELECTORS, BaseSelector, make_selector
from seqpoint.selection._calibration import calibrate_weights as calibrate_weights
from seqpoint.selection._cost import (
    COST_MODELS,
    CostProxy,
    PilotTable,
    SignatureCosts,
    basis_components,
    basis_error,
    weighted_projection,
)
from seqpoint.selection._cost import cost_proxy as cost_proxy
from seqpoint.selection._grouping import KMeans1D as KMeans1D
from seqpoint.selection._seqpoint_selector import SeqPointSelector
from seqpoint.selection._seqpoints import (
    SeqPoint,
    SeqPoints,
    read_seqpoints,
    write_seqpoints,
    write_simpoints,
)

__all__ = ["COST_MODELS", "SELECTORS", "BaseSelector", "CostProxy", "PilotTable", "SeqPoint",
           "SeqPointSelector", "SeqPoints", "SignatureCosts", "basis_components", "basis_error",
           "make_selector", "read_seqpoints", "weighted_projection", "write_seqpoints", "write_simpoints"]

"""Stage 7: project whole-run totals, speedups and their error from SeqPoint measurements. A
:class:`ScheduleModel` built once per schedule and passed as ``context=`` serves several
projections of one run (both methods, two configurations); each function builds one without."""

from seqpoint.projection._cold import cold_steps
from seqpoint.projection._device import DeviceProjection, project_device
from seqpoint.projection._intervals import leave_one_out_error, roughness, student_quantile
from seqpoint.projection._match import check_fit
from seqpoint.projection._model import METHODS, PointProjector, ScheduleModel, fitted_costs
from seqpoint.projection._project import Projection, project
from seqpoint.projection._ranks import INTERCONNECTS, RankProjection, project_ranks
from seqpoint.projection._speedup import Speedup, project_speedup
from seqpoint.projection._synthetic import geomean_abs_error, project_cost

__all__ = ["INTERCONNECTS", "METHODS", "DeviceProjection", "PointProjector", "Projection", "RankProjection",
           "ScheduleModel", "Speedup", "check_fit", "cold_steps", "fitted_costs", "geomean_abs_error",
           "leave_one_out_error", "project", "project_cost", "project_device", "project_ranks", "project_speedup",
           "roughness", "student_quantile"]

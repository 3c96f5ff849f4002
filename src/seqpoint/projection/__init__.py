"""Stage 7: project whole-run totals, speedups and their error from SeqPoint measurements. A
:class:`ScheduleModel` built once per schedule and passed as ``context=`` serves several
projections of one run (both methods, two configurations); each function builds one without.
The names imported ``as`` themselves are parts of the interval and cold-step models, for their
tests."""

from seqpoint.projection._cold import cold_steps as cold_steps
from seqpoint.projection._device import DeviceProjection, project_device
from seqpoint.projection._intervals import leave_one_out_error as leave_one_out_error
from seqpoint.projection._intervals import roughness as roughness
from seqpoint.projection._intervals import student_quantile
from seqpoint.projection._match import check_fit
from seqpoint.projection._model import PointProjector as PointProjector
from seqpoint.projection._model import ScheduleModel, fitted_costs
from seqpoint.projection._project import Projection, project
from seqpoint.projection._ranks import INTERCONNECTS, RankProjection, project_ranks
from seqpoint.projection._speedup import Speedup, project_speedup
from seqpoint.projection._synthetic import project_cost

__all__ = ["INTERCONNECTS", "DeviceProjection", "Projection", "RankProjection", "ScheduleModel", "Speedup",
           "check_fit", "fitted_costs", "project", "project_cost", "project_device", "project_ranks", "project_speedup",
           "student_quantile"]

"""The schema of MEASUREMENTS.json and of one measurement (a cache row's payload): strict
types, finite non-negative values, bounded lengths, and a projectable metric present at
every ok point or none. Imported only by the readers."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from seqpoint._jsonio import MAX_COUNT, MAX_LENGTH
from seqpoint.measurements._records import Status
from seqpoint.measurements.metrics import is_projectable

__all__ = ["MeasurementSchema", "MeasurementsSchema", "StepWindowSchema"]

#: A metric value: a finite number >= 0 (seconds, FLOPs, bytes, counts).
Value = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class MeasurementSchema(_Strict):
    """One entry of ``measurements`` (and the payload of one cache row)."""

    iteration: int = Field(default=-1, ge=-1, le=MAX_LENGTH)
    batch_size: int = Field(ge=1, le=MAX_LENGTH)
    seq_len: int = Field(ge=1, le=MAX_LENGTH)
    tgt_len: int = Field(default=0, ge=0, le=MAX_LENGTH)
    sum_sq_len: int | None = Field(default=None, ge=0, le=MAX_COUNT)
    status: Status = "ok"
    message: str = ""
    metrics: dict[str, Value] = {}
    breakdown_s: dict[str, Value] = {}
    samples: dict[str, list[Value]] = {}


class StepWindowSchema(_Strict):
    """A timed in-sequence window of the run (``window``)."""

    start: int = Field(default=0, ge=0, le=MAX_COUNT)
    signatures: list[list[Annotated[int, Field(ge=0, le=MAX_COUNT)]]]
    times_s: list[Value]

    @model_validator(mode="after")
    def _one_time_per_step(self) -> StepWindowSchema:
        if len(self.signatures) != len(self.times_s):
            raise ValueError(f"window has {len(self.signatures)} signatures but {len(self.times_s)} times_s; "
                             "record the window again")
        return self


class MeasurementsSchema(_Strict):
    """A whole MEASUREMENTS.json."""

    workload: str = Field(min_length=1)
    config: dict[str, Any] = {}
    environment: dict[str, Any] = {}
    measurements: list[MeasurementSchema]
    protocol: dict[str, Any] = {}
    window: StepWindowSchema | None = None
    compile: dict[str, float] = {}

    @model_validator(mode="after")
    def _same_metrics_at_every_ok_point(self) -> MeasurementsSchema:
        ok = [(i, m) for i, m in enumerate(self.measurements) if m.status == "ok"]
        present = {k for _, m in ok for k in m.metrics if is_projectable(k)}
        for i, m in ok:
            missing = sorted(present - set(m.metrics))
            if missing:
                raise ValueError(f"metric {missing[0]!r} is missing at point {i} (iteration "
                                 f"{m.iteration}) but present at other ok points, so it cannot be "
                                 "projected; profile that point again or remove the metric from every point")
        return self

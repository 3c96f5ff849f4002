"""The schema of the Kineto trace events a breakdown reads (kernels, launches, CPU ranges):
strict, finite. Imported only when a trace is read: ``import seqpoint`` loads no pydantic."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, RootModel

__all__ = ["KinetoEvents"]


class KinetoArgs(BaseModel):
    """An event's ``args``: the CUPTI correlation id that links a launch and its kernel."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    correlation: int | None = None


class KinetoEvent(BaseModel):
    """A complete event (``"ph": "X"``): times in microseconds."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    name: str
    ts: float = Field(allow_inf_nan=False)
    dur: float = Field(ge=0, allow_inf_nan=False)
    pid: int | str = 0
    tid: int | str = 0
    args: KinetoArgs = KinetoArgs()


class KinetoEvents(RootModel[dict[int, KinetoEvent]]):
    """The events read, by their index in ``traceEvents``."""

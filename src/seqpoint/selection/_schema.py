"""The schema of SEQPOINTS.json: strict, finite, bounded, weights summing to the run. Imported
only by :func:`~seqpoint.selection.read_seqpoints`: ``import seqpoint`` loads no pydantic."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from seqpoint._jsonio import MAX_COUNT, MAX_LENGTH

__all__ = ["SeqPointSchema", "SeqPointsSchema"]

#: Most sequences one point may list (a batch of a million rows is far beyond any run).
MAX_ROWS = 1 << 20
_Length = Annotated[int, Field(ge=0, le=MAX_LENGTH)]


class SeqPointSchema(BaseModel):
    """One entry of ``points``."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    iteration: int = Field(ge=0, le=MAX_LENGTH)
    batch_size: int = Field(ge=1, le=MAX_LENGTH)
    seq_len: int = Field(ge=1, le=MAX_LENGTH)
    tgt_len: int = Field(default=0, ge=0, le=MAX_LENGTH)
    sum_sq_len: int | None = Field(default=None, ge=0, le=MAX_COUNT)
    weight: float = Field(ge=0, le=MAX_LENGTH, allow_inf_nan=False)
    lengths: list[_Length] | None = Field(default=None, min_length=1, max_length=MAX_ROWS)
    tgt_lengths: list[_Length] | None = Field(default=None, min_length=1, max_length=MAX_ROWS)
    row_of: list[Annotated[int, Field(ge=0, lt=MAX_ROWS)]] | None = Field(
        default=None, min_length=1, max_length=MAX_ROWS)

    @model_validator(mode="after")
    def _lengths_fit_the_point(self) -> SeqPointSchema:
        if self.tgt_lengths is not None and (self.lengths is None or len(self.tgt_lengths) != len(self.lengths)):
            raise ValueError("tgt_lengths needs lengths with as many entries")
        if self.row_of is not None and (self.lengths is None or len(self.row_of) != len(self.lengths)):
            raise ValueError("row_of needs lengths with as many entries")
        if self.row_of is not None and max(self.row_of) >= self.batch_size:
            raise ValueError(f"row_of names row {max(self.row_of)} of a batch of {self.batch_size} rows")
        if self.lengths is not None and max(self.lengths) > self.seq_len and self.sum_sq_len is None:
            raise ValueError(f"a length {max(self.lengths)} exceeds seq_len {self.seq_len}")
        return self


class SeqPointsSchema(BaseModel):
    """A whole SEQPOINTS.json."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    method: str = Field(default="unknown", min_length=1)
    n_iterations: int = Field(ge=1, le=MAX_LENGTH)
    points: list[SeqPointSchema] = Field(min_length=1)
    meta: dict[str, Any] = {}

    @model_validator(mode="after")
    def _weights_count_the_run(self) -> SeqPointsSchema:
        total = sum(p.weight for p in self.points)
        if abs(total - self.n_iterations) > 1e-6 * max(1, self.n_iterations):
            raise ValueError(f"SeqPoint weights sum to {total:g} but n_iterations is {self.n_iterations}; weights "
                             "must count the iterations each point represents")
        return self

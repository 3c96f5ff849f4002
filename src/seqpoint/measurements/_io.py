"""Reading and writing MEASUREMENTS.json and single measurement payloads; every problem is one
:class:`~seqpoint.exceptions.InputError` line (the schema, and pydantic, load only when a file is read)."""

from __future__ import annotations

from pathlib import Path

from seqpoint._jsonio import parse_json, read_json, validate, write_json
from seqpoint.measurements._records import Measurement, Measurements, StepWindow

__all__ = ["parse_measurement", "read_measurements", "write_measurements"]

_FIX = "create it again with 'seqpoint profile'"


def write_measurements(ms: Measurements, path: str | Path) -> Path:
    """Write MEASUREMENTS.json."""
    return write_json(ms.to_dict(), path)


def read_measurements(path: str | Path) -> Measurements:
    """Read and validate MEASUREMENTS.json; InputError when the file is missing, not UTF-8,
    not JSON, or breaks the schema."""
    from seqpoint.measurements._schema import MeasurementsSchema

    data = read_json(path, what="Measurements file", made_by="seqpoint profile")
    model = validate(MeasurementsSchema, data, source=str(path), fix=_FIX)
    w = model.window
    window = None if w is None else StepWindow(start=w.start, signatures=tuple(tuple(s) for s in w.signatures),
                                               times_s=tuple(w.times_s))
    return Measurements(workload=model.workload, config=model.config, environment=model.environment,
                        measurements=tuple(Measurement(**m.model_dump()) for m in model.measurements),
                        protocol=model.protocol, window=window, compile=model.compile)


def parse_measurement(payload: str | dict[str, object], *, source: str, fix: str) -> Measurement:
    """Validate one measurement, JSON text or a parsed dict as :meth:`Measurement.to_dict`
    wrote it (a cache row's payload); ``source`` and ``fix`` go into the message."""
    from seqpoint.measurements._schema import MeasurementSchema

    data = parse_json(payload, source=source, fix=fix) if isinstance(payload, str) else payload
    model = validate(MeasurementSchema, data, source=source, fix=fix)
    return Measurement(**model.model_dump())

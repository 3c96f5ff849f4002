"""Length reader for JSON-lines manifests (NeMo/ESPnet style)."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from seqpoint.exceptions import InputError
from seqpoint.traces._columns import check_scale, scaled_lengths, shown
from seqpoint.traces._files import normalize_newlines, read_bytes
from seqpoint.traces._lengths import Lengths

__all__ = ["read_jsonl_lengths"]


def _one_document(text: str) -> bool:
    """True when ``text`` parses as a single JSON value (pretty-printed JSON, not JSON lines)."""
    try:
        json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return False
    return True


def _jsonl_python(text: str, key: str, source: str) -> NDArray[np.float64]:
    out: list[float] = []
    for i, line in enumerate(text.split("\n")):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            if not out and _one_document(text):
                raise InputError(f"{source} is one JSON document, not JSON lines: a manifest holds one "
                                 'JSON object per line (e.g. {"duration": 3.2}); write each record on a line '
                                 "of its own.") from None
            raise InputError(f"{source} line {i + 1}: not valid JSON ({exc.msg}).") from None
        except RecursionError:
            raise InputError(f"{source} line {i + 1}: JSON nested too deeply for a manifest.") from None
        if not isinstance(obj, dict) or key not in obj:
            keys = shown(list(obj)) if isinstance(obj, dict) else type(obj).__name__
            raise InputError(f"{source} line {i + 1}: no {key!r} field (found {keys}); choose the "
                             "field with key= (CLI: --column NAME).")
        val = obj[key]
        if val is None:
            out.append(math.nan)
        elif isinstance(val, (int, float)) and not isinstance(val, bool):
            out.append(float(val))
        else:
            raise InputError(f"{source} line {i + 1}: {key!r} is {val!r}, not a number.")
    return np.asarray(out, dtype=np.float64)


#: Manifest objects are flat; deeper nesting goes to the Python parser, which fails cleanly.
_MAX_JSON_DEPTH = 64


def _max_nesting(data: bytes) -> int:
    """Upper bound of the bracket nesting of ``data`` (brackets inside strings count too)."""
    buf = np.frombuffer(data, dtype=np.uint8)
    step = np.isin(buf, (0x5B, 0x7B)).astype(np.int8) - np.isin(buf, (0x5D, 0x7D)).astype(np.int8)
    return int(np.cumsum(step, dtype=np.int64).max()) if step.any() else 0


def _jsonl_column(data: bytes, text: str, key: str, source: str) -> NDArray[np.float64]:
    try:
        import pyarrow as pa
        import pyarrow.json as pjson
    except ImportError:  # pragma: no cover - pyarrow is in the dev extra
        return _jsonl_python(text, key, source)
    if _max_nesting(data) > _MAX_JSON_DEPTH:
        # pyarrow's JSON parser overflows its stack (a segfault) on deep nesting.
        return _jsonl_python(text, key, source)
    try:
        table = pjson.read_json(io.BytesIO(data))
        if key not in table.column_names:
            raise KeyError(key)
        col = table.column(key)
        if col.null_count or not (pa.types.is_integer(col.type) or pa.types.is_floating(col.type)):
            raise TypeError(col.type)
        return col.cast(pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, KeyError, TypeError):
        # The slow parser names the offending line.
        return _jsonl_python(text, key, source)


def read_jsonl_lengths(path: str | Path, *, key: str = "duration", frames_per_second: float | None = 100.0,
                       unit: str | None = None) -> Lengths:
    """Field ``key`` of every non-blank line of a JSON-lines manifest (NeMo/ESPnet style) as
    lengths, seconds turned into frames (options: :func:`~seqpoint.traces.read_lengths`)."""
    source = str(path)
    data = normalize_newlines(read_bytes(path, text=True))
    text = data.decode("utf-8")
    if not text.strip():
        raise InputError(f"{source} holds no samples; give a non-empty manifest.")
    raw = _jsonl_column(data, text, key, source)
    factor = 1.0 if frames_per_second is None else check_scale(frames_per_second, None, 1.0)

    def locate(i: int) -> str:
        # Blank lines are skipped, so a position counts non-blank lines only.
        nonblank = [j for j, line in enumerate(text.split("\n")) if line.strip()]
        return f"line {nonblank[i] + 1}"

    return scaled_lengths(raw, factor, source=source, col=key, label="field", locate=locate,
                          unit=unit or ("frames" if frames_per_second is not None else "tokens"))

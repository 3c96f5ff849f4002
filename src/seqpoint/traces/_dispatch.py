"""One entry point that picks the reader from the file name (used by the command line)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from seqpoint.exceptions import ConfigError, InputError
from seqpoint.traces._bundled import bundled_lengths
from seqpoint.traces._files import read_bytes
from seqpoint.traces._lengths import Lengths
from seqpoint.traces._tabular import (
    count_column_of,
    read_csv_lengths,
    read_histogram,
    read_jsonl_lengths,
    read_numpy_lengths,
)
from seqpoint.traces._text import read_parallel_lengths, read_text_lengths

__all__ = ["FORMATS", "read_lengths"]

#: Format names accepted by :func:`read_lengths` and ``seqpoint schedule --format``.
FORMATS: tuple[str, ...] = ("csv", "histogram", "jsonl", "numpy", "parallel", "text")

_READERS: dict[str, Callable[..., Lengths]] = {
    "csv": read_csv_lengths, "histogram": read_histogram, "jsonl": read_jsonl_lengths, "numpy": read_numpy_lengths,
    "parallel": read_parallel_lengths, "text": read_text_lengths}


def _infer_format(path: str | Path, *, tgt: str | Path | None = None) -> str:
    """Guess the format from the file name (``.gz`` ignored) and, for CSV, the header: two or
    three columns, one named like a count, make a histogram."""
    if tgt is not None:
        return "parallel"
    name = Path(path).name.lower().removesuffix(".gz")
    suffix = Path(name).suffix
    if suffix in (".jsonl", ".json", ".ndjson"):
        return "jsonl"
    if suffix in (".npy", ".npz"):
        return "numpy"
    if suffix == ".csv":
        head = read_bytes(path)[:4096].decode("utf-8", errors="replace")
        header = head.split("\n", 1)[0].split("\r", 1)[0].split(",")
        return "histogram" if len(header) in (2, 3) and count_column_of(header) else "csv"
    return "text"


def read_lengths(path: str | Path, *, format: str | None = None, column: str | None = None,
                 tgt: str | Path | None = None, count_column: str | None = None, **kwargs: Any) -> Lengths:
    """Read per-sample lengths from a length file, or ``bundled:NAME`` for a shipped data set.

    ``format`` is one of :data:`FORMATS` (inferred from the name when omitted); ``column`` the CSV
    column, JSON-lines key or a histogram's length column; ``tgt`` the target-side text of
    ``parallel``; ``count_column`` a histogram's count column (implying ``format="histogram"``).
    ``kwargs`` are the reader's options (one it does not take is an error naming those it does):

    - ``csv``: ``scale`` (multiply and round up: ``1/160`` turns 16 kHz samples into 10 ms
      frames), ``sample_rate`` (``scale = frames_per_second / sample_rate``),
      ``frames_per_second`` (100), ``unit``.
    - ``jsonl``: ``frames_per_second`` (seconds to frames, ``ceil``; None keeps the values),
      ``unit``; ``column`` is the key (default ``duration``).
    - ``histogram``: ``unit``; a ``tgt`` column is kept beside ``src``.
    - ``text``, ``parallel``: ``tokenizer`` (None counts whitespace tokens; else a
      ``tokenizers.Tokenizer``, a transformers tokenizer, a ``SentencePieceProcessor``, a path
      to ``tokenizer.json``/``.model``, or a function of a string), ``tgt_tokenizer``
      (parallel), ``add_special_tokens``, ``extra_tokens`` (added per line), ``skip_empty``
      (drop blank lines or pairs with a warning, else an error).
    - ``numpy``: ``unit``; ``.npy`` of shape (n,) or (n, 2), ``.npz`` with ``src`` (or
      ``lengths``) and ``tgt``.
    """
    spec = str(path)
    if spec.startswith("bundled:"):
        if format is not None or column is not None or tgt is not None or count_column or kwargs:
            raise ConfigError(f"{spec} is already a complete length source; drop "
                              "--format/--column/--tgt and reader options.")
        return bundled_lengths(spec)
    if format is None:
        if not Path(spec).exists():
            raise InputError(f"{spec}: no such file; check the path (or use bundled:NAME).")
        format = "histogram" if count_column is not None else _infer_format(spec, tgt=tgt)
    if format not in FORMATS:
        raise ConfigError(f"Unknown length format {format!r}. Valid formats: {', '.join(FORMATS)}.")
    reader = _READERS[format]
    args: tuple[str | Path, ...] = (spec,)
    if format == "parallel":
        if tgt is None:
            raise ConfigError("The 'parallel' format needs the target file too (CLI: --tgt FILE).")
        args = (spec, tgt)
    elif tgt is not None:
        raise ConfigError(f"A target file (--tgt) only applies to parallel text, not {format!r}.")
    if count_column is not None:
        if format != "histogram":
            raise ConfigError(f"A count column (--count-column) only applies to a histogram, not {format!r}.")
        kwargs["count_column"] = count_column
    if column is not None:
        if format in ("csv", "histogram"):
            kwargs["column"] = column
        elif format == "jsonl":
            kwargs["key"] = column
        else:
            raise ConfigError(f"A column (--column) only applies to csv, histogram and jsonl, not {format!r}.")
    accepted = {n for n, p in inspect.signature(reader).parameters.items()
                if p.kind is p.KEYWORD_ONLY and not n.startswith("_")}
    unknown = sorted(set(kwargs) - accepted)
    if unknown:
        raise ConfigError(f"The {format!r} reader does not take {', '.join(map(repr, unknown))}; "
                          f"it takes {', '.join(sorted(accepted)) or 'no options'}.")
    return reader(*args, **kwargs)

"""The one reading boundary: every file goes through :func:`read_text` (exists, is a file, is UTF-8) and, for
JSON, :func:`read_json`, then a pydantic schema (:func:`validate`, pydantic imported only there); whatever goes
wrong is one :class:`~seqpoint.exceptions.InputError` line ``<file>: <location>: <what>; <fix>``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from seqpoint.exceptions import InputError

if TYPE_CHECKING:  # typing only: pydantic is imported where a file is validated
    from pydantic import BaseModel, ValidationError

__all__ = ["MAX_COUNT", "MAX_LENGTH", "parse_json", "read_json", "read_text", "validate", "write_json", "write_text"]

M = TypeVar("M", bound="BaseModel")

#: Largest batch size, sequence length or iteration index a file may hold: below 2^31,
#: so that products of two (tokens, padded tokens) cannot overflow int64.
MAX_LENGTH = 2**31 - 1
#: Largest token count or sum of squared lengths a file may hold (fits int64 with room).
MAX_COUNT = 2**62

#: Largest file read whole into memory; the contract's files are far smaller.
MAX_TEXT_BYTES = 1 << 30


def _encoding_hint(head: bytes) -> str:
    """Name what a non-UTF-8 file most likely is, for the message."""
    if head.startswith(b"\x1f\x8b"):
        return "a gzip-compressed file; decompress it first (gunzip)"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16 text; save it as UTF-8"
    if head.startswith(b"PK\x03\x04"):
        return "a zip archive; extract it first"
    return "text in another encoding (Latin-1 or a Windows code page?); save it as UTF-8"


def write_text(text: str, path: str | Path) -> Path:
    """Write UTF-8 text, creating the parent folder; an ``OSError`` names the path."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        # A failed write or close (a full disk) carries no file name; the one line must name it.
        if exc.filename is None:
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from None
        raise
    return path


def write_json(data: object, path: str | Path) -> Path:
    """Write ``data`` as indented JSON, creating the parent folder."""
    return write_text(json.dumps(data, indent=2) + "\n", path)


def read_text(path: str | Path, *, what: str, made_by: str) -> str:
    """Read a UTF-8 text file; anything else is one :class:`InputError` line naming ``what``
    the file is ("SeqPoints file") and the command ``made_by`` that creates it."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{what} {path} is a folder; give the file (create it with '{made_by}').")
    if not path.is_file() and not path.exists():
        raise InputError(f"{what} {path} does not exist; create it with '{made_by}'.")
    with path.open("rb") as fh:
        data = fh.read(MAX_TEXT_BYTES + 1)
    if len(data) > MAX_TEXT_BYTES:
        raise InputError(f"{path}: larger than {MAX_TEXT_BYTES >> 20} MiB; this is not a {what}.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # Where an editor shows it: line and column (in characters) of the first bad byte.
        before = data[: exc.start].decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
        line, column = before.count("\n") + 1, len(before) - before.rfind("\n")
        raise InputError(f"{path}: line {line}, column {column} (byte {data[exc.start]:#04x}): {what} "
                         f"must be UTF-8 text; this is {_encoding_hint(data[:4])}.") from None
    # Universal newlines, as text mode would: CR-only files read as lines too.
    return text.replace("\r\n", "\n").replace("\r", "\n")


def parse_json(text: str, *, source: str, fix: str = "fix the file or write it again") -> Any:
    """Parse JSON text; syntax errors, deep nesting and huge integers are one line."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}: line {exc.lineno}: invalid JSON ({exc.msg}); {fix}.") from None
    except RecursionError:
        raise InputError(f"{source}: JSON nested too deeply; {fix}.") from None
    except ValueError as exc:
        # json raises a plain ValueError for an integer of more than 4300 digits and
        # for NaN/Infinity (via _reject_constant).
        raise InputError(f"{source}: invalid JSON ({exc}); {fix}.") from None


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number; every value must be finite")


def read_json(path: str | Path, *, what: str, made_by: str) -> Any:
    """Parse a JSON file (``what`` and ``made_by`` as for :func:`read_text`)."""
    return parse_json(read_text(path, what=what, made_by=made_by), source=str(path))


#: pydantic's messages for Python input, in the words of a JSON or TOML file.
_MESSAGES = {
    **dict.fromkeys(("model_type", "model_attributes_type", "dict_type"),
                    "must be an object (a JSON object or TOML table)"),
    "list_type": "must be a list", "int_type": "must be an integer", "float_type": "must be a number",
    "string_type": "must be a string", "bool_type": "must be true or false", "finite_number": "must be a finite number",
    "missing": "is required but missing", "extra_forbidden": "is not a known field (check the spelling)",
    "greater_than_equal": "must be >= {ge}", "greater_than": "must be > {gt}",
    "less_than_equal": "must be <= {le}", "less_than": "must be < {lt}",
    "string_too_short": "must not be empty", "too_short": "must have at least {min_length} item(s)",
    "too_long": "must have at most {max_length} item(s)",
}


def _describe(exc: ValidationError, *, source: str, fix: str) -> str:
    """The first error of a pydantic ``ValidationError`` as ``<file>: <location>: <what>; <fix>``."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    template = _MESSAGES.get(first["type"])
    ctx = first.get("ctx", {})
    message = template.format(**ctx) if template is not None else str(first["msg"])
    if first["type"] == "value_error":
        message = str(ctx.get("error", message))
    value = first.get("input")
    if first["type"] not in ("missing", "extra_forbidden", "value_error") and not isinstance(value, dict | list):
        shown = repr(value)
        message += f" (got {shown[:60]}{'...' if len(shown) > 60 else ''})"
    more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
    where = ".".join(str(part) for part in first["loc"]) or "top level"
    return f"{source}: {where}: {message}{more}; {fix}"


def validate(model: type[M], data: object, *, source: str, fix: str) -> M:
    """Validate parsed ``data`` against the pydantic schema ``model``; any error is one
    :class:`InputError` line naming ``source`` and ``fix``."""
    from pydantic import ValidationError

    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InputError(_describe(exc, source=source, fix=fix)) from None
    except RecursionError:
        raise InputError(f"{source}: nested too deeply; {fix}") from None

"""Helpers shared by the frozen, keyword-only config dataclasses of every stage, and the one
``--set KEY=VALUE`` grammar of the command line and the run config overrides."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import tomllib
from collections.abc import Iterable
from typing import Any

from seqpoint.exceptions import ConfigError

__all__ = ["config_hash", "from_dict", "parse_set", "parse_value", "to_dict"]

SCHEMA_VERSION = 1


def to_dict(cfg: Any) -> dict[str, Any]:
    """Plain-data dict of a config dataclass (nested dataclasses included)."""
    return dataclasses.asdict(cfg)


def from_dict(cls: type, data: dict[str, Any], *, where: str = "") -> Any:
    """Build ``cls(**data)``, naming unknown keys and the valid ones."""
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - fields)
    if unknown:
        raise ConfigError(f"Unknown key(s) {', '.join(map(repr, unknown))}{f' in {where}' if where else ''} "
                          f"for {cls.__name__}. Valid keys: {', '.join(sorted(fields))}.")
    return cls(**data)


def config_hash(*parts: object) -> str:
    """Full sha256 of the canonical JSON of ``parts`` plus the schema version."""
    blob = json.dumps([SCHEMA_VERSION, *parts], sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def parse_value(text: str) -> object:
    """One ``--set`` value: a TOML value (``2``, ``2.5``, ``true``, ``[2, 2]``, ``"x"``), else the
    bare text as a string, so words need no quotes on a command line."""
    text = text.strip()
    try:
        table = tomllib.loads(f"v = {text}")
    except tomllib.TOMLDecodeError:
        return text
    # "1\nw = 2" is valid TOML but two values; only a single value is one.
    return table["v"] if len(table) == 1 else text


def parse_set(items: Iterable[str], *, option: str = "--set") -> dict[str, Any]:
    """Parse ``KEY=VALUE`` items, the one grammar of every ``--set`` (and ``--set-b``); later items override
    earlier ones. VALUE is read by :func:`parse_value`; dashes in KEY become underscores, a dotted KEY
    (``batching.epochs``) is kept whole; ``option`` names the flag in errors."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise ConfigError(f"{option} expects KEY=VALUE (e.g. {option} threads=2, {option} dtype=bf16). "
                              f"Got {item!r}.")
        out[key] = parse_value(raw)
    return out

"""Helpers shared by the frozen, keyword-only config dataclasses of every stage."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

from seqpoint.exceptions import ConfigError

__all__ = ["SCHEMA_VERSION", "config_hash", "from_dict", "to_dict"]

SCHEMA_VERSION = 1


def to_dict(cfg: Any) -> dict[str, Any]:
    """Plain-data dict of a config dataclass (nested dataclasses included)."""
    return dataclasses.asdict(cfg)


def from_dict(cls: type, data: dict[str, Any], *, where: str = "") -> Any:
    """Build ``cls(**data)``, naming unknown keys and the valid ones."""
    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - fields)
    if unknown:
        place = f" in {where}" if where else ""
        raise ConfigError(
            f"Unknown key(s) {', '.join(map(repr, unknown))}{place} for {cls.__name__}. "
            f"Valid keys: {', '.join(sorted(fields))}."
        )
    return cls(**data)


def config_hash(*parts: Any) -> str:
    """Full sha256 of the canonical JSON of ``parts`` plus the schema version."""
    blob = json.dumps([SCHEMA_VERSION, *parts], sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()

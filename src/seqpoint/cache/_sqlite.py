"""The measurement cache: one SQLite row per measurement, keyed by a full sha256 of everything it
depends on. WAL mode, a busy timeout and one transaction per row: a campaign killed at any moment
keeps every finished point, and several processes can write one cache at once."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from seqpoint._config import config_hash
from seqpoint._jsonio import parse_json, write_json
from seqpoint._signature import Signature
from seqpoint.exceptions import InputError
from seqpoint.measurements import Measurement, parse_measurement

__all__ = ["CacheEntry", "MeasurementCache", "default_cache_path"]

_CORRUPT = "the row is corrupt: run 'seqpoint cache clear' (or delete the file) and measure again"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS measurements (
    key TEXT PRIMARY KEY,
    workload TEXT NOT NULL,
    signature TEXT NOT NULL,
    status TEXT NOT NULL,
    created REAL NOT NULL,
    measurement TEXT NOT NULL
)
"""


def _where(workload: str | None) -> tuple[str, tuple[str, ...]]:
    """The SQL that keeps one workload's rows (all rows for None), and its argument."""
    return ("", ()) if workload is None else (" WHERE workload = ?", (workload,))


def default_cache_path() -> Path:
    """``$SEQPOINT_CACHE`` when set, else ``~/.cache/seqpoint/measurements.sqlite``."""
    env = os.environ.get("SEQPOINT_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "seqpoint" / "measurements.sqlite"


@dataclass(frozen=True, kw_only=True)
class CacheEntry:
    """One cached row, as :meth:`MeasurementCache.list` returns it: its full sha256 key, the workload name
    (``deepspeech2:tiny``), signature and status of the measurement, and the Unix time the row was written."""

    key: str
    workload: str
    signature: Signature
    status: str
    created: float
    measurement: Measurement


class MeasurementCache:
    """SQLite cache of measurements in ``path`` (default :func:`default_cache_path`; its folder is
    created); a writer waits ``timeout_s`` seconds for another process's lock before failing."""

    def __init__(self, path: str | Path | None = None, *, timeout_s: float = 60.0) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        if self.path.is_dir():
            raise InputError(f"Cache path {self.path} is a directory; give a file such as "
                             f"{self.path}/measurements.sqlite.")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.timeout_s = float(timeout_s)
        self._refuse_empty_file()
        try:
            with self._connect() as con:
                con.execute("PRAGMA journal_mode=WAL")
                con.execute(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise InputError(f"Cache {self.path} is not a seqpoint measurement cache ({exc}); "
                             "delete it or give another path with --cache.") from None

    def _refuse_empty_file(self, grace_s: float = 2.0) -> None:
        # An empty file for grace_s is a typo'd --cache path; one being created fills within ms.
        deadline = time.monotonic() + grace_s
        while self.path.is_file() and self.path.stat().st_size == 0:
            if time.monotonic() >= deadline:
                raise InputError(f"Cache {self.path} is an empty file, not a seqpoint measurement cache; delete "
                                 "it (seqpoint creates the cache itself) or give another path with --cache.")
            time.sleep(0.05)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        # One short-lived connection per operation: safe across fork and threads, and
        # every write is committed (or rolled back) before the call returns.
        con = sqlite3.connect(self.path, timeout=self.timeout_s, isolation_level=None)
        try:
            con.execute(f"PRAGMA busy_timeout={int(self.timeout_s * 1000)}")
            con.execute("PRAGMA synchronous=NORMAL")
            yield con
        except sqlite3.DatabaseError as exc:
            # Junk after the header page or a table of another schema surfaces only here.
            raise InputError(f"Cache {self.path} is not a seqpoint measurement cache or is damaged ({exc}); "
                             "run 'seqpoint cache clear' or give another path with --cache.") from None
        finally:
            con.close()

    def _row(self, key: str, payload: str) -> Measurement:
        return parse_measurement(payload, source=f"{self.path}: row {key[:16]}", fix=_CORRUPT)

    def _signature(self, key: str, payload: str) -> Signature:
        source = f"{self.path}: row {key[:16]}"
        sig = parse_json(payload, source=source, fix=_CORRUPT) if isinstance(payload, str) else None
        if not isinstance(sig, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in sig):
            raise InputError(f"{source}: signature {str(payload)[:40]!r} is not a list of integers; {_CORRUPT}.")
        return tuple(sig)

    @staticmethod
    def key(workload_name: str, config_dict: Mapping[str, object], environment: Mapping[str, object],
            signature: Sequence[int], profile_config_dict: Mapping[str, object], *, lengths: str | None = None) -> str:
        """Full sha256 of everything a measurement depends on; ``lengths`` is the batch's
        ``BatchShape.digest`` for a workload built from real lengths (None leaves the key as it was)."""
        extra = () if lengths is None else ({"lengths": lengths},)
        return config_hash("measurement", workload_name, config_dict, environment,
                           [int(v) for v in signature], profile_config_dict, *extra)

    def get(self, key: str) -> Measurement | None:
        """The cached measurement of ``key``, or None."""
        with self._connect() as con:
            row = con.execute("SELECT measurement FROM measurements WHERE key = ?", (key,)).fetchone()
        return None if row is None else self._row(key, row[0])

    def put(self, key: str, measurement: Measurement, *, workload: str = "",
            signature: Sequence[int] | None = None) -> None:
        """Store ``measurement`` under ``key`` (replacing an older row), committed at once."""
        sig = json.dumps(list(signature if signature is not None else measurement.signature))
        blob = json.dumps(measurement.to_dict(), separators=(",", ":"))
        with self._connect() as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                con.execute("INSERT OR REPLACE INTO measurements VALUES (?, ?, ?, ?, ?, ?)",
                            (key, workload, sig, measurement.status, time.time(), blob))
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        with self._connect() as con:
            return con.execute("SELECT 1 FROM measurements WHERE key = ?", (key,)).fetchone() is not None

    def __len__(self) -> int:
        with self._connect() as con:
            return int(con.execute("SELECT COUNT(*) FROM measurements").fetchone()[0])

    def list(self, workload: str | None = None) -> list[CacheEntry]:
        """Rows, oldest first (optionally only one workload's)."""
        where, args = _where(workload)
        with self._connect() as con:
            rows = con.execute("SELECT key, workload, signature, status, created, measurement FROM "
                               f"measurements{where} ORDER BY created, key", args).fetchall()
        return [CacheEntry(key=r[0], workload=r[1], signature=self._signature(r[0], r[2]), status=r[3],
                           created=float(r[4]), measurement=self._row(r[0], r[5])) for r in rows]

    def clear(self, workload: str | None = None) -> int:
        """Delete rows (all, or one workload's); returns how many."""
        where, args = _where(workload)
        with self._connect() as con:
            con.execute("BEGIN IMMEDIATE")
            n = con.execute(f"DELETE FROM measurements{where}", args).rowcount
            con.execute("COMMIT")
        return int(n)

    def export(self, path: str | Path, workload: str | None = None) -> Path:
        """Write the rows as JSON (``{"entries": [{key, workload, signature, status, created, measurement}]}``)."""
        entries = [{"key": e.key, "workload": e.workload, "signature": list(e.signature), "status": e.status,
                    "created": e.created, "measurement": e.measurement.to_dict()} for e in self.list(workload)]
        return write_json({"cache": str(self.path), "entries": entries}, path)

"""Reading length files as bytes: existence checks and gzip detection by magic bytes."""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from seqpoint.exceptions import InputError

__all__ = ["GZIP_MAGIC", "decompress", "read_bytes"]

#: First two bytes of every gzip member (RFC 1952).
GZIP_MAGIC = b"\x1f\x8b"


def decompress(data: bytes, *, name: str) -> bytes:
    """Return ``data`` gunzipped when it starts with the gzip magic bytes, else unchanged.

    The file name is not trusted: a ``.gz`` name holding plain text is read as text,
    and a gzip stream without the suffix is still decompressed.
    """
    if not data.startswith(GZIP_MAGIC):
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(
            f"{name} starts like a gzip file but cannot be decompressed ({exc}); "
            "the file is truncated or corrupt: re-create it or give the uncompressed file."
        ) from None


def read_bytes(path: str | Path) -> bytes:
    """Read ``path`` whole, gunzipping it if it is gzip-compressed.

    Raises
    ------
    InputError
        The path does not exist, is a directory, cannot be read, or is a broken gzip.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file; check the path.")
    if p.is_dir():
        raise InputError(f"{p} is a directory; give a length file.")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(f"{p} cannot be read ({exc.strerror}); check its permissions.") from None
    return decompress(data, name=str(p))

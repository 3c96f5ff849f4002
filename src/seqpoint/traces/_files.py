"""Reading length files as bytes: existence checks, size limits, gzip, UTF-8 and line ends."""

from __future__ import annotations

import re
import stat
import zlib
from pathlib import Path

from seqpoint.exceptions import InputError

__all__ = ["GZIP_MAGIC", "MAX_FILE_BYTES", "check_text", "decompress", "normalize_newlines", "read_bytes"]

#: First two bytes of every gzip member (RFC 1952).
GZIP_MAGIC = b"\x1f\x8b"

#: Largest length file read (after decompression): 1 GiB, a memory guard.
MAX_FILE_BYTES = 1 << 30

_BLOCK = 1 << 20
_LONE_CR = re.compile(rb"\r(?!\n)")


def _too_large(name: str, limit: int = MAX_FILE_BYTES) -> InputError:
    return InputError(f"{name} holds more than {limit >> 20} MiB of data, the limit of a length "
                      "file; give a histogram (length,count) or a sample of the data instead.")


def decompress(data: bytes, *, name: str, limit: int = MAX_FILE_BYTES) -> bytes:
    """``data`` gunzipped when it starts with the gzip magic bytes (whatever its name), else
    unchanged; the output is capped at ``limit`` bytes (a "zip bomb" is one message)."""
    if not data.startswith(GZIP_MAGIC):
        return data
    out: list[bytes] = []
    size, rest = 0, data
    try:
        while rest.startswith(GZIP_MAGIC):  # concatenated gzip members, like gzip.decompress
            d = zlib.decompressobj(wbits=31)
            chunk = d.decompress(rest, limit + 1 - size)
            size += len(chunk)
            out.append(chunk)
            if size > limit or d.unconsumed_tail:
                raise _too_large(name, limit)
            if not d.eof:
                raise EOFError("compressed file ended before the end-of-stream marker was reached")
            rest = d.unused_data
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"{name} starts like a gzip file but cannot be decompressed ({exc}); the file is "
                         "truncated or corrupt: re-create it or give the uncompressed file.") from None
    return b"".join(out)


def check_text(data: bytes, name: str) -> None:
    """Raise unless ``data`` is UTF-8 text (no NUL bytes: binary and UTF-16 files hold them)."""
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise InputError(f"{name} line {line}: holds a NUL byte, so it is binary (or UTF-16) data, "
                         "not text; save it as UTF-8 text.")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(f"{name} line {line}: not valid UTF-8 ({exc.reason}); re-encode the file "
                         "as UTF-8.") from None


def normalize_newlines(data: bytes) -> bytes:
    """Turn CRLF and lone CR (old Mac) line ends into ``\\n``, as Python's universal newlines."""
    return _LONE_CR.sub(b"\n", data.replace(b"\r\n", b"\n")) if b"\r" in data else data


def _read_stream(p: Path, *, text: bool) -> bytes:
    """Read a pipe or device in blocks, stopping at the size limit (``/dev/zero`` never ends)."""
    parts: list[bytes] = []
    size = 0
    with p.open("rb") as fh:
        while block := fh.read(_BLOCK):
            if text and not parts and b"\x00" in block and not block.startswith(GZIP_MAGIC):
                check_text(block, str(p))
            size += len(block)
            if size > MAX_FILE_BYTES:
                raise _too_large(str(p))
            parts.append(block)
    return b"".join(parts)


def read_bytes(path: str | Path, *, text: bool = False) -> bytes:
    """Read ``path`` (a regular file or a pipe) whole, gunzipping it if it is gzip-compressed;
    with ``text``, require UTF-8 without NUL bytes. A missing, unreadable or too large file, a
    directory, a broken gzip or (``text``) bad text is an InputError."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise InputError(f"{p}: no such file; check the path.") from None
    except OSError as exc:
        raise InputError(f"{p} cannot be read ({exc.strerror}); check the path.") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{p} is a directory; give a length file.")
    try:
        if stat.S_ISREG(st.st_mode):
            if st.st_size > MAX_FILE_BYTES:
                raise _too_large(str(p))
            data = p.read_bytes()
        else:
            data = _read_stream(p, text=text)
    except OSError as exc:
        raise InputError(f"{p} cannot be read ({exc.strerror}); check its permissions.") from None
    data = decompress(data, name=str(p))
    if text:
        check_text(data, str(p))
    return data

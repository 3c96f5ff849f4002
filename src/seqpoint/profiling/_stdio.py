"""File-descriptor redirection for native libraries that write past ``sys.stdout``/``sys.stderr``.

oneDNN prints its verbose log with C stdio on file descriptor 1, and kineto prints a line
on file descriptor 2 at every profiler start and stop; Python's streams never see them.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

__all__ = ["fd_redirected", "flush_c_stdio", "native_stderr_silenced"]


def flush_c_stdio() -> None:
    """fflush(NULL): oneDNN prints with C stdio, fully buffered when fd 1 is a file."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):  # no C library to call
        ctypes.CDLL(None).fflush(None)


@contextlib.contextmanager
def fd_redirected(fd: int, target: int) -> Iterator[bool]:
    """Point file descriptor ``fd`` at ``target`` (native libraries bypass ``sys.std*``).

    Python's and C's buffers are flushed on the way in and out, so nothing written
    before lands in ``target`` and nothing written inside is left behind. Yields False
    (and redirects nothing) when the process has no ``fd`` (embedded interpreters).
    """

    def flush() -> None:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        flush_c_stdio()

    flush()
    try:
        saved = os.dup(fd)
    except OSError:
        yield False
        return
    try:
        os.dup2(target, fd)
        yield True
    finally:
        flush()
        os.dup2(saved, fd)
        os.close(saved)


@contextlib.contextmanager
def native_stderr_silenced() -> Iterator[None]:
    """Point file descriptor 2 at /dev/null while the block runs."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        with fd_redirected(2, devnull):
            yield
    finally:
        os.close(devnull)

"""File-descriptor redirection for native libraries that write past ``sys.stdout``/``sys.stderr``
(oneDNN's verbose log on fd 1, kineto's line at every profiler start and stop on fd 2)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from collections.abc import Iterator

__all__ = ["fd_redirected", "native_stderr_silenced"]


@contextlib.contextmanager
def fd_redirected(fd: int, target: int) -> Iterator[bool]:
    """Point file descriptor ``fd`` at ``target``, Python's and C's buffers flushed on the way
    in and out; yields False (redirecting nothing) when the process has no ``fd``."""

    def flush() -> None:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        # fflush(NULL): oneDNN prints with C stdio, fully buffered when fd 1 is a file.
        with contextlib.suppress(OSError, AttributeError):  # no C library to call
            ctypes.CDLL(None).fflush(None)

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

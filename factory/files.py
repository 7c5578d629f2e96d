"""File helpers every stage shares: a file's sha256, a durable replace, a lock between processes.

``replace_atomically`` is how anything reaches its final name (store segments, entity
statistics, index manifests): the bytes are fsynced before the rename, so a reader
never sees a half-written file and a crash leaves the old file or the new one.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from pathlib import Path
from typing import Iterator

BLOCK = 1 << 20


def file_sha256(path: str | os.PathLike[str]) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def replace_atomically(tmp: str | os.PathLike[str], final: str | os.PathLike[str]) -> None:
    """Move a finished ``tmp`` file to ``final``: fsync first, then one rename."""
    fd = os.open(tmp, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, final)


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock between processes (and machines sharing the folder, over NFSv4)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)

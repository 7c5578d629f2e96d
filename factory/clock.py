"""The time the factory stamps on rows and names: UTC, always."""

from __future__ import annotations

from datetime import datetime, timezone


def utc_now() -> datetime:
    """Now in UTC, naive: the store's TIMESTAMP columns (and ``_written_at``) hold naive UTC."""
    return datetime.now(timezone.utc).replace(tzinfo=None)


def utc_stamp(fmt: str = "%Y%m%dT%H%M%S") -> str:
    """Now in UTC as text, for run ids and file names."""
    return datetime.now(timezone.utc).strftime(fmt)

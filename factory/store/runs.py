"""The ``runs`` table: one row per run of a command, with its resolved settings.

A benchmark is rebuilt exactly from the settings stored here; a training set is the
set of runs recorded with its name (``factory.generate.scope``).
"""

from __future__ import annotations

import socket
import uuid
from typing import Any

from factory.clock import utc_now, utc_stamp


def new_run_id(command: str) -> str:
    return f"{command}-{utc_stamp()}-{uuid.uuid4().hex[:6]}"


def record_run(store: Any, run_id: str, command: str, settings: Any) -> None:
    """Write the run's row (a rerun of a run id writes another: each try is recorded)."""
    from factory import __version__

    store.append("runs", [{
        "run_id": run_id, "command": command, "settings": settings.dump(), "started_at": utc_now(),
        "host": socket.gethostname(), "version": __version__,
    }], name=command)

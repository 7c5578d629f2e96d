"""Search-task factory: hard, verifiable multi-hop search tasks with fixed indices."""

from factory import offline as _offline  # noqa: F401  (sets offline and no-telemetry defaults first)

__version__ = "0.1.0"

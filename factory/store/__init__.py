"""Store: Parquet segments written by many processes, DuckDB views for readers."""

from factory.store.store import SegmentWriter, Store, StoreError, json_value

__all__ = ["SegmentWriter", "Store", "StoreError", "json_value"]

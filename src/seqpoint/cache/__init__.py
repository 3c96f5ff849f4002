"""Stage 6: the SQLite measurement cache (torch-free)."""

from seqpoint.cache._sqlite import MeasurementCache, default_cache_path

__all__ = ["MeasurementCache", "default_cache_path"]

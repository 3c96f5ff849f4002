"""Stage 6: the SQLite measurement cache (torch-free)."""

from seqpoint.cache._sqlite import CacheEntry, MeasurementCache, default_cache_path

__all__ = ["CacheEntry", "MeasurementCache", "default_cache_path"]

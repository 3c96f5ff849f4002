"""seqpoint.cache"""

__all__: list[str] = []

"""seqpoint.batching"""

__all__: list[str] = []

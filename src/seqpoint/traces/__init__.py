"""seqpoint.traces"""

__all__: list[str] = []

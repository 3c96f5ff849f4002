"""seqpoint.validation"""

__all__: list[str] = []

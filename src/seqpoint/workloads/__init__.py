"""seqpoint.workloads"""

__all__: list[str] = []

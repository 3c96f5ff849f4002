"""Compatibility import path: the signature table now lives in :mod:`seqpoint.schedule`.

Kept only while ``_baselines.py`` and ``_simpoint.py`` still import it from here;
``seqpoint.selection`` re-exports the names from ``seqpoint.schedule`` directly.
"""

from seqpoint.schedule import SignatureTable, signature_table

__all__ = ["SignatureTable", "signature_table"]

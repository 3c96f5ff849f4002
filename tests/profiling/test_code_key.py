"""Issue 13: the cache key holds the workload's code, so an edited workload is measured again."""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

from seqpoint.cache import MeasurementCache
from seqpoint.profiling import ProfileConfig, profile_points

BODY = """
import torch
from seqpoint.workloads import load_workload

class Edited:
    def __init__(self):
        self.inner = load_workload("bert:tiny", {{"threads": 1}})
        self.name, self.config, self.model = "edited", self.inner.config, self.inner.model
    def make_batch(self, sig):
        return self.inner.make_batch(sig)
    def step(self, batch):
        return self.inner.step(batch) + {extra}

def make(**overrides):
    return Edited()
"""


def _load(tmp_path: Path, extra: str):
    (tmp_path / "edited_wl_mod.py").write_text(textwrap.dedent(BODY.format(extra=extra)))
    sys.modules.pop("edited_wl_mod", None)
    importlib.invalidate_caches()
    return importlib.import_module("edited_wl_mod").make()


def test_editing_the_workload_code_misses_the_cache(tmp_path, monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    cache = MeasurementCache(tmp_path / "c.sqlite")
    cfg = ProfileConfig(warmup=0, repeats=1)
    profile_points(_load(tmp_path, "0.0"), [(1, 8, 0)], cfg, cache=cache, progress=False)
    assert len(cache) == 1
    # The same code hits the cache ...
    profile_points(_load(tmp_path, "0.0"), [(1, 8, 0)], cfg, cache=cache, progress=False)
    assert len(cache) == 1
    # ... edited code does not.
    profile_points(_load(tmp_path, "1.0 * 0"), [(1, 8, 0)], cfg, cache=cache, progress=False)
    assert len(cache) == 2
    sys.modules.pop("edited_wl_mod", None)

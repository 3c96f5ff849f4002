"""torch.compile in a campaign: every fresh process compiles with empty caches of its own (audit
row 30: inductor's and Triton's caches, shared under the temp folder, made later workers and full
runs compile almost for free), and a static-shape workload that meets more shapes than dynamo
recompiles for is warned about (past the limit, steps run eager)."""

from __future__ import annotations

import os
import warnings

import pytest

from seqpoint.clocks import in_fresh_process
from seqpoint.exceptions import SeqPointWarning


def test_a_fresh_process_compiles_with_caches_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    first = in_fresh_process(os.getenv, "TORCHINDUCTOR_CACHE_DIR")
    second = in_fresh_process(os.getenv, "TORCHINDUCTOR_CACHE_DIR")
    assert first and second and first != second and "seqpoint-worker-" in first
    assert not os.path.exists(first)  # gone with the process's folder
    assert "seqpoint-worker-" in in_fresh_process(os.getenv, "TRITON_CACHE_DIR")


def test_caches_the_user_chose_are_kept(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """A user who points their runs at a shared, warm cache measures with it."""
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    assert in_fresh_process(os.getenv, "TORCHINDUCTOR_CACHE_DIR") == str(tmp_path)


def test_more_static_shapes_than_dynamo_recompiles_for_is_warned() -> None:
    pytest.importorskip("torch")
    import torch._dynamo

    from seqpoint.profiling import ProfileConfig, Profiler
    from seqpoint.workloads import load_workload

    name = "recompile_limit" if hasattr(torch._dynamo.config, "recompile_limit") else "cache_size_limit"
    points, config = [(1, 4, 0), (1, 6, 0)], ProfileConfig(warmup=0, repeats=1)
    # torch's own patch: pytest's monkeypatch deletes a config entry on undo, and later compiles fail
    with torch._dynamo.config.patch({name: 2}):
        static = load_workload("bert:tiny", {"compile": "true", "compile_backend": "eager", "compile_dynamic": "false"})
        with pytest.warns(SeqPointWarning, match=r"meets 3 shapes, more than torch._dynamo.config.recompile_limit = 2"):
            Profiler(static).measure(points, config)
        dynamic = load_workload("bert:tiny", {"compile": "true", "compile_backend": "eager"})
        with warnings.catch_warnings():
            warnings.simplefilter("error", SeqPointWarning)
            Profiler(dynamic).measure(points, config)  # one dynamic graph covers them
    assert getattr(torch._dynamo.config, name) > 2  # restored for the tests after this one

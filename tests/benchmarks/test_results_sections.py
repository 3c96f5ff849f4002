"""RESULTS.md holds each benchmark's section exactly as its script renders it from the
results stored under ``benchmarks/results/``: a section edited by hand, or a render changed
without rendering the section again, fails here (no benchmark is run)."""

from __future__ import annotations

import gzip
import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _script(name: str) -> Any:
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))  # the scripts import their helpers by name
    return importlib.import_module(name)


def _stored(name: str) -> Any:
    raw = (BENCH / "results" / name).read_bytes()
    return json.loads(gzip.decompress(raw) if name.endswith(".gz") else raw)


#: (RESULTS.md topic, the command that rendered it, its render from the stored results)
SECTIONS: list[tuple[str, str, Callable[[], str]]] = [
    ("paper_table", "paper_table.py --render-only",
     lambda: _script("_paper_render").render(_stored("paper_table.json"))),
    ("default_selection", "bench_default_selection.py --render",
     lambda: _script("bench_default_selection").render(_stored("bench_default_selection.json"))),
    ("bench_exact", "bench_exact.py --render", lambda: _script("bench_exact").render(_stored("bench_exact.json"), 10_000)),
    ("interval_coverage", "bench_interval_coverage.py --render",
     lambda: _script("bench_interval_coverage").render(_stored("bench_interval_coverage.json"))),
    ("bench_cold_default_allocator", "bench_cold.py --render",
     lambda: _script("bench_cold").render(_stored("bench_cold_default_allocator.json"))),
    ("speedups", "bench_speedups.py --render-only", lambda: _script("bench_speedups").render(_stored("speedups.json"))),
]


@pytest.mark.parametrize(("topic", "command", "render"), SECTIONS, ids=[s[0] for s in SECTIONS])
def test_section_is_what_its_script_renders(monkeypatch: pytest.MonkeyPatch, topic: str, command: str,
                                            render: Callable[[], str]) -> None:
    monkeypatch.setattr(sys, "argv", [f"benchmarks/{command.split()[0]}", *command.split()[1:]])
    text = (BENCH / "RESULTS.md").read_text()
    section = text.split(f"<!-- BEGIN {topic} -->\n", 1)[1].split(f"\n<!-- END {topic} -->", 1)[0]
    assert section == render().rstrip()

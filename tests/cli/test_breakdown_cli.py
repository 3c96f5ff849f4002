"""``seqpoint breakdown TRACE``: a user's Kineto trace by operation category, through the real CLI."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

#: The shared ``cli`` fixture (tests/conftest.py): ``(exit code, stdout, stderr)``.
Cli = Callable[[list[str]], tuple[int, str, str]]

DATA = Path(__file__).parents[1] / "profiling" / "data" / "kineto"
KERNEL = "triton_poi_fused_add_cos_sin_0"


def _trace(tmp_path: Path) -> Path:
    """One GEMM under aten::mm (3 µs) and a kernel nothing names (2 µs)."""
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 10},
              {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1,
               "dur": 1, "args": {"correlation": 1}},
              {"ph": "X", "cat": "kernel", "name": "nvjet_hsh_128x256", "pid": 0, "tid": 7, "ts": 20, "dur": 3,
               "args": {"correlation": 1}},
              {"ph": "X", "cat": "kernel", "name": "my_mystery_kernel", "pid": 0, "tid": 7, "ts": 30, "dur": 2,
               "args": {"correlation": 2}}]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_json_is_the_contract_and_output_writes_it(cli: Cli, tmp_path: Path) -> None:
    code, out, err = cli(["breakdown", str(DATA / "compiled_triton.json.gz"), "--json", "-o", str(tmp_path / "b.json")])
    assert (code, err) == (0, "")
    seconds = pytest.approx(1.76e-6)
    expected = {"total_s": seconds, "categories": {"elementwise": seconds},
                "kernels": [{"name": KERNEL, "category": "elementwise", "seconds": seconds, "count": 1}]}
    assert json.loads(out) == expected
    assert json.loads((tmp_path / "b.json").read_text()) == expected


def test_table_lists_categories_and_the_kernels_in_other(cli: Cli, tmp_path: Path) -> None:
    code, out, _ = cli(["breakdown", str(_trace(tmp_path))])
    assert code == 0
    lines = out.splitlines()
    assert any("gemm" in line and "3.0 µs" in line and "60.0%" in line for line in lines)
    assert any("other" in line and "2.0 µs" in line and "40.0%" in line for line in lines)
    assert any("total (kernel time)" in line and "5.0 µs" in line for line in lines)
    assert "Kernels in 'other'" in out and "my_mystery_kernel" in out


@pytest.mark.parametrize(("name", "content", "match"), [
    ("missing.json", None, "missing.json does not exist or is not a file"),
    ("list.json", "[]", "list.json: not a Kineto trace"),
    ("text.json", "hello", "text.json: line 1: invalid JSON"),
    ("cpu.json", '{"traceEvents": []}', "cpu.json: no GPU kernels in the trace"),
])
def test_bad_input_is_one_line_and_exit_2(cli: Cli, tmp_path: Path, name: str, content: str | None,
                                          match: str) -> None:
    if content is not None:
        (tmp_path / name).write_text(content)
    code, out, err = cli(["breakdown", str(tmp_path / name)])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("seqpoint: error: ") and match in err

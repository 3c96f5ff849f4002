"""``[profile] processes > 1`` on a user's own workload: a file spec rebuilt in each worker,
an object built in Python (or in a script's ``__main__``) sent pickled, each SeqPoint's
real lengths reaching the workers' ``make_batch``, and one line for what cannot travel."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from _tiny_workload import Tiny, TinyConfig  # noqa: E402  # importable by the workers: sys.path travels

from seqpoint.exceptions import ConfigError  # noqa: E402
from seqpoint.measurements import per_process_key  # noqa: E402
from seqpoint.profiling import ProfileConfig, Profiler, profile_points  # noqa: E402
from seqpoint.selection import SeqPoint, SeqPoints  # noqa: E402
from seqpoint.workloads import (  # noqa: E402
    BatchShape,
    UserWorkload,
    WorkloadConfig,
    WorkloadRecipe,
)

#: One drift-check step a worker: no noise estimate, so any drift would warn; not what is tested.
pytestmark = pytest.mark.filterwarnings("ignore::seqpoint.profiling.DriftWarning")

SRC = Path(__file__).resolve().parents[2] / "src"
P2 = ProfileConfig(processes=2, repeats=2, warmup=1, drift_steps=1)
#: Two SeqPoints of one signature with other lengths (two batches), and a second signature.
LENGTHS = {0: (12, 3), 5: (12, 7), 9: (6, 6, 2)}

#: The tiny workload's source: copied beside a workload file, pasted into a script.
TINY = (Path(__file__).parent / "_tiny_workload.py").read_text()


def _points() -> SeqPoints:
    return SeqPoints(method="seqpoint", n_iterations=3, points=tuple(
        SeqPoint(iteration=it, batch_size=2 if len(ls) == 2 else 3, seq_len=12, weight=1.0, lengths=ls)
        for it, ls in LENGTHS.items()))


def _seen(log: Path) -> dict[int, list[list[int]]]:
    """Process id → the exact lengths its ``build_batch`` got."""
    out: dict[int, list[list[int]]] = {}
    for line in log.read_text().splitlines():
        row = json.loads(line)
        out.setdefault(row["pid"], []).append(row["lengths"])
    return out


def _check(ms: Any, log: Path) -> None:
    """Every point measured in two worker processes, each of which got every point's lengths."""
    for m in ms.measurements:
        assert m.ok, m.message
        per = m.samples[per_process_key("time_s")]
        assert len(per) == 2 and all(v > 0 for v in per)
    seen = _seen(log)
    workers = {pid: got for pid, got in seen.items() if pid != os.getpid()}
    assert len(workers) == 2
    for got in workers.values():
        assert sorted(map(tuple, got)) == sorted(LENGTHS.values())


def test_a_file_workload_that_imports_its_sibling_is_rebuilt_in_each_worker(tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "tiny_common.py").write_text(TINY)  # a sibling of the workload file, imported by name
    (folder / "case_b.py").write_text("from tiny_common import Tiny, TinyConfig\n\n\n"
                                      "def build(**settings):\n    return Tiny(TinyConfig(**settings))\n")
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "tiny_common", raising=False)
    log = tmp_path / "seen.jsonl"
    recipe = WorkloadRecipe.of(f"{folder / 'case_b.py'}:build", {"threads": 1, "log": str(log)})
    wl = recipe.build()
    # Its builder keeps the recipe (a Campaign does): nothing is written onto the user's object.
    assert set(vars(wl)) == set(vars(Tiny(TinyConfig())))
    assert recipe.spec == f"{folder / 'case_b.py'}:build" and recipe.source_files == (str(folder / "case_b.py"),)
    profiler = Profiler(wl, recipe=recipe)
    _check(profiler.measure(_points(), P2), log)
    # The step window rebuilds it too, with each step's lengths.
    log.unlink()
    shapes = [BatchShape.of((2, 12, 0), [12, 5]), BatchShape.of((2, 12, 0), [4, 4])]
    window = profiler.window(shapes, start=0, timer="wall")
    assert window.signatures == ((2, 12, 0), (2, 12, 0)) and len(window.times_s) == 2
    assert [got for pid, got in _seen(log).items() if pid != os.getpid()] == [[[12, 5], [4, 4]]]


def test_a_user_workload_built_in_python_travels_pickled(tmp_path: Path) -> None:
    log = tmp_path / "seen.jsonl"
    wl = Tiny(TinyConfig(threads=1, log=str(log)))
    assert WorkloadRecipe.of_workload(wl) is None  # load_workload never saw it
    _check(profile_points(wl, _points(), P2, progress=False), log)


#: The script's own part, after the tiny workload's source (which opens with its imports).
SCRIPT = '''
import sys

from seqpoint.measurements import per_process_key
from seqpoint.profiling import ProfileConfig, profile_points
from seqpoint.selection import SeqPoint, SeqPoints

# No __main__ guard, no importable module: the workers get Tiny by value (cloudpickle).
wl = Tiny(TinyConfig(threads=1, log=sys.argv[1]))
points = SeqPoints(method="s", n_iterations=1, points=(
    SeqPoint(iteration=0, batch_size=2, seq_len=12, weight=1.0, lengths=(12, 3)),))
ms = profile_points(wl, points, ProfileConfig(processes=2, repeats=2, warmup=1, drift_steps=1), progress=False)
print(json.dumps([len(m.samples[per_process_key("time_s")]) for m in ms.measurements]))
'''


def test_a_workload_class_of_a_script_run_as_main_reaches_the_workers(tmp_path: Path) -> None:
    script, log = tmp_path / "train.py", tmp_path / "seen.jsonl"
    script.write_text(TINY + SCRIPT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, str(script), str(log)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [2]
    seen = _seen(log)
    assert len(seen) == 2 and all(got == [[12, 3]] for got in seen.values())  # the workers only


@dataclasses.dataclass(frozen=True, kw_only=True)
class _LockedConfig(WorkloadConfig):
    pass


class _Locked(UserWorkload):
    """A workload holding what no pickler can copy."""

    Config = _LockedConfig

    def build_model(self) -> Any:
        self.lock = threading.Lock()
        return torch.nn.Linear(2, 2)


def test_a_workload_that_does_not_pickle_is_one_line() -> None:
    with pytest.raises(ConfigError) as err:
        profile_points(_Locked(), [(2, 8, 0)], P2, progress=False)
    text = str(err.value)
    assert len(text.splitlines()) == 1
    assert text.startswith("[profile] processes > 1 sends the workload to fresh worker processes, but _Locked "
                           "does not pickle (TypeError: cannot pickle '_thread.lock' object)")
    assert text.endswith("give it as path/to/file.py:function (a function that builds it) so that each worker "
                         "builds its own, or set [profile] processes = 1.")


def test_a_workload_class_of_a_module_loaded_from_a_file_travels_by_value(tmp_path: Path) -> None:
    """A module loaded from a file by importlib (as a notebook, a test or a benchmark loads a
    script) is in sys.modules under a name no worker can import: its classes go by value."""
    import importlib.util

    from seqpoint.clocks import in_fresh_process
    from seqpoint.profiling import ShippedWorkload

    path = tmp_path / "users_job.py"
    path.write_text("class Job:\n    name = 'job'\n    config = {}\n    def make_batch(self, sig):\n"
                    "        return sig\n    def step(self, batch):\n        return float(sum(batch))\n")
    spec = importlib.util.spec_from_file_location("users_job_not_on_the_path", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        shipped = ShippedWorkload.of(module.Job())
    finally:
        del sys.modules[spec.name]
    assert in_fresh_process(_step_of, shipped) == 7.0


def _step_of(shipped: Any) -> float:
    workload = shipped.build()
    return workload.step(workload.make_batch((2, 5)))

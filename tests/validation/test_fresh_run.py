import subprocess
import sys

import numpy as np
import pytest

from seqpoint.exceptions import ConfigError

pytest.importorskip("torch")

from seqpoint.schedule import IterationSchedule
from seqpoint.validation import run_full_fresh


def test_fresh_process_runs_time_every_iteration():
    s = IterationSchedule.from_columns({"batch_size": [2, 2, 3], "seq_len": [40, 64, 40]})
    seen = []
    fr = run_full_fresh("deepspeech2:tiny", {"threads": 1}, s, runs=2,
                        on_progress=lambda r, d: seen.append((r, d)))
    assert fr.iteration_s.shape == (2, 3)
    assert np.all(fr.iteration_s > 0)
    assert np.all(fr.wall_s >= fr.totals_s)
    assert seen and seen[-1][0] == 1


def test_a_childs_bad_input_is_the_parents_config_error():
    """The child's ConfigError comes back as one: the user's one line, not a worker crash."""
    s = IterationSchedule.from_columns({"batch_size": [2], "seq_len": [40]})
    with pytest.raises(ConfigError, match=r"^Unknown workload setting 'no_such_field'"):
        run_full_fresh("deepspeech2:tiny", {"no_such_field": 1}, s, runs=1)


def test_a_childs_failure_names_its_last_error_line() -> None:
    """A crash keeps its exit code and its last ``XxxError:`` line, even when advice follows it
    (CUDA appends "For debugging consider passing CUDA_LAUNCH_BLOCKING=1" after the error)."""
    from seqpoint.clocks import in_fresh_process

    with pytest.raises(RuntimeError) as exc:
        in_fresh_process(exec, "raise RuntimeError('CUDA error: an illegal memory access was encountered\\n"
                               "For debugging consider passing CUDA_LAUNCH_BLOCKING=1')")
    assert str(exc.value) == ("A worker process failed (exit 1): RuntimeError: "
                              "CUDA error: an illegal memory access was encountered")
    with pytest.raises(RuntimeError, match=r"failed \(exit -9\): "):
        in_fresh_process(exec, "import os; os.kill(os.getpid(), 9)")
    with pytest.raises(ConfigError, match=r"^use --threads 2$"):
        in_fresh_process(exec, "from seqpoint.exceptions import ConfigError; raise ConfigError('use --threads 2')")


# --- scripts, and children that die ------------------------------------

_SCHEDULE = (
    "from seqpoint.schedule import IterationSchedule\n"
    "s = IterationSchedule.from_columns({'batch_size': [2, 3], 'seq_len': [40, 41]})\n"
)

# A torch-free user workload, so that a child process starts in well under a second.
_USER_WORKLOAD = """
import os
import signal


class Toy:
    name = "toy"

    def __init__(self, die_at, how):
        self.config = {"die_at": die_at, "how": how}
        self.calls = 0

    def make_batch(self, signature):
        return signature

    def step(self, batch):
        self.calls += 1
        if self.calls == self.config["die_at"]:
            if self.config["how"] == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(3)
        return 0.0


def make(die_at=0, how="exit"):
    return Toy(int(die_at), how)
"""


def _run_script(tmp_path, body: str) -> subprocess.CompletedProcess:
    (tmp_path / "fr_toy_wl.py").write_text(_USER_WORKLOAD)
    script = tmp_path / "script.py"
    script.write_text(_SCHEDULE + "from seqpoint.validation import run_full_fresh\n" + body)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)


def test_a_script_without_a_main_guard_runs(tmp_path):
    # The fresh process imports the run by name; it never re-runs the calling script.
    proc = _run_script(tmp_path, "print(run_full_fresh('fr_toy_wl:make', {}, s, runs=2, warmup=1).iteration_s.shape)\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "(2, 2)"


@pytest.mark.parametrize(
    ("how", "match"),
    [
        ("kill", r"full run 1 of fr_toy_wl:make failed \(exit -9\): .*; give it more memory"),
        ("exit", r"full run 1 of fr_toy_wl:make failed \(exit 3\): .*; run it in this process"),
    ],
)
def test_child_that_dies_names_its_exit_code(tmp_path, monkeypatch, how, match):
    from seqpoint.exceptions import SeqPointError

    (tmp_path / "fr_toy_wl.py").write_text(_USER_WORKLOAD)
    monkeypatch.syspath_prepend(str(tmp_path))  # the fresh process gets this sys.path
    s = IterationSchedule.from_columns({"batch_size": [2, 3], "seq_len": [40, 41]})
    with pytest.raises(RuntimeError, match=match) as info:
        run_full_fresh("fr_toy_wl:make", {"die_at": 3, "how": how}, s, runs=1, warmup=1)
    assert isinstance(info.value, SeqPointError)  # the CLI prints it as one line
    assert "\n" not in str(info.value)

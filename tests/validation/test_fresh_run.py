import subprocess
import sys

import numpy as np
import pytest

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


def test_fresh_process_failure_is_reported():
    s = IterationSchedule.from_columns({"batch_size": [2], "seq_len": [40]})
    with pytest.raises(RuntimeError, match="failed: .*no_such_field"):
        run_full_fresh("deepspeech2:tiny", {"no_such_field": 1}, s, runs=1)


# --- the spawn start method and children that die ------------------------------------

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


def test_unguarded_script_is_a_one_line_config_error(tmp_path):
    proc = _run_script(tmp_path, "run_full_fresh('fr_toy_wl:make', {}, s, runs=1)\n")
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("seqpoint.exceptions.ConfigError: run_full_fresh('fr_toy_wl:make')")
    assert "script.py (line 4)" in last
    assert 'if __name__ == "__main__":' in last and "run_full_schedule" in last
    assert "bootstrapping" not in proc.stderr


def test_unguarded_call_through_a_function_is_caught_too(tmp_path):
    body = "def main():\n    run_full_fresh('fr_toy_wl:make', {}, s, runs=1)\n\nmain()\n"
    proc = _run_script(tmp_path, body)
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("seqpoint.exceptions.ConfigError:") and "(line 7)" in last


def test_guard_the_check_cannot_see_fails_in_the_child_as_a_config_error(tmp_path):
    # `if __name__:` is always true, so the child re-runs the call while bootstrapping.
    body = "if __name__:\n    run_full_fresh('fr_toy_wl:make', {}, s, runs=1)\n"
    proc = _run_script(tmp_path, body)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("seqpoint.exceptions.ConfigError: The fresh process of full run 1")
    assert "(exit code 1) before the run started" in last
    assert 'if __name__ == "__main__":' in last
    assert "bootstrapping" not in proc.stderr


def test_guarded_script_runs(tmp_path):
    body = ("def main():\n    fr = run_full_fresh('fr_toy_wl:make', {}, s, runs=2, warmup=1)\n"
            "    print(fr.iteration_s.shape)\n\nif __name__ == '__main__':\n    main()\n")
    proc = _run_script(tmp_path, body)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "(2, 2)"


@pytest.mark.parametrize(
    ("how", "match"),
    [
        ("kill", r"died after 1 of 2 steps \(exit code -9, SIGKILL \(killed, e\.g\. by the "
                 r"out-of-memory killer\)\); give it more memory"),
        ("exit", r"died after 1 of 2 steps \(exit code 3\); run it in this process with "
                 r"run_full_schedule"),
    ],
)
def test_child_that_dies_names_its_exit_code(tmp_path, monkeypatch, how, match):
    from seqpoint.exceptions import SeqPointError

    (tmp_path / "fr_toy_wl.py").write_text(_USER_WORKLOAD)
    monkeypatch.syspath_prepend(str(tmp_path))  # spawn hands sys.path to the child
    s = IterationSchedule.from_columns({"batch_size": [2, 3], "seq_len": [40, 41]})
    with pytest.raises(RuntimeError, match=match) as info:
        run_full_fresh("fr_toy_wl:make", {"die_at": 3, "how": how}, s, runs=1, warmup=1)
    assert isinstance(info.value, SeqPointError)  # the CLI prints it as one line
    assert "\n" not in str(info.value)

"""ProcessState: what a process does to a step's speed besides the step (threads, TF32, cuDNN
flags, allocator variables) is carried into every worker, checked there, and fingerprinted."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from seqpoint.exceptions import ConfigError
from seqpoint.measurements import ProcessState, environment_fingerprint

torch = pytest.importorskip("torch")


@pytest.fixture
def medium_precision() -> Iterator[None]:
    """This process's matmul precision set away from a fresh process's default ("highest")."""
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium")
    yield
    torch.set_float32_matmul_precision(before)


def test_the_state_round_trips_through_plain_data(medium_precision: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    state = ProcessState.capture()
    data = json.loads(json.dumps(state.to_dict()))
    assert data["matmul_precision"] == "medium" and data["env.PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert ProcessState.from_dict(data) == state
    assert "matmul precision medium (TF32 matmuls on)" in state.summary()


def test_a_fresh_process_given_the_state_has_it(medium_precision: None) -> None:
    """``apply`` in a fresh interpreter (whose defaults differ) makes ``capture`` equal."""
    given = ProcessState.capture()
    script = ("import json, sys, torch\nfrom seqpoint.measurements import ProcessState\n"
              "before = ProcessState.capture()\ngiven = ProcessState.from_dict(json.loads(sys.argv[1]))\n"
              "given.apply()\nProcessState.capture().check(given, where='the child')\n"
              "print(json.dumps(before.differences(given)))")
    out = subprocess.run([sys.executable, "-c", script, json.dumps(given.to_dict())], capture_output=True,
                         text=True, check=True, timeout=120)
    assert any(d.startswith("matmul_precision: 'highest' ('medium')") for d in json.loads(out.stdout))


def test_a_process_in_another_state_is_refused_in_one_line() -> None:
    state = ProcessState.capture()
    other = ProcessState.from_dict({**state.to_dict(), "threads": state.threads + 3, "deterministic": True})
    with pytest.raises(ConfigError) as exc:
        other.check(state, where="A worker process")
    msg = str(exc.value)
    assert msg.startswith("A worker process runs with another process state than the process it measures for (")
    assert f"threads: {state.threads + 3} ({state.threads})" in msg and "deterministic: True (False)" in msg
    assert "\n" not in msg


def test_workers_run_in_the_campaigns_state(medium_precision: None) -> None:
    """Worker processes start with a fresh interpreter's defaults; they measure in the state the
    campaign's process had (else TF32 or thread settings would differ between the two)."""
    from seqpoint.profiling import ProfileConfig, Profiler
    from seqpoint.testing import ToyWorkload

    ms = Profiler(ToyWorkload(ToyWorkload.Config(threads=1))).measure(
        [(2, 8, 0), (2, 12, 0)], ProfileConfig(warmup=1, repeats=2, processes=2))
    assert all(m.ok for m in ms.measurements), [m.message for m in ms.measurements]
    assert ms.environment["process"]["matmul_precision"] == "medium"


def test_the_fingerprint_keys_the_process_state(medium_precision: None) -> None:
    """Cached points measured with TF32 on are not reused with it off, and on a GPU the host's
    thread count (which does not time a kernel) is not part of the key."""
    cpu = environment_fingerprint("cpu")
    assert cpu["process"]["matmul_precision"] == "medium" and "threads" in cpu["process"]
    torch.set_float32_matmul_precision("highest")
    assert environment_fingerprint("cpu")["process"] != cpu["process"]

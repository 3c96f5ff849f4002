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

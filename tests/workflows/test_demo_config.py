"""The demo's two configs: valid, stored as a user's would be, and timed by the protocol
``benchmarks/bench_cold.py`` validated on the demo's whole run (3 worker processes)."""

from __future__ import annotations

import tomllib
import warnings

from seqpoint.exceptions import SeqPointWarning
from seqpoint.workflows import RunConfig, build_schedule, demo_configs


def _iterations(cfg: RunConfig) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeqPointWarning)
        return len(build_schedule(cfg.lengths, cfg.batching))


def test_demo_configs_round_trip_through_toml(tmp_path):
    for cfg in demo_configs(tmp_path):
        assert RunConfig.from_dict(tomllib.loads(cfg.to_toml())) == cfg


def test_demo_checks_its_run_with_the_same_model_selection_and_protocol(tmp_path):
    whole, check = demo_configs(tmp_path)
    assert (_iterations(whole), _iterations(check)) == (8920, 376)
    assert whole.profile.processes == 3
    # The check speaks for the run only if both profile the same model the same way.
    assert whole.workload == check.workload
    assert whole.selection == check.selection
    assert whole.profile == check.profile
    assert check.validation.runs >= 2  # the noise floor

import tomllib

import pytest

from seqpoint.exceptions import ConfigError
from seqpoint.workflows import (
    RunConfig,
    SelectionSection,
    WorkloadSection,
    apply_overrides,
    load_config,
)


def test_toml_round_trip():
    cfg = RunConfig(
        name="x",
        selection=SelectionSection(max_error=0.01),
        workload=WorkloadSection(name="bert:tiny", set={"threads": 1, "dtype": "bf16"}),
    )
    assert RunConfig.from_dict(tomllib.loads(cfg.to_toml())) == cfg
    assert cfg.selection.n_points is None


def test_load_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "none.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[batching\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(bad)
    bad.write_text("[batching]\npolcy = 'x'\n")
    with pytest.raises(ConfigError, match=r"Unknown key\(s\) 'polcy'.*Valid keys: epochs, params, policy, seed"):
        load_config(bad)
    bad.write_text("[batchin]\npolicy = 'x'\n")
    with pytest.raises(ConfigError, match="Unknown key 'batchin'.*Valid keys"):
        load_config(bad)
    bad.write_text("[batching]\nepochs = 0\n")
    with pytest.raises(ConfigError, match="'epochs' parameter of \\[batching\\] must be an int >= 1"):
        load_config(bad)
    bad.write_text("[selection]\nmax_error = 2.0\n")
    with pytest.raises(ConfigError, match="fraction"):
        load_config(bad)


def test_overrides():
    cfg = apply_overrides(RunConfig(), ["batching.epochs=3", "workload.set.threads=2", "report.out=x"])
    assert cfg.batching.epochs == 3
    assert cfg.workload.set == {"threads": 2}
    assert cfg.report.out == "x"
    with pytest.raises(ConfigError, match="section.key=value"):
        apply_overrides(RunConfig(), ["epochs"])
    with pytest.raises(ConfigError, match="not a section"):
        apply_overrides(RunConfig(), ["nope.x=1"])


def test_executed_steps_count_every_step():
    from seqpoint.validation import reduction_factor
    from seqpoint.workflows import ProfileSection

    timed_only = RunConfig(profile=ProfileSection(warmup=2, repeats=5, metrics=("time", "flops")))
    assert timed_only.profile.steps_per_point == (2, 5, 0)
    w, r, p = timed_only.profile.steps_per_point
    assert reduction_factor(70, 10, warmup=w, repeats=r, profiled=p) == 1.0  # 70 steps
    with_breakdown = RunConfig(profile=ProfileSection(warmup=2, repeats=5, metrics=("time", "breakdown")))
    w, r, p = with_breakdown.profile.steps_per_point
    assert reduction_factor(80, 10, warmup=w, repeats=r, profiled=p) == 1.0  # the profiled step counts too

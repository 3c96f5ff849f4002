import tomllib
from pathlib import Path

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
    with pytest.raises(ConfigError, match=r"Unknown key\(s\) 'polcy'.*Valid keys: epochs, params, policy, rank, schedule, seed, shard, world_size"):
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
    assert timed_only.profile.point_steps() == (2, 5, 0)
    w, r, p = timed_only.profile.point_steps()
    assert reduction_factor(70, 10, warmup=w, repeats=r, profiled=p) == 1.0  # 70 steps
    with_breakdown = RunConfig(profile=ProfileSection(warmup=2, repeats=5, metrics=("time", "breakdown")))
    w, r, p = with_breakdown.profile.point_steps()
    assert reduction_factor(80, 10, warmup=w, repeats=r, profiled=p) == 1.0  # the profiled step counts too


@pytest.mark.parametrize(
    ("toml", "match"),
    [
        ("[batching]\nparams = { batch_size = 0 }\n",
         r"\[batching\]: The 'batch_size' parameter of SortaGradPolicy must be an int >= 1"),
        ("[batching]\nparams = { colour = 1 }\n", r"\[batching\]: Policy 'sortagrad' has no parameter 'colour'"),
        ("[selection]\nmethod = 'nope'\n", r"\[selection\]: Unknown selection method 'nope'"),
        ("[selection]\nparams = { grouping = 1, colour = 2 }\n", r"\[selection\]: Unknown parameter\(s\) 'colour'"),
        ("[workload]\nset = { threads = 'two' }\n",
         r"\[workload\]: The 'threads' parameter of DeepSpeech2Config must be an int. Got 'two'"),
        ("[workload]\nset = { threads = 1.5 }\n", r"'threads' parameter of DeepSpeech2Config must be an int"),
        ("[workload]\nname = 'bert:huge'\n", r"\[workload\]: Unknown preset 'huge'"),
        ("[profile]\nrepeats = 0\n", r"\[profile\]: The 'repeats' parameter of ProfileSection must be an int >= 1"),
        ("[profile]\ntimer = 'sundial'\n", r"\[profile\]: Unknown timer 'sundial'"),
        ("[profile]\nmetrics = ['speed']\n", r"\[profile\]: Unknown metric 'speed'"),
        ("[profile]\nuse_cache = 'yes'\n", r"The 'use_cache' parameter of \[profile\] must be true or false"),
        ("[validation]\nbaselines = ['nope']\n", r"\[validation\]: Unknown selection method 'nope'"),
        ("[validation]\nruns = 0\n", r"The 'runs' parameter of \[validation\] must be an int >= 1"),
        ("[lengths]\nformat = 'xml'\n", r"The 'format' parameter of \[lengths\] must be one of"),
        ("[report]\nhtml = 1\n", r"The 'html' parameter of \[report\] must be true or false. Got 1"),
    ],
)
def test_bad_values_fail_at_load_naming_the_section(tmp_path, toml, match):
    path = tmp_path / "c.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError, match=match) as info:
        load_config(path)
    assert str(info.value).startswith(str(path))


def test_overrides_use_the_one_set_grammar():
    cfg = apply_overrides(RunConfig(), [
        "workload.set.dtype=bf16", "batching.params.batch_size=8", "batching.policy=fixed",
        "profile.metrics=['time']", "selection.max_error=0.01", "report.plots=false",
    ])
    assert cfg.workload.set == {"dtype": "bf16"}
    assert cfg.batching.params == {"batch_size": 8} and cfg.batching.policy == "fixed"
    assert cfg.profile.metrics == ("time",) and cfg.profile.harness.metrics == ("time",)
    assert cfg.selection.max_error == 0.01 and cfg.selection.n_points is None
    assert cfg.report.plots is False
    with pytest.raises(ConfigError, match=r"overrides: \[batching\]: The 'batch_size' parameter"):
        apply_overrides(RunConfig(), ["batching.params.batch_size=0"])
    with pytest.raises(ConfigError, match=r"\(--set-b\) must look like section.key=value"):
        apply_overrides(RunConfig(), ["epochs=2"], option="--set-b")


def test_profile_section_is_the_harness_config_plus_the_cache():
    from seqpoint.profiling import ProfileConfig
    from seqpoint.workflows import ProfileSection

    sec = ProfileSection(warmup=1, repeats=3, timer="cpu", cache="x.sqlite", use_cache=False)
    assert isinstance(sec, ProfileConfig)
    # The cache settings stay out of the harness config (and so out of the cache key).
    assert sec.harness == ProfileConfig(warmup=1, repeats=3, timer="cpu",
                                        metrics=("time", "flops", "breakdown", "memory"))
    assert type(sec.harness) is ProfileConfig


@pytest.mark.parametrize(
    ("toml", "match"),
    [
        ('[profile]\nuse_cache = "false"\n', r"'use_cache' parameter of \[profile\] must be true or false\. Got 'false'"),
        ("[report]\nplots = -1\n", r"'plots' parameter of \[report\] must be true or false\. Got -1"),
        ("[batching]\npolicy = []\n", r"'policy' parameter of \[batching\] must be a str\. Got \[\]"),
        ("[workload]\nname = 5\n", r"'name' parameter of \[workload\] must be a str\. Got 5"),
        ("[batching]\nepochs = 1.5\n", r"'epochs' parameter of \[batching\] must be an int >= 1 and <= 10,000\. Got 1\.5"),
        ("[batching]\nepochs = true\n", r"'epochs' parameter of \[batching\] must be an int"),
        ("[batching]\nepochs = 1_000_000_000\n", r"must be an int >= 1 and <= 10,000\. Got 1000000000"),
        ("[batching]\nepochs = 1e29\n", r"must be an int >= 1 and <= 10,000"),
        ('[batching]\nparams = "x"\n', r"'params' parameter of \[batching\] must be a table"),
        ('[workload]\nset = "x"\n', r"'set' parameter of \[workload\] must be a table"),
        ("[profile]\ncache = 5\n", r"'cache' parameter of \[profile\] must be a non-empty path"),
        ('[report]\nout = "a\\u0000b"\n', r"'out' parameter of \[report\] must be a non-empty path without NUL"),
        ("name = 5\n", r"'name' of .* must be a non-empty string"),
        ("[validation]\nepochs = 100000\n", r"'epochs' parameter of \[validation\] must be an int >= 1 and <= 10,000 or None"),
        ("a = " + "[" * 100_000, r"invalid TOML|nested too deeply"),
    ],
)
def test_config_values_are_strict(toml: str, match: str, tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError, match=match) as info:
        load_config(path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        (__import__("gzip").compress(b"[batching]\nepochs = 2\n", mtime=0), r"must be UTF-8 text; this is a gzip-compressed file"),
        ("[batching]\nepochs = 2\n".encode("utf-16"), r"UTF-16"),
    ],
)
def test_config_must_be_utf8(raw: bytes, match: str, tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_bytes(raw)
    with pytest.raises(ConfigError, match=match):
        load_config(path)


def test_config_with_cr_line_ends_reads(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_bytes(b"[batching]\repochs = 2\r")
    assert load_config(path).batching.epochs == 2


@pytest.mark.parametrize(("toml", "match"), [
    ("[lengths]\nsubset_seed = 3\n", r"c.toml: \[lengths\] subset_seed is now \[lengths\] seed; use the new name\."),
    ("[batching]\ninterconnect = \"pcie4\"\n", r"\[batching\] interconnect is now \[projection\] interconnect"),
    ("[selection]\ncost = \"tokens\"\n", r"\[selection\] cost is now \[selection\] proxy"),
    ("[selection]\nparams = {cost = \"tokens\"}\n", r"\[selection\] params.cost is now \[selection\] proxy"),
    ("[validation]\ninterleave = false\n", r"\[validation\] interleave is now \[validation\] between_workers"),
])
def test_a_renamed_key_is_refused_with_its_new_name(toml: str, match: str, tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text(toml)
    with pytest.raises(ConfigError, match=match):
        load_config(cfg)


@pytest.mark.parametrize(("dotted", "new"), [("lengths.subset_seed=4", r"\[lengths\] seed"),
                                             ("selection.cost_device=cpu", r"\[selection\] proxy_device")])
def test_set_refuses_a_renamed_key_with_its_new_name(dotted: str, new: str) -> None:
    with pytest.raises(ConfigError, match=rf"--set overrides: \[\w+\] \w+ is now {new}; use the new name"):
        apply_overrides(RunConfig(), [dotted])


def test_the_instructions_timer_refuses_what_it_cannot_count(tmp_path, capsys):
    from seqpoint.cli import main
    from seqpoint.workflows import ProfileSection, speedup

    with pytest.raises(ConfigError, match="cold_window times steps in seconds"):
        ProfileSection(timer="instructions", cold_window=8)
    cfg = apply_overrides(RunConfig(profile=ProfileSection(timer="instructions")), [f"report.out={tmp_path / 'out'}"])
    clock = apply_overrides(cfg, ["profile.timer=wall"])
    with pytest.raises(ConfigError, match="one unit"):  # instructions over seconds means nothing
        speedup(clock, cfg)
    # A recorded trace is in seconds: one line, exit 2, before anything is measured.
    (tmp_path / "c.toml").write_text(cfg.to_toml())
    with pytest.raises(SystemExit) as info:
        main(["validate", str(tmp_path / "c.toml"), "--trace", str(tmp_path / "trace.json")])
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2 and "\n" not in err and "compares with runs recorded in seconds" in err
    assert not (tmp_path / "out").exists()  # refused before a run folder was made

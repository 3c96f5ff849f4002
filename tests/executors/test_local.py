"""The serial executor is today's path; job resources come from the workload config."""

from __future__ import annotations

import pytest

from seqpoint.exceptions import ConfigError
from seqpoint.executors import Executor, Job, LocalExecutor, RayExecutor
from seqpoint.profiling import ProfileConfig, profile_points
from seqpoint.workloads import load_workload

FLOPS = ProfileConfig(metrics=("flops",))


def test_local_executor_is_profile_points() -> None:
    pts = [(2, 20, 0), (3, 31, 0), (2, 20, 0)]
    jobs = [
        Job(workload="deepspeech2:tiny", config=FLOPS, points=pts),
        Job(workload="deepspeech2:tiny", overrides={"rnn_hidden": "48"}, config=FLOPS, points=pts[:1]),
    ]
    got = LocalExecutor().profile(jobs)
    assert isinstance(LocalExecutor(), Executor)
    assert [len(ms.measurements) for ms in got] == [3, 1]
    want = profile_points(load_workload("deepspeech2:tiny"), pts, FLOPS, progress=False)
    assert got[0] == want
    assert got[1].config["rnn_hidden"] == 48
    assert got[1].measurements[0].metrics["flops"] != got[0].measurements[0].metrics["flops"]


def test_a_jobs_task_resources_follow_the_workload_config() -> None:
    assert Job(workload="bert:tiny").resources() == ("cpu", 1)
    assert Job(workload="bert:tiny", overrides={"threads": "3"}).resources() == ("cpu", 3)
    assert Job(workload="bert:tiny", overrides={"threads": 0}).resources() == ("cpu", 1)
    cuda = Job(workload="gnmt:tiny", overrides={"device": "cuda", "threads": 4})
    assert cuda.resources() == ("cuda", 1)
    assert Job(workload="pkg.mod:fn", overrides={"threads": 2}).resources() == ("cpu", 2)
    # a device decided inside the user's factory is said by the job
    assert Job(workload="pkg.mod:fn", device="cuda").resources() == ("cuda", 1)
    assert Job(workload=load_workload("bert:tiny", {"threads": 2})).resources() == ("cpu", 2)


def test_a_jobs_task_resources_reject_bad_settings() -> None:
    with pytest.raises(ConfigError, match="Unknown preset 'huge' of workload 'bert'"):
        Job(workload="bert:huge").resources()
    with pytest.raises(ConfigError, match="Unknown workload setting 'hiden'"):
        Job(workload="bert:tiny", overrides={"hiden": 1}).resources()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_cpus": 0}, "The 'num_cpus' parameter of RayExecutor must be an int >= 1 or None. Got 0."),
        ({"points_per_task": 0}, "The 'points_per_task' parameter of RayExecutor must be"),
        ({"max_retries": -1}, "The 'max_retries' parameter of RayExecutor must be an int >= 0"),
        ({"address": 6379}, "The 'address' parameter of RayExecutor must be a str or None"),
    ],
)
def test_ray_executor_checks_its_parameters(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        RayExecutor(**kwargs)  # type: ignore[arg-type]


def test_unreachable_address_is_one_clear_line() -> None:
    job = Job(workload="deepspeech2:tiny", config=FLOPS, points=[(2, 20, 0)])
    with pytest.raises(ConfigError, match=r"Cannot reach a Ray cluster at '127.0.0.1:1' \(.*\); check the address") as err:
        RayExecutor(address="127.0.0.1:1").profile([job])
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="The Ray address 'headnode' is not host:port"):
        RayExecutor(address="headnode").profile([job])

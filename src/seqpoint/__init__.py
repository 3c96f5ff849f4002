"""seqpoint: project whole-run training time of sequence models from a few SeqPoints.

The four stages, as the ``seqpoint`` command runs them::

    lengths = seqpoint.read_lengths("lengths.jsonl")                  # per-sample lengths
    schedule = seqpoint.replay(lengths, "bucket", batch_size=32, epochs=10)   # schedule
    points = seqpoint.make_selector("seqpoint", n_points=10).fit(schedule).to_seqpoints(schedule)  # select
    measurements = seqpoint.profile_points(workload, points)          # profile (imports torch)
    print(seqpoint.project(schedule, points, measurements).totals)    # project

or all of them in one call, :func:`project_job`. A run config (the TOML of ``seqpoint
run``) is :func:`seqpoint.workflows.load_config` and :func:`seqpoint.workflows.run`; each
stage's package (``seqpoint.batching``, ``seqpoint.selection`` ...) has the rest of its API,
and :mod:`seqpoint.testing` has toy inputs for tests. The error types here are the ones a
caller catches; :mod:`seqpoint.exceptions` has every error and warning type.

``import seqpoint`` needs numpy only: the stage entry points are loaded on first use, and
torch, pyarrow and matplotlib only by the stages that use them.
"""

from seqpoint._live import Reporter
from seqpoint._version import __version__
from seqpoint.exceptions import ConfigError, InputError, SeqPointError, SeqPointWarning

__all__ = ["ConfigError", "InputError", "Reporter", "SeqPointError", "SeqPointWarning", "__version__", "make_selector",
           "profile_points", "project", "project_job", "read_lengths", "replay"]


def __getattr__(name: str) -> object:
    # Loaded on first use: the stages (workflows above all) import far more than numpy.
    if name not in __all__:
        raise AttributeError(f"module 'seqpoint' has no attribute {name!r}")
    from seqpoint.batching import replay
    from seqpoint.profiling import profile_points
    from seqpoint.projection import project
    from seqpoint.selection import make_selector
    from seqpoint.traces import read_lengths
    from seqpoint.workflows import project_job

    globals().update(make_selector=make_selector, profile_points=profile_points, project=project,
                     project_job=project_job, read_lengths=read_lengths, replay=replay)
    return globals()[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

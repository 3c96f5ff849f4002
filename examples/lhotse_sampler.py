"""Turn a real lhotse DynamicBucketingSampler into a seqpoint schedule and project the run.

Run from the repository root: ``python examples/lhotse_sampler.py`` (CPU, under a minute).
The lines a user adds are marked ``# seqpoint``; the CutSet stands in for the user's
manifest (metadata only: no audio file exists or is read), and ``ctc_workload.py`` for the
user's acoustic model (its batches get every utterance's real number of frames).
"""

import random

from lhotse import AudioSource, CutSet, MonoCut, Recording
from lhotse.dataset import DynamicBucketingSampler

from seqpoint.integrations.lhotse import schedule_from_sampler  # seqpoint
from seqpoint.schedule import summarize
from seqpoint.workflows import project_job  # seqpoint


def users_cuts(n: int = 2000) -> CutSet:
    rng = random.Random(0)
    cuts = []
    for i in range(n):
        d = round(rng.uniform(1.0, 20.0), 2)
        rec = Recording(id=f"utt{i}", sources=[AudioSource(type="file", channels=[0], source=f"utt{i}.flac")],
                        sampling_rate=16000, num_samples=int(d * 16000), duration=d)
        cuts.append(MonoCut(id=f"utt{i}", start=0.0, duration=d, channel=0, recording=rec))
    return CutSet.from_cuts(cuts)


def main() -> None:
    sampler = DynamicBucketingSampler(users_cuts(), max_duration=200.0, shuffle=True, seed=0,
                                      num_buckets=10, world_size=2, rank=0)

    schedule = schedule_from_sampler(sampler, epochs=2, frame_shift=0.01)  # seqpoint
    print(summarize(schedule))
    result = project_job(schedule, "examples/ctc_workload.py:CTCModel", n_points=8)  # seqpoint
    print(result)
    for p in result.seqpoints.points:
        print(f"SeqPoint iteration {p.iteration:4d}: {p.batch_size:3d} cuts x {p.seq_len:5d} frames, "
              f"weight {p.weight:.1f}")


if __name__ == "__main__":
    main()

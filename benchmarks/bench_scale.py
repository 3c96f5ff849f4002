"""Scale: schedule and selection of a 100M-iteration, 8-rank run in bounded memory.

800M rank rows do not fit as a table (9 int64 columns: 58 GB), and nothing downstream
needs them as one: selection works on unique signatures with counts, projection on a
cost per signature. The run is streamed:

1. One epoch is replayed exactly with a real policy (``bucket``, batches dealt
   round-robin to 8 ranks) over 10M sample lengths (LibriSpeech dev-clean's length mix
   drawn with replacement), giving every batch's signature id.
2. The later epochs reshuffle those batches (a seeded permutation each, as ``bucket`` does),
   streamed in chunks of epochs: per chunk, the rank rows' signature ids are counted (the
   whole run's signature table) and each step's maximum over its ranks of a per-signature
   cost (the attention proxy, as the projection's pass) is summed: memory is one chunk.
3. The SeqPoint selector is fitted on one epoch's rank rows (the run's signature mix:
   every epoch holds the same batches) and its weights scaled to the run.

Prints the wall time of each part and the peak RSS (goal: 30 s and a few GB). Usage:
``.venv/bin/python benchmarks/bench_scale.py [--quick] [--steps N] [--ranks N]``
(``--quick``: 1M steps; the default: 100M steps, 8 ranks).
"""

from __future__ import annotations

import resource
import time

import numpy as np

from _results import bench_parser, header, write_section
from _results import table as md_table
from seqpoint.batching import replay
from seqpoint.schedule import signature_table
from seqpoint.selection import SeqPointSelector
from seqpoint.traces import from_array, read_lengths


def main() -> None:
    parser = bench_parser(__doc__, quick="1M steps")
    parser.add_argument("--steps", type=int, default=None, help="training steps (default 100M)")
    parser.add_argument("--ranks", type=int, default=8, help="data-parallel ranks")
    parser.add_argument("--samples", type=int, default=10_000_000, help="samples per epoch")
    parser.add_argument("--chunk-epochs", type=int, default=8, help="epochs streamed per chunk")
    args = parser.parse_args()
    steps = args.steps or (1_000_000 if args.quick else 100_000_000)
    w = args.ranks
    t_all = time.perf_counter()

    t0 = time.perf_counter()
    base = read_lengths("bundled:librispeech-dev-clean")
    rng = np.random.default_rng(0)
    lengths = from_array(base.src[rng.integers(0, base.n_samples, size=args.samples)])
    epoch = replay(lengths, "bucket", batch_size=8, num_buckets=30, seed=0, world_size=w)
    t_replay = time.perf_counter() - t0

    t0 = time.perf_counter()
    flat = epoch.rank_rows()
    table = signature_table(flat)
    batches = table.inverse.astype(np.int32)  # the epoch's rank rows in dealt order; later epochs permute them
    steps_per_epoch, m, sigs = epoch.n_steps, len(table), table.signatures
    cost = (sigs[:, 0].astype(np.float64) * sigs[:, 1].astype(np.float64) ** 2).astype(np.float32)
    counts, max_cost_sum, done, e = np.zeros(m, dtype=np.int64), 0.0, 0, 1
    while done < steps:
        take = min(args.chunk_epochs, -(-(steps - done) // steps_per_epoch))
        ids = np.concatenate([
            batches if e + j == 1 else batches[np.random.default_rng([0, e + j]).permutation(batches.shape[0])]
            for j in range(take)
        ])
        n_steps = min(ids.shape[0] // w, steps - done)
        ids = ids[: n_steps * w]
        counts += np.bincount(ids, minlength=m)
        max_cost_sum += float(cost[ids].reshape(n_steps, w).max(axis=1).sum(dtype=np.float64))
        done += n_steps
        e += take
    t_stream = time.perf_counter() - t0

    t0 = time.perf_counter()
    selector = SeqPointSelector(n_points=20).fit(flat)
    points = selector.to_seqpoints(flat)
    scale = counts.sum() / len(flat)
    t_select = time.perf_counter() - t0

    total = time.perf_counter() - t_all
    print(f"sum over steps of the max-over-ranks cost proxy: {max_cost_sum:.6g}; "
          f"SeqPoints weights x {scale:,.1f} to the run")
    row = [f"{steps:,} × {w}", f"{steps * w:,}", f"{e - 1:,} of {steps_per_epoch:,} steps", f"{args.samples:,}",
           f"{m:,}", str(len(points.points)), f"{t_replay:.1f}", f"{t_stream:.1f}", f"{t_select:.1f}",
           f"{total:.1f}", f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1 << 20):.2f} GB"]  # KiB on Linux
    text = "\n".join([header("Scale: schedule and selection of a 100M-step, 8-rank run in bounded memory "
                             "(issue 15)").rstrip(), "",
                      "One epoch replayed exactly (`bucket`, dealt to the ranks), the later epochs streamed as "
                      "reshuffles of its batches: rank-row signatures counted and each step's max over ranks summed "
                      "chunk by chunk; the selector fitted on one epoch's rank rows. One run, so the seconds are an "
                      "upper bound on this shared machine (no noise floor). Goal: 30 s and a few GB.", "",
                      *md_table(["steps × ranks", "rank rows", "epochs", "samples", "unique signatures", "SeqPoints",
                              "replay s", "stream s", "select s", "total s", "peak RSS"], [row])])
    print(text)
    write_section("scale", text)


if __name__ == "__main__":
    main()

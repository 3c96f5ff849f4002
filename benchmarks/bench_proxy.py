"""Steady-state selection error at k = 10: the fixed cost proxy against the model proxy.

The run is BERT on the bundled WikiText-2 validation lengths, ``group_by_length`` B=8
(drop_last), 2 epochs. Every unique signature is profiled in isolation (steady step
time, median of the repeats), so the truth is ``Σ over all iterations`` of those times
and the only error left is the selection's: the SeqPoints' projection
``Σ weight_i × time(point_i)`` against it. Compared: the fixed proxy (``attention``:
tokens + attention/(6·768)), ``model`` (roofline time of the model's exact FLOPs and bytes
on this CPU, from the probe), ``model+pilot`` (that, rescaled by 5 timed signatures),
and ``model`` on the H100 roofline. The noise floor is the median relative IQR of the
step times (printed beside).

Usage: ``.venv/bin/python benchmarks/bench_proxy.py [--quick] [--workload bert:small]``
(``--quick``: 300 samples, 1 epoch, 1 + 3 steps per signature).
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np

from _results import header, write_section
from seqpoint.batching import replay
from seqpoint.exceptions import SeqPointWarning
from seqpoint.measurements import STEADY_TIME
from seqpoint.profiling import ProfileConfig, profile_points
from seqpoint.selection import PilotTable, SeqPointSelector, weighted_projection
from seqpoint.traces import read_lengths
from seqpoint.workflows._sections import SelectionSection
from seqpoint.workflows._stages import model_cost
from seqpoint.workloads import load_workload

K = 10


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="300 samples, 1 epoch, short timing")
    ap.add_argument("--workload", default="bert:tiny")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    lengths = read_lengths("bundled:wikitext-2-valid")
    if args.quick:
        idx = np.sort(np.random.default_rng(0).choice(lengths.n_samples, 300, replace=False))
        lengths = lengths.take(idx)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeqPointWarning)
        schedule = replay(lengths, "group_by_length", epochs=1 if args.quick else 2, seed=0,
                          batch_size=8, drop_last=True)
    wl = load_workload(args.workload)
    sigs, _, inverse = schedule.unique_signatures()
    config = ProfileConfig(metrics=("time",), warmup=1 if args.quick else 3,
                           repeats=3 if args.quick else 10)
    rows = [tuple(int(v) for v in r) for r in sigs.tolist()]
    print(f"{len(schedule)} iterations, {len(rows)} unique signatures: timing every one", flush=True)
    ms = profile_points(wl, rows, config, progress=False)
    by_sig = {m.signature: m.metrics for m in ms.measurements}
    step = np.array([by_sig[r][STEADY_TIME] for r in rows])
    floor = float(np.median([by_sig[r][f"{STEADY_TIME}_iqr"] / by_sig[r][STEADY_TIME] for r in rows]))
    per_iter = step[inverse]
    truth = float(per_iter.sum())

    proxies: dict[str, object] = {"fixed (attention)": "attention"}
    for label, sec in (("model (cpu roofline)", SelectionSection(cost="model", cost_device="cpu")),
                       ("model (h100 roofline)", SelectionSection(cost="model", cost_device="h100"))):
        proxies[label] = model_cost(sec, schedule, wl)
    model = proxies["model (cpu roofline)"]
    # The pilot reuses the step times already measured for its 5 signatures.
    order = np.argsort(np.asarray(model(schedule))[np.unique(inverse, return_index=True)[1]])
    pick = [rows[int(order[int(i)])] for i in np.round(np.linspace(0, len(rows) - 1, 5))]
    proxies["model+pilot (cpu, 5 signatures)"] = PilotTable(
        costs={r: float(by_sig[r][STEADY_TIME]) for r in pick}, base=model)  # type: ignore[arg-type]

    results = []
    for label, proxy in proxies.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SeqPointWarning)
            sel = SeqPointSelector(n_points=min(K, len(rows)), cost=proxy).fit(schedule)  # type: ignore[arg-type]
        est = weighted_projection(per_iter, sel.points_, sel.weights_)
        results.append((label, (est - truth) / truth))
        print(f"{label}: steady-state selection error {100 * (est - truth) / truth:+.3f}% "
              f"(noise floor {100 * floor:.2f}%)", flush=True)
    lines = [header(f"Steady-state selection error at k = {K}, fixed against model proxy "
                    f"({args.workload}, WikiText-2 group_by_length)"), "",
             f"{len(schedule)} iterations, {len(rows)} unique signatures each timed in isolation "
             f"(median relative IQR {100 * floor:.2f}%).", "",
             "| cost proxy | selection error |", "|---|---|"]
    lines += [f"| {label} | {100 * e:+.3f}% |" for label, e in results]
    write_section(f"bench_proxy_{args.workload.replace(':', '_')}", "\n".join(lines))


if __name__ == "__main__":
    main()

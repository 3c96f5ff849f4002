"""``seqpoint schedule``: replay a batching policy over a length source; write SCHEDULE.csv/.parquet."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Annotated

import typer

from seqpoint._params import bounded, check_params
from seqpoint.cli._app import app, console
from seqpoint.cli._options import AsJson, QuietTables, print_result, print_warnings, with_sets
from seqpoint.exceptions import ConfigError, SeqPointWarning
from seqpoint.reports import print_schedule
from seqpoint.schedule import IterationSchedule, summarize, write_schedule

__all__ = ["schedule"]

#: Most bins of the length histogram printed (each is a table row).
MAX_BINS = 10_000


def _check_output(output: Path) -> None:
    suffix = output.suffix.lower()
    if suffix not in (".csv", ".parquet"):
        raise ConfigError(f"Cannot write a schedule to {output}: use a .csv or .parquet file name.")
    if suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ConfigError("Writing .parquet needs pyarrow (pip install pyarrow); or use .csv.") from None


def _report(sched: IterationSchedule, output: Path, *, bins: int, title: str, as_json: bool, quiet: bool,
            **facts: object) -> None:
    """The schedule's summary: a table (with ``-q`` only the file written), or with ``--json`` one
    object (``output``, the command's ``facts`` and the summary's fields: ``n_iterations``,
    ``n_epochs``, ``n_unique_signatures``, ``padding_ratio``, ...)."""
    summary = summarize(sched, bins=bins)
    if quiet and not as_json:
        console.print(f"wrote {output}", markup=False)
        return
    print_result({"output": str(output), **facts, **summary.to_dict()}, as_json,
                 lambda: print_schedule(console, sched, summary, show_tgt=bool(sched.tgt_len.any()), title=title))


def _trace_schedule(source: str, output: Path, *, policy: str | None, rank: int | None, bins: int,
                    as_json: bool, quiet: bool) -> None:
    """``--format trace``: a recorded run's micro-batches, one schedule row each."""
    from seqpoint.schedule import read_trace

    if policy is not None:
        raise ConfigError("--policy does not apply to --format trace: a recorded run is already "
                          "batched; drop --policy.")
    check_params("", {"--bins": [bounded(int, 1, MAX_BINS)], "--rank": [bounded(int, 0, 2**20), None]},
                 {"--bins": bins, "--rank": rank})
    trace = read_trace(source)
    sched = trace.to_schedule(rank=rank)
    write_schedule(sched, output)
    _report(sched, output, bins=bins, title=f"schedule of the recorded run {source} → {output}",
            as_json=as_json, quiet=quiet, policy=None, world_size=sched.world_size, rank=rank)


@app.command("schedule")
def schedule(
    lengths: Annotated[str, typer.Argument(
        help="Length file (csv, jsonl, text, histogram, npy; .gz ok) or bundled:NAME.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="SCHEDULE.csv or .parquet to write.")],
    policy: Annotated[str | None, typer.Option(
        "--policy", help="Batching policy name (not with --format trace).")] = None,
    format: Annotated[str | None, typer.Option(
        "--format", help="csv, jsonl, text, parallel, histogram or numpy (default: from the name); "
                         "or trace: a recorded run trace, read as its schedule (no policy).")] = None,
    column: Annotated[str | None, typer.Option(
        "--column", help="CSV or histogram column / JSON-lines key holding the lengths.")] = None,
    count_column: Annotated[str | None, typer.Option(
        "--count-column",
        help="Histogram column holding the counts (found by name otherwise: count, n, freq, ...).")] = None,
    tgt: Annotated[Path | None, typer.Option("--tgt", help="Target-side text for parallel data.")] = None,
    scale: Annotated[float | None, typer.Option(
        "--scale", help="Multiply CSV lengths by this and round up.")] = None,
    sample_rate: Annotated[float | None, typer.Option(
        "--sample-rate", help="CSV lengths are audio samples at this rate; convert to 10 ms frames.")] = None,
    tokenizer: Annotated[str | None, typer.Option(
        "--tokenizer", help="tokenizer.json or sentencepiece .model for text.")] = None,
    extra_tokens: Annotated[int | None, typer.Option(
        "--extra-tokens", help="Tokens added to every text line (e.g. 1 for EOS).")] = None,
    batch_size: Annotated[int | None, typer.Option("--batch-size", help="Samples (rows) per batch.")] = None,
    max_tokens: Annotated[int | None, typer.Option(
        "--max-tokens", help="token_budget: padded tokens per batch.")] = None,
    num_buckets: Annotated[int | None, typer.Option(
        "--num-buckets", help="bucket / dynamic_bucket: number of buckets.")] = None,
    max_seq_len: Annotated[int | None, typer.Option("--max-seq-len", help="packing: row length in tokens.")] = None,
    max_duration: Annotated[float | None, typer.Option(
        "--max-duration", help="dynamic_bucket: padded duration per batch, in length units.")] = None,
    pad_to_multiple_of: Annotated[int | None, typer.Option(
        "--pad-to-multiple-of", help="Round padded lengths up to a multiple.")] = None,
    drop_last: Annotated[bool | None, typer.Option(
        "--drop-last/--keep-last", help="Drop (or keep) partial final batches.")] = None,
    epochs: Annotated[int, typer.Option("--epochs", help="Passes over the data.")] = 1,
    seed: Annotated[int, typer.Option("--seed", help="Run seed.")] = 0,
    set_: Annotated[list[str] | None, typer.Option(
        "--set", help="A run config key, section.key=value: batching.params.KEY (a policy parameter), "
                      "lengths.params.KEY (a reader option), or a key a flag sets (batching.epochs, "
                      "lengths.column, ...); repeatable.")] = None,
    bins: Annotated[int, typer.Option(
        "--bins", help=f"Bins of the seq_len histogram shown (1..{MAX_BINS:,}).")] = 12,
    rank: Annotated[int | None, typer.Option(
        "--rank", help="Write only this rank's rows (of --world-size, or of a data-parallel trace).")] = None,
    world_size: Annotated[int, typer.Option(
        "--world-size", help="Data-parallel ranks: a rank column, one row per rank and iteration.")] = 1,
    shard: Annotated[str | None, typer.Option(
        "--shard", help="How ranks split an epoch: samples (DistributedSampler) or batches "
                        "(round-robin); default by policy.")] = None,
    as_json: AsJson = False,
    quiet: QuietTables = False,
) -> None:
    """Replay a batching policy over per-sample lengths (or read a recorded run trace) and
    write the iteration schedule."""
    from seqpoint.batching import POLICIES
    from seqpoint.workflows import BatchingSection, LengthsSection, RunConfig, build_schedule

    _check_output(output)
    if format == "trace":
        _trace_schedule(lengths, output, policy=policy, rank=rank, bins=bins, as_json=as_json, quiet=quiet)
        return
    if policy is None:
        raise ConfigError("Missing option '--policy': name a batching policy, or give --format trace "
                          "to read a recorded run trace.")
    cls = POLICIES.get(policy)  # unknown names list the valid ones
    # The [batching] keys (--epochs, --seed, --world-size, --rank, --shard) are checked by
    # BatchingSection below, with the TOML's message.
    check_params("", {"--bins": [bounded(int, 1, MAX_BINS)]}, {"--bins": bins})

    fields = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    # Policy flags are the policy's parameters of the same name.
    given = {"batch_size": batch_size, "max_tokens": max_tokens, "num_buckets": num_buckets,
             "max_seq_len": max_seq_len, "max_duration": max_duration,
             "pad_to_multiple_of": pad_to_multiple_of, "drop_last": drop_last}
    params = {k: v for k, v in given.items() if v is not None}
    for key in (k for k in params if k not in fields):
        flag = "--drop-last/--keep-last" if key == "drop_last" else "--" + key.replace("_", "-")
        raise ConfigError(f"{flag} does not apply to policy {policy!r}; its parameters are {', '.join(fields)}.")
    reader_options = {"scale": scale, "sample_rate": sample_rate, "tokenizer": tokenizer,
                      "extra_tokens": extra_tokens, "count_column": count_column}
    # The flags fill the run config's [lengths] and [batching]; --set lays any of their keys
    # over them, and the sections check the result as they check a TOML file.
    cfg = RunConfig(
        lengths=LengthsSection(source=lengths, format=format, column=column, tgt=None if tgt is None else str(tgt),
                               params={k: v for k, v in reader_options.items() if v is not None}),
        batching=BatchingSection(policy=policy, epochs=epochs, seed=seed, params=params, world_size=world_size,
                                 rank=rank, shard=shard))
    cfg = with_sets(cfg, set_, sections=("lengths", "batching"), bare="batching.params", command="schedule",
                    given=("lengths.source", "batching.policy", "batching.schedule"))
    source, batching = cfg.lengths, cfg.batching

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SeqPointWarning)
        sched = build_schedule(source, batching)
    print_warnings(w.message for w in caught if issubclass(w.category, SeqPointWarning))
    write_schedule(sched, output)

    ranks, size = batching.rank, batching.world_size
    where = f", rank {ranks} of {size}" if ranks is not None else (f", {size} ranks" if size > 1 else "")
    _report(sched, output, bins=bins, as_json=as_json, quiet=quiet, policy=policy, world_size=size, rank=ranks,
            title=f"{policy} schedule of {sched.meta['n_samples']} samples ({sched.meta['unit']}{where}) → {output}")

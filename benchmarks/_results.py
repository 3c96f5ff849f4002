"""Shared helper of the benchmark scripts: rewrite one section of benchmarks/RESULTS.md.

Each benchmark owns the text between ``<!-- BEGIN <topic> -->`` and ``<!-- END <topic> -->``;
running it again replaces that section and leaves the others alone. A ``--quick`` run
writes ``<topic>_quick`` into ``RESULTS.quick.md`` instead, so a smoke run never replaces
the full results.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from seqpoint.measurements import Measurements, environment_manifest, read_measurements

RESULTS = Path(__file__).with_name("RESULTS.md")
RESULTS_DIR = RESULTS.with_name("results")
#: The machine a section was measured on: its CPU model and the instruction-set features
#: that decide oneDNN's kernels (the same model name came with different ones).
_CPU = environment_manifest("cpu")
MACHINE = (f"{os.cpu_count()}-core {platform.machine()} CPU ({_CPU['device']}; {_CPU['cpu_isa'] or 'features unknown'}), "
           f"Python {platform.python_version()[:4]}, torch 2.13.0 CPU")
_HEADER = "# Benchmark results\n\nEach section is written by the script it names; rerun the script to refresh it.\n"


def command_line() -> str:
    """The command that ran this script, as typed (relative to the repository root)."""
    return " ".join(shlex.quote(a) for a in [".venv/bin/python", *sys.argv])


def run_meta(minutes: bool = True) -> dict[str, str]:
    """When (UTC, to the minute unless not ``minutes``), by what command and on what machine a run measured."""
    return {"date": time.strftime("%Y-%m-%d %H:%M UTC" if minutes else "%Y-%m-%d", time.gmtime()),
            "command": command_line(), "machine": MACHINE}


def bench_parser(doc: str, quick: str, render: str | None = None) -> argparse.ArgumentParser:
    """A benchmark's argument parser: its docstring's first line, the ``--quick`` smoke run that
    :func:`quick_mode` reads (``quick`` says what that run does) and, given its help, ``--render``."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=quick)
    if render:
        ap.add_argument("--render", action="store_true", help=render)
    return ap


def quick_mode() -> bool:
    """Whether this script runs with ``--quick`` (a smoke run, kept apart from the results)."""
    return "--quick" in sys.argv[1:]


def header(title: str, run: dict[str, Any] | None = None) -> str:
    """Section heading with date, machine and command: this run's, or those a stored ``run``
    recorded (``date``, ``command``, ``machine`` keys) when its results are rendered again."""
    if quick_mode():
        title = f"{title} (--quick smoke run)"
    run = run or run_meta(minutes=False)
    lines = [f"## {title}", "", f"- date: {run['date']}", f"- machine: {run.get('machine', MACHINE)}",
             f"- command: `{run['command']}`"]
    if run["command"] != command_line():
        lines.append(f"- rendered from its stored results by `{command_line()}`")
    return "\n".join(lines) + "\n"


def table(head: list[str], rows: list[list[str]], text_cols: int = 1) -> list[str]:
    """A markdown table: the first ``text_cols`` columns left-aligned, the rest right-aligned."""
    sep = ["---" if i < text_cols else "---:" for i in range(len(head))]
    return ["| " + " | ".join(head) + " |", "| " + " | ".join(sep) + " |",
            *("| " + " | ".join(r) + " |" for r in rows), ""]


def write_section(topic: str, body: str, path: Path = RESULTS) -> Path:
    """Replace (or append) the ``topic`` section of RESULTS.md with ``body``.

    A ``--quick`` smoke run writes to ``RESULTS.quick.md`` beside it (not kept in git):
    its figures check that the benchmark runs, and are not results.
    """
    if quick_mode():
        if not topic.endswith("_quick"):
            topic = f"{topic}_quick"
        if path == RESULTS:
            path = RESULTS.with_name("RESULTS.quick.md")
    begin, end = f"<!-- BEGIN {topic} -->", f"<!-- END {topic} -->"
    text = path.read_text() if path.exists() else _HEADER
    block = f"{begin}\n{body.rstrip()}\n{end}"
    if begin in text and end in text:
        pre, rest = text.split(begin, 1)
        _, post = rest.split(end, 1)
        text = pre + block + post
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text)
    return path


def load_json(path: Path, default: Any = None) -> Any:
    """Stored results (gzipped when the name ends in ``.gz``), or ``default`` when there are none."""
    if not path.exists():
        return default
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


def load_stored(name: str, default: Any = None) -> tuple[Path, Any]:
    """``results/<name>`` (a ``--quick`` run's own ``<topic>_quick`` file beside it) and what it holds."""
    path = RESULTS_DIR / (name.replace(".json", "_quick.json") if quick_mode() else name)
    return path, load_json(path, default)


def save_json(path: Path, data: Any) -> None:
    """Store results: compact and gzipped when the name ends in ``.gz``, else indented."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".gz":
        path.write_bytes(gzip.compress(json.dumps(data, separators=(",", ":")).encode(), mtime=0))
    else:
        path.write_text(json.dumps(data, indent=1) + "\n")


def measurements_from_dict(d: dict[str, object]) -> Measurements:
    """A ``Measurements.to_dict()`` read back through the public, validating reader."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "MEASUREMENTS.json"
        path.write_text(json.dumps(d), encoding="utf-8")
        return read_measurements(path)

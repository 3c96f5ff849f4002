"""``seqpoint breakdown``: the device time of a user's own Kineto trace by operation category."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seqpoint._jsonio import write_json
from seqpoint.cli._app import app, console
from seqpoint.cli._options import AsJson, QuietTables, print_result
from seqpoint.profiling import KinetoBreakdown, kineto_breakdown
from seqpoint.reports import fmt_duration, render

__all__ = ["breakdown_command"]

#: Kernels of ``other`` the table lists by name (``--json`` lists every kernel).
_OTHER_SHOWN = 10


@app.command("breakdown")
def breakdown_command(
    trace: Annotated[Path, typer.Argument(help="A Kineto trace torch.profiler wrote (.json or .json.gz), "
                                               "with CUDA activity.")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Also write the result as JSON "
                                                "to this file.")] = None,
    as_json: AsJson = False,
    quiet: QuietTables = False,
) -> None:
    """The device time of a trace by operation category (gemm, softmax, communication ...).

    Every kernel, memcpy and memset is counted once: by the operator that launched it, else by
    its own name; what matches neither is 'other', and its kernels are listed by name.
    """
    result = kineto_breakdown(trace)
    if output is not None:
        write_json(result.to_dict(), output)
    if quiet and not as_json:
        if output is not None:
            console.print(f"wrote {output}", markup=False)
        return
    print_result(result, as_json, lambda: _show(result))


def _show(result: KinetoBreakdown) -> None:
    total = result.total_s
    rows = [["category", "time", "share"]]
    rows += [[c, fmt_duration(s), f"{s / total:.1%}"]
             for c, s in sorted(result.categories.items(), key=lambda kv: -kv[1])]
    rows.append(["total (kernel time)", fmt_duration(total), "100.0%"])
    console.print(render(rows, title="Device time by operation category"))
    other = [k for k in result.kernels if k.category == "other"]
    if other:
        rows = [["kernel", "time", "launches"]]
        rows += [[k.name.removeprefix("void ")[:60], fmt_duration(k.seconds), str(k.count)] for k in other[:_OTHER_SHOWN]]
        more = f" (the first {_OTHER_SHOWN} of {len(other)}; --json lists all)" if len(other) > _OTHER_SHOWN else ""
        console.print(render(rows, title=f"Kernels in 'other'{more}"))

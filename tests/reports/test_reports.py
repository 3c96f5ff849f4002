import pytest

from seqpoint.reports import (
    fmt_duration,
    fmt_pct,
    fmt_ratio,
    plot_breakdown,
    plot_cost_vs_length,
    plot_error_vs_k,
    plot_length_histogram,
)
from seqpoint.selection import SeqPoint, SeqPoints

pytest.importorskip("matplotlib")

PNG = b"\x89PNG\r\n\x1a\n"


def _points():
    return SeqPoints(
        method="seqpoint",
        n_iterations=10,
        points=(
            SeqPoint(iteration=1, batch_size=2, seq_len=10, weight=6),
            SeqPoint(iteration=7, batch_size=2, seq_len=40, weight=4),
        ),
    )


def test_plots_are_pngs(tmp_path):
    paths = [
        plot_length_histogram([10, 12, 40, 38, 11], _points(), tmp_path / "h.png"),
        plot_cost_vs_length([10, 40], [0.1, 0.5], tmp_path / "c.png", fit=([10, 25, 40], [0.1, 0.3, 0.5])),
        plot_error_vs_k({"seqpoint": ([1, 2], [0.1, 0.001]), "first": ([1, 2], [0.9, 0.8])},
                        tmp_path / "e.png", noise_floor=0.01),
        plot_breakdown({"projected": {"gemm": 3.0, "rnn": 1.0}, "measured": {"gemm": 2.9, "rnn": 1.1}},
                       tmp_path / "b.png"),
    ]
    for p in paths:
        assert p.read_bytes().startswith(PNG)
        assert p.stat().st_size > 5000


def test_html_is_self_contained(tmp_path):
    from seqpoint.reports import write_run_report

    out = write_run_report(_run_record(), tmp_path, title="T <x>", subtitle="toy", config_text="x = 1")
    text = out.read_text()
    assert "data:image/png;base64," in text
    assert "T &lt;x&gt;" in text
    assert "<th>iterations</th>" in text  # the schedule's table
    assert "<pre>x = 1</pre>" in text
    assert 'src="length_histogram.png"' not in text


def test_formatting():
    assert fmt_duration(0.0123) == "12.3 ms"
    assert fmt_duration(5400) == "90.0 min"
    assert fmt_duration(3 * 86400) == "3.00 d"
    assert fmt_pct(-0.0123) == "-1.23%"
    assert fmt_ratio(345.2) == "345×"
    assert fmt_ratio(2.5) == "2.50×"


def _run_record(**fields):
    """A run record of four toy points."""
    from seqpoint.projection import project
    from seqpoint.reports import RunRecord
    from seqpoint.schedule import summarize
    from seqpoint.testing import toy_measurements, toy_points, toy_schedule

    s = toy_schedule()
    pts = toy_points(s, [0, 3, 5, 6])
    ms = toy_measurements(pts)
    return RunRecord(schedule=s, seqpoints=pts, measurements=ms, projection=project(s, pts, ms),
                     summary=summarize(s), **{"reduction": 2.0, **fields})


def _printed_run(**fields) -> str:
    """``print_run`` of :func:`_run_record`, as one line of plain text."""
    from rich.console import Console

    from seqpoint.reports import print_run

    console = Console(width=400, record=True)
    print_run(console, _run_record(**fields))
    return " ".join(console.export_text().split())


def test_profiled_steps_say_where_the_campaign_steps_went() -> None:
    text = _printed_run(steps_per_point=(3, 3, 0), campaign_steps=(3, 1, 51, 100))
    assert ("175 (4 points × (3 workers × 1 warm-up + 3 timed) + 51 for the workers' start-up and drift "
            "checks + 100 in the cold-step window)") in text
    # the breakdown, measured in the driver, warms every point up once more
    text = _printed_run(steps_per_point=(8, 5, 1), campaign_steps=(3, 2, 51, 0))
    assert ("107 (4 points × ((3 workers + the breakdown's) × 2 warm-up + 5 timed + 1 profiled) + 51 for the "
            "workers' start-up and drift checks)") in text
    assert "20 (4 points × (2 warm-up + 3 timed))" in _printed_run(steps_per_point=(2, 3, 0), campaign_steps=(1, 2, 0, 0))


def test_a_saving_below_one_says_there_was_none() -> None:
    from seqpoint.validation import ProfilingSaving

    saving = ProfilingSaving(steps=0.5, wall_clock=0.5, tokens=float("nan"), profiling_s=2.0, run_s=1.0)
    text = _printed_run(reduction=52.3, saving=saving)
    assert "less profiling (steps) │ 52×" in text
    assert "0.50× (no saving: profiling took 2.00× the run's wall clock)" in text
    assert "less profiling (tokens) │ n/a" in text


def test_a_run_in_instructions_prints_counts_and_the_counted_code_path() -> None:
    from rich.console import Console

    from seqpoint.projection import project
    from seqpoint.reports import RunRecord, print_run
    from seqpoint.schedule import summarize
    from seqpoint.testing import toy_measurements, toy_points, toy_schedule

    s = toy_schedule()
    pts = toy_points(s, [0, 3, 5, 6])
    ms = toy_measurements(pts, lambda p: 1e6 * p.seq_len, metric="instructions",
                          instructions_first=lambda p: 1.3e6 * p.seq_len)
    proj = project(s, pts, ms)
    assert "run_instructions" in proj.totals and "run_time_s" not in proj.totals
    record = RunRecord(schedule=s, seqpoints=pts, measurements=ms, projection=proj, summary=summarize(s),
                       reduction=2.0)
    console = Console(width=400, record=True)
    print_run(console, record)
    text = " ".join(console.export_text().split())
    assert "projected instructions (user space, AVX2 path under valgrind)" in text
    assert f"│ {proj.totals['run_instructions'] / 1e6:.2f} M instr │" in text
    assert f"│ {proj.totals['first_occurrence_instructions'] / 1e6:.2f} M instr (" in text  # the cold steps
    lo, hi = proj.interval["run_instructions"]
    assert f"│ {lo / 1e6:.2f} M instr … {hi / 1e6:.2f} M instr (±" in text
    assert "+ count noise" in text and "timing noise" not in text

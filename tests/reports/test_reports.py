import pytest

from seqpoint.reports import (
    Section,
    fmt_duration,
    fmt_pct,
    fmt_ratio,
    plot_breakdown,
    plot_cost_vs_length,
    plot_error_vs_k,
    plot_length_histogram,
    write_html_report,
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
    img = plot_error_vs_k({"seqpoint": ([1, 2], [0.1, 0.01])}, tmp_path / "e.png")
    out = write_html_report(
        tmp_path / "r.html",
        title="T <x>",
        headline=[("1.2 h", "projected")],
        sections=[Section(title="S", text="a\n\nb", table=[["k", "v"], ["a", 1]], images=[img], code="x=1")],
    )
    text = out.read_text()
    assert "data:image/png;base64," in text
    assert "T &lt;x&gt;" in text
    assert "<td>a</td><td>1</td>" in text
    assert 'src="e.png"' not in text


def test_formatting():
    assert fmt_duration(0.0123) == "12.3 ms"
    assert fmt_duration(5400) == "90.0 min"
    assert fmt_duration(3 * 86400) == "3.00 d"
    assert fmt_pct(-0.0123) == "-1.23%"
    assert fmt_ratio(345.2) == "345×"
    assert fmt_ratio(2.5) == "2.50×"


def test_a_saving_below_one_says_there_was_none():
    from seqpoint.reports._format import fmt_saving

    assert fmt_saving(52.3, "steps") == "52×"
    assert fmt_saving(52.3, "steps", bold=True) == "[bold]52×[/]"
    assert fmt_saving(0.5, "wall clock") == "0.50×  (no saving: profiling took 2.00× the run's wall clock)"
    assert fmt_saving(float("nan"), "tokens") == "n/a"

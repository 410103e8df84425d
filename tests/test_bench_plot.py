"""The bench plot: its form follows the data (grouped bars for one token count or many kernels, × copy and
µs per call against tokens otherwise), and the copy ceiling's colour belongs to the ceiling alone."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from matplotlib.colors import to_rgba
from matplotlib.patches import Rectangle

from fusegen.bench_report import IMPL_COLORS, Row, figure

SAVED = Path(__file__).resolve().parent.parent / "docs" / "bench"


def saved(name: str):
    results = json.loads((SAVED / name / "bench.json").read_text())
    return [Row(**row) for row in results["rows"]], results["copy_tb_per_s"]


def data_artists(fig):
    """(label, colour) of every line and bar drawn on the axes, legend proxies without data excluded."""
    for ax in fig.axes:
        for line in ax.lines:
            if len(line.get_xdata()):
                yield line.get_label(), to_rgba(line.get_color())
        for patch in ax.patches:
            if isinstance(patch, Rectangle):
                yield patch.get_label(), to_rgba(patch.get_facecolor())


@pytest.mark.parametrize("name", ["targets", "examples"])
def test_ceiling_colour_is_no_kernels(name):
    rows, ceiling = saved(name)
    fig = figure(rows, ceiling, name)
    artists = list(data_artists(fig))
    ceiling_colours = {colour for label, colour in artists if label.startswith("copy ceiling")}
    assert len(ceiling_colours) == 1, artists
    kernel_colours = {colour for label, colour in artists if not label.startswith("copy ceiling")}
    assert kernel_colours and not kernel_colours & ceiling_colours


def test_one_token_count_gives_grouped_bars_with_readable_labels():
    rows, ceiling = saved("targets")
    fig = figure(rows, ceiling, "targets")
    (ax,) = fig.axes
    kernels = {r.kernel for r in rows}
    assert {t.get_text() for t in ax.get_yticklabels()} == kernels  # one labelled group per kernel
    bars = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert len(bars) == len(rows)  # fusegen and torch.compile side by side, none stacked away
    fusegen_bars = [b.get_width() for b in bars if b.get_facecolor() == to_rgba(IMPL_COLORS["fusegen"])]
    assert sorted(fusegen_bars) == pytest.approx(sorted(r.tb_per_s / ceiling for r in rows if r.impl == "fusegen"))
    legend = ax.get_legend()
    fig.canvas.draw()
    # The legend sits above the axes, not over the bars.
    assert legend.get_window_extent().y0 >= ax.get_window_extent().y1 - 1


def test_token_sweep_has_a_log_log_time_panel_reaching_one_token():
    rows, ceiling = saved("examples")
    fig = figure(rows, ceiling, "examples")
    timed = [ax for ax in fig.axes if ax.get_xscale() == "log" and ax.get_yscale() == "log"]
    assert len(timed) == 1
    drawn = [line for line in timed[0].lines if len(line.get_xdata())]
    assert min(min(line.get_xdata()) for line in drawn) == 1
    fusegen_us = sorted(r.median_us for r in rows if r.impl == "fusegen")
    assert sorted(y for line in drawn if line.get_linestyle() == "-" for y in line.get_ydata()) == pytest.approx(fusegen_us)


def test_plot_command_rerenders_saved_results_and_refuses_bad_ones(tmp_path):
    good = tmp_path / "good"
    good.mkdir()
    shutil.copy(SAVED / "examples" / "bench.json", good / "bench.json")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "bench.json").write_text(json.dumps({"environment": {}, "copy_tb_per_s": 4.2, "rows": [{"kernel": "k"}]}))
    ok = subprocess.run([sys.executable, "-m", "fusegen", "plot", str(good)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert (good / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    refused = subprocess.run([sys.executable, "-m", "fusegen", "plot", str(bad)], capture_output=True, text=True)
    assert refused.returncode == 2
    assert "Traceback" not in refused.stderr and str(bad / "bench.json") in refused.stderr
    assert not (bad / "bench.png").exists()

"""Figure helpers: what they draw, read back from the Axes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from fqa_analysis.core.plots import plot_gains


def test_plot_gains_one_panel_per_rqa_with_points_cis_and_the_papers_marks() -> None:
    gains = pd.DataFrame(
        {
            "rqa": ["bm25", "bm25", "hybrid", "hybrid"],
            "reranker": ["vanilla", "combined", "vanilla", "combined"],
            "delta": [0.05, 0.04, 0.01, -0.002],
            "delta_ci_low": [0.03, 0.02, 0.0, -0.01],
            "delta_ci_high": [0.07, 0.06, 0.02, 0.006],
        }
    )
    axes = plot_gains(gains, paper={"combined": 3.22})
    assert [ax.get_title() for ax in axes] == ["bm25", "hybrid"]
    # first reranker on top: vanilla at y = 1, combined at y = 0; x in points
    points = [line.get_xydata()[0].tolist() for line in axes[1].lines if line.get_marker() == "o"]
    assert np.allclose(points, [[1.0, 1.0], [-0.2, 0.0]])
    diamonds = [line.get_xydata()[0].tolist() for line in axes[0].lines if line.get_marker() == "D"]
    assert diamonds == [[3.22, 0.0]]
    assert [t.get_text() for t in axes[0].get_yticklabels()] == ["vanilla", "combined"]
    low, high = axes[0].get_xlim()
    assert high - 3.22 > 0.05 * (high - low)  # the diamond sits inside the panel, not on its edge
    # three systems: two panels a row, the empty fourth slot removed
    three = plot_gains(pd.concat([gains, gains.assign(rqa="minilm")]).reset_index(drop=True))
    assert len(three) == 3 and len(three[0].figure.axes) == 3
    assert [ax.get_subplotspec().get_geometry()[:2] for ax in three] == [(2, 2)] * 3
    plt.close("all")


def test_grouped_bars_keep_the_legend_off_the_bars_and_levels_span_each_group() -> None:
    from fqa_analysis.core.plots import mark_group_levels, plot_grouped_bars

    frame = pd.DataFrame({"g": ["a", "a", "b", "b"], "s": ["x", "y", "x", "y"], "v": [1.0, 2.0, 3.0, 4.0]})
    ax = plot_grouped_bars(frame, "g", "s", "v")
    legend = ax.get_legend()
    # anchored at the axes' right edge, outside the plotting area
    assert legend is not None and legend.get_bbox_to_anchor().bounds[0] > ax.get_window_extent().x0
    mark_group_levels(ax, [1.5, 3.5], "prior")
    segments = [c for c in ax.collections if c.get_label() in ("prior", "_prior")]
    spans = [seg.get_segments()[0].tolist() for seg in segments]
    assert spans == [[[-0.4, 1.5], [0.4, 1.5]], [[0.6, 3.5], [1.4, 3.5]]]
    assert [c.get_label() for c in segments] == ["prior", "_prior"]  # one legend entry
    assert not plot_grouped_bars(frame, "g", "s", "v", ax=plt.figure().gca(), legend=False).get_legend()
    plt.close("all")


def test_grouped_bars_draw_an_asymmetric_interval_from_two_columns() -> None:
    from fqa_analysis.core.plots import plot_grouped_bars

    frame = pd.DataFrame(
        {"g": ["a", "b"], "s": ["x", "x"], "v": [1.0, 3.0], "lo": [0.5, 2.9], "hi": [1.2, 4.0]}
    )
    ax = plot_grouped_bars(frame, "g", "s", "v", error=("lo", "hi"))
    # the error bar's vertical segments run from each CI's low to its high end
    (bars,) = [c for c in ax.collections if c.get_segments()]
    assert np.allclose([seg[:, 1].tolist() for seg in bars.get_segments()], [[0.5, 1.2], [2.9, 4.0]])
    plt.close("all")


def test_grouped_points_put_each_system_at_its_offset_with_its_ci() -> None:
    from fqa_analysis.core.plots import plot_grouped_points

    frame = pd.DataFrame(
        {
            "g": ["a", "a", "b", "b"],
            "s": ["x", "y", "x", "y"],
            "v": [1.0, 2.0, 3.0, 4.0],
            "lo": [0.5, 1.5, 2.5, 3.5],
            "hi": [1.5, 3.0, 3.5, 4.5],
        }
    )
    ax = plot_grouped_points(frame, "g", "s", "v", "lo", "hi")
    # two systems: offsets -0.3 and +0.3 around each group's x
    points = [line.get_xydata().tolist() for line in ax.lines if line.get_marker() == "o"]
    assert np.allclose(points, [[[-0.3, 1.0], [0.7, 3.0]], [[0.3, 2.0], [1.3, 4.0]]])
    # system y's error bar runs from its CI's low to its high end at group a
    bars = [c for c in ax.collections if c.get_segments()]
    assert np.allclose(bars[1].get_segments()[0], [[0.3, 1.5], [0.3, 3.0]])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["x", "y"]
    plt.close("all")


def test_a_forest_puts_the_first_row_on_top_fills_the_significant_and_marks_the_reference() -> None:
    from fqa_analysis.core.plots import plot_forest, system_color

    points = pd.DataFrame(
        {
            "label": ["book", "150 pairs", "1,500 pairs"],
            "family": ["combined - vanilla", "feedback_kl - vanilla", "feedback_kl - vanilla"],
            "delta": [-0.1, 0.5, 1.5],
            "ci_low": [-0.9, -0.2, 1.0],
            "ci_high": [0.7, 1.2, 2.0],
            "significant": [False, False, True],
        }
    )
    ax = plot_forest(points, 1.99, "paper")
    marks = [line for line in ax.lines if line.get_marker() == "o"]
    assert [m.get_xydata()[0].tolist() for m in marks] == [[-0.1, 2.0], [0.5, 1.0], [1.5, 0.0]]
    # hollow where Holm does not reject, filled where it does; each family in its system's colour
    assert [m.get_markerfacecolor() for m in marks][:2] == ["white", "white"]
    assert matplotlib.colors.same_color(marks[2].get_markerfacecolor(), system_color("feedback_kl"))
    assert matplotlib.colors.same_color(marks[0].get_color(), system_color("combined"))
    assert [t.get_text() for t in ax.get_yticklabels()] == ["book", "150 pairs", "1,500 pairs"]
    # the reference (dashed), 0 (grey) and one separator between the two families
    vertical = sorted(
        line.get_xdata()[0]
        for line in ax.lines
        if line.get_linestyle() in ("--", "-") and len(set(line.get_xdata())) == 1
    )
    assert vertical == [0.0, 1.99]
    # axhline draws from x = 0 to 1 in axes coordinates
    separators = [line.get_ydata()[0] for line in ax.lines if list(line.get_xdata()) == [0, 1]]
    assert separators == [1.5]
    plt.close("all")

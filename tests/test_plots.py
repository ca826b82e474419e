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
    plt.close("all")

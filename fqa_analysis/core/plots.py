"""Figures for the book. Every helper takes ``ax=None`` and returns the Axes; nothing shows.

Colours: the Okabe-Ito colour-blind palette. Ratings use one fixed ordinal ramp (red for
Bad through blue for Excellent); systems get one fixed colour each through
:func:`system_color`, so the same system looks the same in every chapter.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Literal

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.ticker import MaxNLocator

from fqa_analysis.core.ratings import LABELS, explanation_lengths, label_distribution

__all__ = [
    "AGREEMENT_MEASURES",
    "OKABE_ITO",
    "RATING_COLORS",
    "mark_group_levels",
    "plot_agreement",
    "plot_explanation_lengths",
    "plot_forest",
    "plot_gains",
    "plot_grouped_bars",
    "plot_grouped_points",
    "plot_label_distribution",
    "plot_lines",
    "plot_recall_curves",
    "plot_reliability",
    "system_color",
    "system_linestyle",
]

OKABE_ITO: tuple[str, ...] = (
    "#E69F00",
    "#56B4E9",
    "#009E73",
    "#F0E442",
    "#0072B2",
    "#D55E00",
    "#CC79A7",
    "#000000",
)
#: Bad, Could be Improved, Acceptable, Excellent.
RATING_COLORS: dict[str, str] = dict(zip(LABELS, ("#D55E00", "#E69F00", "#56B4E9", "#0072B2"), strict=True))
#: One colour per known system, the same in every chapter (yellow is left out: too pale on white).
_SYSTEM_COLORS: dict[str, str] = {
    "bm25": "#E69F00",
    "minilm": "#56B4E9",
    "minilm_ft": "#009E73",
    "hybrid": "#0072B2",
    "none": "#000000",
    "feedback_kl": "#D55E00",
    "feedback_ce_annotator": "#CC79A7",
    "feedback_ce_majority": "#999999",
    "vanilla": "#56B4E9",
    "combined": "#009E73",
    "feedback_kl_scratch": "#E69F00",
    "feedback_ce_annotator_scratch": "#F0A3D0",
    "feedback_ce_majority_scratch": "#666666",
    "recall@k (ceiling)": "#000000",
    # explainers (the explanations chapters): people in black, as the ceiling above
    "template": "#999999",
    "retrieval_any_rating": "#56B4E9",
    "retrieval_same_rating": "#0072B2",
    "retrieval (any)": "#56B4E9",
    "retrieval (same)": "#0072B2",
    "generator": "#D55E00",
    "explain_rate": "#CC79A7",
    "explain-then-rate": "#CC79A7",
    "humans": "#000000",
    "people": "#000000",
    "human": "#000000",
}
_SPARE = ("#D55E00", "#CC79A7", "#0072B2", "#009E73", "#E69F00", "#56B4E9", "#000000")


def system_color(name: str) -> str:
    """The fixed colour of a system; an unknown name gets a spare colour on first use, then keeps it.

    Example:
        >>> system_color("hybrid")
        '#0072B2'
    """
    if name not in _SYSTEM_COLORS:
        _SYSTEM_COLORS[name] = _SPARE[len(_SYSTEM_COLORS) % len(_SPARE)]
    return _SYSTEM_COLORS[name]


def system_linestyle(name: str, default: str = "-") -> str:
    """The line style of a system: a reranker trained from MiniLM (``*_scratch``) is dashed.

    Its colour is a shade of its warm-started twin's, so a twin pair reads as one loss, two starts.

    Example:
        >>> system_linestyle("feedback_kl_scratch"), system_linestyle("feedback_kl")
        ('--', '-')
    """
    return "--" if name.endswith("_scratch") else default


def _axes(ax: Axes | None, size: tuple[float, float]) -> Axes:
    if ax is not None:
        return ax
    _, new = plt.subplots(figsize=size)
    return new


def plot_label_distribution(
    feedback: pd.DataFrame, by: Sequence[str] = ("domain", "split"), ax: Axes | None = None
) -> Axes:
    """Stacked horizontal bars: share of each rating label per group.

    Args:
        feedback: A :func:`~fqa_analysis.data.feedback_frame` (one row per rating).
        by: Grouping columns; each group is one bar.
        ax: Axes to draw on; a new figure when None.
    """
    shares = label_distribution(feedback, by)
    ax = _axes(ax, (8, 0.45 * len(shares) + 1.2))
    names = [" / ".join(map(str, k)) if isinstance(k, tuple) else str(k) for k in shares.index]
    left = np.zeros(len(shares))
    for label in LABELS:
        ax.barh(names, shares[label], left=left, color=RATING_COLORS[label], label=label)
        left += shares[label].to_numpy()
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of ratings")
    ax.legend(ncols=4, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    return ax


#: The agreement measures :func:`plot_agreement` can draw, with their axis labels.
AGREEMENT_MEASURES: dict[str, str] = {
    "unanimous": "share of items unanimous",
    "pairwise": "share of annotator pairs agreeing",
    "alpha_ordinal": "Krippendorff's alpha (ordinal)",
}


def plot_agreement(agreement: pd.DataFrame, ax: Axes | None = None, measure: str = "alpha_ordinal") -> Axes:
    """One agreement measure per domain, one bar per split.

    Args:
        agreement: Output of :func:`~fqa_analysis.core.ratings.agreement` grouped by domain and split.
        ax: Axes to draw on; a new figure when None.
        measure: A column of ``agreement``, one of :data:`AGREEMENT_MEASURES`.
    """
    ax = _axes(ax, (7, 3.2))
    domains = list(dict.fromkeys(agreement["domain"]))
    splits = list(dict.fromkeys(agreement["split"]))
    width = 0.8 / len(splits)
    for j, split in enumerate(splits):
        sub = agreement[agreement["split"] == split].set_index("domain").reindex(domains)
        x = np.arange(len(domains)) + (j - (len(splits) - 1) / 2) * width
        ax.bar(x, sub[measure], width, label=split, color=OKABE_ITO[j])
    ax.set_xticks(np.arange(len(domains)), domains)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_ylabel(AGREEMENT_MEASURES[measure])
    ax.legend(title="split", frameon=False, fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return ax


def plot_explanation_lengths(feedback: pd.DataFrame, ax: Axes | None = None, clip: int = 60) -> Axes:
    """Distribution of explanation length (words) per rating label, as box plots.

    Args:
        feedback: A feedback frame with an ``explanation`` column.
        ax: Axes to draw on; a new figure when None.
        clip: Upper limit of the axis in words (outliers beyond it are not drawn).
    """
    ax = _axes(ax, (7, 3.2))
    words = explanation_lengths(feedback)
    data = [words.loc[words["rating"] == label, "words"].to_numpy() for label in LABELS]
    parts = ax.boxplot(
        data,
        orientation="horizontal",
        patch_artist=True,
        showfliers=False,
        tick_labels=list(LABELS),
        medianprops={"color": "black", "linewidth": 1.5},  # visible on every rating's colour
    )
    for patch, label in zip(parts["boxes"], LABELS, strict=True):
        patch.set_facecolor(RATING_COLORS[label])
        patch.set_alpha(0.8)
    ax.invert_yaxis()
    ax.set_xlim(0, clip)
    ax.set_xlabel("words in the explanation")
    return ax


def plot_recall_curves(curve: pd.DataFrame, system: str = "rqa", ax: Axes | None = None) -> Axes:
    """Recall@k in % against k, one line per system (from :func:`~fqa_analysis.core.metrics.recall_curve`).

    A vertical line marks k = 5, the candidates the reranker sees: recall@5 is the ceiling of
    top-5 reranking. In % as the chapters' tables print recall, so a reader compares like with like.
    """
    ax = _axes(ax, (7, 3.6))
    # a marker per line besides its colour: curves that run close stay apart in print and for colour blindness
    for (name, group), marker in zip(
        curve.groupby(system, sort=False), itertools.cycle("os^Dv"), strict=False
    ):
        ax.plot(
            group["k"],
            100 * group["recall"],
            marker=marker,
            markersize=3.5,
            label=str(name),
            color=system_color(str(name)),
        )
    ax.axvline(5, color="grey", linestyle="--", linewidth=0.8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("k")
    ax.set_ylabel("recall@k (%, micro)")
    ax.set_ylim(0, 100)
    ax.legend(frameon=False)
    return ax


def plot_reliability(
    confidence: np.ndarray,
    correct: np.ndarray,
    label: str,
    bins: int = 10,
    ax: Axes | None = None,
    xlabel: str = "confidence (top-1 P_theta)",
    ylabel: str = "accuracy",
) -> Axes:
    """Reliability diagram: accuracy against mean confidence per equal-width bin (point size ~ count).

    ``correct`` may be fractional (e.g. the share of annotators who rated an answer Excellent).
    """
    from fqa_analysis.core.calibration import reliability

    ax = _axes(ax, (4, 4))
    conf, acc, n = reliability(confidence, correct, bins)
    used = n > 0
    ax.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=0.8)
    ax.plot(conf[used], acc[used], color=system_color(label), label=label)
    ax.scatter(conf[used], acc[used], s=10 + 200 * n[used] / n.sum(), color=system_color(label))
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(frameon=False, loc="upper left")
    return ax


def plot_grouped_bars(
    frame: pd.DataFrame,
    group: str,
    system: str,
    value: str,
    error: str | tuple[str, str] | None = None,
    ax: Axes | None = None,
    legend: bool = True,
) -> Axes:
    """Bars of ``value`` per ``group`` (x axis), one bar per ``system`` in its fixed colour.

    The legend sits to the right of the axes, never over a bar.

    Args:
        frame: Long table, one row per (group, system).
        group: Column of the x-axis groups (kept in first-appearance order).
        system: Column naming the bars within a group (coloured by :func:`system_color`).
        value: Bar height column.
        error: Optional error bars: a column of symmetric half-widths (e.g. sd over seeds), or a
            pair of columns (low, high) whose interval each bar's error bar spans (a CI, which need
            not be symmetric around the mean).
        ax: Axes to draw on.
        legend: Draw the legend (off for all but one panel of a row of panels).
    """
    ax = _axes(ax, (7, 3.5))
    groups = list(dict.fromkeys(frame[group]))
    systems = list(dict.fromkeys(frame[system]))
    width = 0.8 / len(systems)
    for j, name in enumerate(systems):
        sub = frame[frame[system] == name].set_index(group).reindex(groups)
        x = np.arange(len(groups)) + (j - (len(systems) - 1) / 2) * width
        heights = sub[value].to_numpy(dtype=float)
        yerr: np.ndarray | None = None
        if isinstance(error, str):
            yerr = sub[error].to_numpy(dtype=float)
        elif error is not None:
            # matplotlib wants the distances below and above the bar's top
            low, high = (sub[c].to_numpy(dtype=float) for c in error)
            yerr = np.vstack([heights - low, high - heights])
        ax.bar(
            x,
            heights,
            width,
            yerr=yerr,
            capsize=2,
            label=str(name),
            color=system_color(str(name)),
        )
    ax.set_xticks(np.arange(len(groups)), [str(g) for g in groups])
    ax.set_ylabel(value)
    if legend:
        ax.legend(frameon=False, fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return ax


def plot_grouped_points(
    frame: pd.DataFrame,
    group: str,
    system: str,
    value: str,
    low: str,
    high: str,
    ax: Axes | None = None,
) -> Axes:
    """A point with its CI per ``system`` within each ``group`` (x axis), in the system's colour.

    For means compared on an axis that does not start at 0 (a bar's length would exaggerate
    small differences); the legend sits to the right of the axes.

    Args:
        frame: Long table, one row per (group, system).
        group: Column of the x-axis groups (kept in first-appearance order).
        system: Column naming the points within a group.
        value: The point's column.
        low: The CI's lower end.
        high: The CI's upper end.
        ax: Axes to draw on.
    """
    ax = _axes(ax, (7, 3.5))
    groups = list(dict.fromkeys(frame[group]))
    systems = list(dict.fromkeys(frame[system]))
    width = 0.6 / max(len(systems) - 1, 1)
    for j, name in enumerate(systems):
        sub = frame[frame[system] == name].set_index(group).reindex(groups)
        x = np.arange(len(groups)) + (j - (len(systems) - 1) / 2) * width
        y = sub[value].to_numpy()
        err = np.vstack([y - sub[low].to_numpy(), sub[high].to_numpy() - y])
        ax.errorbar(
            x, y, yerr=err, fmt="o", capsize=2, markersize=4, label=str(name), color=system_color(str(name))
        )
    ax.set_xticks(np.arange(len(groups)), [str(g) for g in groups])
    ax.set_ylabel(value)
    ax.legend(frameon=False, fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return ax


def mark_group_levels(
    ax: Axes,
    levels: Sequence[float],
    label: str,
    width: float = 0.8,
    linestyle: Literal["-", "--", "-.", ":"] = "--",
    color: str = "black",
) -> Axes:
    """A level across each group of :func:`plot_grouped_bars` (e.g. a constant baseline).

    Args:
        ax: The grouped bars' axes.
        levels: One value per group, in the groups' order.
        label: The legend entry (drawn once).
        width: The span of a group's bars.
        linestyle: The level's line style (a second baseline on the same axes takes another).
        color: The level's colour.
    """
    for i, level in enumerate(levels):
        # "_" names hide the repeats from the legend: one entry for all groups
        ax.hlines(level, i - width / 2, i + width / 2, colors=color, linestyles=linestyle, linewidth=1.2,
                  label=label if i == 0 else f"_{label}")  # fmt: skip
    return ax


def plot_lines(
    frame: pd.DataFrame,
    x: str,
    y: str,
    system: str,
    low: str | None = None,
    high: str | None = None,
    ax: Axes | None = None,
    linestyle: str = "-",
) -> Axes:
    """One line of ``y`` against ``x`` per ``system`` (fixed colours), with an optional CI band.

    Args:
        frame: Long table, one row per (system, x).
        x: Column of the x axis.
        y: Column of the line.
        system: Column naming the lines.
        low: Optional column of the band's lower edge.
        high: Optional column of the band's upper edge.
        ax: Axes to draw on.
        linestyle: Matplotlib line style of every line (e.g. ``":"`` for ceilings); a ``*_scratch``
            reranker is dashed (:func:`system_linestyle`).
    """
    ax = _axes(ax, (6, 3.5))
    for name in dict.fromkeys(frame[system]):
        sub = frame[frame[system] == name].sort_values(x)
        color = system_color(str(name))
        style = system_linestyle(str(name), linestyle)
        ax.plot(sub[x], sub[y], color=color, label=str(name), linestyle=style, marker=".")
        if low and high:
            ax.fill_between(sub[x], sub[low], sub[high], color=color, alpha=0.15, linewidth=0)
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.legend(frameon=False, fontsize="small")
    return ax


def plot_gains(
    gains: pd.DataFrame,
    paper: dict[str, float] | None = None,
    scale: float = 100.0,
    axes: Sequence[Axes] | None = None,
    per_row: int = 2,
) -> Sequence[Axes]:
    """Each reranker's change over the RQA alone with its CI, one panel per RQA system.

    Rerankers are rows (in the table's order), the change on the x axis with a line at 0; where
    ``paper`` gives the paper's gain for a reranker, a hollow diamond marks it on the same row.

    Args:
        gains: Long table with ``rqa, reranker, delta, delta_ci_low, delta_ci_high`` (e.g. a
            :class:`~fqa_analysis.core.compare.Comparison` table, reset).
        paper: The paper's gain per reranker name, already in the plotted unit.
        scale: Factor applied to ``delta`` and its CI (100: shares to points).
        axes: One Axes per RQA system; new ones (``per_row`` panels a row, sharing the y axis) when
            None.
        per_row: Panels a row when the Axes are created here.

    Returns:
        The Axes, one per RQA system.
    """
    systems = list(dict.fromkeys(gains["rqa"]))
    rerankers = list(dict.fromkeys(gains["reranker"]))
    if axes is None:
        # two panels a row: four side by side shrink the tick labels below reading size at page width
        ncols = min(per_row, len(systems))
        nrows = -(-len(systems) // ncols)
        fig, created = plt.subplots(
            nrows,
            ncols,
            figsize=(4.6 * ncols, nrows * (0.42 * len(rerankers) + 1.3)),
            sharey=True,
            squeeze=False,
        )
        for extra in created.flat[len(systems) :]:
            fig.delaxes(extra)
        axes = list(created.flat[: len(systems)])
    y = {r: len(rerankers) - 1 - i for i, r in enumerate(rerankers)}  # first reranker on top
    for ax, rqa in zip(axes, systems, strict=True):
        rows = gains[gains["rqa"] == rqa]
        for r in rows.itertuples():
            d, lo, hi = scale * r.delta, scale * r.delta_ci_low, scale * r.delta_ci_high
            colour = system_color(str(r.reranker))
            ax.errorbar(d, y[r.reranker], xerr=[[d - lo], [hi - d]], fmt="o", color=colour, capsize=3)
        for name, gain in (paper or {}).items():
            if name in y:
                ax.plot(gain, y[name], marker="D", mfc="none", mec="black", linestyle="none")
        ax.axvline(0.0, color="grey", linewidth=0.8)
        ax.margins(x=0.1)  # keeps a diamond or a CI end at the panel's edge whole
        ax.set_title(str(rqa))
        ax.set_xlabel("change (points)")
        ax.tick_params(labelsize=10)
        ax.set_yticks(list(y.values()), list(y.keys()))
    return axes


def plot_forest(
    points: pd.DataFrame, reference: float | None = None, reference_label: str = "", ax: Axes | None = None
) -> Axes:
    """Paired differences with their CIs, one row each (first on top): filled where significant.

    Args:
        points: ``label``, ``delta``, ``ci_low``, ``ci_high`` (one unit), ``significant`` (bool,
            after the multiple-testing correction the caption names), and optionally ``family``:
            rows of one family share the colour of its first word (a system name), and families are
            separated by a thin line.
        reference: A value to mark with a dashed line (e.g. the paper's).
        reference_label: Its label, written at the top of the line.
        ax: Axes to draw on (a new one sized to the rows when None).

    Returns:
        The Axes.
    """
    ax = _axes(ax, (7.5, 0.38 * len(points) + 1.2))
    y = np.arange(len(points))[::-1]
    for (_, r), row_y in zip(points.iterrows(), y, strict=True):
        # a family "combined - vanilla" in the colour of the system it measures
        colour = system_color(str(r.get("family", "")).split(" ")[0])
        ax.errorbar(
            r["delta"],
            row_y,
            xerr=[[r["delta"] - r["ci_low"]], [r["ci_high"] - r["delta"]]],
            fmt="o",
            color=colour,
            mfc=colour if r["significant"] else "white",
            capsize=3,
        )
    if "family" in points:
        changes = [
            i for i in range(1, len(points)) if points["family"].iloc[i] != points["family"].iloc[i - 1]
        ]
        for i in changes:
            ax.axhline(y[i] + 0.5, color="lightgrey", linewidth=0.8)
    ax.axvline(0.0, color="grey", linewidth=0.8)
    if reference is not None:
        ax.axvline(reference, color="black", linestyle="--", linewidth=0.9)
        ax.annotate(
            reference_label,
            (reference, 1.0),
            xycoords=("data", "axes fraction"),
            ha="right",
            va="bottom",
            fontsize=9,
        )
    ax.set_yticks(y, [str(v) for v in points["label"]])
    ax.tick_params(labelsize=10)
    ax.margins(y=0.08)
    return ax

"""Formatting of result tables for the book (pure pandas; numbers come from stats/metrics)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from fqa_analysis.core.compare import N_RESAMPLES, Comparison
from fqa_analysis.core.text_metrics import readable_opening

__all__ = [
    "CI_HEADER",
    "NBSP",
    "at_bootstrap_floor",
    "breakable",
    "canonical_order",
    "change_text",
    "ci_table",
    "comparison_caption",
    "comparison_table",
    "holm_p_text",
    "interval",
    "markdown_records",
    "markdown_table",
    "mean_sd_table",
    "p_text",
    "paper_shape_table",
    "plus_minus",
    "ranked_counts",
    "signed_text",
    "variety_table",
]

#: No-break space: a table cell such as ``46.4 ± 0.6`` or ``[+0.1, +0.9]`` never wraps in the book.
NBSP = "\u00a0"


def breakable(label: str) -> str:
    """A label that may wrap after its underscores (a zero-width space follows each), for row labels.

    Example:
        >>> breakable("feedback_ce_annotator").split("\u200b")
        ['feedback_', 'ce_', 'annotator']
    """
    return label.replace("_", "_\u200b")


def plus_minus(mean: float, sd: float, digits: int = 1) -> str:
    """``mean ± sd`` joined by no-break spaces, so the cell never wraps; the mean alone where sd is NaN.

    An sd over a single seed is NaN (pandas' ``std``): the cell then shows the one value, never
    "± nan".

    Example:
        >>> plus_minus(46.43, 0.61).replace(NBSP, " "), plus_minus(46.43, float("nan"))
        ('46.4 ± 0.6', '46.4')
    """
    if sd != sd:  # NaN: one seed
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f}{NBSP}±{NBSP}{sd:.{digits}f}"


def signed_text(value: float, digits: int = 2) -> str:
    """A difference with its sign, and one that rounds to zero as a plain zero (never "-0.00").

    Example:
        >>> signed_text(0.0051), signed_text(-1.5), signed_text(-0.0004, 3), signed_text(0.0)
        ('+0.01', '-1.50', '0.000', '0.00')
    """
    text = f"{value:+.{digits}f}"
    return text[1:] if float(text) == 0 else text


def interval(low: float, high: float, digits: int = 2, signed: bool = True) -> str:
    """A confidence interval ``[low, high]`` (signed for differences) that never wraps.

    Example:
        >>> interval(-0.512, 1.2).replace(NBSP, " ")
        '[-0.51, +1.20]'
        >>> interval(-0.0002, 0.016, 3).replace(NBSP, " ")  # a bound that rounds to zero: no sign
        '[0.000, +0.016]'
    """
    if signed:
        return f"[{signed_text(low, digits)},{NBSP}{signed_text(high, digits)}]"
    return f"[{low:.{digits}f},{NBSP}{high:.{digits}f}]"


def p_text(p: float, digits: int = 2, at_floor: bool = False) -> str:
    """A p-value for reading: ``digits`` significant digits, trailing zeros kept, and 1 as "1.00".

    Trailing zeros are kept so that a p in the text reads as the table's to the digits it has
    (0.103 is "0.10", not "0.1"). ``at_floor``: the bootstrap's +1-corrected p is at its
    smallest possible value (no resample as extreme, :func:`at_bootstrap_floor`), so the p
    shown is a bound, written "≤ p".

    Example:
        >>> [p_text(p) for p in (0.0004, 0.0312, 0.5, 0.103, 0.996, 1.0)]
        ['0.00040', '0.031', '0.50', '0.10', '1.00', '1.00']
        >>> p_text(0.123456, digits=3), p_text(0.9996, digits=3)
        ('0.123', '1.00')
        >>> p_text(3 / 10_001, at_floor=True)
        '≤ 0.00030'
    """
    text = f"{p:#.{digits}g}"
    text = "1.00" if float(text) >= 1 else text
    return f"≤ {text}" if at_floor else text


def at_bootstrap_floor(row: Mapping[str, Any], n_resamples: int | None) -> bool:
    """Whether a comparison row's unadjusted p is the +1-corrected bootstrap's floor, 1 / (B + 1).

    There, no resample was as extreme as the observed difference and the p (and its Holm
    adjustment) is an upper bound, not an estimate. False without ``n_resamples`` or ``p_value``.

    Example:
        >>> [at_bootstrap_floor({"p_value": k / 10_001}, 10_000) for k in (1, 2)]
        [True, False]
        >>> at_bootstrap_floor({"p_value": 1 / 10_001}, None)
        False
    """
    p = row.get("p_value")
    if n_resamples is None or p is None or not np.isfinite(p):
        return False
    return bool(p <= (1.0 + 1e-9) / (n_resamples + 1))


def holm_p_text(row: Mapping[str, Any], digits: int = 2, n_resamples: int | None = N_RESAMPLES) -> str:
    """A comparison row's Holm p for reading, written "≤ p" where it is a bound.

    It is a bound where the row's p is at the bootstrap's floor, or where Holm's running maximum
    carried a floor row's value to it (``p_holm_bound``, :func:`~fqa_analysis.core.stats.holm_bound`).

    Args:
        row: A :data:`~fqa_analysis.core.compare.COLUMNS` row (``p_holm`` and ``p_value``).
        digits: Significant digits (:func:`p_text`).
        n_resamples: The comparison's B (default: the project's, which every stage and chapter
            uses unless it says otherwise). A comparison made with another B is never marked,
            since its floor 1 / (B + 1) is not this one: the mark can be missed, never misplaced.

    Example:
        >>> holm_p_text({"p_value": 1 / 10_001, "p_holm": 3 / 10_001})
        '≤ 0.00030'
        >>> holm_p_text({"p_value": 2 / 10_001, "p_holm": 4 / 10_001}, digits=3)
        '0.000400'
        >>> holm_p_text({"p_value": 2 / 10_001, "p_holm": 3 / 10_001, "p_holm_bound": True})  # carried
        '≤ 0.00030'
    """
    bound = bool(row.get("p_holm_bound", False)) or at_bootstrap_floor(row, n_resamples)
    return p_text(row["p_holm"], digits, at_floor=bound)


def change_text(
    row: Mapping[str, Any],
    scale: float = 100.0,
    digits: int = 2,
    unit: str = "points",
    n_resamples: int | None = N_RESAMPLES,
) -> str:
    """One comparison row for a sentence: Δ with its unadjusted CI (so labelled), Holm's p, a null's MDE.

    Args:
        row: A :data:`~fqa_analysis.core.compare.COLUMNS` row (``delta``, its CI, ``p_holm`` and,
            where present, ``mde`` and ``p_value``).
        scale: Multiplies Δ, its CI and the MDE (100: shares in points).
        digits: Decimals.
        unit: Δ's unit, after the number ("" for none).
        n_resamples: The comparison's B (default: the project's): a p at the bootstrap's floor
            is written "≤ p" (:func:`holm_p_text`).

    Example:
        >>> row = {"delta": 0.0085, "delta_ci_low": -0.001, "delta_ci_high": 0.018, "p_holm": 0.31,
        ...        "mde": 0.0092}
        >>> change_text(row).replace(NBSP, " ")
        '+0.85 points, unadjusted CI [-0.10, +1.80], Holm p 0.31, MDE 0.92'
        >>> change_text({**row, "p_holm": 0.004}, unit="").replace(NBSP, " ")  # significant: no MDE
        '+0.85, unadjusted CI [-0.10, +1.80], Holm p 0.0040'
        >>> floor = {**row, "p_value": 1 / 10_001, "p_holm": 3 / 10_001}
        >>> change_text(floor, unit="").replace(NBSP, " ")
        '+0.85, unadjusted CI [-0.10, +1.80], Holm p ≤ 0.00030'
        >>> change_text(floor, unit="", n_resamples=20_000).replace(NBSP, " ")  # another B's floor
        '+0.85, unadjusted CI [-0.10, +1.80], Holm p 0.00030'
    """
    unit = f" {unit}" if unit else ""
    text = (
        f"{signed_text(scale * row['delta'], digits)}{unit}, unadjusted CI "
        + interval(scale * row["delta_ci_low"], scale * row["delta_ci_high"], digits)
        + f", Holm p {holm_p_text(row, n_resamples=n_resamples)}"
    )
    mde = row.get("mde")
    if mde is not None and row["p_holm"] >= 0.05 and np.isfinite(mde) and mde > 0:
        text += f", MDE {scale * mde:.{digits}f}"
    return text


_DOMAIN_ORDER = ("Australia", "CDC", "UK", "WHO", "overall (micro)", "overall (macro)", "Quebec")


def ranked_counts(values: pd.Series, normalize: bool = False) -> pd.Series:
    """``values.value_counts()``, most common first, ties broken by the value itself (ascending).

    ``value_counts`` leaves the order of equal counts to numpy's quicksort, whose order of ties
    differs between CPUs (a vectorised sort where the CPU has AVX-512): a chapter that lists "the four
    most common" would print a different fourth on another machine.

    Example:
        >>> ranked_counts(pd.Series(["b", "a", "c", "b", "c"])).to_dict()
        {'b': 2, 'c': 2, 'a': 1}
        >>> ranked_counts(pd.Series(["b", "a"]), normalize=True).to_dict()
        {'a': 0.5, 'b': 0.5}
    """
    counts: pd.Series = (
        values.value_counts(normalize=True, sort=False) if normalize else values.value_counts(sort=False)
    )
    order = np.lexsort((counts.index.astype(str).to_numpy(), -counts.to_numpy()))
    ranked: pd.Series = counts.iloc[order]
    return ranked


def canonical_order(labels: Sequence[str]) -> list[str]:
    """Order test-set labels as the book's tables do: the four feedback domains, overall, then Quebec.

    Example:
        >>> canonical_order(["Quebec (test_old_faq_coll4)", "overall (micro)", "WHO", "Australia"])
        ['Australia', 'WHO', 'overall (micro)', 'Quebec (test_old_faq_coll4)']
    """

    def key(label: str) -> tuple[int, str]:
        for i, prefix in enumerate(_DOMAIN_ORDER):
            if label == prefix or label.startswith(prefix + " ("):
                return (i, label)
        return (len(_DOMAIN_ORDER), label)

    return sorted(labels, key=key)


def ci_table(
    long: pd.DataFrame,
    rows: str = "system",
    columns: str = "test_set",
    row_order: Sequence[str] | None = None,
    column_order: Sequence[str] | None = None,
    scale: float = 100.0,
    digits: int = 1,
) -> pd.DataFrame:
    """Wide table of ``mean [low, high]`` strings from a long table with ``accuracy, ci_low, ci_high``.

    Example:
        >>> long = pd.DataFrame({"system": ["a"], "test_set": ["X"], "accuracy": [0.6475],
        ...                      "ci_low": [0.62], "ci_high": [0.671]})
        >>> ci_table(long).loc["a", "X"].replace(NBSP, " ")
        '64.8 [62.0, 67.1]'
    """
    fmt = f"{{:.{digits}f}}"
    cells = long.assign(
        cell=[
            f"{fmt.format(m * scale)}{NBSP}{interval(lo * scale, hi * scale, digits, signed=False)}"
            for m, lo, hi in zip(long["accuracy"], long["ci_low"], long["ci_high"], strict=True)
        ]
    )
    wide = cells.pivot(index=rows, columns=columns, values="cell")
    if row_order is not None:
        wide = wide.reindex(list(row_order))
    labels = list(dict.fromkeys(long[columns]))
    wide = wide.reindex(columns=list(column_order) if column_order is not None else canonical_order(labels))
    wide.columns.name = None
    wide.index.name = rows
    return wide


def mean_sd_table(
    long: pd.DataFrame,
    rows: Sequence[str] = ("rqa", "reranker"),
    columns: str = "test_set",
    row_order: Sequence[tuple[str, ...]] | None = None,
    scale: float = 100.0,
    digits: int = 1,
) -> pd.DataFrame:
    """Wide table of ``mean ± sd`` strings (sd over seeds) from a long table with ``mean, sd, seeds``.

    A single-seed row (the RQA alone) shows the mean only.

    Example:
        >>> long = pd.DataFrame({"rqa": "r", "reranker": ["none", "kl"], "test_set": "WHO",
        ...                      "mean": [0.6, 0.625], "sd": [0.0, 0.0123], "seeds": [1, 3]})
        >>> [c.replace(NBSP, " ") for c in mean_sd_table(long)["WHO"]]
        ['60.0', '62.5 ± 1.2']
    """
    fmt = f"{{:.{digits}f}}"
    cells = long.assign(
        cell=[
            plus_minus(m * scale, s * scale, digits) if n > 1 else fmt.format(m * scale)
            for m, s, n in zip(long["mean"], long["sd"], long["seeds"], strict=True)
        ]
    )
    wide = cells.pivot(index=list(rows), columns=columns, values="cell")
    if row_order is None:  # first appearance, not pivot's sorted order
        row_order = list(dict.fromkeys(map(tuple, long[list(rows)].itertuples(index=False))))
    wide = wide.reindex(pd.MultiIndex.from_tuples(list(row_order), names=list(rows)))
    wide = wide.reindex(columns=canonical_order(list(dict.fromkeys(long[columns]))))
    wide.columns.name = None
    return wide


#: Header of the minimal-detectable-effect column (:func:`comparison_table`).
MDE_HEADER = "MDE"
#: The CI of a difference beside a Holm-adjusted p: the interval itself is not adjusted, and says so.
CI_HEADER = "95% CI of Δ (unadjusted)"


def comparison_table(
    comparison: Comparison | pd.DataFrame,
    names: Sequence[str] | None = None,
    levels: Sequence[str] | None = None,
    scale: float = 100.0,
    digits: int = 2,
    mean_header: str = "accuracy (%)",
    delta_header: str = "Δ (points)",
    raw_p: bool = False,
    wtl: bool = True,
    mde: bool = True,
    mde_header: str | None = None,
    n_resamples: int | None = None,
    seeds_resampled: Comparison | pd.DataFrame | None = None,
) -> pd.DataFrame:
    """A comparison for reading: the mean, Δ, its CI as one cell, Holm's p, the MDE of a null, W / T / L.

    Args:
        comparison: A :class:`~fqa_analysis.core.compare.Comparison` or its table (schema
            :data:`~fqa_analysis.core.compare.COLUMNS`, indexed by the compared keys), or rows of
            it.
        names: The index's level names as the reader sees them (default: as they are).
        levels: Index levels to keep, in order (default: all).
        scale: multiplies means and differences (100: fractions shown in points).
        digits: decimals of means and differences (2 for accuracy in points, what a bootstrap
            CI over about 2,000 questions supports); p-values get 3 significant digits.
        mean_header: header of the mean column.
        delta_header: header of the difference column.
        raw_p: also show the uncorrected p-value (the book reports Holm's, the family's).
        wtl: show wins / ties / losses.
        mde: show the minimal detectable effect (80% power at 5% / m, m the Holm family's size) beside each
            result that is not significant after Holm (where the table has it); "—" where it is 0
            (the two systems agree on every question: the bootstrap has no spread).
        mde_header: header of the MDE column; by default "MDE" with the unit the difference
            header names in parentheses ("Δ (points)" gives "MDE (points)").
        n_resamples: the comparison's B, for writing a p at the bootstrap's floor "≤ p"
            (:func:`holm_p_text`); default: a Comparison's own, else the project's.
        seeds_resampled: the same comparison with each system's training seeds resampled too
            (``compare(..., resample_seeds=True)``, the same rows): its Holm p becomes the last
            column, "p (Holm), seeds resampled".

    Example:
        >>> row = {"rqa": "bm25", "reranker": "kl", "mean": 0.43321, "delta": 0.0049,
        ...        "delta_ci_low": -0.001, "delta_ci_high": 0.011, "p_value": 0.123456, "p_holm": 0.5,
        ...        "wins": 3, "ties": 9, "losses": 1}
        >>> t = pd.DataFrame([row]).set_index(["rqa", "reranker"])
        >>> shown = comparison_table(t, names=["RQA", "reranker"], raw_p=True)
        >>> shown.index.tolist(), shown.iloc[0].str.replace(NBSP, " ").tolist()
        ([('bm25', 'kl')], ['43.32', '+0.49', '[-0.10, +1.10]', '0.123', '0.500', '3 / 9 / 1'])
        >>> comparison_table(t, levels=["reranker"], wtl=False).columns.tolist()
        ['accuracy (%)', 'Δ (points)', '95% CI of Δ (unadjusted)', 'p (Holm)']
        >>> nulls = t.assign(mde=0.012)  # not significant after Holm: its MDE shown, in Δ's unit
        >>> shown = comparison_table(nulls, wtl=False, scale=1.0, digits=3, delta_header="Δ (nats)")
        >>> shown.columns[-1], shown.iloc[0, -1]
        ('MDE (nats)', '0.012')
        >>> floor = t.assign(p_value=1 / 10_001, p_holm=3 / 10_001)  # no resample as extreme
        >>> comparison_table(floor, wtl=False, raw_p=True)[["p", "p (Holm)"]].iloc[0].tolist()
        ['≤ 0.000100', '≤ 0.000300']
    """
    table = comparison.table if isinstance(comparison, Comparison) else comparison
    if n_resamples is None:
        n_resamples = comparison.n_resamples if isinstance(comparison, Comparison) else N_RESAMPLES
    floors, holm_floors = _floors(table, n_resamples)
    resampled_p: list[str] | None = None
    if seeds_resampled is not None:
        other = seeds_resampled.table if isinstance(seeds_resampled, Comparison) else seeds_resampled
        other = other.loc[table.index]  # the table's rows, in its order
        resampled_p = [
            p_text(p, 3, at_floor=f)
            for p, f in zip(other["p_holm"], _floors(other, n_resamples)[1], strict=True)
        ]
    if levels is not None:
        table = table.reset_index().set_index(list(levels))
    rows = {
        mean_header: [f"{scale * m:.{digits}f}" for m in table["mean"]],
        delta_header: [signed_text(scale * d, digits) for d in table["delta"]],
        CI_HEADER: [
            interval(scale * lo, scale * hi, digits)
            for lo, hi in zip(table["delta_ci_low"], table["delta_ci_high"], strict=True)
        ],
        "p": [p_text(p, 3, at_floor=f) for p, f in zip(table["p_value"], floors, strict=True)],
        "p (Holm)": [p_text(p, 3, at_floor=f) for p, f in zip(table["p_holm"], holm_floors, strict=True)],
    }
    if mde and "mde" in table.columns:
        # beside a null result only: how large a difference these questions could have shown
        unit = re.search(r"\(([^()]*)\)\s*$", delta_header)
        header = mde_header or (f"{MDE_HEADER} ({unit.group(1)})" if unit else MDE_HEADER)
        rows[header] = [
            ("—" if m == 0 else f"{scale * m:.{digits}f}") if p >= 0.05 else ""
            for m, p in zip(table["mde"], table["p_holm"], strict=True)
        ]
    if not raw_p:
        del rows["p"]
    if wtl:
        rows["W / T / L"] = [
            f"{w}{NBSP}/{NBSP}{t}{NBSP}/{NBSP}{lo}"
            for w, t, lo in zip(table["wins"], table["ties"], table["losses"], strict=True)
        ]
    if resampled_p is not None:
        rows["p (Holm), seeds resampled"] = resampled_p
    index = table.index.copy()
    if names is not None:
        index = index.set_names(list(names))
    return pd.DataFrame(rows, index=index)


def _floors(table: pd.DataFrame, n_resamples: int) -> tuple[list[bool], list[bool]]:
    """Which rows' raw p and Holm p are bounds: at the bootstrap's floor, or carried from one by Holm."""
    floors = [at_bootstrap_floor({"p_value": p}, n_resamples) for p in table["p_value"]]
    # Holm's running maximum carries a floor row's bound to the rows ranked after it
    bound = table.get("p_holm_bound", pd.Series(False, index=table.index))
    return floors, [f or bool(b) for f, b in zip(floors, bound, strict=True)]


def paper_shape_table(
    seed_table: pd.DataFrame,
    systems: Sequence[str],
    columns: Mapping[str, str],
    paper: Mapping[str, float] | None = None,
    test_set: str = "overall (micro)",
    digits: int = 1,
) -> pd.DataFrame:
    """The paper's table shape: one row per RQA system, one column per reranker, ``mean ± sd`` in %.

    Args:
        seed_table: long table with ``rqa, reranker, test_set, mean, sd, seeds`` (fractions).
        systems: RQA systems, in row order.
        columns: reranker name -> column header, in column order (e.g. ``{"none": "alone"}``).
        paper: the paper's numbers in %, keyed by the same reranker names; shown as a last row
            ``paper (BERT)`` with the digits it published.
        test_set: which test set's accuracy fills the cells.
        digits: decimals of our cells.

    Example:
        >>> long = pd.DataFrame({"rqa": "bm25", "reranker": ["none", "kl"], "test_set": "overall (micro)",
        ...                      "mean": [0.6, 0.625], "sd": [0.0, 0.0123], "seeds": [1, 3]})
        >>> t = paper_shape_table(long, ["bm25"], {"none": "alone", "kl": "+ feedback"}, {"none": 64.75})
        >>> t.map(lambda c: c.replace(NBSP, " ")).values.tolist()
        [['60.0', '62.5 ± 1.2'], ['64.75', '']]
    """
    rows: dict[Any, dict[Any, Any]] = (
        seed_table[seed_table["test_set"] == test_set].set_index(["rqa", "reranker"]).to_dict("index")
    )
    cells: dict[str, list[str]] = {header: [] for header in columns.values()}
    for system in systems:
        for reranker, header in columns.items():
            if (system, reranker) not in rows:
                cells[header].append("")
                continue
            r = rows[(system, reranker)]
            mean, sd, seeds = r["mean"], r["sd"], r["seeds"]
            cells[header].append(
                plus_minus(100 * float(mean), 100 * float(sd), digits)
                if int(seeds) > 1
                else f"{100 * float(mean):.{digits}f}"
            )
    index = list(systems)
    if paper is not None:
        for reranker, header in columns.items():
            cells[header].append(f"{paper[reranker]:.2f}" if reranker in paper else "")
        index.append("paper (BERT)")
    return pd.DataFrame(cells, index=pd.Index(index, name="RQA"))


def markdown_records(frame: pd.DataFrame, lead: str, fields: Sequence[str]) -> str:
    """Rows of prose (questions, passages, explanations) as a Markdown list instead of a wide table.

    Each row becomes one bullet: its ``lead`` column in bold, then ``field: value`` for each field,
    so long text wraps like a paragraph.

    Example:
        >>> f = pd.DataFrame({"question": ["Can I travel?"], "gold": ["Travel | Rules"], "rank": [3]})
        >>> print(markdown_records(f, "question", ["gold", "rank"]))
        - **Can I travel?** gold: Travel | Rules; rank: 3
    """
    lines = []
    for row in frame.to_dict("records"):
        rest = "; ".join(f"{name}: {row[name]}" for name in fields)
        lines.append(f"- **{row[lead]}** {rest}")
    return "\n".join(lines)


def markdown_table(frame: pd.DataFrame) -> str:
    r"""A table of prose as a Markdown pipe table, so long cells wrap instead of widening the page.

    The index becomes the first column (under its name); a ``|`` inside a cell is escaped.

    Example:
        >>> f = pd.DataFrame({"here": ["128 tokens"], "paper": ["a | b"]}, index=pd.Index(["in"], name="w"))
        >>> print(markdown_table(f))
        | w | here | paper |
        |---|---|---|
        | in | 128 tokens | a \| b |
    """

    def cell(value: Any) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    header = [frame.index.name or "", *map(str, frame.columns)]
    lines = ["| " + " | ".join(map(cell, header)) + " |", "|" + "---|" * len(header)]
    for label, row in frame.iterrows():
        lines.append("| " + " | ".join(cell(v) for v in [label, *row.tolist()]) + " |")
    return "\n".join(lines)


def variety_table(rows: dict[str, dict[str, Any]], index: str = "explainer") -> pd.DataFrame:
    """:func:`~fqa_analysis.core.text_metrics.variety` of several explainers as a reader's table.

    A column ``no non-word`` (the share of texts without a word absent from the lexicon) is shown
    where some row measured it (``no_nonword`` not NaN).

    Example:
        >>> row = {"texts": 4, "distinct": 0.5, "opening": "it is", "opening_share": 0.25, "words": 3.0,
        ...        "grounding": 0.333}
        >>> [str(v) for v in variety_table({"a": row}).loc["a"]]
        ['4', '50.0%', 'it is', '25.0%', '3.0', '0.33']
        >>> list(variety_table({"a": {**row, "no_nonword": 0.75}}).loc["a"])[-1]
        '75.0%'
    """
    varied = pd.DataFrame(rows).T
    table = pd.DataFrame(
        {
            "texts": varied["texts"].astype(int),
            "distinct": [f"{v:.1%}" for v in varied["distinct"]],
            "most common opening": [readable_opening(str(o)) for o in varied["opening"]],
            "its share": [f"{v:.1%}" for v in varied["opening_share"]],
            "words": varied["words"].astype(float).round(1),
            "grounding": varied["grounding"].astype(float).round(2),
        }
    ).rename_axis(index)
    clean = varied["no_nonword"].astype(float) if "no_nonword" in varied else None
    if clean is not None and clean.notna().any():
        table["no non-word"] = [f"{v:.1%}" if v == v else "" for v in clean]
    return table


def comparison_caption(comparison: Comparison, over: str) -> str:
    r"""A comparison's test in words, its key:value signature collapsed under it (MyST, for Markdown output).

    The words say what a reader needs to weigh a table (the test, what was resampled, how seeds
    enter, the Holm family); the signature, for whoever recomputes, opens on a click.

    Args:
        comparison: The comparison a table or figure shows.
        over: What the bootstrap resamples, in words (``"1,992 questions"``).

    Example:
        >>> c = Comparison(table=pd.DataFrame(), system="reranker", value="correct",
        ...     family="every reranker vs none, per rqa", family_size=8, n_resamples=10_000, seed=0,
        ...     confidence=0.95, average="micro", strata=("domain",), seeds="mean per question")
        >>> print(comparison_caption(c, "1,992 questions").split("\n")[0])  # doctest: +NORMALIZE_WHITESPACE
        *Paired bootstrap over 1,992 questions (10,000 resamples, within domain; micro average);
        training seeds: mean per question; Holm over 8 comparisons (every reranker vs none, per rqa).*
    """
    within = f", within {'/'.join(comparison.strata)}" if comparison.strata else ""
    words = (
        f"*Paired bootstrap over {over} ({comparison.n_resamples:,} resamples{within}; {comparison.average} "
        f"average); training seeds: {comparison.seeds}; Holm over {comparison.family_size} comparisons "
        f"({comparison.family}).*"
    )
    return (
        f"{words}\n\n````{{admonition}} The test's signature (to recompute it)\n:class: dropdown\n"
        f"```text\n{comparison.signature()}\n```\n````"
    )

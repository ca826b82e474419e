"""Formatting of result tables for the book (pure pandas; numbers come from stats/metrics)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = [
    "COMPARISON_COLUMNS",
    "canonical_order",
    "ci_table",
    "comparison_points",
    "failure_examples",
    "mean_sd_table",
]

_DOMAIN_ORDER = ("Australia", "CDC", "UK", "WHO", "overall (micro)", "overall (macro)", "Quebec")


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
        >>> ci_table(long).loc["a", "X"]
        '64.8 [62.0, 67.1]'
    """
    fmt = f"{{:.{digits}f}}"
    cells = long.assign(
        cell=[
            f"{fmt.format(m * scale)} [{fmt.format(lo * scale)}, {fmt.format(hi * scale)}]"
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
        >>> mean_sd_table(long)["WHO"].tolist()
        ['60.0', '62.5 ± 1.2']
    """
    fmt = f"{{:.{digits}f}}"
    cells = long.assign(
        cell=[
            fmt.format(m * scale) + (f" ± {fmt.format(s * scale)}" if n > 1 else "")
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


def failure_examples(
    candidates: pd.DataFrame,
    ranks: pd.DataFrame,
    data_dir: Path,
    rqa: str,
    n: int = 5,
    seed: int = 0,
) -> pd.DataFrame:
    """Seeded sample of test questions an RQA system (alone) answers wrongly, with both passages.

    Returns:
        ``domain, question, answered (title | headers), gold (title | headers), gold_rank``.
    """
    from fqa_analysis.data import load_qa_split

    top1 = candidates[
        (candidates["rqa"] == rqa) & (candidates["reranker"] == "none") & (candidates["rqa_rank"] == 1)
    ]
    # sorted first: the sample must not depend on the stored row order
    top1 = top1.sort_values(["domain", "split", "question_id"], kind="stable")
    wrong = top1[~top1["is_gold"]].sample(n=min(n, int((~top1["is_gold"]).sum())), random_state=seed)
    sub = ranks[ranks["rqa"] == rqa]
    keyed = {
        (str(d), str(s), int(q)): int(g)
        for d, s, q, g in zip(sub["domain"], sub["split"], sub["question_id"], sub["gold_rank"], strict=True)
    }
    pools: dict[tuple[str, str], Any] = {}
    rows = []
    for rec in wrong.to_dict("records"):
        r: Any = pd.Series(rec)
        key = (str(r.domain), str(r.split))
        if key not in pools:
            pools[key] = load_qa_split(data_dir, *key)
        split = pools[key]
        gold_id = next(q.passage_id for q in split.questions if q.question_id == r.question_id)

        def short(pid: int, split: Any = split) -> str:
            p = split.passages[pid]
            return " | ".join([p.page_title, *p.section_headers])

        rows.append(
            {
                "domain": r.domain,
                "question": r.question,
                "answered": short(int(r.passage_id)),
                "gold": short(gold_id),
                "gold_rank": keyed[(str(r.domain), str(r.split), int(r.question_id))],
            }
        )
    return pd.DataFrame(rows)


#: Columns of a paired comparison (:meth:`~fqa_analysis.core.stats.Comparison.to_frame` plus its keys).
COMPARISON_COLUMNS = [
    "rqa",
    "system",
    "mean",
    "delta",
    "delta_ci_low",
    "delta_ci_high",
    "p_value",
    "p_holm",
    "wins",
    "ties",
    "losses",
]


def comparison_points(comparison: pd.DataFrame) -> pd.DataFrame:
    """A comparison of accuracies for reading: means and differences in points (2 decimals), p to 4.

    Example:
        >>> row = {"rqa": "bm25", "system": "kl", "mean": 0.43321, "delta": 0.0049,
        ...        "delta_ci_low": -0.001, "delta_ci_high": 0.011, "p_value": 0.123456, "p_holm": 0.5,
        ...        "wins": 3, "ties": 9, "losses": 1}
        >>> comparison_points(pd.DataFrame([row]))[["mean", "delta", "p_value"]].iloc[0].tolist()
        [43.32, 0.49, 0.1235]
    """
    shown = comparison[COMPARISON_COLUMNS].copy()
    for c in ["mean", "delta", "delta_ci_low", "delta_ci_high"]:
        shown[c] = (100 * shown[c]).round(2)
    return shown.round(4)

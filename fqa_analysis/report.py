"""Formatting of result tables for the book (pure pandas; numbers come from stats/metrics)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

__all__ = ["ci_table"]


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
    wide = wide.reindex(
        columns=list(column_order) if column_order is not None else list(dict.fromkeys(long[columns]))
    )
    wide.columns.name = None
    wide.index.name = rows
    return wide

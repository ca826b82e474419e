"""Hand-made comparison records for the findings tests: a table of rows and the test's description."""

from __future__ import annotations

import pandas as pd

from fqa_analysis.core.compare import Comparison


def comparison(table: pd.DataFrame, system: str, family: str, seeds: str = "mean per question") -> Comparison:
    """A :class:`Comparison` around a hand-made table: B = 10,000, seed 0, micro, within domains.

    The family's size is the table's row count.
    """
    return Comparison(
        table=table,
        system=system,
        value="correct",
        family=family,
        family_size=len(table),
        n_resamples=10_000,
        seed=0,
        confidence=0.95,
        average="micro",
        strata=("domain",),
        seeds=seeds,
    )

"""The results table several stages write: ``candidates.parquet`` (contract-checked, atomic).

The rqa stage writes the RQA systems' rows, the rerank stage adds the rerankers'; both go
through :func:`write_candidates`, so the table on disk always passes the contract.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fqa_analysis.cache import atomic_write_parquet
from fqa_analysis.core.candidates import QUESTION_KEYS, validate_candidates

__all__ = ["write_candidates"]


def write_candidates(out_dir: Path, table: pd.DataFrame) -> None:
    """Check the whole table against the contract, sort it question-major, write it atomically.

    Question-major order (question, RQA system, rank, then reranker and seed) puts the 16 runs of
    one candidate next to each other, so the columns they share (question, passage, P_theta)
    compress to almost nothing: it halves the file. Readers must not rely on row order.
    """
    path = out_dir / "candidates.parquet"
    validate_candidates(table, path)
    out_dir.mkdir(parents=True, exist_ok=True)
    order = ["protocol", *QUESTION_KEYS, "rqa", "rqa_rank", "reranker", "seed"]
    atomic_write_parquet(path, table.sort_values(order, ignore_index=True, kind="stable"))

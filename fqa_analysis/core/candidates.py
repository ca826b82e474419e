"""The candidate table contract (ARCHITECTURE.md#results-contract) and its validation.

One row per (run, question, candidate) for the RQA's top k. A run is identified by
``protocol, rqa, reranker, seed``; a question by ``domain, split, question_id``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from fqa_analysis.errors import DataError, DataProblem

__all__ = [
    "CANDIDATE_COLUMNS",
    "QUESTION_KEYS",
    "RATING_COLUMNS",
    "RUN_KEYS",
    "validate_candidates",
]

RUN_KEYS: list[str] = ["protocol", "rqa", "reranker", "seed"]
QUESTION_KEYS: list[str] = ["domain", "split", "question_id"]
#: The reranker's rating distribution, in scale order (Bad .. Excellent).
RATING_COLUMNS: list[str] = ["p_bad", "p_could_be_improved", "p_acceptable", "p_excellent"]
CANDIDATE_COLUMNS: list[str] = [
    *RUN_KEYS,
    *QUESTION_KEYS,
    "question",
    "passage_id",
    "rqa_rank",
    "p_rqa",
    *RATING_COLUMNS,
    "is_gold",
]
NO_RERANKER = "none"


def _where(keys: list[str], values: tuple[object, ...]) -> str:
    """Name a (run, question) in a message, with plain Python values."""
    plain = [v.item() if isinstance(v, np.generic) else v for v in values]
    return "question " + ", ".join(f"{k}={v!r}" for k, v in zip(keys, plain, strict=True))


def validate_candidates(df: pd.DataFrame, source: Path | str = "candidates table", atol: float = 1e-4) -> int:
    """Check a candidate table against the contract; return k.

    Checks: every column present; one k for the whole table; ``rqa_rank`` is 1..k once each per
    question; ``is_gold`` on at most one row per question; ``p_rqa`` in [0, 1]; rating columns
    null exactly where ``reranker`` is ``none``, otherwise in [0, 1] and summing to 1.

    Raises:
        DataError: Naming the first offending run and question, and the fix.

    """
    path = Path(str(source))
    fix = "regenerate the table with `fqa run`"
    missing = [c for c in CANDIDATE_COLUMNS if c not in df.columns]
    if missing:
        raise DataError(DataProblem(path, "(columns)", f"missing column(s) {missing}", fix))
    if df.empty:
        raise DataError(DataProblem(path, "(rows)", "the table has no rows", fix))
    keys = RUN_KEYS + QUESTION_KEYS
    groups = df.groupby(keys, sort=False)
    sizes = groups.size()
    k = int(sizes.mode().iloc[0])  # the table's k is what most questions have
    bad = sizes[sizes != k]
    if len(bad):
        raise DataError(
            DataProblem(
                path,
                _where(keys, bad.index[0]),
                f"{bad.iloc[0]} candidate rows where the rest of the table has k={k}",
                fix,
            )
        )
    rank_ok = groups["rqa_rank"].agg(lambda r: sorted(r.tolist()) == list(range(1, k + 1)))
    if not rank_ok.all():
        first = rank_ok.index[~rank_ok.to_numpy()][0]
        raise DataError(DataProblem(path, _where(keys, first), f"rqa_rank is not 1..{k}", fix))
    gold = groups["is_gold"].sum()
    if (gold > 1).any():
        first = gold.index[(gold > 1).to_numpy()][0]
        raise DataError(DataProblem(path, _where(keys, first), "more than one gold row", fix))
    if not df["p_rqa"].between(0, 1).all():
        raise DataError(DataProblem(path, "p_rqa", "probabilities outside [0, 1]", fix))
    none = (df["reranker"] == NO_RERANKER).to_numpy()
    ratings = df[RATING_COLUMNS].to_numpy(dtype=float)
    if not np.isnan(ratings[none]).all():
        raise DataError(
            DataProblem(path, "reranker 'none'", "rating columns must be null without a reranker", fix)
        )
    rated = ratings[~none]
    if np.isnan(rated).any() or (rated < -atol).any() or (rated > 1 + atol).any():
        raise DataError(
            DataProblem(path, "rating columns", "missing or out-of-range reranker probabilities", fix)
        )
    if len(rated) and not np.allclose(rated.sum(axis=1), 1.0, atol=atol):
        raise DataError(DataProblem(path, "rating columns", "reranker probabilities do not sum to 1", fix))
    return k

"""The feedback experiments of the beyond stage: how much feedback, and from which domain.

Pure functions over ``feedback_experiments.parquet`` and ``feedback_experiment_ratings.parquet``:
the learning curve's runs (feedback fractions) and the leave-one-domain-out transfer runs with
their size-matched controls, as outcomes keyed like the main table's, and accuracy with a
bootstrap CI per group. Outcomes of several seeds are averaged per question first.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from fqa_analysis.core.candidates import NO_RERANKER, RATING_COLUMNS
from fqa_analysis.data import FEEDBACK_DOMAINS

__all__ = [
    "TRANSFER_RUNS",
    "best_run",
    "experiment_candidates",
    "item_outcomes",
    "transfer_outcomes",
]


def experiment_candidates(
    experiments: pd.DataFrame, candidates: pd.DataFrame, rqa: str = "hybrid"
) -> pd.DataFrame:
    """The experiment rerankers' P_phi as candidate rows (``reranker = "<experiment>:<setting>"``).

    P_theta, the gold flag and the question come from the RQA's own rows in ``candidates``.

    Raises:
        ValueError: Experiment rows without a matching candidate (tables from different runs).
    """
    keys = ["domain", "split", "question_id", "rqa_rank"]
    base = candidates[(candidates["rqa"] == rqa) & (candidates["reranker"] == NO_RERANKER)]
    base = base.drop(columns=[*RATING_COLUMNS, "reranker", "seed"])
    out = experiments.merge(base, on=keys, how="left", suffixes=("", "_rqa"), validate="many_to_one")
    if out["p_rqa"].isna().any() or (out["passage_id"] != out["passage_id_rqa"]).any():
        raise ValueError(
            f"feedback_experiments.parquet does not match the {rqa} rows of candidates.parquet; "
            "rerun `fqa run beyond`"
        )
    out["reranker"] = out["experiment"] + ":" + out["setting"]
    return out.drop(columns=["passage_id_rqa"])


def item_outcomes(per_item: pd.DataFrame) -> pd.DataFrame:
    """Per-item rating scores keyed like questions (``split = "feedback_test"``, ``question_id = item_id``).

    So :func:`~fqa_analysis.core.compare.compare` and :func:`~fqa_analysis.core.compare.accuracy_by`
    work on feedback_test items unchanged.
    """
    return per_item.rename(columns={"item_id": "question_id"}).assign(split="feedback_test")


#: How the transfer experiment's runs are named in its tables.
TRANSFER_RUNS: dict[str, str] = {
    "none": "RQA alone",
    "fraction": "all feedback",
    "leave_out": "without own domain",
    "size_control": "size-matched control",
}


def transfer_outcomes(outcomes: pd.DataFrame) -> pd.DataFrame:
    """For every domain, its questions (or items) under the four transfer runs.

    Args:
        outcomes: Per-question (or per-item) rows whose ``reranker`` is ``none`` or
            ``<experiment>:<setting>`` (:func:`experiment_candidates`).

    Returns:
        The rows of ``none`` and ``fraction:1`` for every domain, and of ``leave_out:<d>`` and
        ``size_control:<d>`` for domain d only, with ``training`` naming the run
        (:data:`TRANSFER_RUNS`).
    """
    label = outcomes["reranker"].astype(str)
    kind = label.str.split(":").str[0]
    setting = label.str.split(":").str[1]
    own = (kind.isin(["leave_out", "size_control"]) & (setting == outcomes["domain"])) | (
        label == "fraction:1"
    )
    keep = own | (label == NO_RERANKER)
    return outcomes[keep.to_numpy()].assign(training=kind[keep].map(TRANSFER_RUNS).to_numpy())


def best_run(outcomes: pd.DataFrame, domains: Sequence[str] = FEEDBACK_DOMAINS) -> tuple[str, str]:
    """The (rqa, reranker) with the highest seed-averaged micro accuracy over ``domains``.

    Example:
        >>> o = pd.DataFrame({"rqa": ["a", "a", "b", "b"], "reranker": "none", "domain": "D",
        ...     "correct": [1, 0, 1, 1]})
        >>> best_run(o, ["D"])
        ('b', 'none')
    """
    acc = outcomes[outcomes["domain"].isin(list(domains))].groupby(["rqa", "reranker"])["correct"].mean()
    best = acc.index[int(np.argmax(acc.to_numpy()))]
    return str(best[0]), str(best[1])

"""Where the best reranked system fails: error categories and where wrong answers come from.

Pure functions over the outcomes, the RQA's gold ranks (``rqa_ranks.parquet``) and the QA splits
the caller loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from fqa_analysis.core.candidates import QUESTION_KEYS
from fqa_analysis.data import QASplit

__all__ = [
    "failure_categories",
    "failure_examples",
    "page_overlap",
]


def failure_categories(outcomes: pd.DataFrame, ranks: pd.DataFrame, depth: int = 20) -> pd.DataFrame:
    """Why each question is answered wrongly: the gold passage's rank decides.

    Categories: ``correct``; ``misranked`` (gold in the top 5, another passage picked);
    ``near miss`` (gold at rank 6..``depth``: a deeper reranker could reach it); ``retrieval
    miss`` (gold below ``depth``).

    Args:
        outcomes: Per-question outcomes of one run (``rqa``, question keys, ``correct``).
        ranks: ``rqa_ranks.parquet`` (gold rank of every RQA system and question).
        depth: Where a near miss ends.

    Example:
        >>> o = pd.DataFrame({"rqa": "r", "domain": "A", "split": "test", "question_id": [0, 1, 2, 3],
        ...     "correct": [True, False, False, False]})
        >>> r = pd.DataFrame({"rqa": "r", "domain": "A", "split": "test", "question_id": [0, 1, 2, 3],
        ...     "gold_rank": [1, 3, 9, 40]})
        >>> failure_categories(o, r)["category"].tolist()
        ['correct', 'misranked', 'near miss', 'retrieval miss']
    """
    keys = ["rqa", *QUESTION_KEYS]
    out = outcomes.merge(ranks[[*keys, "gold_rank"]], on=keys, how="left", validate="many_to_one")
    if out["gold_rank"].isna().any():
        raise ValueError("rqa_ranks.parquet lacks questions of the outcomes; rerun `fqa run rqa`")
    rank = out["gold_rank"].to_numpy(int)
    correct = out["correct"].to_numpy(bool)
    out["category"] = np.select(
        [correct, rank <= 5, rank <= depth], ["correct", "misranked", "near miss"], "retrieval miss"
    )
    return out


def page_overlap(categorised: pd.DataFrame, splits: Mapping[tuple[str, str], QASplit]) -> pd.DataFrame:
    """Name the picked and the gold passage of every question and say whether they share a page.

    FAQ collections split one page into many passages; a wrong answer from the gold's own page
    is a near miss a user may still find useful, one from another page is not.

    Returns:
        ``categorised`` with ``gold_id``, ``picked`` and ``gold`` (``title | headers``) and
        ``same_page`` (same ``page_title``).
    """
    gold_ids, picked, gold, same = [], [], [], []
    positions = {
        key: {q.question_id: i for i, q in enumerate(split.questions)} for key, split in splits.items()
    }
    for d, s, q, p in zip(
        categorised["domain"],
        categorised["split"],
        categorised["question_id"],
        categorised["passage_id"],
        strict=True,
    ):
        split = splits[(str(d), str(s))]
        g = split.questions[positions[(str(d), str(s))][int(q)]].passage_id
        a, b = split.passages[int(p)], split.passages[g]
        gold_ids.append(g)
        picked.append(" | ".join([a.page_title, *a.section_headers]))
        gold.append(" | ".join([b.page_title, *b.section_headers]))
        same.append(a.page_title == b.page_title)
    return categorised.assign(gold_id=gold_ids, picked=picked, gold=gold, same_page=same)


def failure_examples(
    candidates: pd.DataFrame,
    ranks: pd.DataFrame,
    splits: Mapping[tuple[str, str], QASplit],
    rqa: str,
    n: int = 5,
    seed: int = 0,
) -> pd.DataFrame:
    """Seeded sample of test questions an RQA system (alone) answers wrongly, with both passages.

    Args:
        candidates: Candidate rows (the RQA's own, reranker ``none``, are used).
        ranks: The RQA systems' gold ranks (``rqa_ranks.parquet``).
        splits: The QA splits of the sampled questions, by ``(domain, split)`` (the caller loads
            them: this module reads no file).
        rqa: The RQA system.
        n: Questions to sample.
        seed: Seed of the sample.

    Raises:
        KeyError: A sampled question's split is not in ``splits``.

    Returns:
        ``domain, question, answered (title | headers), gold (title | headers), gold_rank``.
    """
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
    rows = []
    for rec in wrong.to_dict("records"):
        r: Any = pd.Series(rec)
        split = splits[(str(r.domain), str(r.split))]
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

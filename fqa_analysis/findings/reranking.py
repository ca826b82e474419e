"""The reranking chapter and its appendix: one record of what they show, and the chapter's sentences.

:func:`reranking_page` reads a results folder once (candidates, the rerank stage's manifest, the
rating predictions and feedback_test's ratings) and returns a :class:`RerankingPage`: the page's
settings, which rerankers and RQA systems are there, and every comparison the chapter and
``book/appendix/reranking`` display. :func:`answer_sentence` and :func:`findings_lines` word it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from fqa_analysis import data
from fqa_analysis.core.compare import Comparison, significance_counts, verdict
from fqa_analysis.core.paper import PAPER_GAINS, TABLE2_ROWS
from fqa_analysis.core.ratings import item_ratings
from fqa_analysis.core.report import change_text
from fqa_analysis.core.reranking import (
    best_feedback_gain,
    compare_family,
    compare_to_baseline,
    constant_rating_quality,
    feedback_pairs,
    freezing_effect,
    join_annotators,
    per_item_rating_scores,
    reranker_quality,
    run_measures,
    score_outcomes,
    scoring_note,
    seed_table,
)
from fqa_analysis.core.results import (
    RERANK_RUN_FIELDS,
    comparable_config,
    load_candidates,
    load_stage,
    load_table,
)
from fqa_analysis.core.scoring import RerankerScore
from fqa_analysis.models.reranker.pairs import training_prior
from fqa_analysis.models.reranker.variants import VARIANTS
from fqa_analysis.models.retrieval import SYSTEMS

__all__ = [
    "PAPER_KEYS",
    "RerankingPage",
    "answer_sentence",
    "findings_lines",
    "freezing_measures",
    "learned_line",
    "ordered",
    "page_answer",
    "reranking_page",
    "seeds_text",
]

#: Our rerankers under the paper's Table 2 rows (``none``: the RQA alone), read from Table 2's record.
PAPER_KEYS: dict[str, str] = {ours: paper for ours, (_, paper) in TABLE2_ROWS.items()}


@dataclass(frozen=True)
class RerankingPage:
    """What the reranking chapter and its appendix show, read from one results folder.

    Attributes:
        results: The results folder.
        score, weight, depth: The page's scoring settings (the book's: ``p_excellent``, None, 5).
        settings_note: Words naming the settings that differ from the book's (None: none does).
        candidates: The candidates table, cut to the top ``depth`` and to the rerankers shown.
        stage: The rerank stage's manifest entry.
        systems: The RQA systems present, weakest first; ``rescored`` those a reranker rescores.
        rerankers: ``none`` then every reranker present, in declaration order.
        rqa: The RQA system the page's answer is about (the strongest rescored, or the one chosen).
        chosen: Whether ``rqa`` was chosen by the reader (the page then says so).
        outcomes: Per-question outcomes under the page's scoring (:func:`score_outcomes`).
        table: Accuracy per test set, mean and sd over seeds (:func:`seed_table`).
        micro, macro: Every reranker against the RQA alone (:func:`compare_to_baseline`).
        quality: Each reranker's AUC, accuracy alone and reranked on ``rqa`` (:func:`reranker_quality`).
        items: feedback_test's items with the annotators' ratings.
        predictions: Every reranker's rating predictions on feedback_test (as the stage wrote them).
        rating_kl: Each reranker's mean KL to the annotators on feedback_test (seeds averaged per item).
        prior: The training feedback's average rating distribution; ``prior_kl`` its KL there.
        over_qa: ``combined`` and ``feedback_kl`` against ``vanilla`` on every RQA (None without them);
            ``over_qa_seeds`` the same family with the reranker's seeds resampled too.
    """

    results: Path
    score: RerankerScore
    weight: float | None
    depth: int
    settings_note: str | None
    candidates: pd.DataFrame
    stage: dict[str, Any]
    systems: list[str]
    rescored: list[str]
    rerankers: list[str]
    rqa: str
    chosen: bool
    outcomes: pd.DataFrame
    table: pd.DataFrame
    micro: Comparison
    macro: Comparison
    quality: pd.DataFrame
    items: pd.DataFrame
    predictions: pd.DataFrame
    rating_kl: pd.Series
    prior: np.ndarray
    prior_kl: float
    over_qa: Comparison | None
    over_qa_seeds: Comparison | None

    @property
    def feedback(self) -> list[str]:
        """The rerankers present trained on feedback (every one but the relevance model)."""
        return [v for v in self.rerankers[1:] if v != "vanilla"]

    @property
    def warm(self) -> list[str]:
        """The rerankers present that continue from the relevance model."""
        return [v for v in self.rerankers[1:] if VARIANTS[v].start == "relevance"]

    @property
    def scratch(self) -> list[str]:
        """The rerankers present trained from MiniLM on feedback alone (``*_scratch``)."""
        return [v for v in self.rerankers[1:] if v.endswith("_scratch")]

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """The (reranker, ``vanilla``) pairs of :attr:`over_qa`."""
        return feedback_pairs(set(self.rerankers[1:]))

    @property
    def overall_questions(self) -> int:
        """How many overall questions (the feedback domains' test questions) the comparisons resample."""
        o = self.outcomes
        alone = (o["reranker"] == "none") & (o["rqa"] == self.rqa) & o["domain"].isin(data.FEEDBACK_DOMAINS)
        return int(alone.sum())

    @property
    def seeds_of(self) -> dict[str, list[int]]:
        """Each reranker's training seeds present, ascending."""
        rows = self.candidates[self.candidates["reranker"] != "none"]
        return {
            str(k): sorted(int(s) for s in v) for k, v in rows.groupby("reranker")["seed"].unique().items()
        }


def reranking_page(
    results: Path,
    score: RerankerScore = "p_excellent",
    weight: float | None = None,
    depth: int = 5,
    rqa: str | None = None,
    rerankers: Sequence[str] | None = None,
    data_dir: Path | None = None,
) -> RerankingPage:
    """Read ``results`` once and compute what the reranking chapter and its appendix show.

    Args:
        results: The results folder (``candidates.parquet``, ``rating_predictions.parquet``, the
            rerank stage's manifest entry).
        score: The reranker's part of S: ``p_excellent`` (the paper's) or ``expected_rating``.
        weight: None for the paper's sum; w in [0, 1] for ``(1 - w) P_theta + w score``.
        depth: How many of the RQA's top 5 the reranker rescores (1..5).
        rqa: The RQA system the answer is about; None: the strongest one rescored (hybrid).
        rerankers: The rerankers shown; None: every one present.
        data_dir: The data folder (feedback_test's ratings); None: the default one.

    Raises:
        ValueError: A setting outside its range, or ``rqa``/``rerankers`` naming something the
            folder lacks (one line: the setting, the value, what is allowed).
    """
    note = scoring_note(score, weight, depth)
    if rqa is not None or rerankers is not None:
        shown = f"*Shown: RQA_SHOWN = {rqa!r}, RERANKERS_SHOWN = {rerankers!r} (book: None, None).*"
        note = f"{note or ''} {shown}".strip()
    candidates = load_candidates(results)
    candidates = candidates[candidates["rqa_rank"] <= depth]  # a question whose gold is deeper is wrong
    if rerankers is not None:
        unknown = sorted(set(rerankers) - set(candidates["reranker"]))
        if unknown:
            raise ValueError(f"RERANKERS_SHOWN names {unknown}: allowed None or rerankers of {results}")
        candidates = candidates[candidates["reranker"].isin(["none", *rerankers])]
    systems = [s for s in SYSTEMS if s in set(candidates["rqa"])]  # weakest first
    present = set(candidates["reranker"]) - {"none"}
    names = ["none", *[v for v in VARIANTS if v in present]]
    rescored = [s for s in systems if s in set(candidates.loc[candidates["reranker"] != "none", "rqa"])]
    subject = rqa or ("hybrid" if "hybrid" in rescored else rescored[-1])
    if subject not in rescored:
        raise ValueError(f"RQA_SHOWN = {rqa!r}: allowed None or one of the rescored systems {rescored}")
    stage = load_stage(results, "rerank")
    commit = stage["git_commit"]
    outcomes = score_outcomes(candidates, score, weight)
    rescored_outcomes = outcomes[outcomes["rqa"].isin(rescored)]
    data_dir = data.resolve_data_dir(data_dir)
    items = item_ratings(data.feedback_frame(data.available_feedback(data_dir, "test")))
    predictions = load_table(results, "rating_predictions.parquet")
    per_item = per_item_rating_scores(join_annotators(predictions, items))
    prior = training_prior(
        stage["protocol"],
        data.available_feedback(data_dir, "train"),
        data.available_feedback(data_dir, "valid"),
    )
    pairs = feedback_pairs(present)
    return RerankingPage(
        results=results,
        score=score,
        weight=weight,
        depth=depth,
        settings_note=note,
        candidates=candidates,
        stage=stage,
        systems=systems,
        rescored=rescored,
        rerankers=names,
        rqa=subject,
        chosen=rqa is not None,
        outcomes=outcomes,
        table=seed_table(outcomes),
        micro=compare_to_baseline(rescored_outcomes, average="micro", commit=commit),
        macro=compare_to_baseline(rescored_outcomes, average="macro", commit=commit),
        quality=reranker_quality(candidates, subject, reranker_score=score, weight=weight),
        items=items,
        predictions=predictions,
        rating_kl=per_item.groupby("reranker")["kl"].mean(),
        prior=prior,
        prior_kl=float(constant_rating_quality([float(p) for p in prior], items)["kl"]),
        over_qa=compare_family(rescored_outcomes, pairs, commit=commit) if pairs else None,
        # vanilla is one model in the book's results (every warm seed continues from it): its own
        # seed is not resampled; the reranker's are
        over_qa_seeds=compare_family(rescored_outcomes, pairs, commit=commit, resample_seeds=True)
        if pairs
        else None,
    )


def ordered(rows: pd.DataFrame, page: RerankingPage) -> pd.DataFrame:
    """A per-(RQA, reranker) table's rows in reading order: RQA systems weakest first, then declared."""
    keep = [(r, k) for r in page.rescored for k in page.rerankers[1:] if (r, k) in rows.index]
    return rows.reindex(keep)


def seeds_text(seeds_of: dict[str, list[int]]) -> str:
    """Each reranker's seeds, grouped where they agree.

    Example:
        >>> seeds_text({"vanilla": [0], "combined": [0, 1, 2], "feedback_kl": [0, 1, 2]})
        '`vanilla`: seed 0; `combined`, `feedback_kl`: seeds 0, 1, 2'
    """
    groups: dict[tuple[int, ...], list[str]] = {}
    for name, seeds in seeds_of.items():
        groups.setdefault(tuple(seeds), []).append(name)
    return "; ".join(
        f"{', '.join(f'`{n}`' for n in group)}: seed{'s' if len(s) > 1 else ''} {', '.join(map(str, s))}"
        for s, group in groups.items()
    )


def answer_sentence(contribution: Any, rqa: str, reranker: str = "combined", strongest: bool = True) -> str:
    """The chapter's answer in one sentence (at most 30 words): what the feedback itself adds.

    The paper's claim is the feedback's own contribution: a reranker trained on QA data and
    feedback against the one trained on QA data alone (CombinedReranker minus VanillaReranker,
    +1.99 points). Ours is ``reranker`` against ``vanilla``, the relevance model it continues from;
    the verdict is the Holm-corrected test's, the interval the unadjusted 95% CI.

    Args:
        contribution: The comparison row of ``reranker`` against ``vanilla`` on ``rqa``.
        rqa: The RQA system.
        reranker: ``combined`` (the paper's +1.99) or ``feedback_kl`` (its +0.61).
        strongest: Whether ``rqa`` is the strongest system rescored (the book's), else one chosen.

    Example:
        >>> row = {"delta": -0.0027, "delta_ci_low": -0.0099, "delta_ci_high": 0.0045, "p_holm": 1.0}
        >>> print(answer_sentence(row, "hybrid"))  # doctest: +NORMALIZE_WHITESPACE
        User feedback did not make the strongest QA system (hybrid) measurably more accurate: beyond QA
        data it changes accuracy@1 by -0.27 points (95% CI -0.99 to +0.45; paper +1.99).
    """
    found = verdict(contribution, with_mde=False)
    said = {"better": "made", "worse": "made"}.get(found, "did not make")
    how = {"better": "more", "worse": "less"}.get(found, "measurably more")
    system = f"the strongest QA system ({rqa})" if strongest else f"the QA system {rqa}"
    paper = _paper_contribution(reranker)
    low, high = 100 * contribution["delta_ci_low"], 100 * contribution["delta_ci_high"]
    return (
        f"User feedback {said} {system} {how} accurate: beyond QA data it changes "
        f"accuracy@1 by {100 * contribution['delta']:+.2f} points (95% CI {low:+.2f} to {high:+.2f}; "
        f"paper {paper:+.2f})."
    )


def page_answer(page: RerankingPage) -> str | None:
    """:func:`answer_sentence` for the page: ``combined`` (else ``feedback_kl``) against ``vanilla``.

    None where the page has neither comparison (a folder without ``vanilla``).
    """
    if page.over_qa is None:
        return None
    for reranker in ("combined", "feedback_kl"):
        if (page.rqa, reranker) in page.over_qa.table.index:
            row = page.over_qa.table.loc[(page.rqa, reranker)]
            return answer_sentence(row, page.rqa, reranker, strongest=not page.chosen)
    return None


def _paper_contribution(reranker: str) -> float:
    """The paper's counterpart of ``reranker`` minus its VanillaReranker, in points (+1.99 for combined)."""
    return PAPER_GAINS[PAPER_KEYS[reranker]] - PAPER_GAINS["vanilla_reranker"]


def _change(row: Any) -> str:
    return change_text(dict(row), 100.0, 2)


def _part(table: pd.DataFrame, key: str, level: str | None = None) -> pd.DataFrame:
    """The rows of ``table`` under ``key`` of its first index level (or of ``level``), as a frame."""
    return cast(pd.DataFrame, table.loc[key] if level is None else table.xs(key, level=level))


def findings_lines(page: RerankingPage) -> list[str]:
    """The chapter's findings, one bullet each: the answer's evidence, weaker systems, feedback over QA data.

    The appendix's measurements (what the rerankers learned, targets, freezing, recipes, costs) are
    worded on the appendix page (:func:`learned_line`).
    """
    g = _part(page.micro.table, page.rqa)
    lines = []
    where = "the RQA system chosen for this page" if page.chosen else "the strongest RQA system here"
    if (found := best_feedback_gain(g)) is not None:
        best, significant = found
        lines.append(
            f"**Against the RQA alone.** On {where} ({page.rqa}, "
            f"{100 * g['baseline_mean'].iloc[0]:.2f}% alone), "
            f"the best reranker trained on feedback, `{best}`, changes overall accuracy by "
            f"{_change(g.loc[best])}: "
            + ("a significant gain" if significant else "not a significant change")
            + (
                "; the relevance model it continues from (`vanilla`, QA data only) "
                + _change(g.loc["vanilla"])
                if "vanilla" in g.index
                else ""
            )
            + f". The paper's best reranker adds {PAPER_GAINS['combined_reranker']:+.2f} points on its RQA."
        )
    weak = [r for r in page.rescored if r != page.rqa]
    if weak:
        rows = page.micro.table.loc[weak].reset_index()
        top = rows.sort_values("delta", ascending=False, kind="stable").iloc[0]
        lines.append(
            f"On the weaker RQA systems the same rerankers help more: the largest change is {top['rqa']} + "
            f"`{top['reranker']}`, {_change(top)}."
        )
    if page.over_qa is not None and page.over_qa_seeds is not None:
        here, counts, papers = [], [], []
        for system, _ in page.pairs:
            rows = _part(page.over_qa.table, system, "reranker")
            sig = significance_counts(rows)
            seeded = significance_counts(_part(page.over_qa_seeds.table, system, "reranker"))
            here.append(f"`{system}` {_change(rows.loc[page.rqa])}")
            counts.append(
                f"`{system}` better on {sig['better']} and worse on {sig['worse']} of {sig['rows']} "
                f"({seeded['better']} and {seeded['worse']} with its seeds resampled too)"
            )
            paper = _paper_contribution(system)
            papers.append(f"{paper:+.2f} ({TABLE2_ROWS[system][0].removeprefix('+ ')} minus VanillaReranker)")
        lines.append(
            f"**Does feedback add to QA data?** Against `vanilla` (the relevance model, QA data only) on "
            f"{page.rqa}: {'; '.join(here)}. Over the RQA systems (Holm over {page.over_qa.family_size}), "
            f"significantly {'; '.join(counts)}. The paper: {', '.join(papers)}."
        )
    return lines


def freezing_measures(page: RerankingPage) -> tuple[pd.DataFrame, dict[int, float], list[str]]:
    """The warm variants with the relevance model's lower k layers frozen, against every layer trained.

    Reads every ``frozen_k*/`` folder inside the results folder (``fqa run rerank
    --warm-frozen-layers k``); seed 0 on both sides (the frozen runs are seed 0). A folder whose
    configuration differs in more than the frozen layers (and which runs ran) is left out.

    Returns:
        :func:`~fqa_analysis.core.reranking.freezing_effect`'s table (empty without a frozen run),
        the one-time pass over the lower layers in minutes per k, and the folders left out.
    """
    items = page.items
    full = run_measures(page.candidates, page.predictions, items, page.stage, page.rqa, seeds=[0])
    parts, lower_pass, skipped = [], {}, []
    ignore = (*RERANK_RUN_FIELDS, "warm_frozen_layers")
    for folder in sorted(page.results.glob("frozen_k*")):
        if not (folder / "manifest.json").exists():
            continue
        stage = load_stage(folder, "rerank")
        k = int(stage["config"].get("warm_frozen_layers", 0))
        if k == 0 or comparable_config(stage["config"], ignore) != comparable_config(
            page.stage["config"], ignore
        ):
            skipped.append(folder.name)
            continue
        measures = run_measures(
            load_candidates(folder),
            load_table(folder, "rating_predictions.parquet"),
            items,
            stage,
            page.rqa,
            seeds=[0],
        )
        parts.append(
            measures[[VARIANTS[r].start == "relevance" for r in measures.index]].assign(frozen_layers=k)
        )
        lower_pass[k] = stage["timings"].get("relevance_lower_layers", {}).get("compute_s", float("nan")) / 60
    return (freezing_effect(full, pd.concat(parts)) if parts else pd.DataFrame()), lower_pass, skipped


def learned_line(page: RerankingPage) -> str | None:
    """What the rerankers trained on feedback learned, in one sentence (None without warm rerankers).

    How well they tell the gold passage from the RQA's other four candidates (AUC) and how often
    they pick it alone, beside the rerankers trained from MiniLM and the relevance model itself.
    """
    auc = page.quality.groupby("reranker", sort=False)["auc"].mean()
    alone = page.quality.groupby("reranker", sort=False)["alone"].mean()
    warm = [v for v in page.warm if v in auc.index]
    if not warm:
        return None
    scratch = [v for v in page.scratch if v in auc.index]
    return (
        "**What the feedback rerankers learned.** Continued from the relevance model, they tell the "
        f"gold passage from {page.rqa}'s other four candidates with AUC "
        f"{auc[warm].min():.3f}-{auc[warm].max():.3f} and pick it alone for "
        f"{100 * alone[warm].min():.1f}-{100 * alone[warm].max():.1f}% of the questions"
        + (
            "; trained from MiniLM instead (`*_scratch`), AUC "
            f"{auc[scratch].min():.3f}-{auc[scratch].max():.3f}"
            if scratch
            else ""
        )
        + (f"; the relevance model itself {auc['vanilla']:.3f}." if "vanilla" in auc.index else ".")
    )

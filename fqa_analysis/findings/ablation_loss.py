"""The loss ablation's chapter: KL to the annotators or cross-entropy, read once and worded.

:func:`loss_page` reads a results folder (the rerank stage's rating predictions and candidates) and
feedback_test's ratings into a :class:`LossPage`: rating quality per loss, each cross-entropy loss
against ``feedback_kl`` over items (seeds averaged, and seeds resampled too), and on the reranked
QA system. :func:`answer_sentence` and :func:`findings_lines` word it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import pandas as pd

from fqa_analysis import data
from fqa_analysis.core.compare import Comparison, verdict
from fqa_analysis.core.ratings import item_ratings, predicted_rating
from fqa_analysis.core.report import change_text, holm_p_text, ranked_counts, signed_text
from fqa_analysis.core.reranking import (
    AGREEMENT_SUBSETS,
    compare_to_baseline,
    join_annotators,
    loss_comparisons,
    per_item_rating_scores,
    rating_quality_table,
    score_outcomes,
)
from fqa_analysis.core.results import load_candidates, load_stage, load_table
from fqa_analysis.models.reranker.variants import VARIANTS

__all__ = ["FAMILY", "LOSSES", "LossPage", "answer_sentence", "findings_lines", "loss_page", "missing_losses"]

#: The losses compared, the paper's first (the baseline of every comparison).
LOSSES: tuple[str, ...] = ("feedback_kl", "feedback_ce_annotator", "feedback_ce_majority")

#: The Holm family of the item-level tests, in words.
FAMILY = "Holm over the cross-entropy losses present, per metric and subset"


@dataclass(frozen=True)
class LossPage:
    """What the loss ablation's chapter shows, read from one results folder.

    Attributes:
        results: The results folder.
        stage: The rerank stage's manifest entry.
        variants: The rerankers present, in declaration order; ``losses`` those of :data:`LOSSES`.
        absent: The losses of :data:`LOSSES` the folder lacks.
        predictions: The rating predictions (every reranker and seed on feedback_test).
        items: feedback_test's items with the annotators' ratings.
        joined: The predictions joined with the annotators' ratings.
        quality: Rating quality per reranker, seed and agreement subset (:func:`rating_quality_table`).
        tests: Each cross-entropy loss against ``feedback_kl`` per (metric, subset), seeds averaged
            per item; ``seed_tests`` the same with each loss's seeds resampled too.
        qa: Each loss against ``feedback_kl`` on the reranked QA system, per RQA (Holm per RQA).
    """

    results: Path
    stage: dict[str, Any]
    variants: list[str]
    losses: list[str]
    absent: list[str]
    predictions: pd.DataFrame
    items: pd.DataFrame
    joined: pd.DataFrame
    quality: pd.DataFrame
    tests: pd.DataFrame
    seed_tests: pd.DataFrame
    qa: Comparison

    @property
    def means(self) -> pd.DataFrame:
        """Seed-mean accuracy, macro-F1, KL and ECE of P(Excellent) per reranker on all items."""
        every = self.quality[self.quality["subset"] == "all"]
        return every.groupby("reranker")[["accuracy", "macro_f1", "kl", "ece_excellent"]].mean()

    @property
    def indexed(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """:attr:`tests` and :attr:`seed_tests` indexed by (metric, subset, reranker), sorted."""
        keys = ["metric", "subset", "reranker"]
        # sorted: a lookup by (metric, subset) on an unsorted index is slow and warns
        return self.tests.set_index(keys).sort_index(), self.seed_tests.set_index(keys).sort_index()


def missing_losses(results: Path) -> list[str]:
    """The losses the ablation needs that ``results`` lacks: empty when it can be computed.

    It compares ``feedback_kl`` with at least one cross-entropy loss.
    """
    return _lacking(set(load_table(results, "rating_predictions.parquet")["reranker"]))


def _lacking(present: set[str]) -> list[str]:
    """:func:`missing_losses` on the rerankers ``present``."""
    here = [v for v in LOSSES if v in present]
    return [] if "feedback_kl" in here and len(here) >= 2 else [v for v in LOSSES if v not in present]


def loss_page(results: Path, data_dir: Path | None = None) -> LossPage:
    """Read ``results`` once and compute what the loss ablation's chapter shows.

    Raises:
        ValueError: The folder lacks ``feedback_kl`` or every cross-entropy loss (the message names
            them and the command that adds them; :func:`missing_losses` asks first).
    """
    predictions = load_table(results, "rating_predictions.parquet")
    present = set(predictions["reranker"])
    if lacking := _lacking(present):
        raise ValueError(
            f"{results}: the loss ablation needs {', '.join(lacking)}; "
            f"`fqa run rerank --variants {','.join(lacking)}` adds them"
        )
    stage = load_stage(results, "rerank")
    commit = stage["git_commit"]
    losses = [v for v in LOSSES if v in present]
    feedback = data.feedback_frame(data.available_feedback(data.resolve_data_dir(data_dir), "test"))
    items = item_ratings(feedback)
    joined = join_annotators(predictions, items)
    compared = joined[joined["reranker"].isin(losses)]
    candidates = load_candidates(results)
    outcomes = score_outcomes(candidates[candidates["reranker"].isin(losses)])
    return LossPage(
        results=results,
        stage=stage,
        variants=[v for v in VARIANTS if v in present],
        losses=losses,
        absent=[v for v in LOSSES if v not in present],
        predictions=predictions,
        items=items,
        joined=joined,
        quality=rating_quality_table(joined),
        tests=loss_comparisons(per_item_rating_scores(compared), baseline="feedback_kl", commit=commit),
        seed_tests=loss_comparisons(
            per_item_rating_scores(compared, by_seed=True),
            baseline="feedback_kl",
            commit=commit,
            resample_seeds=True,
        ),
        qa=compare_to_baseline(outcomes, baseline="feedback_kl", commit=commit),
    )


def _row(table: Any, key: Any) -> dict[str, Any]:
    """One comparison row of an indexed table, as a mapping (the report's text helpers take one)."""
    return dict(table.loc[key])


def _seeds(predictions: pd.DataFrame, reranker: str) -> list[int]:
    return sorted(int(s) for s in predictions.loc[predictions["reranker"] == reranker, "seed"].unique())


def _kl_verdict(row: Any) -> str:
    return verdict(row, higher_is_better=False)


def answer_sentence(page: LossPage) -> str:
    """The chapter's answer in one sentence (at most 30 words): what the majority label costs.

    Compares ``feedback_ce_majority`` with ``feedback_kl`` (the informative contrast) where present,
    else the other cross-entropy loss: the KL to the annotators over items (seeds averaged), and on
    how many RQA systems its reranked QA accuracy differs from ``feedback_kl``'s (Holm per RQA).
    """
    t, _ = page.indexed
    loss = "feedback_ce_majority" if "feedback_ce_majority" in page.losses else page.losses[-1]
    row = _row(t, ("kl", "all", loss))
    name = "Majority-label cross-entropy" if loss == "feedback_ce_majority" else "Per-annotator cross-entropy"
    qa = page.qa.table.xs(loss, level="reranker")
    moved = (
        f"its QA accuracy differs from KL's on {int((qa['p_holm'] < 0.05).sum())} of {len(qa)} RQA systems."
    )
    found = _kl_verdict(row)
    if found in ("better", "worse"):
        side = "closer to" if found == "better" else "further from"
        return (
            f"{name} rates {abs(row['delta']):.3f} nats {side} the annotators than KL "
            f"(Holm p {holm_p_text(row)}); {moved}"
        )
    return (
        f"{name} rates as close to the annotators as KL ({signed_text(row['delta'], 3)} nats, "
        f"Holm p {holm_p_text(row)}); {moved}"
    )


def _which_loss(page: LossPage, t: pd.DataFrame, seeded: pd.DataFrame) -> str:
    """The bullet naming the loss with the lowest KL and each loss's tests against ``feedback_kl``."""
    means = page.means
    best = str(means.loc[page.losses, "kl"].idxmin())
    kl_rows = cast(pd.DataFrame, t.loc[("kl", "all")])
    seed_kl = cast(pd.DataFrame, seeded.loc[("kl", "all")])
    better = [str(v) for v, r in kl_rows.iterrows() if _kl_verdict(r) == "better"]
    kept = [v for v in better if _kl_verdict(_row(seed_kl, v)) == "better"]
    # lowest over all items need not be lowest on each agreement subset: name a subset where it is worse
    worse_on = "".join(
        f"; on the {sub} items it is significantly above `feedback_kl`'s: {change_text(row, 1.0, 3, 'nats')}"
        for sub in ("unanimous", "disagree")
        if ("kl", sub, best) in t.index
        for row in [_row(t, ("kl", sub, best))]
        if row["p_holm"] < 0.05 and row["delta"] > 0
    )
    if better:
        seeds = (
            f"{', '.join(f'`{v}`' for v in kept)} stay{'s' if len(kept) == 1 else ''} below it"
            if kept
            else "that all-items difference is not told apart from another draw of seeds"
        )
        below = (
            f"{', '.join(f'`{v}`' for v in better)}'s {'is' if len(better) == 1 else 'are'} significantly "
            f"below `feedback_kl`'s on all items; with each loss's seeds resampled too, {seeds} ("
            + "; ".join(f"`{v}` Holm p {holm_p_text(_row(seed_kl, v))}" for v in better)
            + ")."
        )
    else:
        below = "no cross-entropy loss is significantly below `feedback_kl`'s."
    each = "; ".join(
        f"`{v}` KL {change_text(dict(r), 1.0, 3, 'nats')}, argmax accuracy "
        f"{change_text(_row(t, ('correct', 'all', v)), 1.0, 3, '')} (seeds resampled too: KL "
        f"{verdict(_row(seed_kl, v), with_mde=False, higher_is_better=False)}, Holm p "
        f"{holm_p_text(_row(seed_kl, v))}; accuracy "
        f"{verdict(_row(seeded, ('correct', 'all', v)), with_mde=False)}, "
        f"Holm p {holm_p_text(_row(seeded, ('correct', 'all', v)))})"
        for v, r in kl_rows.iterrows()
    )
    return (
        f"**Which loss?** The lowest KL to the annotators on feedback_test is `{best}`'s "
        f"({means.loc[best, 'kl']:.3f} nats, seed mean{worse_on}); {below} Against `feedback_kl` on all "
        f"items ({FAMILY}): {each}."
    )


def findings_lines(page: LossPage) -> list[str]:
    """The chapter's findings, one bullet each.

    In plain words, which loss, the runs, rating quality, the informative contrast by agreement,
    QA accuracy, and any loss collapsed to one rating.
    """
    t, seeded = page.indexed
    means = page.means
    kl_rows = cast(pd.DataFrame, t.loc[("kl", "all")])
    qa = page.qa.table.reset_index()
    significant = qa[qa["p_holm"] < 0.05]
    nulls = qa[(qa["p_holm"] >= 0.05) & (qa["mde"] > 0)]
    best = str(means.loc[page.losses, "kl"].idxmin())
    # a loss significantly better on one measure and worse on the other is a trade-off: say so
    trades = "".join(
        f" `{v}` trades one for the other: argmax accuracy {signed_text(acc['delta'], 3)} but KL "
        f"{signed_text(r['delta'], 3)} nats against `feedback_kl` (both significant)."
        for v, r in kl_rows.iterrows()
        for acc in [_row(t, ("correct", "all", str(v)))]
        if r["p_holm"] < 0.05 and acc["p_holm"] < 0.05 and (r["delta"] > 0) == (acc["delta"] > 0)
    )
    lines = [
        "**In plain words:** the loss "
        + (
            "barely matters for QA accuracy"
            if len(significant) <= len(qa) // 4
            else "matters for QA accuracy"
        )
        + f" (different from `feedback_kl` in {len(significant)} of {len(qa)} (RQA, loss) pairs"
        + (
            f"; MDE of the others {100 * nulls['mde'].min():.2f} to {100 * nulls['mde'].max():.2f} points"
            if len(nulls)
            else ""
        )
        + f"), and it moves the ratings' KL to the annotators by at most {kl_rows['delta'].abs().max():.3f} "
        f"nats on all items (`feedback_kl`: {means.loc['feedback_kl', 'kl']:.3f}); "
        + (f"the lowest KL is `{best}`'s." if best != "feedback_kl" else "`feedback_kl` has the lowest KL.")
        + trades,
        _which_loss(page, t, seeded),
        f"Losses present: {', '.join(f'`{v}`' for v in page.losses)} (seeds: "
        + "; ".join(f"{v} {', '.join(str(s) for s in _seeds(page.predictions, v))}" for v in page.losses)
        + ")"
        + ("; not in this results folder: " + ", ".join(f"`{v}`" for v in page.absent) if page.absent else "")
        + ".",
        "On feedback_test (seed means): "
        + "; ".join(
            f"{v}: KL {means.loc[v, 'kl']:.3f}, accuracy {means.loc[v, 'accuracy']:.3f}, macro-F1 "
            f"{means.loc[v, 'macro_f1']:.3f}, ECE {means.loc[v, 'ece_excellent']:.3f}"
            for v in page.losses
        )
        + ".",
    ]
    if "feedback_ce_majority" in page.losses:
        lines.append(
            "The informative contrast, feedback_ce_majority against feedback_kl, by agreement subset: KL "
            + "; ".join(
                f"{sub} {change_text(_row(t, ('kl', sub, 'feedback_ce_majority')), 1.0, 3, 'nats')}"
                for sub in AGREEMENT_SUBSETS[1:]
            )
            + f" ({FAMILY})."
        )
    lines.append(
        f"QA accuracy against feedback_kl: significantly different in {len(significant)} of {len(qa)} "
        "(RQA, loss) pairs (Holm over the losses within each RQA; each loss's seeds averaged per question, "
        "not resampled)"
        + (
            ": "
            + "; ".join(
                f"{r['rqa']} + `{r['reranker']}` {change_text({str(k): x for k, x in r.items()})}"
                for r in significant.to_dict("records")
            )
            if len(significant)
            else ""
        )
        + "."
    )
    # a rating model that predicts one rating for (almost) every item has learned the prior's mode
    top = page.predictions.assign(rating=predicted_rating(page.predictions)).groupby("reranker")["rating"]
    collapsed = {
        str(v): (shares.index[0], float(shares.iloc[0]))
        for v, shares in ((v, ranked_counts(g, normalize=True)) for v, g in top)
        if shares.iloc[0] >= 0.9
    }
    if collapsed:
        lines.append(
            "Collapsed to one rating: "
            + "; ".join(
                f"`{v}` predicts {r} for {share:.0%} of the items" for v, (r, share) in collapsed.items()
            )
            + " (its accuracy and macro-F1 are those of always predicting that rating)."
        )
    return lines

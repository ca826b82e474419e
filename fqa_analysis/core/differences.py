"""Why our numbers differ from the paper's: each difference we can vary, varied one at a time.

The findings behind the reranking chapter's section of that name. The paper's feedback adds +1.99
points on top of its QA-only reranker (CombinedReranker 67.97 minus VanillaReranker 65.98, BERT
RQA); ours adds less. This module measures what each varied difference does to that quantity:

* **Factor runs** (:func:`factor_table`; :func:`~fqa_analysis.core.results.factor_folders` finds
  them): a folder ``results/factors/<name>/`` per run of the rerank stage under one changed
  setting (``--layers 2``, ``--max-len 256``, ...; ``tools/factor_folder.py`` starts it), holding
  ``vanilla``, ``feedback_kl`` and ``combined`` (seed 0) on the RQA systems it rescored. The
  setting is read from the manifests (what differs from the book's rerank configuration), never
  typed.
* **The amount of feedback** (:func:`feedback_curve`, :func:`power_projection`): the beyond stage's
  learning curve against the relevance model, and a projection, labelled as one, of how much
  feedback the paper's +1.99 would take.

Every comparison is the project's paired bootstrap over questions with Holm over the table
(:func:`~fqa_analysis.core.compare.compare`); seed 0 on both sides, since a factor run trains one seed.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import norm

from fqa_analysis.core.candidates import CANDIDATE_COLUMNS
from fqa_analysis.core.compare import Comparison, compare, estimate, verdict
from fqa_analysis.core.experiments import experiment_candidates
from fqa_analysis.core.paper import PAPER_OVERALL_ACCURACY
from fqa_analysis.core.report import change_text, interval, p_text, signed_text
from fqa_analysis.core.reranking import compare_family, feedback_pairs, score_outcomes, score_separation
from fqa_analysis.core.results import (
    RELEVANCE_PER_SEED_FOLDER,
    RELEVANCE_SEEDS_FOLDER,
    RERANK_RUN_FIELDS,
    comparable_config,
    counted_seconds,
    factor_folders,
    load_candidates,
    load_manifest,
    load_stage,
    load_table,
    relevance_seed_folder,
    rerankers_current,
)
from fqa_analysis.core.stats import MDE_ALPHA
from fqa_analysis.data import FEEDBACK_DOMAINS

__all__ = [
    "FACTOR_VARIANTS",
    "PAPER_CONTRIBUTION",
    "PRIOR_MARGIN",
    "WHY_VARIANTS",
    "Projection",
    "WhyWeDiffer",
    "contribution_points",
    "difference_rows",
    "factor_setting",
    "factor_table",
    "factor_view",
    "feedback_curve",
    "paired_sd",
    "per_seed_contribution",
    "power_projection",
    "relevance_seed_spread",
    "why_answer",
    "why_missing",
    "why_we_differ",
]

#: A relevance model whose held-out KL is within this many nats of its class prior's learned nothing.
PRIOR_MARGIN = 0.01

#: What a factor run trains: the relevance model, the feedback alone and the two together.
FACTOR_VARIANTS: tuple[str, ...] = ("vanilla", "feedback_kl", "combined")

#: The paper's feedback contribution: CombinedReranker minus VanillaReranker, in points.
PAPER_CONTRIBUTION: float = round(
    PAPER_OVERALL_ACCURACY["combined_reranker"] - PAPER_OVERALL_ACCURACY["vanilla_reranker"], 2
)


def factor_setting(book: dict[str, Any], factor: dict[str, Any]) -> dict[str, Any]:
    """What a factor run's rerank configuration changes from the book's: ``dotted.key -> value``.

    Settings that only name runs (variants, seeds, the RQA systems scored) are left out, so a run
    of three variants on two systems differs from the book's in its training settings alone.

    Example:
        >>> book = {"model": {"max_len": 128, "lr": 5e-05}, "seeds": [0, 1, 2]}
        >>> factor_setting(book, {"model": {"max_len": 256, "lr": 5e-05}, "seeds": [0]})
        {'model.max_len': 256}
    """
    ours, theirs = comparable_config(book, RERANK_RUN_FIELDS), comparable_config(factor, RERANK_RUN_FIELDS)
    return {k: theirs.get(k) for k in sorted(set(ours) | set(theirs)) if ours.get(k) != theirs.get(k)}


def _commits(entries: Iterable[dict[str, Any]]) -> str:
    """The distinct commits of stage entries and their runs, comma-separated, in first-seen order."""
    seen: dict[str, None] = {}
    for entry in entries:
        for commit in [entry.get("git_commit"), *entry.get("run_commits", {}).values()]:
            if commit:
                seen[commit] = None
    return ",".join(seen)


def _setting_label(changed: dict[str, Any]) -> str:
    """A changed setting in a reader's words ('2 layers', '256 tokens'); the key otherwise."""
    words = {"model.encoder_layers": "the first {} of MiniLM's 6 layers", "model.max_len": "{} tokens"}
    parts = [words.get(k, k.rsplit(".", 1)[-1] + " {}").format(v) for k, v in changed.items()]
    return ", ".join(parts) or "the book's configuration"


def _seed0_outcomes(
    candidates: pd.DataFrame, rqa: str, variants: Sequence[str], weight: float | None = None
) -> pd.DataFrame:
    """Each question's pick by ``rqa`` alone and by ``variants`` (seed 0), feedback domains only.

    ``weight`` as in :func:`~fqa_analysis.core.scoring.combined_score`: None is the paper's sum,
    1 the reranker alone.
    """
    rows = candidates[
        (candidates["rqa"] == rqa)
        & candidates["domain"].isin(FEEDBACK_DOMAINS)
        & (candidates["reranker"].isin(["none", *variants]))
        & (candidates["seed"] == 0)
    ]
    return score_outcomes(rows, weight=weight)


def _alone(candidates: pd.DataFrame, rqa: str) -> dict[str, float]:
    """``combined`` alone on ``rqa``'s top 5 (argmax P(Excellent), seed 0): accuracy and its 95% CI."""
    outcomes = _seed0_outcomes(candidates, rqa, ["combined"], weight=1.0)
    row = estimate(outcomes[outcomes["reranker"] == "combined"], seeds=None).iloc[0]
    return {
        "combined_alone": float(row["mean"]),
        "combined_alone_ci_low": float(row["ci_low"]),
        "combined_alone_ci_high": float(row["ci_high"]),
    }


def _prior_kl(negatives: int) -> float:
    """KL from one-hot pseudo ratings to their class prior (1 gold Excellent, ``negatives`` Bad), in nats.

    Example:
        >>> round(_prior_kl(3), 4)  # -(0.75 ln 0.75 + 0.25 ln 0.25)
        0.5623
    """
    share = 1 / (negatives + 1)
    return float(-(share * np.log(share) + (1 - share) * np.log(1 - share)))


def paired_sd(outcomes: pd.DataFrame, system: str, baseline: str) -> float:
    """Per-question standard deviation of ``system``'s minus ``baseline``'s outcome (one seed each).

    Example:
        >>> o = pd.DataFrame({"reranker": ["a"] * 3 + ["b"] * 3, "domain": "D", "split": "test",
        ...     "question_id": [0, 1, 2] * 2, "correct": [1, 1, 0, 0, 1, 0]})
        >>> round(paired_sd(o, "a", "b"), 4)  # differences 1, 0, 0
        0.5774
    """
    wide = outcomes.pivot_table(
        index=["domain", "split", "question_id"], columns="reranker", values="correct"
    )
    return float((wide[system] - wide[baseline]).std(ddof=1))


def factor_table(
    results: Path, rqa: str = "hybrid", book_candidates: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, Comparison]:
    """The book's configuration and every factor run on ``rqa``: accuracies and two comparisons each.

    Per setting (one row each; the book's configuration first): ``changed`` (the configuration keys
    it changes, comma-separated; empty for the book's), accuracy of the RQA alone, of each
    variant reranking it, of ``combined`` alone (``combined_alone``: argmax P(Excellent) among the
    top 5, with its bootstrap CI), ``vanilla_auc`` (the relevance model's AUC of P(Excellent) on
    those top 5), ``prior_kl`` (the held-out KL of the pseudo pairs' class prior, a model that
    learned nothing), ``train_minutes`` (the three models' training, float32 as
    recorded), the relevance model's held-out KL at model selection, and two paired
    comparisons, Holm over the whole table (every setting x both): ``combined`` vs the RQA alone
    (the best gain) and ``combined`` vs ``vanilla`` (the feedback's own contribution, the paper's
    +1.99). Seed 0 on both sides.

    Args:
        results: The results folder (its factor runs under ``factors/``).
        rqa: The RQA system compared on.
        book_candidates: ``results``' own ``candidates.parquet`` when the caller has loaded it
            already (a 6 MB table, seconds to read and check); read here otherwise.

    Returns:
        The table (accuracies in [0, 1], ``delta`` columns as differences of shares) and the
        :class:`Comparison` behind it (its ``signature()`` for the caption).
    """
    book = load_stage(results, "rerank")
    settings: dict[str, tuple[Path, dict[str, Any], str]] = {"the book's configuration": (results, book, "")}
    for name, folder in factor_folders(results).items():
        entry = load_stage(folder, "rerank")
        changed = factor_setting(book["config"], entry["config"])
        settings[_setting_label(changed) if changed else name] = (folder, entry, ",".join(changed))
    parts, rows = [], []
    for label, (folder, entry, changed_keys) in settings.items():
        given = book_candidates if folder == results else None
        candidates = load_candidates(folder) if given is None else given
        outcomes = _seed0_outcomes(candidates, rqa, FACTOR_VARIANTS)
        present = set(outcomes["reranker"])
        if not set(FACTOR_VARIANTS) <= present:
            continue  # a run still in progress: shown once all three models are in
        parts.append(outcomes.assign(setting=label))
        accuracy = outcomes.groupby("reranker")["correct"].mean()
        relevance = entry["histories"].get("vanilla/seed0", {})
        counted = counted_seconds(entry)
        seed0 = candidates[(candidates["rqa"] == rqa) & (candidates["seed"] == 0)]
        separation = score_separation(seed0[seed0["reranker"] == "vanilla"]).set_index("reranker")
        rows.append(
            {
                "setting": label,
                "changed": changed_keys,
                "relevance_kl": relevance.get("best_select_kl"),
                # a relevance model at its pseudo pairs' class prior (one gold, n negatives) learned nothing
                "prior_kl": _prior_kl(int(entry["config"].get("pseudo_negatives", 3))),
                "vanilla_auc": float(separation["auc_p_excellent"].iloc[0]),
                "rqa_alone": accuracy["none"],
                **{v: accuracy[v] for v in FACTOR_VARIANTS},
                **_alone(candidates, rqa),
                "contribution_sd": paired_sd(outcomes, "combined", "vanilla"),
                # what training the three models cost (scoring differs: the book scores four RQA systems)
                "train_minutes": sum(counted.get(f"{v}/seed0/train", 0.0) for v in FACTOR_VARIANTS) / 60,
            }
        )
    table = pd.DataFrame(rows).set_index("setting")
    comparison = compare(
        pd.concat(parts, ignore_index=True),
        system="reranker",
        pairs=[("combined", "none"), ("combined", "vanilla")],
        within=["setting"],
        describe=f"combined vs the RQA alone and vs vanilla, per setting, on {rqa}",
        seeds=None,
        commit=_commits(entry for _, entry, _ in settings.values()),
    )
    stats = comparison.table.reset_index()
    for baseline, prefix in (("none", "gain"), ("vanilla", "contribution")):
        part = stats[stats["baseline"] == baseline].set_index("setting")
        for column in ("delta", "delta_ci_low", "delta_ci_high", "p_holm", "mde"):
            table[f"{prefix}_{column}"] = part[column]
    return table, comparison


def feedback_curve(
    results: Path, book_candidates: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, Comparison]:
    """The feedback's contribution as the feedback grows: each learning-curve run vs ``vanilla``.

    The beyond stage's ``fraction`` runs (``feedback_kl`` trained on a nested, domain-stratified
    share of the training questions, seed 0, continued from the relevance model) rerank its RQA
    system; each is compared with the relevance model (``vanilla``, seed 0) reranking the same
    system, Holm over the shares. No feedback at all is ``vanilla`` itself, a contribution of 0.

    Args:
        results: The results folder (its beyond stage and candidates).
        book_candidates: ``results``' own ``candidates.parquet`` when the caller has loaded it
            already (a 6 MB table, seconds to read and check); read here otherwise.

    Returns:
        One row per share: ``share``, ``pairs`` (rated pairs trained on), ``delta`` (points as a
        share), its CI, ``p_holm``, ``mde``; and the :class:`Comparison`.
    """
    stage = load_stage(results, "beyond")
    rqa = stage["config"]["rqa"]
    candidates = load_candidates(results) if book_candidates is None else book_candidates
    experiments = load_table(results, "feedback_experiments.parquet")
    fractions = experiments[(experiments["experiment"] == "fraction") & (experiments["seed"] == 0)]
    runs = experiment_candidates(fractions, candidates, rqa).assign(seed=0)
    base = _seed0_outcomes(candidates, rqa, ["vanilla"])
    outcomes = pd.concat(
        [base[base["reranker"] == "vanilla"], score_outcomes(runs[CANDIDATE_COLUMNS])], ignore_index=True
    )
    comparison = compare(
        outcomes,
        system="reranker",
        baseline="vanilla",
        describe=f"each share of the feedback vs the relevance model alone, on {rqa}",
        seeds=None,
        commit=_commits([load_stage(results, "rerank"), stage]),
    )
    pairs = {
        name.split("/")[1]: record["fit_pairs"]
        for name, record in stage.get("experiment_runs", {}).items()
        if name.startswith("fraction/") and name.endswith("/seed0")
    }
    table = comparison.table.reset_index()
    table["share"] = table["reranker"].str.split(":").str[1].astype(float)
    table["pairs"] = table["reranker"].str.split(":").str[1].map(pairs)
    columns = ["share", "pairs", "delta", "delta_ci_low", "delta_ci_high", "p_holm", "mde"]
    return table[columns].sort_values("share").reset_index(drop=True), comparison


@dataclass(frozen=True)
class Projection:
    """How much feedback a contribution would take, projected from a learning curve (not measured).

    The curve is a weighted least-squares line of the contribution (points) on log2 of the rated
    pairs, through the measured points' weighted mean (``center_log2_pairs``, ``center``).

    Attributes:
        slope: Points gained per doubling of the rated pairs.
        slope_low: Lower end of its 95% CI (points treated as independent; they share test
            questions and nested training data, so the CI is indicative).
        slope_high: Upper end of that CI: the most the curve plausibly rises.
        center_log2_pairs: Weighted mean of log2 pairs.
        center: Weighted mean contribution there (points).
        detectable: The smallest contribution (points) the test set detects with the asked power
            at two-sided alpha, from the per-question spread of the paired difference.
        power_at_target: The power the test set has for a contribution of ``target`` points.
        target: The contribution asked about (default: the paper's +1.99).
        questions: Test questions the power is computed for.
    """

    slope: float
    slope_low: float
    slope_high: float
    center_log2_pairs: float
    center: float
    detectable: float
    power_at_target: float
    target: float
    questions: int

    @property
    def rising(self) -> bool:
        """Whether the curve rises measurably (its slope's 95% CI above 0)."""
        return self.slope_low > 0

    def pairs_for(self, level: float, slope: float | None = None) -> float | None:
        """Rated pairs at which a line of ``slope`` (default: the fitted one) reaches ``level`` points.

        None where that line does not rise.
        """
        slope = self.slope if slope is None else slope
        if slope <= 0:
            return None
        return float(2 ** (self.center_log2_pairs + (level - self.center) / slope))


def power_projection(
    pairs: Sequence[float],
    contribution: Sequence[float],
    se: Sequence[float],
    sd: float,
    questions: int,
    target: float = PAPER_CONTRIBUTION,
    power: float = 0.8,
    alpha: float = 0.05,
) -> Projection:
    """Project from a learning curve how many rated pairs a contribution of ``target`` points needs.

    Two steps, both stated as assumptions. The curve: the contribution is taken as linear in log2
    of the rated pairs (the usual shape of a learning curve over a few doublings), fitted by least
    squares weighted by each point's precision. The test: a paired difference whose per-question
    standard deviation is ``sd`` over ``questions`` questions is detected with probability
    ``power`` at two-sided ``alpha`` when it is at least ``(z_{1-alpha/2} + z_power) * sd /
    sqrt(questions)`` (the normal approximation of the paired test).

    Args:
        pairs: Rated pairs of each measured point.
        contribution: The contribution measured there, in points.
        se: Its standard error, in points (e.g. the 95% CI's width / 3.92).
        sd: Per-question standard deviation of the paired difference, in points.
        questions: Test questions.
        target: Contribution asked about, in points.
        power: Wanted power.
        alpha: Two-sided level.

    Raises:
        ValueError: Fewer than two points, points of one size only, or a standard error <= 0.

    Example:
        >>> p = power_projection([100, 200, 400], [0.0, 0.5, 1.0], [0.2] * 3, sd=20.0, questions=1600,
        ...     target=2.0)
        >>> round(p.slope, 3), round(p.pairs_for(2.0)), round(p.detectable, 2), round(p.power_at_target, 3)
        (0.5, 1600, 1.4, 0.979)
    """
    x = np.log2(np.asarray(pairs, dtype=float))
    y = np.asarray(contribution, dtype=float)
    errors = np.asarray(se, dtype=float)
    if len(x) < 2 or np.ptp(x) == 0:
        raise ValueError("a projection needs at least two measured amounts of feedback")
    if (errors <= 0).any():
        raise ValueError("every point needs a standard error above 0")
    w = 1 / errors**2
    center_x, center_y = float(np.average(x, weights=w)), float(np.average(y, weights=w))
    spread = float(np.sum(w * (x - center_x) ** 2))
    slope = float(np.sum(w * (x - center_x) * (y - center_y)) / spread)
    z_alpha = float(norm.ppf(1 - alpha / 2))
    half = float(norm.ppf(0.975)) * math.sqrt(1 / spread)  # the slope's 95% CI, whatever the test's level
    error = sd / math.sqrt(questions)
    # power of the two-sided test at a true difference of target (both tails)
    power_at_target = float(norm.cdf(target / error - z_alpha) + norm.cdf(-target / error - z_alpha))
    return Projection(
        slope=slope,
        slope_low=slope - half,
        slope_high=slope + half,
        center_log2_pairs=center_x,
        center=center_y,
        detectable=(z_alpha + float(norm.ppf(power))) * error,
        power_at_target=power_at_target,
        target=target,
        questions=questions,
    )


def _outcomes(candidates: pd.DataFrame, rqa: Sequence[str], variants: Sequence[str]) -> pd.DataFrame:
    """Every seed's pick by the RQA systems alone and by ``variants``, on the feedback domains."""
    rows = candidates[
        candidates["rqa"].isin(rqa)
        & candidates["domain"].isin(FEEDBACK_DOMAINS)
        & candidates["reranker"].isin(["none", *variants])
    ]
    return score_outcomes(rows)


@dataclass(frozen=True)
class WhyWeDiffer:
    """Every measured answer to "why do our numbers differ from the paper's?" (:func:`why_we_differ`).

    Attributes:
        factors: :func:`factor_table` (the book's configuration and each factor run).
        factor_comparison: Its comparison (for the caption's signature).
        curve: :func:`feedback_curve` (the contribution at each share of the feedback).
        curve_comparison: Its comparison.
        projection: :func:`power_projection` from the curve and the book's per-question spread of
            ``combined`` minus ``vanilla``.
        start: ``feedback_kl`` (from the relevance model) vs ``feedback_kl_scratch`` (from MiniLM)
            on the factor RQA, seeds averaged per question: one comparison row.
        start_comparison: Its comparison.
        rqa_gains: ``combined``'s gain over each RQA system alone (share), seeds averaged.
        rqa: The RQA system the factors are measured on.
        training_pairs: Rated pairs the book's feedback rerankers train on.
        questions: Test questions of the comparisons (the four feedback domains).
        relevance_seeds: :func:`relevance_seed_spread`'s table, where the folder has other seeds
            of the relevance model.
        per_seed: :func:`per_seed_contribution`'s table, where the folder has warm variants
            started from their own seed's relevance model.
        contribution: ``combined`` against ``vanilla`` on ``rqa``, seeds averaged, from the reranking
            chapter's family (:func:`~fqa_analysis.core.reranking.compare_family`): the book's number.
        contribution_family: That family's size (the projection's power is taken at Holm's level).
    """

    factors: pd.DataFrame
    factor_comparison: Comparison
    curve: pd.DataFrame
    curve_comparison: Comparison
    projection: Projection
    start: pd.Series
    start_comparison: Comparison
    rqa_gains: pd.Series
    rqa: str
    training_pairs: int
    questions: int
    relevance_seeds: pd.DataFrame | None = None
    contribution: pd.Series | None = None
    per_seed: pd.DataFrame | None = None
    contribution_family: int = 1


def why_we_differ(results: Path, rqa: str = "hybrid") -> WhyWeDiffer:
    """Measure every difference from the paper this results folder lets us vary (see the module)."""
    candidates = load_candidates(results)  # read once: every part below reads the book's rows
    factors, factor_comparison = factor_table(results, rqa, candidates)
    curve, curve_comparison = feedback_curve(results, candidates)
    # the book's own test of the contribution: the reranking chapter's family (each reranker of the
    # paper's claim vs vanilla on every rescored RQA system, seeds averaged, Holm over all of them)
    rescored = sorted(set(candidates.loc[candidates["reranker"] != "none", "rqa"]))
    pairs = feedback_pairs(set(candidates["reranker"]))
    claimed = _outcomes(candidates, rescored, ["vanilla", *(v for v, _ in pairs)])
    family = compare_family(
        claimed,
        pairs,
        commit=_commits([load_stage(results, "rerank")]),
    )
    contribution = pd.Series(family.table.xs((rqa, "combined")))
    on_rqa = claimed[claimed["rqa"] == rqa]
    keys = ["reranker", "domain", "split", "question_id"]
    seed_means = pd.DataFrame(on_rqa.groupby(keys, as_index=False)["correct"].mean())
    questions = int(contribution["n"])
    projection = power_projection(
        curve["pairs"].tolist(),
        (100 * curve["delta"]).tolist(),
        (100 * (curve["delta_ci_high"] - curve["delta_ci_low"]) / (2 * norm.ppf(0.975))).tolist(),
        sd=100 * paired_sd(seed_means, "combined", "vanilla"),
        questions=questions,
        # the level Holm asks of the family's smallest p, as every MDE of the book
        alpha=MDE_ALPHA / family.family_size,
    )
    start_comparison = compare(
        _outcomes(candidates, [rqa], ["feedback_kl", "feedback_kl_scratch"]),
        system="reranker",
        pairs=[("feedback_kl", "feedback_kl_scratch")],
        describe=f"feedback_kl from the relevance model vs from MiniLM, on {rqa}",
        commit=_commits([load_stage(results, "rerank")]),
    )
    every = _outcomes(candidates, sorted(set(candidates["rqa"])), ["combined"])
    seed_mean = every.groupby(["rqa", "reranker", "domain", "split", "question_id"])["correct"].mean()
    accuracy = seed_mean.groupby(["rqa", "reranker"]).mean().unstack("reranker")
    return WhyWeDiffer(
        factors=factors,
        factor_comparison=factor_comparison,
        curve=curve,
        curve_comparison=curve_comparison,
        projection=projection,
        start=start_comparison.table.iloc[0],
        start_comparison=start_comparison,
        rqa_gains=(accuracy["combined"] - accuracy["none"]).rename("gain"),
        rqa=rqa,
        training_pairs=int(curve.loc[curve["share"] == 1.0, "pairs"].iloc[0]),
        questions=questions,
        relevance_seeds=None if (spread := relevance_seed_spread(results, candidates)) is None else spread[0],
        contribution=contribution,
        contribution_family=family.family_size,
        per_seed=None if (own := per_seed_contribution(results, candidates)) is None else own[0],
    )


def _factor_effects(w: WhyWeDiffer, key: str) -> str | None:
    """What the factor runs that change ``key`` showed, in words; None where none changes it."""
    rows = w.factors[w.factors["changed"] == key]
    if rows.empty:
        return None
    book = w.factors.loc["the book's configuration"]
    measured: list[tuple[str, Any]] = [("the book's configuration (6 layers, seed 0)", book.to_dict())]
    measured += [(str(label), r.to_dict()) for label, r in rows.iterrows()]
    parts = [
        f"{label}: the feedback's contribution {signed_text(100 * r['contribution_delta'])} points "
        f"{interval(100 * r['contribution_delta_ci_low'], 100 * r['contribution_delta_ci_high'])}, "
        f"combined + {w.rqa} {100 * r['combined']:.1f}%"
        + (
            f" (its relevance model learned nothing: held-out KL {r['relevance_kl']:.3f}, as always "
            f"predicting the pseudo pairs' label shares, {r['prior_kl']:.3f}; AUC {r['vanilla_auc']:.2f})"
            if r["relevance_kl"] >= r["prior_kl"] - PRIOR_MARGIN
            else ""
        )
        for label, r in measured
    ]
    return "; ".join(parts) + " (seed 0)"


def _seed_effects(w: WhyWeDiffer) -> str | None:
    """What training the relevance model with other seeds did, in words; None where it was not done."""
    said = []
    if w.relevance_seeds is not None and not w.relevance_seeds.empty:
        said.append(
            "vanilla trained anew with another seed, reranking: "
            + "; ".join(
                f"seed {int(r['seed'])} instead of 0 on {r['rqa']}: {signed_text(100 * r['delta'])} points "
                f"{interval(100 * r['delta_ci_low'], 100 * r['delta_ci_high'])}, Holm p {p_text(r['p_holm'])}"
                for _, r in w.relevance_seeds.iterrows()
            )
        )
    if w.per_seed is not None and not w.per_seed.empty:
        starts = {"own": "from its own seed's relevance model", "shared": "from the shared seed-0 one"}
        said.append(
            "the feedback's contribution (combined minus vanilla of the same start) "
            + "; ".join(
                f"on seed {int(r['seed'])}, {r['rqa']}, {starts[str(r['start'])]}: "
                f"{signed_text(100 * r['delta'])} points "
                f"{interval(100 * r['delta_ci_low'], 100 * r['delta_ci_high'])}, Holm p {p_text(r['p_holm'])}"
                for _, r in w.per_seed.iterrows()
            )
        )
    return "; ".join(said) if said else None


def difference_rows(w: WhyWeDiffer) -> pd.DataFrame:
    """The table "Why our numbers differ from the paper's": one row per difference, in words.

    Columns: ``difference``, ``paper``, ``here``, ``what varying it did`` (from the measurements in
    ``w``; "not varied", with the reason, where nothing in the folder varies it).
    """
    p = w.projection
    curve = w.curve
    contributions = ", ".join(
        f"{signed_text(100 * d)} at {n:,}" for d, n in zip(curve["delta"], curve["pairs"], strict=True)
    )
    optimistic = p.pairs_for(p.target, p.slope_high)
    reach = (
        f"at the CI's upper end the paper's {signed_text(p.target)} would take about "
        f"{float(f'{optimistic:.2g}'):,.0f} rated pairs ({optimistic / w.training_pairs:.0f} times ours)"
        if optimistic is not None
        else "no slope in its CI reaches the paper's contribution"
    )
    amount = (
        f"the feedback's contribution over the relevance model (points, by rated pairs): {contributions}; "
        f"{signed_text(p.slope)} points per doubling, 95% CI "
        f"{interval(p.slope_low, p.slope_high)}. Projection, not a measurement: {reach}. "
        f"The {w.questions:,} test questions would detect {signed_text(p.target)} with power "
        f"{p.power_at_target:.3f} (80% power from {signed_text(p.detectable)})"
    )
    start = (
        "feedback_kl from the relevance model vs from MiniLM (seeds averaged): "
        + change_text({str(k): v for k, v in w.start.items()})
        + f" ({verdict(w.start, with_mde=False)})"
    )
    gains = w.rqa_gains.sort_values()
    rqa = "combined's gain over each RQA system alone (seeds averaged): " + ", ".join(
        f"{signed_text(100 * g)} on {name}" for name, g in gains.items()
    )
    # why a difference is not varied: each factor run trains the relevance model and two rerankers anew
    not_varied = (
        "not varied in these results: a run of its own trains the relevance model and two rerankers anew"
    )
    rows = [
        (
            "the reranker's model",
            "BART-large (about 400M parameters)",
            "all-MiniLM-L6-v2 cross-encoder (22.7M), every layer trained",
            "BART-large cannot be obtained here. Its nearest proxy, the cross-encoder's capacity (a "
            "cross-encoder cut to MiniLM's first layers): "
            + (_factor_effects(w, "model.encoder_layers") or not_varied),
        ),
        (
            "input length",
            "not known to us (BART-large reads up to 1,024 tokens)",
            "128 tokens of question + passage",
            _factor_effects(w, "model.max_len") or not_varied,
        ),
        (
            "training feedback",
            "the four domains' feedback_train files, three of them not retrievable from the copy we read",
            f"{w.training_pairs:,} rated pairs (WHO's feedback_train and the four feedback_valid files)",
            amount,
        ),
        (
            "negatives of the QA-only model",
            "not known to us",
            "three of zero-shot MiniLM's ten best non-gold passages per QA-train question",
            _factor_effects(w, "negative_source")
            or not_varied + " (negatives from the hybrid need its fine-tuned half first)",
        ),
        (
            "where the rerankers start",
            "BART-large's pretrained weights",
            "a relevance model trained here on QA data (vanilla)",
            start,
        ),
        ("RQA system", "BERT poly-encoder, fine-tuned", f"{w.rqa} and three others", rqa),
        (
            "the relevance model's seed",
            "not known to us",
            "one relevance model (seed 0); every seed of the rerankers that continue from it starts there",
            _seed_effects(w) or not_varied,
        ),
    ]
    return pd.DataFrame(rows, columns=["difference", "paper", "here", "what varying it did"])


def why_answer(w: WhyWeDiffer, bold: bool = True) -> str:
    """The section's answer, from the measurements (markdown; bold unless ``bold`` is False).

    The book's contribution (``combined`` minus ``vanilla``, seeds averaged, as the reranking
    chapter tests it), the power the test set has for the paper's, the largest contribution among
    the settings varied (each factor run whose relevance model learned something, each share of the
    learning curve; "reaches" means its 95% CI reaches the paper's), and the differences not varied.
    """
    if w.contribution is None:
        raise ValueError("why_answer needs the book's contribution (why_we_differ computes it)")
    row = {str(k): v for k, v in w.contribution.items()}
    informative = [
        (
            f"{k} (combined minus vanilla, seed 0)",
            float(r["contribution_delta"]),
            float(r["contribution_delta_ci_high"]),
        )
        for k, r in w.factors.iterrows()
        if r["changed"] and r["relevance_kl"] < r["prior_kl"] - PRIOR_MARGIN
    ]
    informative += [
        (f"feedback_kl on {int(r['pairs']):,} rated pairs", float(r["delta"]), float(r["delta_ci_high"]))
        for _, r in w.curve.iterrows()
    ]
    p = w.projection
    near = [v for v in informative if 100 * v[2] >= p.target]
    label, delta, _ = max(near or informative, key=lambda v: v[1])
    unvaried = [
        r["difference"]
        for _, r in difference_rows(w).iterrows()
        if str(r["what varying it did"]).startswith("not varied")
    ]
    mark = "**" if bold else ""
    reach = (
        f"{len(near)} of the settings varied here reach it within their 95% CI (the largest: "
        if near
        else "none of the settings varied here reaches it, even at its 95% CI's upper end (the largest: "
    )
    return (
        f"{mark}The feedback's own contribution here (combined minus vanilla on {w.rqa}, seeds "
        f"averaged) is {change_text(row)}, against the paper's {signed_text(p.target)}, a contribution "
        f"our {w.questions:,} test questions would detect with power {p.power_at_target:.3f}; "
        + reach
        + f"{signed_text(100 * delta)} points, {label}). "
        + (f"Not varied yet: {', '.join(unvaried)}. " if unvaried else "")
        + f"BART-large and the paper's training feedback cannot be obtained here.{mark}"
    )


def factor_view(w: WhyWeDiffer) -> pd.DataFrame:
    """:attr:`WhyWeDiffer.factors` for the page: one column per setting, one row per measure.

    Accuracies in %, each comparison as Δ [unadjusted 95% CI] in points and its Holm p. Settings as
    columns keep the table narrow: a few settings, nine measures.
    """
    t = w.factors

    def change(prefix: str) -> list[str]:
        return [
            f"{signed_text(100 * r[f'{prefix}_delta'])} "
            + interval(100 * r[f"{prefix}_delta_ci_low"], 100 * r[f"{prefix}_delta_ci_high"])
            for _, r in t.iterrows()
        ]

    rows = {
        "relevance model's held-out KL (nats)": [f"{v:.3f}" for v in t["relevance_kl"]],
        "the same, always predicting the pseudo pairs' label shares (nats)": [
            f"{v:.3f}" for v in t["prior_kl"]
        ],
        f"relevance model's AUC on the {w.rqa}'s top 5": [f"{v:.3f}" for v in t["vanilla_auc"]],
        f"{w.rqa} alone (%)": [f"{100 * v:.1f}" for v in t["rqa_alone"]],
        **{f"+ {v} (%)": [f"{100 * x:.1f}" for x in t[v]] for v in FACTOR_VARIANTS},
        "combined alone (%)": [f"{100 * v:.1f}" for v in t["combined_alone"]],
        "contribution: combined - vanilla (points)": change("contribution"),
        "its Holm p": [p_text(v) for v in t["contribution_p_holm"]],
        f"gain: combined - {w.rqa} alone (points)": change("gain"),
        "its Holm p ": [p_text(v) for v in t["gain_p_holm"]],
        "training the three models (min)": [f"{v:.0f}" for v in t["train_minutes"]],
    }
    view = pd.DataFrame(rows, index=t.index).T
    return view.rename_axis(index="measure (seed 0)", columns="setting")


def _forest_row(label: str, family: str, row: Any, prefix: str = "") -> dict[str, Any]:
    """A comparison row (``<prefix>delta``, its CI, ``<prefix>p_holm``) as a forest plot point, in points."""
    return {
        "label": label,
        "family": family,
        "delta": 100 * row[f"{prefix}delta"],
        "ci_low": 100 * row[f"{prefix}delta_ci_low"],
        "ci_high": 100 * row[f"{prefix}delta_ci_high"],
        "significant": bool(row[f"{prefix}p_holm"] < 0.05),
    }


def contribution_points(w: WhyWeDiffer) -> pd.DataFrame:
    """Every measured contribution of the feedback, one row each, for a forest plot (points).

    Rows: the book's configuration and each factor run (``combined`` minus ``vanilla``, Holm over
    the factor table), then each share of the learning curve (``feedback_kl`` on that share minus
    ``vanilla``, Holm over the shares). Columns ``label``, ``family``, ``delta``, ``ci_low``,
    ``ci_high`` (points), ``significant`` (Holm p < 0.05).
    """
    factor_rows = [
        _forest_row(
            ("book's configuration (seed 0)" if not r["changed"] else str(k))
            + ("" if r["relevance_kl"] < r["prior_kl"] - PRIOR_MARGIN else " (learned nothing)"),
            "combined - vanilla",
            r,
            "contribution_",
        )
        for k, r in w.factors.iterrows()
    ]
    curve_rows = [
        _forest_row(f"{int(r['pairs']):,} rated pairs", "feedback_kl - vanilla", r)
        for _, r in w.curve.iterrows()
    ]
    return pd.DataFrame(factor_rows + curve_rows)


def relevance_seed_spread(
    results: Path, book_candidates: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, Comparison] | None:
    """The relevance model (``vanilla``) under its other seeds against the book's seed 0, per RQA system.

    Reads ``vanilla``'s other seeds from ``results/relevance_seeds/`` and ``results/relevance_per_seed/``
    (:func:`~fqa_analysis.core.results.relevance_seed_folder`; one model per seed either way),
    rescoring some RQA systems. Each seed's reranked accuracy
    is compared with seed 0's (the book's, from ``results/``) on the same questions, paired
    bootstrap, Holm over every (RQA, seed) row. How far another seed moves the relevance model is
    the yardstick for "significantly worse than vanilla", which the book tests against seed 0 alone.

    Args:
        results: The results folder (``relevance_seeds/`` inside it).
        book_candidates: ``results``' own ``candidates.parquet`` when the caller has loaded it
            already (a 6 MB table, seconds to read and check); read here otherwise.

    Returns:
        None without the folder; else one row per (RQA, seed): ``rqa``, ``seed``, ``accuracy``,
        ``seed0`` (seed 0's accuracy), ``delta`` and its CI, ``p_holm``, ``mde``; and the comparison.
    """
    # vanilla of seed k is one model whether or not warm variants continued from it: read it from
    # either folder (relevance_seeds/, or relevance_per_seed/ where --relevance-per-seed trained it)
    folders = [
        f
        for n in (RELEVANCE_SEEDS_FOLDER, RELEVANCE_PER_SEED_FOLDER)
        if (f := relevance_seed_folder(results, n))
    ]
    if not folders:
        return None
    others = pd.concat([load_candidates(f) for f in folders], ignore_index=True)
    others = others[(others["reranker"] == "vanilla") & (others["seed"] != 0)]
    others = others.drop_duplicates(["rqa", "seed", "domain", "split", "question_id", "passage_id"])
    systems = sorted(set(others["rqa"]))
    book = load_candidates(results) if book_candidates is None else book_candidates
    rows = [
        _seed0_outcomes(book, rqa, ["vanilla"]).query("reranker == 'vanilla'").assign(run="seed 0")
        for rqa in systems
    ]
    for (_, seed), part in others.groupby(["rqa", "seed"]):
        outcomes = score_outcomes(part[part["domain"].isin(FEEDBACK_DOMAINS)])
        rows.append(outcomes.assign(run=f"seed {seed}"))
    outcomes = pd.concat(rows, ignore_index=True)
    comparison = compare(
        outcomes,
        system="run",
        baseline="seed 0",
        within=["rqa"],
        describe="the relevance model's other seeds vs seed 0, on every RQA system",
        seeds=None,
        commit=_commits([load_stage(results, "rerank"), *(load_stage(f, "rerank") for f in folders)]),
    )
    table = comparison.table.reset_index()
    table["seed"] = table["run"].str.split(" ").str[1].astype(int)
    table = table.rename(columns={"mean": "accuracy", "baseline_mean": "seed0"})
    columns = ["rqa", "seed", "accuracy", "seed0", "delta", "delta_ci_low", "delta_ci_high", "p_holm", "mde"]
    return table[columns], comparison


def per_seed_contribution(
    results: Path, book_candidates: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, Comparison] | None:
    """The feedback's contribution on seed k when ``combined`` starts from its own relevance model.

    Reads ``results/relevance_per_seed/`` (``fqa run rerank --relevance-per-seed``): ``vanilla`` and
    ``combined`` of seed k, ``combined`` continued from the relevance model of seed k. Per seed k and
    RQA system two comparisons, paired over the feedback domains' test questions, Holm over all of
    them: ``combined`` minus ``vanilla`` both of seed k (the per-seed start), and the book's
    ``combined`` seed k (continued from the shared seed-0 relevance model) minus ``vanilla`` seed 0.

    Args:
        results: The results folder (``relevance_per_seed/`` inside it).
        book_candidates: ``results``' own ``candidates.parquet`` when the caller has loaded it.

    Returns:
        None without the folder; else one row per (RQA, seed, start): ``rqa``, ``seed``, ``start``
        (``own`` or ``shared``), ``delta`` and its CI, ``p_holm``; and the comparison.
    """
    folder = relevance_seed_folder(results, RELEVANCE_PER_SEED_FOLDER)
    if folder is None:
        return None
    own = load_candidates(folder)
    book = load_candidates(results) if book_candidates is None else book_candidates
    parts, pairs = [], []
    seeds = sorted(int(s) for s in own.loc[own["reranker"] == "combined", "seed"].unique())
    for rqa in sorted(set(own.loc[own["reranker"] == "combined", "rqa"])):
        # vanilla seed 0 (the book's) once per RQA system: the baseline of every shared start
        runs = {"vanilla 0": (book, "vanilla", 0)}
        for seed in seeds:
            runs |= {
                f"combined {seed} (own)": (own, "combined", seed),
                f"vanilla {seed}": (own, "vanilla", seed),
                f"combined {seed} (shared)": (book, "combined", seed),
            }
            pairs += [
                (f"combined {seed} (own)", f"vanilla {seed}"),
                (f"combined {seed} (shared)", "vanilla 0"),
            ]
        for run, (frame, reranker, k) in runs.items():
            rows = frame[
                (frame["rqa"] == rqa)
                & frame["domain"].isin(FEEDBACK_DOMAINS)
                & (frame["reranker"] == reranker)
                & (frame["seed"] == k)
            ]
            parts.append(score_outcomes(rows).assign(run=run, seed=0))
    outcomes = pd.concat(parts, ignore_index=True)
    comparison = compare(
        outcomes,
        system="run",
        pairs=list(dict.fromkeys(pairs)),
        within=["rqa"],
        describe="combined minus vanilla of one seed, from its own relevance model and from the shared one",
        seeds=None,
        commit=_commits([load_stage(results, "rerank"), load_stage(folder, "rerank")]),
    )
    table = comparison.table.reset_index()
    table["seed"] = table["run"].str.split(" ").str[1].astype(int)
    table["start"] = table["run"].str.extract(r"\((own|shared)\)", expand=False)
    columns = ["rqa", "seed", "start", "delta", "delta_ci_low", "delta_ci_high", "p_holm", "mde"]
    return table[columns], comparison


#: The rerankers (seed 0) the section compares: the contribution, the curve's baseline, the start.
WHY_VARIANTS: tuple[str, ...] = ("vanilla", "feedback_kl", "combined", "feedback_kl_scratch")


def why_missing(results: Path, rqa: str = "hybrid") -> str | None:
    """What a results folder lacks for :func:`why_we_differ`, with the commands that add it (None: nothing).

    The section reads ``vanilla``, ``feedback_kl``, ``combined`` and ``feedback_kl_scratch`` (seed 0) on
    ``rqa``, and the beyond stage's learning-curve runs (seed 0) on those rerankers. A folder holding a
    subset of the runs gets this note instead of the section.
    """
    candidates = load_candidates(results)
    present = set(candidates.loc[(candidates["rqa"] == rqa) & (candidates["seed"] == 0), "reranker"])
    lacking = [v for v in WHY_VARIANTS if v not in present]
    notes = []
    if lacking:
        notes.append(
            f"{', '.join(f'`{v}`' for v in lacking)} (seed 0) rescoring {rqa} "
            f"(`fqa run rerank --variants {','.join(lacking)}`)"
        )
    stages = load_manifest(results).get("stages", {})
    beyond = stages.get("beyond", {})
    curve = any(r.startswith("fraction/") and r.endswith("/seed0") for r in beyond.get("experiment_runs", {}))
    if not curve or not rerankers_current(beyond.get("config", {}).get("rerank"), stages.get("rerank", {})):
        notes.append(
            "the beyond stage's learning-curve runs on these rerankers "
            "(`fqa run beyond --beyond-runs 'fraction/*'`)"
        )
    return (
        "*Not computed in this results folder: this section needs " + "; and ".join(notes) + ".*"
        if notes
        else None
    )

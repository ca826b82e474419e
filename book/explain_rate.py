# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Explanations as a training signal: explain, then rate
#
# The paper's reranker has a second form. **Rate-only** (`feedback_kl` of the other chapters, or its from-MiniLM twin `feedback_kl_scratch` when the explain-then-rate model starts from MiniLM: the comparison keeps the starting point equal) reads a (question, answer) pair and predicts the annotators' rating distribution. **Explain-then-rate** first writes an explanation of the pair, as an annotator would, and then predicts the rating from the state it reached after writing it; it trains on the ratings *and* the explanations (loss = KL to the annotators' rating distribution + 1 x the cross-entropy of the explanation tokens, the weight of the authors' configs). It was this form that the authors used in their human evaluation. Does learning to explain make the rating, and through it the QA system, better? Two explain-then-rate models are compared with the rate-only one: **the paper's form** (`feedback_explain_rate_paper`) and **ours** (`feedback_explain_rate`), which changes three settings of the paper's form for our stand-in model (which, and why: {ref}`the-two-forms`).

# %% tags=["hide-input"]
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from fqa_analysis import data
from fqa_analysis.core.audit import audit_outcomes, source_means
from fqa_analysis.core.compare import verdict
from fqa_analysis.core.ratings import (
    LABELS,
    item_ratings,
    majority_label,
    mean_kl,
    predicted_rating,
    rating_distribution,
    rating_prior,
)
from fqa_analysis.core.report import (
    change_text,
    comparison_table,
    holm_p_text,
    paper_shape_table,
    plus_minus,
    ranked_counts,
    variety_table,
)
from fqa_analysis.core.reranking import (
    compare_to_baseline,
    constant_rating_quality,
    item_comparison,
    join_annotators,
    per_item_rating_scores,
    rating_quality_table,
    score_outcomes,
    seed_table,
)
from fqa_analysis.core.results import (
    counted_seconds,
    dirty_commits,
    has_audit,
    load_audit,
    load_candidates,
    load_manifest,
    load_stage,
    load_table,
    results_dir,
    stage_cost,
)
from fqa_analysis.core.text_metrics import variety
from fqa_analysis.models.reranker.pairs import feedback_item_sets

RESULTS = results_dir()
STAGES = load_manifest(RESULTS).get("stages", {})
# our form is the chapter's subject; the paper's form is shown beside it when its runs are in results/
stage = STAGES.get("explain_rate")
paper_stage = STAGES.get("explain_rate_paper")
# The rate-only reranker it is compared with starts where it starts: the relevance model
# (`feedback_kl`) or MiniLM (`feedback_kl_scratch`; a stage record without `start` trained from MiniLM).
START = (stage or {}).get("config", {}).get("start", "minilm" if stage else "relevance")
RATE_ONLY = "feedback_kl" if START == "relevance" else "feedback_kl_scratch"
OURS, PAPER = "feedback_explain_rate", "feedback_explain_rate_paper"
NAMES = {RATE_ONLY: "rate-only", OURS: "explain-then-rate (ours)", PAPER: "explain-then-rate (paper's form)"}
SYSTEMS = list((stage or {}).get("config", {}).get("rqa", []))
candidates = load_candidates(RESULTS)
# rows computed from uncommitted code (a `+dirty` manifest entry) are not shown
DIRTY = dirty_commits(stage) if stage else []
PAPER_SHOWN = paper_stage is not None and not dirty_commits(paper_stage)
FORMS = [OURS, PAPER] if PAPER_SHOWN else [OURS]
READY = stage is not None and RATE_ONLY in set(candidates["reranker"]) and not DIRTY
if stage is None:
    WAITING = Markdown(
        "*Not computed yet: this results folder has no explain-then-rate runs; `fqa run explain_rate` "
        "computes them (our form, three seeds).*"
    )
elif DIRTY:
    WAITING = Markdown(
        f"*Not shown: this stage's rows in `results/` were computed from uncommitted code (manifest commit "
        f"`{DIRTY[0]}`); they return when `fqa run explain_rate` is rerun at a clean commit.*"
    )
else:
    WAITING = Markdown(
        f"*Not computed yet: the rate-only reranker this chapter compares with, `{RATE_ONLY}` (the same "
        f"starting point, {'the relevance model' if START == 'relevance' else 'MiniLM'}, and the same feedback), "
        f"is not in `results/`; `fqa run rerank --variants {RATE_ONLY}` adds it.*"
    )
# said once under the findings where our form is shown and the paper's is not
PAPER_NOTE = (
    None
    if PAPER_SHOWN
    else "*The paper's form is not shown: "
    + (
        f"its rows in `results/` were computed from uncommitted code (manifest commit `{dirty_commits(paper_stage)[0]}`)"
        if paper_stage
        else "it is not in `results/`"
    )
    + "; `fqa run explain_rate --explain-rate-form paper --seeds 0` computes it. Every table below shows our form only.*"
)
# where the rows are not shown, each section says so in one line under its lead-in
SEE_FINDINGS = Markdown("*Not shown: see the note under Findings.*")
print(
    f"explain-then-rate encoder starts from {'the relevance model' if START == 'relevance' else 'MiniLM'}; "
    f"rate-only reranker compared: {RATE_ONLY}"
    + ("" if READY else " (not shown: see below)" if DIRTY else " (not in results/ yet)")
)

# %% tags=["hide-input"]
if READY:
    rows = pd.concat(
        [
            candidates[candidates["rqa"].isin(SYSTEMS) & candidates["reranker"].isin(["none", RATE_ONLY])],
            load_table(RESULTS, "explain_rate_candidates.parquet"),
            *([load_table(RESULTS, "explain_rate_paper_candidates.parquet")] if PAPER_SHOWN else []),
        ],
        ignore_index=True,
    )
    rows = rows[rows["domain"].isin(data.FEEDBACK_DOMAINS)]
    outcomes = score_outcomes(rows)  # S = P_theta + P(Excellent), as in the main table
    table = seed_table(outcomes)
    COMMITS = ",".join(
        load_stage(RESULTS, s)["git_commit"]
        for s in ("rerank", "explain_rate", *(["explain_rate_paper"] if PAPER_SHOWN else []))
    )
    vs_rate_only = compare_to_baseline(
        outcomes[outcomes["reranker"] != "none"], baseline=RATE_ONLY, commit=COMMITS
    )
    # the same with each model's training seeds resampled too (a two-level bootstrap)
    vs_rate_only_seeds = compare_to_baseline(
        outcomes[outcomes["reranker"] != "none"], baseline=RATE_ONLY, commit=COMMITS, resample_seeds=True
    )
    vs_alone = compare_to_baseline(outcomes, average="micro", commit=COMMITS)
    explained = pd.concat(
        [
            load_table(RESULTS, "explain_rate_predictions.parquet"),
            *([load_table(RESULTS, "explain_rate_paper_predictions.parquet")] if PAPER_SHOWN else []),
        ],
        ignore_index=True,
    )
    predictions = pd.concat(
        [load_table(RESULTS, "rating_predictions.parquet").query("reranker == @RATE_ONLY"), explained],
        ignore_index=True,
    )
    data_dir = data.resolve_data_dir(None)
    test_frame = data.feedback_frame(data.available_feedback(data_dir, "test"))
    test_items = item_ratings(test_frame)
    joined = join_annotators(predictions, test_items)
    quality = rating_quality_table(joined)
    per_item = per_item_rating_scores(joined)
    # the forms shown against rate-only, Holm over them within each metric
    item_comparisons = {
        metric: item_comparison(
            per_item, RATE_ONLY, metric, "each explain-then-rate form vs rate-only, per metric", COMMITS
        )
        for metric in ("kl", "correct")
    }
    item_tests = {metric: cmp.table for metric, cmp in item_comparisons.items()}
    per_item_seeds = per_item_rating_scores(joined, by_seed=True)
    item_tests_seeds = {
        metric: item_comparison(
            per_item_seeds,
            RATE_ONLY,
            metric,
            "each explain-then-rate form vs rate-only, per metric",
            COMMITS,
            True,
        ).table
        for metric in ("kl", "correct")
    }
    explained = explained.assign(rating=predicted_rating(explained))
    explained["agrees"] = explained["rating"] == explained["explanation_rating"]
    # the training prior: the constant any rating model must beat (held out and on feedback_test)
    fit_items, select_items = feedback_item_sets(
        stage["protocol"],
        data.available_feedback(data_dir, "train"),
        data.available_feedback(data_dir, "valid"),
        stage["config"]["holdout"],
    )
    prior = rating_prior([it.ratings for it in fit_items])
    held_out = [
        it for it in select_items if any(e.strip() for e in it.explanations)
    ]  # the models' select set
    prior_select_kl = mean_kl(
        np.array([rating_distribution(it.ratings) for it in held_out]), np.tile(prior, (len(held_out), 1))
    )
    prior_quality = constant_rating_quality(prior, test_items)
    minutes, peak_gib = stage_cost(stage)

    def selection_kl(entry):
        """Per seed, the held-out KL (generated explanations) of the epoch kept: mean ± sd over seeds."""
        kept = [h["best_select_kl"] for h in entry["histories"].values()]
        if len(kept) == 1:
            return f"{kept[0]:.3f} nats (one seed)"
        return (
            plus_minus(float(np.mean(kept)), float(np.std(kept, ddof=1)), 3) + " nats (mean ± sd over seeds)"
        )

    def mean_selection_kl(entry):
        """The seed mean of the held-out KL of the epoch kept."""
        return float(np.mean([h["best_select_kl"] for h in entry["histories"].values()]))


# %% [markdown]
# ## Findings
#
# Computed from `results/` when the book is built:

# %% tags=["hide-input"]
if READY:
    d = vs_rate_only.table
    alone = vs_alone.table
    means = (
        quality[quality["subset"] == "all"]
        .groupby("reranker")[["accuracy", "macro_f1", "kl", "ece_excellent"]]
        .mean()
    )
    distinct = explained.groupby(["reranker", "seed"])["explanation"].nunique().groupby("reranker").max()
    # the blind audit's mean scores (its intervals and tests: the explanations chapter)
    audit_key, audit_judged = load_audit(RESULTS) if has_audit(RESULTS) else (None, {})
    audit = source_means(audit_outcomes(audit_key, audit_judged)) if audit_key is not None else None
    audit_items = len(audit_key.drop_duplicates(["domain", "item_id"])) if audit_key is not None else 0
    share_bad = (explained["rating"] == "Bad").groupby(explained["reranker"]).mean()
    classifier = load_stage(RESULTS, "explain")["rating_classifier_heldout_accuracy_by_rating"]

    def delta(row, scale=100.0, digits=2, unit="points"):
        """Δ [95% CI, unadjusted], Holm p of one comparison row, with the MDE of a null."""
        return change_text(row, scale, digits, unit)

    def versus(r, form):
        """A form's accuracy against rate-only on RQA system r, with the paired difference."""
        row, seeded = d.loc[(r, form)], vs_rate_only_seeds.table.loc[(r, form)]
        return (
            f"{r} {100 * row['mean']:.2f}% vs {100 * row['baseline_mean']:.2f}%, {delta(row)} (seeds resampled "
            f"too: {verdict(seeded, with_mde=False)}, Holm p {holm_p_text(seeded)})"
        )

    def quality_line(form):
        """Seed means of the four rating-quality measures: a form / rate-only."""
        cells = [
            f"{label} {means.loc[form, m]:.3f} / {means.loc[RATE_ONLY, m]:.3f}"
            for m, label in (
                ("accuracy", "accuracy vs the majority"),
                ("macro_f1", "macro-F1"),
                ("kl", "KL"),
                ("ece_excellent", "ECE of P(Excellent)"),
            )
        ]
        return ", ".join(cells)

    n_items = int(explained.groupby(["reranker", "seed"]).size().max())

    # the plain answer first: does writing an explanation first help, against rate-only? Each
    # verdict from the test that resamples both models' seeds too (the stricter of the two)
    qa_words = {r: verdict(vs_rate_only_seeds.table.loc[(r, OURS)], with_mde=False) for r in SYSTEMS}
    kl_word = verdict(item_tests_seeds["kl"].loc[OURS], with_mde=False, higher_is_better=False)
    argmax_word = verdict(item_tests_seeds["correct"].loc[OURS], with_mde=False)
    helped = "better" in [*qa_words.values(), kl_word, argmax_word]
    lines = [
        "**In plain words:** learning to explain first "
        + (
            "helped in part: against"
            if helped
            else "did not make our reranker better than rating alone. Against"
        )
        + " rate-only, its QA accuracy is "
        + " and ".join(f"{w} on {r}" for r, w in qa_words.items())
        + f", and its ratings are {kl_word} in KL to the annotators and {argmax_word} in agreeing with their "
        "majority (verdicts at Holm p < 0.05, with each "
        "model's training seeds resampled as well as the questions or items; numbers below)."
    ]
    if PAPER_SHOWN:
        paper_beats = mean_selection_kl(paper_stage) < prior_select_kl
        lines.append(
            (
                "**The paper's form beats the training prior held out.**"
                if paper_beats
                else "**The paper's form does not beat the training prior with our stand-in model.**"
            )
            + f" Its held-out KL with the explanations it generates is {selection_kl(paper_stage)} "
            f"against the training prior's {prior_select_kl:.3f}; it writes "
            + (
                "one explanation for all"
                if distinct[PAPER] == 1
                else f"at most {distinct[PAPER]:,} distinct explanations for the"
            )
            + f" {n_items:,} feedback_test items and rates {share_bad[PAPER]:.0%} of them Bad. It has one seed: "
            "its comparisons below carry no variation between seeds."
        )
    ours_beats = mean_selection_kl(stage) < prior_select_kl
    lines.append(
        f"**Ours** ends at {selection_kl(stage)} held out, "
        + ("below" if ours_beats else "not below")
        + f" the training prior's {prior_select_kl:.3f}; it writes up to {distinct[OURS]:,} distinct "
        f"explanations for the {n_items:,} feedback_test items per seed and rates {share_bad[OURS]:.0%} of them "
        "Bad (all seeds)."
    )
    # which ratings ours ever predicts: a head that never says Acceptable or Could be Improved caps macro-F1
    rating_shares = explained[explained["reranker"] == OURS]["rating"].value_counts(normalize=True)
    never = [r for r in LABELS if r not in rating_shares.index]

    # agreement a rating independent of the text would reach: sum over ratings of P(rating) P(read as rating)
    def chance_agreement(form):
        rows = explained[explained["reranker"] == form]
        rated = rows["rating"].value_counts(normalize=True)
        read = rows["explanation_rating"].value_counts(normalize=True)
        return float(sum(rated.get(r, 0.0) * read.get(r, 0.0) for r in LABELS))

    # the most frequent majority label of the training items (what always-one-label would predict)
    top_label = pd.Series([majority_label(it.ratings) for it in fit_items]).value_counts().idxmax()
    always_top = constant_rating_quality(np.eye(4)[LABELS.index(top_label)] * (1 - 4e-6) + 1e-6, test_items)
    lines += [
        "QA accuracy (overall micro, seed means) against rate-only, ours: "
        + "; ".join(versus(r, OURS) for r in SYSTEMS)
        + (". The paper's form: " + "; ".join(versus(r, PAPER) for r in SYSTEMS) if PAPER_SHOWN else "")
        + ". Ours against the RQA alone: "
        + "; ".join(f"{r} {delta(alone.loc[(r, OURS)])}" for r in SYSTEMS)
        + ".",
        "Rating quality on feedback_test (seed means; explain-then-rate / rate-only). "
        f"Ours: {quality_line(OURS)}. "
        + (f"The paper's form: {quality_line(PAPER)}. " if PAPER_SHOWN else "")
        + f"Constants: the training prior KL {prior_quality['kl']:.3f}, ECE of P(Excellent) "
        f"{prior_quality['ece_excellent']:.3f}; always {top_label} accuracy vs the majority "
        f"{always_top['accuracy']:.3f}. "
        + (
            f"Ours never predicts {' or '.join(never)} (macro-F1 counts those ratings as missed). "
            if never
            else ""
        )
        + "Paired over items, ours against "
        f"rate-only: KL {delta(item_tests['kl'].loc[OURS], 1.0, 3, 'nats')}"
        + " (with each model's seeds resampled too: "
        + verdict(item_tests_seeds["kl"].loc[OURS], with_mde=False, higher_is_better=False)
        + f", Holm p {holm_p_text(item_tests_seeds['kl'].loc[OURS])})"
        + f"; argmax accuracy {delta(item_tests['correct'].loc[OURS], 1.0, 3, '')} ("
        + (
            "Holm over the two forms, per metric"
            if PAPER_SHOWN
            else "one form shown, so Holm leaves each p as it is"
        )
        + f"). The rate-only baseline itself, `{RATE_ONLY}`, is "
        f"{prior_quality['kl'] - means.loc[RATE_ONLY, 'kl']:.3f} nats below the training prior's KL: both are "
        "weak rating models.",
        "Its explanations agree with its own rating (the consistency classifier of {doc}`explanations` reads the "
        f"rating it gave) for {explained.loc[explained['reranker'] == OURS, 'agrees'].mean():.0%} of the items, "
        f"where a rating independent of the text would agree for {chance_agreement(OURS):.0%}"
        + (
            f"; the paper's form's for {explained.loc[explained['reranker'] == PAPER, 'agrees'].mean():.0%} "
            f"(its one explanation is read as "
            f"{explained.loc[explained['reranker'] == PAPER, 'explanation_rating'].mode().iloc[0]} while it rates "
            f"{share_bad[PAPER]:.0%} Bad)"
            if PAPER_SHOWN
            else ""
        )
        + f". The classifier itself reads held-out human explanations right {classifier['overall']:.0%} of the time, "
        "so agreement measures the classifier as much as the model.",
        (
            f"Read blind by AI judges (not people; the audit of {{doc}}`explanations`: {audit_items} items, each "
            "majority rating weighing equally, seed 0's explanations), our form's explanations score, on a 0-to-1 "
            "scale, "
            + ", ".join(
                f"{name} {audit.loc['explain_then_rate', dim]:.2f} (people {audit.loc['people', dim]:.2f})"
                for dim, name in (
                    ("fluent", "fluent"),
                    ("supports", "supporting the rating it gives"),
                    ("accurate", "accurate"),
                    ("specific", "specific"),
                )
            )
            + (
                ": they are mostly distinct strings (the variety table below), yet every mean score is below "
                "people's"
                if (audit.loc["explain_then_rate"] < audit.loc["people"]).all()
                else ""
            )
            + " (each difference tested, paired over the items, in {doc}`explanations`)."
            if audit is not None
            else ""
        ),
        f"Our form's stage cost {minutes:.0f} minutes of compute on a 2-core CPU (peak {peak_gib:.1f} GiB): "
        f"{len(stage['histories'])} seeds' models, each explaining and rating "
        f"{stage['scored_pairs']:,} pairs"
        + (
            f", and {len(stage.get('levers') or []) - 1} more seed-0 models trained to choose the lever "
            "(one lever's model is seed 0's)."
            if len(stage.get("levers") or []) > 1
            else "."
        ),
    ]
    display(Markdown("\n".join(f"- {x}" for x in lines if x)))
    if PAPER_NOTE:
        display(Markdown(PAPER_NOTE))
else:
    display(WAITING)

# %% [markdown]
# The sections below give the evidence for the findings, each table with its comparison family, where the stage's rows are in `results/`.

# %% [markdown]
# (the-two-forms)=
# ## The model, in two forms
#
# Both forms are an encoder-decoder built from two copies of all-MiniLM-L6-v2 (the explanation generator of {doc}`explanations`; the pretrained models available to this project are sentence encoders, none an English sequence-to-sequence model, so it stands in for the paper's BART-large, and its cross-attention starts untrained). The encoder's layers start from the starting point printed at the top of this page: the relevance model of the other chapters (the default, the same start as the rate-only `feedback_kl`) or MiniLM itself; the decoder starts from MiniLM. The encoder reads (question, passage), 128 tokens; the decoder writes `[CLS] explanation [SEP]` with no rating in sight; a linear 4-way rating head reads the decoder's top-layer state at the closing `[SEP]`, the state after the whole explanation. Both train on the same feedback and held-out split as the rate-only rerankers (protocol `available`), with the loss above and every annotator's explanation of a pair teacher-forced for the explanation tokens (one encoder pass per pair); two epochs, the epoch with the lowest held-out KL *with generated explanations* kept; the seeds are listed under the tables. At inference both write an explanation of at most 24 tokens (no 3-gram repeated): the paper's form greedy, ours as it trained (greedy or a seeded nucleus draw, the lever adopted below), and the head reads the state after it, so P_phi depends on what the model wrote. Both rescore the top 5 of the two best RQA systems (hybrid and fine-tuned MiniLM) with the paper's sum S = P_theta + P(Excellent).
#
# They differ in what the rating head reads while training and what it sees:
#
# | | paper's form (`feedback_explain_rate_paper`) | ours (`feedback_explain_rate`) |
# |---|---|---|
# | the head reads, while training | the state after each annotator's explanation (teacher-forced) | the state after the model's **own** explanation (greedy, or a seeded nucleus draw: the lever adopted below), generated at every step with the current weights (no gradient through the generation) |
# | the head sees | the decoder's state | the decoder's state **and** the mean of the encoder's states of the pair |
# | the explanation loss | cross-entropy | cross-entropy, plus an unlikelihood term against openings its own explanations share across a batch where the lever adopted below has one |
#
# The reasoning behind the changes (the findings show the outcome; the changes were made together and are not measured one at a time). Annotators' explanations name their rating ("this answer is irrelevant"), so a head trained on them can learn to read the rating off the words; at inference it reads the model's own explanation instead, here one sentence for every item, and gives every item the same rating: the paper's form's findings above (one explanation, every item rated Bad, held-out KL above the training prior's) are consistent with this exposure bias, though overfitting is not ruled out (its held-out KL rises from the first epoch to the second). Training the head on what it reads at inference is meant to remove that mismatch. With the decoder's state alone the head would see the pair only through the decoder's cross-attention, which starts untrained here (BART's is pretrained); giving it the encoder's summary of the pair gives it the pair directly. It still reads the explanation the model wrote, and how far its rating agrees with that explanation is measured below ("Do its explanations agree with its rating?").

# %% [markdown]
# ## QA accuracy
#
# Overall accuracy@1 in % (four feedback domains, micro), mean ± sd over each reranker's seeds, in the main table's shape:

# %% tags=["hide-input"]
if READY:
    display(
        paper_shape_table(
            table,
            SYSTEMS,
            {
                "none": "alone",
                RATE_ONLY: "+ rate-only",
                OURS: "+ explain-then-rate (ours)",
                **({PAPER: "+ paper's form"} if PAPER_SHOWN else {}),
            },
        )
    )
else:
    display(SEE_FINDINGS)


# %% [markdown]
# Each explain-then-rate form against rate-only, paired over the 1,992 questions (seed-averaged outcomes, bootstrap resampled within test sets, B = 10,000; Holm over the explain-then-rate forms shown, within each RQA system; the signature names rate-only by its identifier, `feedback_kl`):

# %% tags=["hide-input"]
if READY:
    print(vs_rate_only.signature())
    display(
        comparison_table(vs_rate_only.table.rename(index=NAMES, level="reranker"), names=("RQA", "reranker"))
    )
else:
    display(SEE_FINDINGS)


# %% [markdown]
# Every reranker of this page against the RQA system alone, tested the same way (Holm over the rerankers shown, within each RQA system: a smaller family than the reranking chapter's, so the rate-only row's Holm p and MDE differ from that chapter's for the same difference):

# %% tags=["hide-input"]
if READY:
    print(vs_alone.signature())
    display(comparison_table(vs_alone.table.rename(index=NAMES, level="reranker"), names=("RQA", "reranker")))
else:
    display(SEE_FINDINGS)


# %% [markdown]
# ## Rating quality on feedback_test
#
# 1,995 items with three annotators each, never trained on; mean ± sd over seeds: accuracy of the argmax against the majority label (ties to the lower rating), macro-F1, KL from the annotators' distribution (nats), ECE of P(Excellent) against the share of annotators who said Excellent. The last row is the training prior predicted for every item.

# %% tags=["hide-input"]
if READY:
    HEADERS = {
        "accuracy": "accuracy",
        "macro_f1": "macro-F1",
        "kl": "KL (nats)",
        "ece_excellent": "ECE P(Exc)",
    }
    summary = quality.groupby(["reranker", "subset"], sort=False)[list(HEADERS)].agg(["mean", "std"])
    shown = pd.DataFrame(
        {
            h: [plus_minus(a, b, 3) for a, b in zip(summary[(m, "mean")], summary[(m, "std")], strict=True)]
            for m, h in HEADERS.items()
        },
        index=summary.index.rename(["reranker", "subset"]),
    ).rename(index=NAMES, level="reranker")
    shown.loc[("training prior (constant)", "all"), :] = [f"{prior_quality[m]:.3f}" for m in HEADERS]
    display(shown)
else:
    display(SEE_FINDINGS)


# %% [markdown]
# Paired over items (per item, the seed-averaged KL and argmax correctness; bootstrap stratified by domain; Holm over the explain-then-rate forms shown, within each metric). The last column is the Holm p of the same test with each model's training seeds resampled as well (a two-level bootstrap: seeds, then items), the test the findings' verdicts use:

# %% tags=["hide-input"]
if READY:
    print(item_comparisons["kl"].signature())

    def with_seeds(metric):
        """The metric's table with the seed-resampled test's Holm p as its last column."""
        return comparison_table(
            item_tests[metric].rename(index=NAMES),
            names=["reranker"],
            scale=1.0,
            digits=3,
            mean_header="explain-then-rate",
            delta_header="Δ vs rate-only",
            mde_header="MDE (Δ's unit)",
            wtl=False,
            seeds_resampled=item_tests_seeds[metric].rename(index=NAMES),
        )

    display(
        pd.concat(
            {
                name: with_seeds(metric)
                for metric, name in (("kl", "KL (nats)"), ("correct", "argmax accuracy (share)"))
            },
            names=["metric"],
        )
    )
else:
    display(SEE_FINDINGS)


# %% [markdown]
# ## Do its explanations agree with its rating?
#
# For each feedback_test item (all seeds) the rating our model gave (argmax P_phi) and the rating that the consistency classifier of {doc}`explanations` (trained on human explanations only) reads in the explanation it wrote first, as a share of the items by the model's rating:

# %% tags=["hide-input"]
if READY:
    ours = explained[explained["reranker"] == OURS]
    agreement = (
        pd.crosstab(ours["rating"], ours["explanation_rating"], normalize="index")
        .reindex(
            index=[r for r in reversed(LABELS) if r in set(ours["rating"])],
            columns=list(reversed(LABELS)),
            fill_value=0.0,
        )
        .map(lambda v: f"{v:.3f}")  # one precision in every column, the empty ones too
    )
    agreement["items"] = ours["rating"].value_counts().reindex(agreement.index).astype(int)
    display(agreement.rename_axis(index="model's rating", columns="explanation reads as"))
else:
    display(SEE_FINDINGS)


# %% [markdown]
# The explanations each form writes most often (all seeds, share of the feedback_test items):

# %% tags=["hide-input"]
if READY:
    for form, group in explained.groupby("reranker", sort=False):
        print(f"{NAMES[form]}: {group['explanation'].nunique()} distinct explanations over all seeds")
        for text, share in ranked_counts(group["explanation"], normalize=True).head(4).items():
            print(f"  {share:6.1%}  {text}")
else:
    display(SEE_FINDINGS)


# %% [markdown]
# Variety and grounding of what each form writes, as {doc}`explanations` measures its explainers (per seed; people's explanations of the same items last): the share of distinct explanations, the most common opening (four words) and its share, the mean length in words, and the share of content words found in the item's question or passage.

# %% tags=["hide-input"]
if READY:
    PAIRS = {
        (d, i): (q, t)
        for d, i, q, t in test_frame[["domain", "item_id", "question", "passage_text"]]
        .drop_duplicates(["domain", "item_id"])
        .itertuples(index=False)
    }
    rows = {}
    for (form, seed), group in explained.groupby(["reranker", "seed"], sort=False):
        pairs = [PAIRS[(d, i)] for d, i in zip(group["domain"], group["item_id"], strict=True)]
        rows[f"{'ours' if form == OURS else 'paper form'}, seed {seed}"] = variety(
            group["explanation"].tolist(), pairs, words=4
        )
    people = test_frame[test_frame["explanation"].str.strip() != ""]
    rows["annotators"] = variety(
        people["explanation"].tolist(), list(zip(people["question"], people["passage_text"], strict=True)), 4
    )
    display(variety_table(rows, "explanations"))
else:
    display(SEE_FINDINGS)


# %% [markdown]
# ### Levers against one repeated explanation
#
# Our form's training has two levers against writing one stock sentence: an **unlikelihood term** that lowers the probability of the opening tokens its own explanations share across a batch (`--explain-rate-unlikelihood`, its weight), and writing its own explanation as a seeded **nucleus draw** instead of the greedy sentence (`--explain-rate-top-p`, the nucleus mass), in training (what the rating head reads) and at inference. Seed 0 trains with each setting listed, the first row being the configured one (weight 0, greedy); on the held-out pairs, each model's KL with the explanations it generates (the epoch kept) and the variety of those explanations (the share of distinct ones, and the share that opens with the most common four words). The rule, fixed in the code (`adopt_lever`): every seed trains with the setting whose held-out explanations share their most common opening least, among the settings whose held-out KL is at most 0.005 nats above the first row's; the rating must not get worse.

# %% tags=["hide-input"]
if READY:
    # results written before the nucleus lever hold the weights alone ("unlikelihood_levers")
    lever_rows = stage.get("levers") or stage.get("unlikelihood_levers") or []
    if lever_rows:
        levers = pd.DataFrame(lever_rows)
        if "top_p" not in levers.columns:
            levers["top_p"] = None
        adopted_top_p = stage.get("own_top_p")
        levers["decoding"] = ["greedy" if pd.isna(p) else f"nucleus {p:g}" for p in levers["top_p"]]
        levers["adopted"] = [
            "yes"
            if w == stage["opening_unlikelihood"]
            and (pd.isna(p) if adopted_top_p is None else p == adopted_top_p)
            else ""
            for w, p in zip(levers["weight"], levers["top_p"], strict=True)
        ]
        display(
            levers.rename(columns={"weight": "unlikelihood weight"})
            .set_index(["unlikelihood weight", "decoding"])[
                ["select_kl", "select_distinct", "select_opening_share", "adopted"]
            ]
            .round(3)
            .rename(
                columns={
                    "select_kl": "held-out KL (nats)",
                    "select_distinct": "distinct",
                    "select_opening_share": "top opening",
                }
            )
        )
    else:
        display(
            Markdown(
                "*Not measured in this results folder: its explain-then-rate entry holds no unlikelihood "
                "levers (`fqa run explain_rate` measures them; [Rerun](rerun.md)).*"
            )
        )
else:
    display(SEE_FINDINGS)


# %% [markdown]
# Examples from our form (seed 0, a seeded draw of one item per rating the model gave): the question, the model's explanation and rating, and the annotators' ratings.

# %% tags=["hide-input"]
if READY:
    annotated = (
        test_frame.groupby(["domain", "item_id"])
        .agg(question=("question", "first"), ratings=("rating", list))
        .reset_index()
    )
    first = ours[ours["seed"] == ours["seed"].min()].merge(annotated, on=["domain", "item_id"])
    for _, group in first.groupby("rating", sort=False):
        r = group.sample(1, random_state=0).iloc[0]
        print(f"[{r.domain}] Q: {r.question}")
        print(f"  explains: {r.explanation}")
        top = max(r.p_bad, r.p_could_be_improved, r.p_acceptable, r.p_excellent)
        print(f"  rates: {r.rating} (P {top:.2f}); annotators: {', '.join(r.ratings)}")
else:
    display(SEE_FINDINGS)


# %% [markdown]
# ## Training curves and cost
#
# Per form, seed and epoch: the rating and explanation losses on the training pairs (the rating loss is the cross-entropy to the annotators' distribution, so it includes that distribution's entropy) and the held-out KL with generated explanations (the epoch kept is the lowest). The training prior's held-out KL is the bar to beat.

# %% tags=["hide-input"]
HISTORY_HEADERS = {
    "epoch": "epoch",
    "rating_loss": "rating loss",
    "token_loss": "explanation loss",
    "select_kl": "held-out KL",
    "wall_s": "wall (min)",
}
if READY:
    print(f"training prior, held-out KL: {prior_select_kl:.4f}")
    display(
        pd.DataFrame(
            [
                {
                    "form": NAMES[name],
                    "seed": s.removeprefix("seed"),
                    **{
                        HISTORY_HEADERS[k]: round(v / 60, 1) if k == "wall_s" else round(v, 4)
                        for k, v in e.items()
                        if k in HISTORY_HEADERS
                    },
                }
                for name, entry in ((OURS, stage), *([(PAPER, paper_stage)] if PAPER_SHOWN else []))
                for s, h in entry["histories"].items()
                for e in h["epochs"]
            ]
        ).set_index(["form", "seed", "epoch"])
    )
else:
    display(SEE_FINDINGS)


# %% [markdown]
# Our form's stage, step by step, from `results/manifest.json`: **compute** is what computing the step costs (a model's training counts its own epochs, also where this run read the model from the cache: seed 0's model is the lever adopted), **wall** the time the step took on the clock in this run. The paper's form's manifest entry (`explain_rate_paper`) records its own steps:

# %% tags=["hide-input"]
if READY:
    print(f"whole stage: {minutes:.1f} min of compute, peak {peak_gib:.1f} GiB")
    steps = pd.DataFrame(stage["timings"]).T
    # a step read from the cache whose cost no record holds counts (almost) nothing: the total is a floor
    uncounted = [
        k
        for k, v in counted_seconds(stage).items()
        if steps.loc[k, "from_cache"] and v < 1 and k != "relevance_model"
    ]
    if uncounted:
        print(
            f"read from the cache, cost not recorded (counted as 0, so the total is a lower bound): {', '.join(uncounted)}"
        )
    display(
        pd.DataFrame(
            {
                # the seconds stage_cost sums, so the rows add up to the total printed above
                "compute (min)": (pd.Series(counted_seconds(stage)) / 60).round(1),
                "wall (min)": (steps["wall_s"].astype(float) / 60).round(1),
                "from cache": ["yes" if c else "no" for c in steps["from_cache"]],
            }
        ).rename_axis("step")
    )
else:
    display(SEE_FINDINGS)

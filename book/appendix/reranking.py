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
# # Reranking: the tables behind the chapter
#
# What {doc}`../reranking` rests on, to consult rather than read: the rerankers and their training, every RQA system and domain, the tests on the macro average, what each reranker can tell apart, the targets, the factor runs one by one, the relevance model's recipe, training curves, the freezing measurement and the stage's cost. Computed from the same results folder and settings as the chapter.

# %% tags=["parameters", "hide-input"] mystnb={"code_prompt_show": "Show the page's settings", "code_prompt_hide": "Hide the page's settings"}
# The page's settings, at the book's values (as on the chapter; see the "Rerun an ablation" page)
SCORE = "p_excellent"  # the reranker's part of S: "p_excellent" (the paper's) or "expected_rating" (E[y]/3)
WEIGHT = None  # None: S = P_theta + score (the paper's sum); w in [0, 1]: S = (1 - w) P_theta + w score
DEPTH = 5  # how many of the RQA's top 5 candidates the reranker rescores, 1..5
RQA_SHOWN = None  # the RQA system the page is about; None: the strongest one rescored (hybrid)
RERANKERS_SHOWN = None  # the rerankers the page compares; None: every one present

# %% tags=["hide-input"]
import numpy as np
import pandas as pd
from IPython.display import Markdown, display
from myst_nb import glue

from fqa_analysis import data
from fqa_analysis.core.paper import PAPER_GAINS, PAPER_OVERALL_ACCURACY
from fqa_analysis.core.report import (
    breakable,
    comparison_caption,
    comparison_table,
    holm_p_text,
    interval,
    mean_sd_table,
    plus_minus,
    signed_text,
)
from fqa_analysis.core.reranking import (
    ceiling_share,
    join_annotators,
    model_kl,
    prior_comparison,
    recipe_comparison,
    recipe_table,
    rerank_targets,
    reranker_quality,
)
from fqa_analysis.core.results import (
    counted_seconds,
    load_relevance_recipes,
    load_stage,
    relevance_recipes,
    results_dir,
    stage_cost,
    stage_recipe,
)
from fqa_analysis.findings.reranking import (
    PAPER_KEYS,
    freezing_measures,
    learned_line,
    ordered,
    reranking_page,
    seeds_text,
)
from fqa_analysis.models.reranker.variants import VARIANTS, planned_runs

pd.set_option("display.max_columns", 20)
page = reranking_page(results_dir(), SCORE, WEIGHT, DEPTH, RQA_SHOWN, RERANKERS_SHOWN)
# the chapter's names for what the page shows
RESULTS, RQA, stage, candidates, outcomes = page.results, page.rqa, page.stage, page.candidates, page.outcomes
SYSTEMS, RESCORED, RERANKERS = page.systems, page.rescored, page.rerankers
micro, macro, quality, table, items = page.micro, page.macro, page.quality, page.table, page.items
prior, prior_kl, rating_kl = page.prior, page.prior_kl, page.rating_kl
FEEDBACK, WARM = page.feedback, page.warm
PAPER_ROW = {k: PAPER_OVERALL_ACCURACY[v] for k, v in PAPER_KEYS.items()}
PAPER_GAIN = {k: PAPER_GAINS[v] for k, v in PAPER_KEYS.items() if k != "none"}
compute_min, peak_gib = stage_cost(stage)
OVER = f"{page.overall_questions:,} questions"
glue("rerank_appendix_rqa", RQA, display=False)
planned = stage.get("planned", [r for r in planned_runs() if r not in stage["histories"]])
display(
    Markdown(
        f"**Runs present** (feedback protocol `{stage['protocol']}`): {seeds_text(page.seeds_of)}. Tables average the "
        "seeds each reranker has; `vanilla` is one model shared by every seed. "
        + (
            f"Still planned: {', '.join(f'`{r}`' for r in planned)}. "
            if planned
            else "Every planned run is present. "
        )
        + f"The stage cost {compute_min:.0f} minutes of compute on a 2-core CPU in float32 "
        f"({len(stage['histories'])} models, peak memory {peak_gib:.1f} GiB)."
        + (f"\n\n{page.settings_note}" if page.settings_note else "")
    )
)

# %% [markdown]
# ## The rerankers
#
# A cross-encoder over (question, passage text): all-MiniLM-L6-v2 with a 4-way rating head (Bad, Could be Improved, Acceptable, Excellent) on the [CLS] state; P_phi is its softmax. All six transformer layers are trained, max 128 tokens of question + passage, batch 32, AdamW, lr 5e-5 with 10% linear warm-up, float32 on the CPU; the epoch with the lowest KL to held-out ratings is kept.
#
# **The relevance model (`vanilla`).** The paper fine-tunes a pretrained BART-large, and a practitioner would start from a pretrained relevance cross-encoder; MiniLM is a sentence-embedding network, not a relevance model (how much it learns from the feedback alone is what the `*_scratch` rows measure, where present). So the starting point is trained here, on QA data only: every QA-train question of the five domains (Quebec's QA data included; its feedback does not exist), the gold passage rated Excellent and three passages drawn from zero-shot MiniLM's top 10 non-gold rated Bad (one negative source for every reranker, so none depends on the RQA it rescores), one epoch, a listwise loss (softmax over each question's gold and negatives of log P(Excellent)) added to the 4-way cross-entropy. One in ten QA-train questions is held out for checking the fit. It is one model (seed 0), shared by every seed of every variant that continues from it; it is also the paper's VanillaReranker row.
#
# | reranker | starts from | trains on | loss |
# |---|---|---|---|
# | `vanilla` | MiniLM | QA-train pseudo-ratings | 4-way cross-entropy + listwise |
# | `feedback_kl` | the relevance model | feedback | KL to the annotators' rating distribution (the paper's FeedbackReranker) |
# | `feedback_ce_annotator` | the relevance model | feedback | cross-entropy, one example per annotator rating |
# | `feedback_ce_majority` | the relevance model | feedback | cross-entropy on the majority label (ties to the lower rating) |
# | `combined` | the relevance model | feedback + as many replayed pseudo pairs | KL (the paper's CombinedReranker trains on the union in one go) |
# | `*_scratch` | MiniLM, a fresh head | feedback | as the row without `_scratch` |
#
# **Feedback (the feedback protocol `available`: the public files).** The public release lacks feedback_train for Australia, CDC and UK, so the rerankers train on WHO's feedback_train and the four feedback_valid files, with 20% of their questions (grouped by question, stratified by domain, seed 0) held out for choosing the epoch; feedback_test is never trained on. The paper trains on all four feedback_train files and selects on feedback_valid; the `paper` protocol runs when those files exist. Epochs: two for `feedback_kl`, `feedback_ce_majority` and their scratch rows, one for the others (`feedback_ce_annotator`'s epoch holds one example per annotator, two per item).
#
# Training examples per source (to fit; held out for choosing the epoch):

# %% tags=["hide-input"]
pd.DataFrame(stage["training_pairs"], index=["fit", "select (epoch choice)"]).T.rename_axis("source")

# %% [markdown]
# ## Every RQA system and domain
#
# Per feedback domain, with both overall averages (macro: the mean of the four domains) and every reranker present; accuracy@1 in %, mean ± sd over seeds:

# %% tags=["hide-input"]
shown = table[~table["test_set"].str.startswith("Quebec")]
order = [(r, k) for r in SYSTEMS for k in (RERANKERS if r in RESCORED else ["none"])]
mean_sd_table(shown, row_order=order).rename_axis(["RQA", "reranker"]).rename(
    index=breakable, level="reranker"
)

# %% [markdown]
# (rerank-appendix-gains)=
# Each reranker against the RQA alone on every RQA system (the chapter shows the strongest): paired bootstrap over the overall questions (resampled within test sets), seeds averaged per question, Holm over the rerankers of one RQA system. W/T/L counts questions where the reranked outcome, averaged over the reranker's seeds, is better / equal / worse than the RQA alone's. On the micro average:

# %% tags=["hide-input"]
display(
    comparison_table(ordered(micro.table, page), names=["RQA", "reranker"]).rename(
        index=breakable, level="reranker"
    )
)
display(Markdown(comparison_caption(micro, OVER)))

# %% [markdown]
# The same test on the macro average (mean of the four domains):

# %% tags=["hide-input"]
display(
    comparison_table(ordered(macro.table, page), names=["RQA", "reranker"]).rename(
        index=breakable, level="reranker"
    )
)
display(Markdown(comparison_caption(macro, OVER)))

# %% [markdown]
# ## What the rerankers can tell apart
#
# Per reranker, on the top 5 of {glue}`rerank_appendix_rqa` for the overall questions: **AUC**, how well P(Excellent) alone ranks the gold passage above the other candidates (0.5 is chance); **alone**, accuracy@1 of the reranker alone (argmax P(Excellent) among the five); **reranked**, accuracy@1 of the paper's S; and, on feedback_test, **KL**, the mean KL divergence from the annotators' rating distribution to P_phi (nats, lower is better). Mean ± sd over the reranker's seeds (a single seed shows its value). References, printed above the table: the RQA alone, a random pick among the five, and the KL of always predicting the training feedback's average rating.


# %% tags=["hide-input"]
def mean_sd(series, digits, scale=1.0):
    g = series.groupby(level=0, sort=False)
    m, s = scale * g.mean(), scale * g.std()
    return [plus_minus(a, b, digits) for a, b in zip(m, s, strict=True)]  # one seed: the value alone


order = {k: i for i, k in enumerate(RERANKERS[1:])}
# one row per model (reranker, seed), rerankers in declaration order
q = quality.sort_values("reranker", key=lambda r: r.map(order), kind="stable").set_index(["reranker", "seed"])
seed_kl = model_kl(join_annotators(page.predictions, items))
names = list(dict.fromkeys(q.index.get_level_values("reranker")))
separation = pd.DataFrame(
    {
        "starts from": ["relevance model" if VARIANTS[n].start == "relevance" else "MiniLM" for n in names],
        "AUC": mean_sd(q["auc"], 3),
        "alone (%)": mean_sd(q["alone"], 1, 100),
        "reranked (%)": mean_sd(q["reranked"], 2, 100),
        "KL, feedback_test": mean_sd(seed_kl.reindex(q.index), 3),
    },
    index=pd.Index([breakable(n) for n in names], name="reranker"),
)
print(
    f"{RQA} alone {100 * quality['rqa_alone'].iloc[0]:.2f}%; random pick among the top 5 "
    f"{100 * quality['random_in_topk'].iloc[0]:.1f}%; KL of the training feedback's average rating "
    f"{prior_kl:.3f} nats ({len(items):,} feedback_test items)"
)
if (LEARNED := learned_line(page)) is not None:
    display(Markdown(LEARNED))
separation

# %% tags=["hide-input"]
# the constant a rating model must beat: each reranker trained on feedback against the training prior
vs_prior = prior_comparison(page.predictions, prior, items, FEEDBACK, commit=stage["git_commit"])
display(
    Markdown(
        "KL to the annotators on feedback_test, each reranker trained on feedback against the training prior "
        f"({prior_kl:.3f} nats), paired over the {len(items):,} items (per item the reranker's KL averaged "
        "over its seeds; lower is better):"
    )
)
display(
    comparison_table(
        vs_prior.table.rename(index=breakable),
        names=["reranker"],
        scale=1.0,
        digits=3,
        mean_header="KL (nats)",
        delta_header="Δ vs the training prior (nats)",
        mde_header="MDE (nats)",
        wtl=False,
    )
)
display(Markdown(comparison_caption(vs_prior, f"{len(items):,} feedback_test items")))

# %% [markdown]
# ## Targets
#
# What a reranker that works should reach, each measured on {glue}`rerank_appendix_rqa` (seed means) beside its goal: it separates gold from other candidates (AUC), rates closer to the annotators than a constant (KL), answers well alone (argmax P(Excellent); any reranker counts, the best trained on feedback is named beside it) and lifts the RQA (the best reranked system, significant after Holm). A target a run still missing from `results/` would measure is marked "not measured".

# %% tags=["hide-input"]
WARM_FED = [v for v in FEEDBACK if v not in page.scratch]
targets = rerank_targets(quality, micro.table.loc[RQA], rating_kl, prior_kl, WARM_FED)
# target 3 counts any reranker: the best trained on feedback is named beside the best overall
alone_means = quality.groupby("reranker")["alone"].mean()
fed_alone = alone_means[[r for r in alone_means.index if r in FEEDBACK]]
# target 4's best reranked system, and the best whose reranker is trained on feedback
GAINS_HERE = micro.table.loc[RQA]
TOP_GAIN = GAINS_HERE["delta"].astype(float).idxmax()
FED_GAINS = GAINS_HERE[GAINS_HERE.index.isin(FEEDBACK)]
FORMATS = {
    1: lambda v, p: f"{v:.3f}",
    2: lambda v, p: f"{v:.3f} nats",
    3: lambda v, p: f"{100 * v:.1f}% ({alone_means.idxmax()})",
    4: lambda v, p: f"{100 * v:+.2f} ({TOP_GAIN}), Holm p {holm_p_text(GAINS_HERE.loc[TOP_GAIN])}",
}
MET = ["not measured" if m is None else ("yes" if m else "no") for m in targets["met"]]
if MET[2] == "yes" and len(fed_alone) and alone_means.idxmax() not in fed_alone.index:
    MET[2] = f"yes, by {alone_means.idxmax()}"
# target 3 counts any reranker: the best trained on feedback gets its own column when it is not the best
FED_BEST = (
    f"{100 * fed_alone.max():.1f}% ({fed_alone.idxmax()})"
    if len(fed_alone) and alone_means.idxmax() not in fed_alone.index
    else ""
)
pd.DataFrame(
    {
        "measured": [
            "" if np.isnan(r.measured) else FORMATS[i](r.measured, r.p_holm) for i, r in targets.iterrows()
        ],
        **(
            {
                "best trained on feedback": [
                    "",
                    "",
                    FED_BEST,
                    (
                        f"{100 * FED_GAINS['delta'].max():+.2f} ({FED_GAINS['delta'].astype(float).idxmax()}), "
                        f"Holm p {holm_p_text(FED_GAINS.loc[FED_GAINS['delta'].astype(float).idxmax()])}"
                    )
                    if TOP_GAIN not in FEEDBACK and len(FED_GAINS)
                    else "",
                ]
            }
            if FED_BEST
            else {}
        ),
        "met": MET,
    }
).set_axis(
    pd.Index(
        [f"{t}: {g}" for t, g in zip(targets["target"], targets["goal"], strict=True)], name="target: goal"
    )
)

# %% [markdown]
# ## Why the gain is what it is
#
# The paper's sum can change an answer only where the reranker alone (argmax P(Excellent)) and the RQA pick different passages. Per reranker on the overall questions of {glue}`rerank_appendix_rqa` (seed means): how many such questions there are, in how many of them the reranker alone is right and in how many the RQA is, how often the sum follows the reranker there, and the net change (questions the sum gets right that the RQA got wrong, minus the reverse).

# %% tags=["hide-input"]
from fqa_analysis.core.reranking import pick_disagreement

why = (
    pick_disagreement(candidates, RQA, reranker_score=SCORE, weight=WEIGHT)
    .groupby("reranker", sort=False)
    .mean(numeric_only=True)
)
why = why.reindex([k for k in RERANKERS[1:] if k in why.index])
why_view = pd.DataFrame(
    {
        "picks differ": why["disagree"].round(0).astype(int),
        "reranker right there": why["reranker_right"].round(0).astype(int),
        "RQA right there": why["rqa_right"].round(0).astype(int),
        "sum follows the reranker": why["sum_follows_reranker"].round(0).astype(int),
        "net questions won": why["sum_gain"].map(lambda v: signed_text(v, 1)),
        "net change (points)": (100 * why["sum_gain"] / why["questions"]).map(signed_text),
    }
).set_axis(pd.Index([breakable(n) for n in why.index], name="reranker"))  # labels set after: values align
top_why = why["reranker_right"].sub(why["rqa_right"]).idxmax()
print(
    f"{int(why['questions'].iloc[0]):,} questions; where their picks differ the reranker alone is right more "
    f"often than the RQA for {int((why['reranker_right'] > why['rqa_right']).sum())} of {len(why)} rerankers "
    f"(best margin: {top_why}, {why.loc[top_why, 'reranker_right'] - why.loc[top_why, 'rqa_right']:+.0f} questions)"
)
why_view

# %% [markdown]
# ## Each reranker alone on every RQA system
#
# Accuracy@1 of each reranker alone (argmax P(Excellent) among that system's top 5; ties to the better RQA rank) beside the RQA alone (first row), overall micro, mean over seeds, in %, one column per RQA system; the line above the table names the (RQA, reranker) pairs where the reranker alone is the better of the two. A reranker that is right more often than the RQA it rescores has something to add; one that is right less often can add only where the RQA is unsure.

# %% tags=["hide-input"]
every = pd.concat(
    [reranker_quality(candidates, r, reranker_score=SCORE, weight=WEIGHT).assign(rqa=r) for r in RESCORED],
    ignore_index=True,
)
by_rqa = every.groupby(["rqa", "reranker"], sort=False)[["alone", "reranked", "rqa_alone"]].mean()
# rerankers as rows, RQA systems as columns: the table grows down, not across, with the variants present
alone_view = (100 * by_rqa["alone"]).unstack("rqa").reindex(index=RERANKERS[1:], columns=RESCORED).round(1)
rqa_row = (100 * by_rqa["rqa_alone"].groupby("rqa").first()).reindex(RESCORED).round(1)
alone_view = pd.concat([rqa_row.to_frame("RQA alone").T, alone_view])
above = by_rqa[by_rqa["alone"] > by_rqa["rqa_alone"]].index.tolist()
print(
    f"reranker alone above the RQA alone in {len(above)} of {len(by_rqa)} (RQA, reranker) pairs: "
    + (", ".join(f"{r} + {k}" for r, k in above) or "none")
)
alone_view.rename_axis(index="reranker alone", columns="RQA").rename(index=breakable)

# %% [markdown]
# The AUC of P(Excellent) on every rescored RQA system's top 5 (mean over the reranker's seeds, as in the table above):

# %% tags=["hide-input"]
from fqa_analysis.core.reranking import score_separation

auc_by_rqa = score_separation(candidates).pivot(index="rqa", columns="reranker", values="auc_p_excellent")
auc_by_rqa.T.reindex(index=RERANKERS[1:], columns=RESCORED).round(3).rename_axis(
    index="reranker", columns="RQA"
).rename(index=breakable)

# %% [markdown]
# ## Beside the paper
#
# The paper (BERT poly-encoder RQA, BART-large rerankers, overall accuracy, averaging not stated): RQA alone 64.75, + FeedbackReranker 66.59 (+1.84), + VanillaReranker 65.98 (+1.23), + CombinedReranker 67.97 (+3.22). Our RQA systems differ from the paper's (MiniLM, not BERT), so the **gain over the RQA alone** is the comparable quantity. How our setting differs, and what varying each difference did, is the chapter's section {ref}`reranking-why`; the factor runs one by one are below.

# %% tags=["hide-input"]
rows = []
macro_alone = macro.table.groupby(level="rqa", sort=False)["baseline_mean"].first()
micro_alone = micro.table.groupby(level="rqa", sort=False)["baseline_mean"].first()
for rqa in RESCORED:
    alone_row = {"mean": micro_alone[rqa], "delta": 0.0, "macro": macro_alone[rqa]}
    reranked = {
        v: {"mean": r["mean"], "delta": r["delta"], "macro": macro.table.loc[(rqa, v), "mean"]}
        for v, r in micro.table.loc[rqa]
        .reindex([k for k in RERANKERS[1:] if k in micro.table.loc[rqa].index])
        .iterrows()
    }
    for reranker, r in {"none": alone_row, **reranked}.items():
        if reranker in PAPER_KEYS:
            rows.append(
                {
                    "RQA": rqa,
                    "reranker": reranker,
                    "ours (micro)": f"{100 * r['mean']:.2f}",
                    "ours (macro)": f"{100 * r['macro']:.2f}",
                    "paper": f"{PAPER_ROW[reranker]:.2f}",
                    "our gain (micro)": "" if reranker == "none" else f"{100 * r['delta']:+.2f}",
                    "paper gain": "" if reranker == "none" else f"{PAPER_GAIN[reranker]:+.2f}",
                }
            )
pd.DataFrame(rows).set_index(["RQA", "reranker"])

# %% [markdown]
# (rerank-appendix-factors)=
# ## The factor runs, one by one
#
# The book's configuration beside each factor run (one setting changed; the relevance model, `feedback_kl` and `combined` trained anew), rescoring the hybrid's top 5, seed 0 on both sides. "combined alone" ranks the top 5 by P(Excellent) only. The contribution is `combined` minus `vanilla`, the gain `combined` minus the RQA alone, each in points with its unadjusted 95% CI and Holm's p over every comparison of the table. The chapter's section {ref}`reranking-why` words them.

# %% tags=["hide-input"]
from fqa_analysis.core.differences import factor_view, why_missing, why_we_differ

WHY_NOTE = why_missing(RESULTS)
if WHY_NOTE:
    display(Markdown(WHY_NOTE))
else:
    why_ = why_we_differ(RESULTS)
    display(factor_view(why_))
    display(Markdown(comparison_caption(why_.factor_comparison, OVER)))

# %% [markdown]
# ## How much weight the reranker gets
#
# The paper's plain sum gives the two probabilities equal weight. As a diagnosis (on the test questions, so not a tuned result; {doc}`../beyond_scoring` tunes w out of sample), accuracy@1 of S = (1 - w) P_theta + w P(Excellent) on {glue}`rerank_appendix_rqa` for a few w, seed mean, in %: w = 0 is the RQA alone, w = 0.5 ranks exactly like the paper's sum, w = 1 is the reranker alone.

# %% tags=["hide-input"]
from fqa_analysis.core.sweeps import candidate_blocks, weight_sweep

chosen = candidates[(candidates["rqa"] == RQA) & candidates["domain"].isin(data.FEEDBACK_DOMAINS)]
curve = weight_sweep(candidate_blocks(chosen), [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0])
per_seed = curve.groupby(["reranker", "seed", "w"])["correct"].mean()
(100 * per_seed.groupby(["reranker", "w"]).mean()).unstack("w").reindex(RERANKERS[1:]).round(2).rename(
    columns=lambda w: f"w = {w:g}"
).rename_axis(index="reranker", columns=None).rename(index=breakable)

# %% [markdown]
# ## How much of the ceiling is won
#
# A top-5 reranker can only answer correctly when the gold passage is among the five (recall@5). Share of the gap between the RQA alone and that ceiling which each reranker closes (seed mean, overall micro); a negative share means the reranker moves correct answers out of first place more often than it brings gold ones in:

# %% tags=["hide-input"]
overall_alone = outcomes[outcomes["domain"].isin(data.FEEDBACK_DOMAINS)]
closed = ceiling_share(micro.table.reset_index(), overall_alone).T
closed.reindex(index=RERANKERS[1:], columns=RESCORED).round(3).rename_axis(
    index="reranker", columns="RQA"
).rename(index=breakable)

# %% [markdown]
# ## The relevance model's recipe
#
# How the relevance model is trained was chosen on **held-out QA-train questions, never a test file**: one in ten QA-train questions (by a hash of the question's text, the same questions for every recipe) is held out of every recipe's training, and each recipe's model (seed 0) ranks, for the held-out questions of the four feedback domains, the gold passage against the four best non-gold passages of zero-shot MiniLM. **AUC** pools every candidate (gold vs the others, P(Excellent)), **alone** is the share of questions whose gold ranks first, **MRR** the gold's mean reciprocal rank. The recipes differ in the loss (`listwise` adds the softmax over a question's gold and its negatives of log P(Excellent) to the pointwise 4-way cross-entropy, which keeps the rating head), the negatives per question, the QA-train domains and the epochs. The simplest recipe (pointwise, one negative, the feedback domains' questions) is the baseline of the comparison; Δ alone is paired over the held-out questions, Holm over the comparisons with it (how many is printed above the table). The stage's recipe differs from the baseline in three levers at once, so the table says whether it is better, not which lever made it so. Training minutes are each model's own record (training and its selection pass, float32 on a 2-core CPU).

# %% tags=["hide-input"]
relevance = load_stage(RESULTS, "relevance")
BASE_RECIPE = "pointwise_1neg_feedback"
recipe_rows = load_relevance_recipes(RESULTS)
recipes = recipe_table(recipe_rows)
recipe_comparison_ = recipe_comparison(recipe_rows, BASE_RECIPE, commit=relevance["git_commit"])
recipe_cmp = recipe_comparison_.table
recipe_info = relevance_recipes(relevance)
default_recipe = stage_recipe(recipe_info, stage["config"])
DOMAIN_SETS = {tuple(data.FEEDBACK_DOMAINS): "feedback (4)", tuple(data.DOMAINS): "all 5"}
recipe_view = pd.DataFrame(
    {
        # the recipe's levers in one cell, so that the table fits the page
        "levers: loss, negatives (source), QA-train domains, epochs": [
            f"{info['relevance_loss']}, {info['pseudo_negatives']} ({info['negative_source']}), "
            f"{DOMAIN_SETS.get(tuple(info['relevance_domains']), ', '.join(info['relevance_domains']))}, "
            f"{info['relevance_epochs']}"
            for info in (recipe_info[r] for r in recipes.index)
        ],
        "AUC": [f"{v:.3f}" for v in recipes["auc"]],
        "alone (%)": [f"{100 * v:.1f}" for v in recipes["alone"]],
        "MRR": [f"{v:.3f}" for v in recipes["mrr"]],
        "Δ alone, points [95% CI, unadjusted]": [
            "baseline"
            if r == BASE_RECIPE
            else f"{100 * recipe_cmp.loc[r, 'delta']:+.1f} "
            + interval(100 * recipe_cmp.loc[r, "delta_ci_low"], 100 * recipe_cmp.loc[r, "delta_ci_high"], 1)
            for r in recipes.index
        ],
        "Holm p": ["" if r == BASE_RECIPE else holm_p_text(recipe_cmp.loc[r]) for r in recipes.index],
        "training (min)": [
            f"{sum(e['wall_s'] for e in recipe_info[r]['history']['epochs']) / 60:.0f}" for r in recipes.index
        ],
    },
    index=pd.Index([breakable(r) for r in recipes.index], name="recipe"),
)
print(
    f"{relevance['eval_questions']} held-out questions, seed 0; the rerank stage's recipe: "
    f"{default_recipe or 'not in the table'}; Holm over {len(recipe_cmp)} comparison(s) with {BASE_RECIPE}; "
    "distinct QA-train question texts trained on (a text that occurs more than once in the QA-train files counts "
    "once here and gives pairs each time, so pairs / questions can exceed 1 + negatives): "
    + ", ".join(f"{r} {recipe_info[r]['fit_questions']:,}" for r in recipes.index)
)
display(recipe_view)
display(Markdown(comparison_caption(recipe_comparison_, f"{relevance['eval_questions']} held-out questions")))

# %% [markdown]
# ## Training curves
#
# Per reranker and seed: the KL to the held-out ratings after every epoch (pseudo-ratings for `vanilla`, the annotators for the others), the epoch kept (the lowest), and the optimiser steps.

# %% tags=["hide-input"]
rows = []
for name, h in stage["histories"].items():
    variant, seed = name.split("/")
    rows.append(
        {
            "reranker": variant,
            "seed": seed.removeprefix("seed"),
            "epoch kept": min(h["epochs"], key=lambda e: e["select_kl"])["epoch"],
            "held-out KL": f"{h['best_select_kl']:.4f}",
            "steps": h["steps"],
            "KL by epoch": ", ".join(f"{e['select_kl']:.3f}" for e in h["epochs"]),
        }
    )
pd.DataFrame(rows).set_index(["reranker", "seed"])

# %% [markdown]
# ## Freezing the relevance model's lower layers
#
# Could the feedback variants train faster without losing anything? With the relevance model's lower k transformer layers frozen, their output for every pair is computed once (`fqa run rerank --warm-frozen-layers k`), and each variant and seed trains and scores only the 6 − k layers above and the head. Measured on seed 0, each frozen run is compared with the same variant's seed 0 with every layer trained, in the same configuration otherwise (a frozen run computed under other settings is left out and named in a note under the table). The frozen form is a speed-up, not another model: it replaces the full form for the other seeds only where it reproduces the full form's numbers, i.e. AUC and feedback_test KL move by less than 0.005 and reranked accuracy@1 on the strongest RQA by less than 0.2 points, **in either direction** (a frozen model that scores better is a different model, and the seeds of one table would then mix two), for every variant measured. The speed-up is each model's training plus scoring seconds with every layer trained over the same with k frozen, as the manifests record them (steps timed at different times and under different machine load, so a rough factor, not a benchmark); the one-time pass over the lower layers is printed beside the table.

# %% tags=["hide-input"]
freezing, lower_pass, frozen_skipped = freezing_measures(page)
if freezing.empty:
    display(
        Markdown(
            "Not measured in this results folder: no `frozen_k*/` folder inside it holds a warm variant "
            "that also ran with every layer trained ([Rerun](../rerun.md) gives the commands)."
            + (
                f" Left out (computed under other settings): {', '.join(frozen_skipped)}."
                if frozen_skipped
                else ""
            )
        )
    )
else:
    adopt = {k: bool(g["within"].all()) for k, g in freezing.groupby(level="frozen_layers")}
    print(
        "; ".join(
            f"k = {k}: within the rule for {int(freezing.loc[k, 'within'].sum())} of "
            f"{len(freezing.loc[k])} variant(s) ({'adopted' if ok else 'not adopted'}); the {k}-layer pass "
            f"over every pair {lower_pass[k]:.1f} min, once"
            for k, ok in adopt.items()
        )
        + "; seed 0"
        + (
            f"; left out (computed under other settings): {', '.join(frozen_skipped)}"
            if frozen_skipped
            else ""
        )
    )
    display(
        pd.DataFrame(
            {
                "AUC (Δ)": [f"{r.auc:.3f} ({r.d_auc:+.3f})" for r in freezing.itertuples()],
                "KL on feedback_test, nats (Δ)": [
                    f"{r.kl:.3f} ({r.d_kl:+.3f})" for r in freezing.itertuples()
                ],
                f"reranked accuracy@1 on {RQA}, % (Δ points)": [
                    f"{100 * r.reranked:.2f} ({100 * r.d_reranked:+.2f})" for r in freezing.itertuples()
                ],
                "speed-up": [f"{r.speedup:.1f}×" for r in freezing.itertuples()],
                "within the rule": ["yes" if r.within else "no" for r in freezing.itertuples()],
            },
            index=freezing.index.set_names(["frozen layers", "reranker"]),
        )
    )

# %% [markdown]
# ## Cost of the stage
#
# From `results/manifest.json` (stage `rerank`, a 2-core CPU, float32): `data` (loading the data and the pseudo pairs' negatives), `lower_layers` (the token-embedding lookup of every distinct pair, computed once), then per reranker and seed its training and the scoring of every pair the chapters read (the four RQA systems' top 5 on the feedback domains, and feedback_test). **Compute** (minutes) and **peak memory** are what each step cost as recorded; a step that shared the two cores with another job records more minutes than it needs alone. The stage total counts each model once, by its own training record (**counted**: a model's epochs, training and selection pass): a step that also trained the relevance model (`relevance_model`, or a warm variant's training step on an empty model cache) is counted without it, and the relevance model is counted once, in `vanilla/seed0/train`.

# %% tags=["hide-input"]
timings = pd.DataFrame(stage["timings"]).T
timings["counted_s"] = pd.Series(counted_seconds(stage))
cost_view = pd.DataFrame(
    {
        "compute (min)": (timings["compute_s"].astype(float) / 60).round(1),
        "counted (min)": (timings["counted_s"].astype(float) / 60).round(1),
        "peak memory (GiB)": (timings["compute_peak_rss_mb"].astype(float) / 1024).round(2),
    }
).rename_axis("step")
print(
    f"whole stage: {compute_min:.1f} min of compute, peak {peak_gib:.1f} GiB; {stage['scored_pairs']:,} "
    "distinct pairs scored per reranker"
)
cost_view

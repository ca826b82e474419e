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
# # Ablation: KL or cross-entropy

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from fqa_analysis import data
from fqa_analysis.core.paper import loss_check
from fqa_analysis.core.plots import mark_group_levels, plot_grouped_bars, plot_reliability
from fqa_analysis.core.report import breakable, comparison_table, plus_minus
from fqa_analysis.core.results import results_dir
from fqa_analysis.findings.ablation_loss import answer_sentence, findings_lines, loss_page, missing_losses

RESULTS = results_dir()
# the ablation compares KL with at least one cross-entropy loss; until one is in results/ it says so
READY = not (ABSENT := missing_losses(RESULTS))
if READY:
    page = loss_page(RESULTS)
    stage, items, joined, quality, tests = page.stage, page.items, page.joined, page.quality, page.tests
    seed_tests, qa, VARIANTS = page.seed_tests, page.qa, page.variants
    display(Markdown(f"**{answer_sentence(page)}**"))
else:
    display(
        Markdown(
            "*Not computed: the loss ablation compares `feedback_kl` with the cross-entropy losses; "
            + ", ".join(f"`{v}`" for v in ABSENT)
            + f" not in this results folder (`fqa run rerank --variants {','.join(ABSENT)}` adds them).*"
        )
    )

# %% [markdown]
# The paper trains its FeedbackReranker to match the **distribution** of the annotators' ratings (KL divergence). Two simpler losses are trained with the same data, starting point (the relevance model of {doc}`reranking`) and seeds:
#
# - `feedback_kl`: KL(annotators || P_phi), the target is the annotators' rating distribution;
# - `feedback_ce_annotator`: cross-entropy with one example per annotator rating. Its expected gradient equals KL's, so it differs in batch composition, noise and epochs (one, against KL's two); **the informative contrast is KL against the majority label**;
# - `feedback_ce_majority`: cross-entropy on the majority label (ties to the **lower** rating), which discards disagreement.
#
# Rating quality is measured on **feedback_test** (three annotators per item, never trained on): accuracy of the argmax against the majority label, macro-F1, mean KL from the annotator distribution to P_phi (nats), and the calibration error of P(Excellent) against the share of annotators who said Excellent (10 bins). The other rerankers of {doc}`reranking` are shown beside for reference.

# %% [markdown]
# ## Findings
#
# Computed from `results/` when the book is built:

# %% tags=["hide-input"]
if READY:
    t, seeded = page.indexed
    if "feedback_ce_majority" in page.losses:
        rows = [x.loc[("kl", "all", "feedback_ce_majority")] for x in (t, seeded)]
        display(Markdown(loss_check(*rows).markdown()))
    print(
        f"{items.shape[0]} feedback_test items, {int(items['unanimous'].sum())} unanimous; "
        f"{page.predictions.groupby(['reranker', 'seed']).ngroups} reranker runs"
    )
    display(Markdown("\n".join(f"- {x}" for x in findings_lines(page))))

# %% [markdown]
# ## Rating quality per loss
#
# Mean ± sd over each loss's seeds (the value alone where a loss has one seed; the findings list the seeds present), on all items and split by agreement: **unanimous** (all three annotators gave the same rating) and **disagree** (at least two different ratings). Majority ties go to the lower rating.

# %% tags=["hide-input"]
if READY:
    metrics = ["accuracy", "macro_f1", "kl", "ece_excellent"]
    HEADERS = {
        "accuracy": "accuracy",
        "macro_f1": "macro-F1",
        "kl": "KL (nats)",
        "ece_excellent": "ECE P(Exc)",
    }
    summary = quality.groupby(["reranker", "subset"], sort=False)[metrics].agg(["mean", "std"])
    cells = pd.DataFrame(
        {
            HEADERS[m]: [
                plus_minus(a, b, 3) for a, b in zip(summary[(m, "mean")], summary[(m, "std")], strict=True)
            ]
            for m in metrics
        },
        index=summary.index,
    )
    shown = cells.join(quality.groupby(["reranker", "subset"], sort=False)["n"].first().rename("items"))
    display(shown.rename(index=breakable, level="reranker"))  # long names wrap, so the table fits


# %% [markdown]
# Two constant predictors put these numbers in context: always the most frequent majority label of the training feedback, and always the training feedback's average rating distribution (what a model that learned nothing about the pair would predict). Both use the training items of the rerankers only.

# %% tags=["hide-input"]
from fqa_analysis.core.ratings import LABELS, majority_label, rating_prior
from fqa_analysis.core.reranking import constant_quality_by_subset, constant_rating_quality
from fqa_analysis.models.reranker.pairs import feedback_item_sets

if READY:
    data_dir = data.resolve_data_dir(None)
    fit_items, _ = feedback_item_sets(
        stage["protocol"],
        data.available_feedback(data_dir, "train"),
        data.available_feedback(data_dir, "valid"),
    )
    prior = rating_prior([it.ratings for it in fit_items])
    top = pd.Series([majority_label(it.ratings) for it in fit_items]).value_counts().idxmax()
    rows_dist = {f"always {top}": np.eye(4)[LABELS.index(top)] * (1 - 4e-6) + 1e-6, "training prior": prior}
    rows = {name: constant_rating_quality(row, items) for name, row in rows_dist.items()}
    print("training prior: " + ", ".join(f"{r} {v:.3f}" for r, v in zip(LABELS, prior, strict=True)))
    display(pd.DataFrame(rows).T.round(3).rename(columns=HEADERS).rename_axis("constant predictor"))


# %% mystnb={"figure": {"caption": "Rating quality on feedback_test per training loss, on all items and by annotator agreement; bars are seed means, error bars the sd over seeds; the dashed line is the training prior predicted for every item, the dotted red line (bottom) always predicting the most frequent training label; `vanilla` (trained on pseudo-ratings, its KL in the table above) is left out so that the others' bars stay readable. Top: KL from the annotators' distribution to P_phi (lower is better); bottom: share of items whose argmax is the majority label."}} tags=["hide-input"]
if READY:
    # `vanilla` learned pseudo-ratings (gold Excellent, negatives Bad), not the annotators': its KL,
    # in the table above, is about three times the others' and would flatten every other bar
    drawn = quality[quality["reranker"] != "vanilla"].sort_values(
        "reranker", key=lambda r: r.map({v: i for i, v in enumerate(VARIANTS)}), kind="stable"
    )  # bars in the stage's order
    if "vanilla" in set(quality["reranker"]):
        print(
            "not drawn: vanilla (KL on all items "
            f"{quality[(quality['reranker'] == 'vanilla') & (quality['subset'] == 'all')]['kl'].mean():.2f} nats)"
        )
    means = drawn.groupby(["reranker", "subset"], sort=False)[metrics].agg(["mean", "std"])
    fig, axes = plt.subplots(2, 1, figsize=(9, 7.5), sharex=True)  # stacked: each panel at page width
    for ax, metric in zip(axes, ["kl", "accuracy"], strict=True):
        frame = pd.DataFrame(
            {
                "subset": means.index.get_level_values("subset"),
                "reranker": means.index.get_level_values("reranker"),
                metric: means[(metric, "mean")].to_numpy(),
                "sd": means[(metric, "std")].to_numpy(),
            }
        )
        plot_grouped_bars(frame, "subset", "reranker", metric, error="sd", ax=ax, legend=False)
        # what the curves are judged against: the training prior predicted for every item
        order = list(dict.fromkeys(frame["subset"]))
        constant = constant_quality_by_subset(prior, items).reindex(order)
        mark_group_levels(ax, constant[metric].tolist(), "training prior (constant)")
    # argmax accuracy has a stronger constant: always the most frequent training label (its KL is unbounded)
    always = constant_quality_by_subset(rows_dist[f"always {top}"], items).reindex(order)
    mark_group_levels(
        axes[1], always["accuracy"].tolist(), f"always {top} (constant)", linestyle=":", color="tab:red"
    )
    axes[0].legend(frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    # the lower panel's legend: its two constants only (the rerankers' colours are in the upper legend)
    handles, labels = axes[1].get_legend_handles_labels()
    keep = [(h, lab) for h, lab in zip(handles, labels, strict=True) if "constant" in lab]
    axes[1].legend(*zip(*keep, strict=True), frameon=False, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes[0].set_ylabel("KL to the annotators, nats\n(lower is better)")
    axes[1].set_ylabel("share: argmax = majority")
    plt.tight_layout()
    plt.show()


# %% [markdown]
# ## Are the differences significant?
#
# Per item, KL and argmax-correctness are averaged over the seeds each loss has; each cross-entropy loss is compared with `feedback_kl` by a paired bootstrap over items (stratified by domain, B = 10,000), on all items and within each agreement subset; Holm over the cross-entropy losses present within a (metric, subset); CIs unadjusted. That bootstrap resamples items, not training seeds: it asks whether the losses differ *as trained with these seeds*. The last column asks whether they differ more than another draw of seeds would make them: the Holm p of the same test with each loss's three seeds resampled as well (a two-level bootstrap: seeds, then items). Δ is each loss minus `feedback_kl`; for KL a negative Δ means the loss is *better* than `feedback_kl`.

# %% tags=["hide-input"]
if READY:
    print(tests.attrs["signature"])
    print(
        "items per subset: "
        + ", ".join(f"{k} {n:,}" for k, n in tests.drop_duplicates("subset").set_index("subset")["n"].items())
    )
    for metric, header, unit in (("kl", "KL (nats)", "nats"), ("correct", "argmax accuracy", "share")):
        print(f"{header}, each cross-entropy loss against feedback_kl:")
        part = tests[tests["metric"] == metric]
        resampled = seed_tests[seed_tests["metric"] == metric].set_index(["subset", "reranker"])
        shown = comparison_table(
            part.set_index(["subset", "reranker"]),
            names=["subset", "loss"],
            scale=1.0,
            digits=3,
            mean_header=header,
            delta_header=f"Δ ({unit})",
            wtl=False,
            seeds_resampled=resampled,
        )
        display(shown)


# %% [markdown]
# The findings at the top of the page summarise these tables; each comparison's Holm family is named above its table.

# %% [markdown]
# ## Calibration of P(Excellent)
#
# Reliability diagrams on feedback_test, all seeds pooled: predicted P(Excellent) against the share of annotators who rated the answer Excellent, in 10 equal-width bins (point size ~ items in the bin). A reranker whose P(Excellent) matches the annotators' share lies on the diagonal.

# %% mystnb={"figure": {"caption": "Reliability of P(Excellent) on feedback_test per reranker variant (all seeds pooled): predicted P(Excellent) against the share of annotators who said Excellent, 10 equal-width bins, point size by items; the title gives the seed-mean ECE."}} tags=["hide-input"]
if READY:
    # three panels a row, so that each stays readable at page width
    n_rows = (len(VARIANTS) + 2) // 3
    fig, axes = plt.subplots(n_rows, 3, figsize=(10, 3.6 * n_rows), squeeze=False)
    for ax in axes.flat[len(VARIANTS) :]:
        ax.set_visible(False)
    for ax, variant in zip(axes.flat, VARIANTS, strict=False):
        part = joined[joined["reranker"] == variant]
        plot_reliability(
            part["p_excellent"].to_numpy(),
            part["a_excellent"].to_numpy(),
            variant,
            ax=ax,
            xlabel="predicted P(Excellent)",
            ylabel="share of annotators: Excellent",
        )
        ece = quality[(quality["reranker"] == variant) & (quality["subset"] == "all")]["ece_excellent"]
        ax.set_title(f"{variant}\nECE {ece.mean():.3f}", fontsize=11)
        ax.tick_params(labelsize=10)
        if ax.get_legend() is not None:  # one curve a panel: the title names it
            ax.get_legend().remove()
    plt.tight_layout()
    plt.show()


# %% [markdown]
# ## Does the loss change the QA accuracy?
#
# The reranked QA system's overall accuracy (S = P_theta + P(Excellent), micro), each cross-entropy loss against `feedback_kl`, on seed-averaged per-question outcomes, per RQA system (Holm over the two losses within an RQA system):

# %% tags=["hide-input"]
if READY:
    print(qa.signature())
    display(comparison_table(qa, names=("RQA", "loss")))

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
# # Retrieval: the tables behind the chapter
#
# What {doc}`../retrieval` rests on, to consult: the RQA systems in MTEB's pooled view, what the fitted temperatures do to P_theta, and the cost of the stage with the fine-tuning's epochs. Computed from the same results folder as the chapter.

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
import pandas as pd

from fqa_analysis import data
from fqa_analysis.core.calibration import expected_calibration_error
from fqa_analysis.core.metrics import ranking_metrics
from fqa_analysis.core.plots import plot_reliability
from fqa_analysis.core.results import results_dir, stage_cost
from fqa_analysis.findings.retrieval import retrieval_page

page = retrieval_page(results_dir())
stage, temps, rqa_rows, SYSTEMS = page.stage, page.temps, page.rqa_rows, page.systems
feedback_ranks = page.ranks[page.ranks["domain"].isin(data.FEEDBACK_DOMAINS)]

# %% [markdown]
# ## The pooled view (MTEB FeedbackQARetrieval)
#
# MTEB evaluates FeedbackQA differently: one corpus of the four feedback domains' passages pooled (2,364 passages), every test question ranked against all of it, and P@1, nDCG@10 and recall@5 reported. The same systems in that setting, beside the per-domain pools of the paper's protocol (the pooled task is harder: a question can be answered from the wrong agency's FAQ):

# %% tags=["hide-input"]
rows = []
for name, group in feedback_ranks.groupby("rqa", sort=False):
    for view, column in (("pooled corpus", "gold_rank_pooled"), ("domain pools", "gold_rank")):
        rows.append({"rqa": name, "view": view, **ranking_metrics(group[column])})
pooled = pd.DataFrame(rows).set_index(["rqa", "view"]).reindex(SYSTEMS, level=0).rename_axis(["RQA", "view"])
pooled[["p@1", "ndcg@10", "recall@5"]].mul(100).round(2).rename(
    columns={"p@1": "P@1", "ndcg@10": "nDCG@10"}
).join(pooled["n"].astype(int).rename("questions"))

# %% [markdown]
# ## What the temperatures do
#
# `P_theta` is the softmax of the RQA scores over the whole pool. BM25 scores and cosines are not log-probabilities, so one temperature T per system is fitted on the QA valid sets by minimising the negative log-likelihood of the gold passage. T does not change any RQA ranking; it decides how much `P_theta` weighs against the reranker's P(Excellent) in S = P_theta + P(Excellent). At T = 1 a cosine softmax over hundreds of passages is almost uniform (top-1 probability near 1/pool size), so the sum would be decided by the reranker alone; the fitted T gives P_theta a calibrated scale.

# %% tags=["hide-input"]
shown = temps.set_index("rqa").reindex(SYSTEMS)
print(f"QA valid questions per system: {int(shown['valid_questions'].iloc[0]):,}")
pd.DataFrame(
    {
        ("T", ""): shown["temperature"].round(4),
        ("NLL", "T = 1"): shown["valid_nll_t1"].round(3),
        ("NLL", "fitted"): shown["valid_nll_fitted"].round(3),
        ("top-1 P", "T = 1"): shown["valid_top1_p_t1"].round(3),
        ("top-1 P", "fitted"): shown["valid_top1_p_fitted"].round(3),
        ("ECE", "T = 1"): shown["valid_ece_t1"].round(3),
        ("ECE", "fitted"): shown["valid_ece_fitted"].round(3),
        ("acc@1", ""): shown["valid_acc1"].round(3),
    }
).rename_axis("RQA")

# %% tags=["hide-input"]
hybrid = stage["systems"].get("hybrid", {}).get("fit", {})
if hybrid:
    print(
        f"hybrid: w = {hybrid['weight']} on BM25, part temperatures: minilm_ft "
        f"{hybrid['temperatures'][0]:.4f}, bm25 {hybrid['temperatures'][1]:.4f}; valid acc@1 at w = 0 (minilm_ft alone) "
        f"{hybrid['valid_acc1_by_weight']['0.0']:.4f}, at the chosen w "
        f"{hybrid['valid_acc1_by_weight'][str(hybrid['weight'])]:.4f}"
    )

# %% [markdown]
# Reliability of the top-1 `P_theta` on the **test** questions at the fitted temperature (points sized by the number of questions in the bin; the diagonal is perfect calibration):

# %% mystnb={"figure": {"caption": "Reliability of the top-1 P_theta on the feedback domains' test questions at the fitted temperature, per RQA system; points sized by questions per bin, the diagonal is perfect calibration."}} tags=["hide-input"]
# two panels a row, so that ticks and titles read at page width
n_rows = (len(SYSTEMS) + 1) // 2
fig, axes = plt.subplots(n_rows, 2, figsize=(9, 4.2 * n_rows), squeeze=False)
for ax in axes.flat[len(SYSTEMS) :]:
    ax.set_visible(False)
top1 = rqa_rows[(rqa_rows["rqa_rank"] == 1) & rqa_rows["domain"].isin(data.FEEDBACK_DOMAINS)]
for ax, name in zip(axes.flat, SYSTEMS, strict=False):
    sub = top1[top1["rqa"] == name]
    plot_reliability(sub["p_rqa"].to_numpy(), sub["is_gold"].to_numpy(), name, ax=ax)
    ece = expected_calibration_error(sub["p_rqa"].to_numpy(), sub["is_gold"].to_numpy())
    ax.set_title(f"{name}: test ECE {ece:.3f}")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## Cost of the stage
#
# Per step of `fqa run rqa` on a 2-core CPU, from `results/manifest.json`: *compute (s)* is what computing the step cost (a step read from the cache keeps the compute it cost when it was computed), *wall (s)* the time the step took in the run that wrote these results, *peak memory (MB)* that run's peak.

# %% tags=["hide-input"]
timings = (
    pd.DataFrame(stage["timings"])
    .T[["compute_s", "wall_s", "from_cache", "peak_rss_mb"]]
    .assign(from_cache=lambda t: t["from_cache"].map({True: "yes", False: "no"}))
    .rename(
        columns={
            "compute_s": "compute (s)",
            "wall_s": "wall (s)",
            "from_cache": "read from cache",
            "peak_rss_mb": "peak memory (MB)",
        }
    )
    .rename_axis("step")
)
print(f"whole stage: {stage_cost(stage)[0]:.1f} min of compute")
timings

# %% [markdown]
# Fine-tuning MiniLM (`minilm_ft`), per epoch: the training loss, the accuracy@1 on the QA-valid questions (the epoch with the best one is kept) and the epoch's wall time.

# %% tags=["hide-input"]
fit = stage["systems"].get("minilm_ft", {}).get("fit", {})
(
    pd.DataFrame(fit.get("epochs", []))
    .set_index("epoch")
    .round(3)
    .rename(
        columns=lambda c: {
            "train_loss": "training loss",
            "valid_acc1": "QA-valid acc@1",
            "wall_s": "wall (s)",
        }.get(c, c)
    )
    if fit
    else "minilm_ft not run"
)

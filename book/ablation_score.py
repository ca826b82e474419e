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
# # Ablation: P(Excellent) or the expected rating

# %% tags=["parameters", "hide-input"] mystnb={"code_prompt_show": "Show the page's settings", "code_prompt_hide": "Hide the page's settings"}
# The page's settings, at the book's values. Change one and re-execute the notebook to get that
# ablation from the stored predictions, no model trained (the "Rerun an ablation" page), e.g.
#   python tools/execute_notebooks.py book/ablation_score.ipynb -p WEIGHT 0.25
WEIGHT = None  # None: S = P_theta + score (the paper's sum); w in [0, 1]: S = (1 - w) P_theta + w score
DEPTH = 5  # how many of the RQA's top 5 candidates the reranker rescores, 1..5

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from fqa_analysis import data
from fqa_analysis.core.compare import significance_counts
from fqa_analysis.core.paper import score_rule_check
from fqa_analysis.core.plots import plot_gains
from fqa_analysis.core.report import breakable, change_text, comparison_table, mean_sd_table
from fqa_analysis.core.reranking import (
    mean_rating_distribution,
    score_ablation,
    score_outcomes,
    score_separation,
    scoring_note,
    seed_table,
)
from fqa_analysis.core.results import load_candidates, load_stage, results_dir
from fqa_analysis.findings.ablation_score import answer_sentence
from fqa_analysis.models.reranker.variants import VARIANTS as DECLARED

RESULTS = results_dir()
SETTINGS_NOTE = scoring_note("p_excellent", WEIGHT, DEPTH)  # None at the book's settings
candidates = load_candidates(RESULTS)
candidates = candidates[candidates["rqa_rank"] <= DEPTH]  # a question whose gold is deeper is wrong
stage = load_stage(RESULTS, "rerank")
SYSTEMS = [s for s in ("bm25", "minilm", "minilm_ft", "hybrid") if s in set(candidates["rqa"])]
VARIANTS = [v for v in DECLARED if v in set(candidates["reranker"])]  # the stage's order
rated = candidates[candidates["reranker"] != "none"]
scored = score_ablation(candidates, commit=stage["git_commit"], weight=WEIGHT)
# RQA systems weakest to strongest, rerankers in the stage's order, as in every table of the page
ablation = scored.table.reset_index()
ablation = ablation.sort_values(
    ["rqa", "reranker"],
    key=lambda c: c.map({n: i for i, n in enumerate(SYSTEMS if c.name == "rqa" else VARIANTS)}),
    kind="stable",
).reset_index(drop=True)
separation = score_separation(candidates)
display(Markdown(f"**{answer_sentence(ablation)}**"))

# %% [markdown]
# The paper adds the reranker's probability of the top rating to the RQA's probability, S = P_theta + P_phi(Excellent). That throws away the rest of the rating distribution: a passage the reranker thinks is surely Acceptable scores the same as one it thinks is surely Bad. The alternative keeps it: S = P_theta + E[y]/3, the expected rating on the 0..3 scale (Bad 0, Could be Improved 1, Acceptable 2, Excellent 3) divided by 3 so that both scores lie in [0, 1]. Both rules are applied to the **same** trained rerankers (every variant, every seed, every RQA system); only the scoring changes, so the comparison is paired question by question.
#
# "Show the page's settings" above holds the settings of this page; {doc}`rerun` re-executes it with others (in seconds, no model trained).

# %% [markdown]
# ## Findings
#
# Computed from `results/` when the book is built:

# %% tags=["hide-input"]
display(Markdown(score_rule_check(ablation, "hybrid").markdown()))
sig = significance_counts(ablation)
hyb = ablation[ablation["rqa"] == "hybrid"].set_index("reranker")
sep = separation[separation["rqa"] == "hybrid"].set_index("reranker")
lines = [
    (
        "**The choice of score does not change accuracy measurably**"
        if sig["better"] + sig["worse"] == 0
        else "**The choice of score matters for some rerankers**"
    )
    + f" (every reranker of the rerank stage, protocol `{stage['protocol']}`, on every RQA system it "
    f"rescored): E[y]/3 is significantly better than P(Excellent) in {sig['better']} of {sig['rows']} "
    f"(RQA, reranker) pairs, significantly worse in {sig['worse']}, and not significantly different in "
    f"{sig['not significant']} (Holm over all {sig['rows']} pairs, p < 0.05); the differences range "
    f"{100 * ablation['delta'].min():+.2f} to {100 * ablation['delta'].max():+.2f} points"
    + (
        f" (MDE of the nulls {100 * nulls['mde'].min():.2f} to {100 * nulls['mde'].max():.2f} points)."
        if len(nulls := ablation[(ablation["p_holm"] >= 0.05) & (ablation["mde"] > 0)])
        else "."
    ),
    "On the hybrid RQA, E[y]/3 - P(Excellent) (same Holm family): "
    + "; ".join(f"`{r}` {change_text(row)}" for r, row in hyb.iterrows())
    + ".",
    f"AUC of the two scores on the hybrid's top {DEPTH} (P(Excellent) / E[y]/3): "
    + "; ".join(
        f"{r} {row['auc_p_excellent']:.3f} / {row['auc_expected_rating']:.3f}" for r, row in sep.iterrows()
    )
    + ".",
]
display(Markdown("\n".join(f"- {x}" for x in lines) + (f"\n\n{SETTINGS_NOTE}" if SETTINGS_NOTE else "")))

# %% [markdown]
# ## Accuracy under both rules
#
# Overall accuracy@1 (four feedback domains, micro), mean ± sd over each reranker's seeds, per RQA system and reranker:

# %% tags=["hide-input"]
tables = []
for rule in ("p_excellent", "expected_rating"):
    t = seed_table(score_outcomes(rated, rule, WEIGHT))
    tables.append(t[t["test_set"] == "overall (micro)"].assign(test_set=rule))
both = pd.concat(tables, ignore_index=True)
rescored = [s for s in SYSTEMS if s in set(rated["rqa"])]
mean_sd_table(both, row_order=[(r, v) for r in rescored for v in VARIANTS], digits=2).rename(
    columns={"p_excellent": "S with P(Excellent)", "expected_rating": "S with E[y]/3"}
).rename_axis(["RQA", "reranker"])

# %% [markdown]
# ## Is the difference real?
#
# For every (RQA, reranker): seed-averaged per-question outcomes under each rule, a paired bootstrap over the 1,992 overall questions (resampled within test sets, B = 10,000) of Δ = accuracy(E[y]/3) - accuracy(P(Excellent)), two-sided p, Holm-corrected over all (RQA, reranker) pairs of the table; the CI is not adjusted. "changed" is the share of (question, seed) answers that differ between the rules; W/T/L counts questions where E[y]/3 is better / equal / worse. MDE (beside a difference not significant after Holm): a true difference at least that large would be found at p < 0.05 / m (m the comparisons in the Holm family: the level Holm asks of the smallest p) in 80% of resamples, in points; "—" where the two rules are right on exactly the same questions (their answers may still differ where both are wrong). W/T/L compares seed-averaged outcomes, so with several seeds W − L need not match Δ. Accuracies and Δ in points.

# %% tags=["hide-input"]
print(scored.signature())
shown = comparison_table(ablation.set_index(["rqa", "reranker"]), names=["RQA", "reranker"])
shown = shown.rename(columns={"accuracy (%)": "E[y]/3 (%)"}).rename(index=breakable, level="reranker")
shown.insert(len(shown.columns) - 1, "changed", [f"{100 * c:.1f}%" for c in ablation["changed_picks"]])
shown  # P(Excellent)'s accuracy is in the table above

# %% mystnb={"figure": {"caption": "Accuracy(E[y]/3) - accuracy(P(Excellent)) in points, per RQA system (panels) and reranker (rows), seed-averaged outcomes: dots are the differences, bars their 95% paired-bootstrap CIs (unadjusted; the Holm p-values are in the table above). Right of the grey line, E[y]/3 is the better score."}} tags=["hide-input"]
for ax in plot_gains(ablation):  # already in reading order
    ax.set_xlabel("E[y]/3 − P(Excellent), points")
plt.tight_layout()
plt.show()

# %% [markdown]
# ## What decides the difference
#
# Two properties of a score decide what adding it to P_theta does. **Separation**: how well the score alone ranks the gold passage above the other top-5 candidates (ROC AUC over all candidates, computed per seed and averaged over the seeds). **Spread**: how much the score varies within one question's five candidates (mean within-question sd, likewise averaged over the seeds). With S = P_theta + score, the term with the larger spread has more say in the order. E[y]/3 averages over the whole distribution, so it also credits answers the reranker thinks Acceptable rather than Excellent.

# %% tags=["hide-input"]
separation.assign(  # RQA systems weakest first, rerankers in the stage's order
    _r=separation["rqa"].map({n: i for i, n in enumerate(SYSTEMS)}),
    _v=separation["reranker"].map({n: i for i, n in enumerate(VARIANTS)}),
).sort_values(["_r", "_v"]).drop(columns=["_r", "_v"]).set_index(["rqa", "reranker"]).rename_axis(
    ["RQA", "reranker"]
).rename(
    columns={
        "auc_p_excellent": "AUC P(Exc)",
        "auc_expected_rating": "AUC E[y]/3",
        "spread_p_rqa": "spread P_theta",
        "spread_p_excellent": "spread P(Exc)",
        "spread_expected_rating": "spread E[y]/3",
    }
).round(3)

# %% tags=["hide-input"]
# what the table says, in one sentence: how far apart the two scores' separation and spread are
auc_gap = (separation["auc_p_excellent"] - separation["auc_expected_rating"]).abs()
spread_ratio = separation["spread_expected_rating"] / separation["spread_p_excellent"]
display(
    Markdown(
        f"Across the {len(separation)} (RQA, reranker) pairs the two scores' AUCs differ by at most "
        f"{auc_gap.max():.3f}, and E[y]/3 varies within a question {spread_ratio.min():.2f} to "
        f"{spread_ratio.max():.2f} times as much as P(Excellent): "
        + (
            "the two scores separate gold from the other candidates alike, so adding either to P_theta "
            "can pick a different answer only where their spreads differ."
            if auc_gap.max() < 0.01
            else "where the two AUCs differ by more than 0.01, the two scores order gold and the other "
            "candidates differently and the rules can disagree."
        )
    )
)

# %% [markdown]
# The two rules can pick differently only where a reranker puts mass on the middle ratings (Could be Improved, Acceptable): E[y]/3 then differs from P(Excellent). The mean predicted distribution of each reranker over the candidates it rescored (four feedback domains, every RQA system and seed):

# %% tags=["hide-input"]
mean_rating_distribution(rated[rated["domain"].isin(data.FEEDBACK_DOMAINS)]).reindex(VARIANTS).round(3)

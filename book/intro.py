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
# # fqa-eval
#
# This book reproduces, tests and extends the evaluation of **FeedbackQA** (Li, Sharma, Lu, Cheung, Reddy,
# *Using Interactive Feedback to Improve the Accuracy and Explainability of Question Answering Systems
# Post-Deployment*, Findings of ACL 2022, arXiv:2204.03025): how far user feedback on a deployed
# retrieval QA system (ratings and explanations of its answers) improves that system when a separately
# trained reranker rescores its candidate answers.

# %% [markdown]
# ## In short
#
# Computed from `results/` when the book is built (the evidence is in the sections below and the chapters).

# %% tags=["hide-input"]
import pandas as pd
from IPython.display import Markdown, display

from fqa_analysis import data
from fqa_analysis.core.audit import audit_outcomes, source_means
from fqa_analysis.core.compare import ITEM_KEYS, N_RESAMPLES, compare, significance_counts, verdict
from fqa_analysis.core.differences import why_answer, why_missing, why_we_differ
from fqa_analysis.core.paper import PAPER_OVERALL_ACCURACY
from fqa_analysis.core.ratings import LABELS, item_ratings, predicted_rating
from fqa_analysis.core.report import NBSP, change_text, holm_p_text, interval, plus_minus, signed_text
from fqa_analysis.core.reranking import (
    best_feedback_gain,
    compare_family,
    compare_to_baseline,
    constant_rating_quality,
    feedback_pairs,
    item_comparison,
    join_annotators,
    per_item_rating_scores,
    prior_comparison,
    score_ablation,
    score_outcomes,
    seed_table,
)
from fqa_analysis.core.results import (
    dirty_commits,
    has_audit,
    load_audit,
    load_candidates,
    load_manifest,
    load_stage,
    load_table,
    relevance_model_seconds,
    results_dir,
    runs_by_kind,
    total_cost,
)
from fqa_analysis.core.text_metrics import readable_opening, variety
from fqa_analysis.models.reranker.pairs import training_prior

RESULTS = results_dir()
MANIFEST_STAGES = load_manifest(RESULTS)["stages"]  # read once: which stages ran, at which commits
RQA = "hybrid"  # the best RQA system here (see the retrieval chapter)
candidates = load_candidates(RESULTS)
outcomes = score_outcomes(candidates[candidates["rqa"] == RQA])
overall = seed_table(outcomes).query("test_set == 'overall (micro)'").set_index("reranker")
gains = compare_to_baseline(outcomes, average="micro").table.loc[RQA]  # one row per reranker
PRESENT = set(candidates.loc[candidates["rqa"] == RQA, "reranker"])
SEEDS = candidates[candidates["reranker"] != "none"].groupby("reranker")["seed"].nunique()


def have(*names):
    """Whether every reranker in ``names`` has rows on the RQA here."""
    return all(n in PRESENT for n in names)


def pending(*names):
    """The line a finding shows while its rerankers are not in results/ yet."""
    missing = [n for n in names if n not in PRESENT]
    return (
        f"*not computed yet: needs `fqa run rerank --variants {','.join(missing)}` (see the manifest's "
        "planned runs)*"
    )


PAPER = {
    "none": ("RQA alone", "rqa_alone"),
    "feedback_kl": ("+ FeedbackReranker", "feedback_reranker"),
    "vanilla": ("+ VanillaReranker", "vanilla_reranker"),
    "combined": ("+ CombinedReranker", "combined_reranker"),
}
# the best reranker trained on feedback here, where it is none of the paper's three
BEST_FED = (best_feedback_gain(gains) or (None, False))[0]
ROWS = dict(PAPER)
if BEST_FED is not None and BEST_FED not in PAPER:
    ROWS[BEST_FED] = (f"+ best on feedback ({BEST_FED})", None)
rows = {}
for reranker, (label, key) in ROWS.items():
    row = {
        "paper (BERT)": "" if key is None else f"{PAPER_OVERALL_ACCURACY[key]:.2f}",
        "paper Δ": ""
        if reranker == "none" or key is None
        else f"{PAPER_OVERALL_ACCURACY[key] - PAPER_OVERALL_ACCURACY['rqa_alone']:+.2f}",
        f"ours ({RQA})": "not run yet",
        "seeds": "",
        "our Δ [95% CI, unadjusted]": "",
        "p (Holm)": "",
        "MDE": "",
    }
    if reranker in overall.index:
        ours = overall.loc[reranker]
        row[f"ours ({RQA})"] = (
            plus_minus(100 * ours["mean"], 100 * ours["sd"], 2)
            if ours["seeds"] > 1
            else f"{100 * ours['mean']:.2f}"
        )
        row["seeds"] = "" if reranker == "none" else str(int(SEEDS[reranker]))
    if reranker in gains.index:
        g = gains.loc[reranker]
        row["our Δ [95% CI, unadjusted]"] = f"{100 * g['delta']:+.2f}{NBSP}" + interval(
            100 * g["delta_ci_low"], 100 * g["delta_ci_high"]
        )
        row["p (Holm)"] = holm_p_text(g)
        row["MDE"] = f"{100 * g['mde']:.2f}" if g["p_holm"] >= 0.05 and g["mde"] > 0 else ""
    rows[label] = row
# the plain answers, from the same comparisons as the chapters
data_dir = data.resolve_data_dir(None)
test_items = item_ratings(data.feedback_frame(data.available_feedback(data_dir, "test")))
predictions = load_table(RESULTS, "rating_predictions.parquet")
pairs = feedback_pairs(PRESENT)
if pairs:
    # the reranking chapter's family: the paper's claim on every rescored RQA, one Holm over it
    rescored_systems = set(candidates.loc[candidates["reranker"] != "none", "rqa"])
    claim = compare_family(score_outcomes(candidates[candidates["rqa"].isin(rescored_systems)]), pairs)
short = []
headline = []  # the answer in plain words, one clause per block that has its runs
FED = [r for r in gains.index if r != "vanilla"]  # every reranker trained on feedback (warm or from MiniLM)
SCRATCH = [r for r in FED if r.endswith("_scratch")]
if (found := best_feedback_gain(gains)) is not None:
    top, helped = found
    short.append(
        f"On the strongest retrieval system here ({RQA}, {100 * overall.loc['none', 'mean']:.1f}% of the test "
        f"questions answered correctly alone), user feedback {'made' if helped else 'did not make'} the QA "
        f"system measurably more accurate: the best reranker trained on feedback (`{top}`) changes accuracy by "
        f"{change_text(gains.loc[top], n_resamples=N_RESAMPLES)} ({'significant' if helped else 'not significant'}; Holm over the "
        f"{len(gains)} rerankers on {RQA}: vanilla, {len(FED) - len(SCRATCH)} trained on feedback from the "
        f"relevance model and {len(SCRATCH)} from MiniLM); the paper reports "
        f"{PAPER_OVERALL_ACCURACY['combined_reranker'] - PAPER_OVERALL_ACCURACY['rqa_alone']:+.2f} with its "
        "larger models."
    )
    headline.append(
        f"user feedback {'made' if helped else 'did not make'} our strongest QA system measurably more accurate"
    )
    # the weaker RQA systems: every reranker against the RQA alone, Holm per system (the reranking chapter's table)
    weaker = sorted(set(candidates["rqa"]) - {RQA})
    if weaker and "vanilla" in gains.index:
        alone = compare_to_baseline(score_outcomes(candidates[candidates["rqa"].isin(weaker)])).table
        fed_rows = alone[alone.index.get_level_values("reranker").isin(FED)]
        van = 100 * alone.xs("vanilla", level="reranker")["delta"]
        short.append(
            f"On the weaker systems ({', '.join(weaker)}) the rerankers trained on feedback change accuracy by "
            f"{signed_text(100 * fed_rows['delta'].min())} to {signed_text(100 * fed_rows['delta'].max())} points "
            f"over the RQA alone ({int((fed_rows['p_holm'] < 0.05).sum())} of {len(fed_rows)} significant, Holm "
            f"per system), and `vanilla`, the relevance model trained on QA data with no feedback and added "
            f"to the RQA's score like the others, by "
            f"{signed_text(van.min())} to {signed_text(van.max())}."
        )
if pairs and "vanilla" in gains.index:
    rows_claim = claim.table.xs(RQA, level="rqa")
    adds = significance_counts(claim.table)
    short.append(
        f"Continuing the relevance model on the feedback (on {RQA}, `vanilla`, the relevance model with no "
        f"feedback, adds {100 * gains.loc['vanilla', 'delta']:+.2f} points to the RQA alone, Holm p "
        f"{holm_p_text(gains.loc['vanilla'])}) "
        "changes its accuracy by "
        + " and ".join(f"{100 * rows_claim.loc[s, 'delta']:+.2f} (`{s}`)" for s, _ in pairs)
        + f" on {RQA}, and is significantly better on {adds['better']} and worse on {adds['worse']} of the "
        f"{adds['rows']} (RQA, reranker) comparisons (Holm over the {adds['rows']}; the table is in "
        "{doc}`reranking`, 'Does feedback add to QA data?')"
        + (
            ": what accuracy the rerankers add comes from the QA data they start from, not from the feedback."
            if adds["better"] == 0
            else "."
        )
    )
    if adds["better"] == 0:
        headline.append(
            "continuing the QA-trained relevance model on the feedback made no RQA system measurably more "
            "accurate than that relevance model"
            + (
                f" (it made {adds['worse']} of {adds['rows']} (RQA, reranker) pairs significantly less accurate)"
                if adds["worse"]
                else ""
            )
            + ": what the rerankers add on the weaker systems comes from the QA data they start from"
        )
if "feedback_kl" in set(predictions["reranker"]):
    prior = training_prior(
        load_stage(RESULTS, "rerank")["protocol"],
        data.available_feedback(data_dir, "train"),
        data.available_feedback(data_dir, "valid"),
    )
    prior_kl = constant_rating_quality(prior, test_items)["kl"]
    # every reranker trained on feedback against the constant training prior, per item, Holm over them
    vs_prior = prior_comparison(predictions, prior, test_items, FED).table
    closer = vs_prior[(vs_prior["p_holm"] < 0.05) & (vs_prior["delta"] < 0)]
    others = vs_prior.drop(index=closer.index)
    kl_feedback = vs_prior.loc["feedback_kl", "mean"]
    short.append(
        f"What the feedback does teach is how people rate answers, and only in part: `feedback_kl`'s predicted "
        f"ratings are {'closer to' if kl_feedback < prior_kl else 'no closer to'} the annotators' than the training "
        f"prior, which always predicts the training feedback's average rating distribution (KL {kl_feedback:.3f} against {prior_kl:.3f} nats, lower is "
        f"better; {change_text(vs_prior.loc['feedback_kl'], 1.0, 3, 'nats', N_RESAMPLES)}); {len(closer)} of the "
        f"{len(vs_prior)} rerankers trained on feedback are significantly closer than the prior (Holm over "
        f"the {len(vs_prior)})"
        + (
            f", the others' KL is {others['mean'].min():.3f} to {others['mean'].max():.3f}."
            if len(others)
            else "."
        )
    )
    headline.append(
        "what the feedback does teach is, in part, how people rate answers"
        if len(closer)
        else "the feedback did not teach the rerankers to rate answers measurably closer to people than a constant"
    )
if why_missing(RESULTS, RQA) is None:
    # why ours differs from the paper's: every difference varied here, measured (core.differences)
    why = why_we_differ(RESULTS, RQA)
    short.append(
        f"Why our numbers differ from the paper's ({{doc}}`reranking`, the section of that name; on {RQA}). "
        + why_answer(why, bold=False)
    )
if headline:
    display(Markdown(f"**In plain words:** {'; '.join(headline)}."))
display(Markdown("\n".join(f"- {line}" for line in short) if short else pending("feedback_kl")))

# %% [markdown]
# ## How to read the numbers
#
# Every number in the book is computed by the `fqa_analysis` package from the data files and from the
# small artifacts under `results/`, by functions that unit tests check on hand-made examples. Comparisons
# carry paired-bootstrap 95% confidence intervals (each for its own comparison, not adjusted for the family: a
# CI beside a Holm p is the unadjusted one) and Holm-corrected p-values (B = 10,000 resamples, so the smallest
# p a family of m comparisons can show is m / 10,001: 0.0008 for eight; a p at that floor, where no resample
# was as extreme as the observed difference, is a bound and is written `≤ p`, and so is a Holm p that Holm's
# running maximum carries from such a p to a larger one; a p printed without `≤` is an estimate even where it
# equals a floor; tables give p to three significant digits, sentences to two); in the chapters' comparison tables
# every difference that is not significant carries its minimal detectable effect (MDE, 80% power): a true
# difference at least that large would be found at p < 0.05 / m (m the comparisons in its Holm family, the level Holm asks of the smallest p) in 80% of resamples with these
# questions and seeds, so that "no effect" can be told from "too little data". The results come from the
# **stages** of `fqa run` (rqa, relevance, rerank, explain, beyond, explain_rate: each trains or scores one
# kind of model and writes its tables and its entry in `results/manifest.json`); the pages name them where
# they show a stage's cost or runs. The test questions of the four feedback domains (accuracy) and the
# feedback_test items (rated answers: rating quality) are different sets of nearly the same size.

# %% [markdown]
# ## At a glance
#
# The evidence is in {doc}`reranking`. Accuracy is overall accuracy@1 on the four feedback
# domains' test questions (micro), our numbers the mean over the seeds each reranker has (± sd where it
# has several; the `seeds` column); Δ is the paired-bootstrap difference with its 95% CI (unadjusted)
# and Holm-corrected p (B = 10,000); MDE, beside a difference that is not significant, is the smallest
# true difference the test would find at p < 0.05 / m (m the rerankers of the Holm family) in 80% of resamples
# (points).

# %% tags=["hide-input"]
print(
    f"RQA: the paper's BERT poly-encoder; ours the {RQA} system (fine-tuned MiniLM + BM25); Holm over the "
    f"{len(gains)} reranker{'s' if len(gains) > 1 else ''} on {RQA}"
)
display(pd.DataFrame(rows).T)

# %% tags=["hide-input"]
# one-line answers: the same functions the chapters call
LOSSES = ["feedback_kl", "feedback_ce_annotator", "feedback_ce_majority"]


def ci(row, scale=100.0, digits=2, unit="points"):
    """Δ unit [95% CI, unadjusted], Holm p of one comparison row, and its MDE where not significant."""
    return change_text(row, scale, digits, unit, N_RESAMPLES)


paper_gain = PAPER_OVERALL_ACCURACY["combined_reranker"] - PAPER_OVERALL_ACCURACY["rqa_alone"]
answers = []
# the question is about feedback: the best reranker trained on it, with the relevance model (QA data
# only, no feedback) as the reference it continues from
if (found := best_feedback_gain(gains)) is not None:
    best, improved = found
    line = (
        "**Does feedback improve the QA system?** "
        + ("Yes" if improved else "Not significantly")
        + f" on the {RQA} RQA here: the best reranker trained on feedback, `{best}`, changes accuracy by "
        f"{ci(gains.loc[best])}; the paper's CombinedReranker adds {paper_gain:+.2f} on its own RQA."
    )
    if "vanilla" in gains.index:
        line += (
            f" The relevance model it continues from (QA data, no feedback) changes it by "
            f"{ci(gains.loc['vanilla'])}."
        )
    if pairs:
        shown = "; ".join(f"`{s}` {ci(claim.table.loc[(RQA, s)])}" for s, _ in pairs)
        line += (
            f" What the feedback adds to QA data, against the relevance model on {RQA} (Holm over the "
            f"{claim.family_size} comparisons of every rescored RQA): {shown}."
        )
else:
    line = "**Does feedback improve the QA system?** " + pending("feedback_kl")
answers.append(line + " See {doc}`reranking`.")
if have("feedback_kl"):
    score = score_ablation(candidates).table.droplevel("rule")
    s = score.loc[(RQA, "feedback_kl")]
    answers.append(
        f"**Score: P(Excellent) or the expected rating?** E[y]/3 - P(Excellent) with `feedback_kl` on "
        f"{RQA}: {ci(s)}; significant in {len(score) - significance_counts(score)['not significant']} of {len(score)} (RQA, reranker) "
        "pairs. See {doc}`ablation_score`."
    )
else:
    answers.append("**Score: P(Excellent) or the expected rating?** " + pending("feedback_kl"))
if have("feedback_kl", "feedback_ce_majority"):
    per_item = per_item_rating_scores(join_annotators(predictions, test_items))
    losses = per_item[per_item["reranker"].isin(LOSSES)]
    loss = item_comparison(losses, "feedback_kl", "kl", "each cross-entropy loss vs feedback_kl").table.loc[
        "feedback_ce_majority"
    ]
    # the loss ablation's second test: each loss's training seeds resampled as well as the items
    loss_seeds = item_comparison(
        per_item_rating_scores(join_annotators(predictions, test_items), by_seed=True).query(
            "reranker in @LOSSES"
        ),
        "feedback_kl",
        "kl",
        "each cross-entropy loss vs feedback_kl",
        resample_seeds=True,
    ).table.loc["feedback_ce_majority"]
    loss_qa = compare_to_baseline(
        outcomes[outcomes["reranker"].isin(LOSSES)], baseline="feedback_kl"
    ).table.loc[(RQA, "feedback_ce_majority")]
    answers.append(
        f"**Loss: KL or cross-entropy on the majority label?** On feedback_test the majority-label model's KL "
        f"to the annotators differs from the KL-trained one's by {ci(loss, 1.0, 3, 'nats')} (with each loss's "
        f"seeds resampled too: Holm p {holm_p_text(loss_seeds)}); on {RQA}'s "
        f"QA accuracy by {ci(loss_qa)}. See {{doc}}`ablation_loss`."
    )
else:
    answers.append(
        "**Loss: KL or cross-entropy on the majority label?** "
        + pending("feedback_kl", "feedback_ce_majority")
    )
expl = load_table(RESULTS, "explanations.parquet").query("rating_source == 'majority'")
humans = load_table(RESULTS, "explanation_humans.parquet")
sim = compare(
    expl,
    system="explainer",
    baseline="retrieval_same_rating",
    value="embedding_sim",
    keys=ITEM_KEYS,
    strata=["domain"],
).table.loc["generator"]
gen = expl[expl["explainer"] == "generator"]
# the blind audit's mean scores (results/explanation_audit; its chapter gives the intervals and tests), where
# this results folder holds one
audit_key, audit_judged = load_audit(RESULTS) if has_audit(RESULTS) else (None, {})
audit = source_means(audit_outcomes(audit_key, audit_judged)) if audit_key is not None else None
audit_items = len(audit_key.drop_duplicates(["domain", "item_id"])) if audit_key is not None else 0
# consistency alone flatters stock sentences: the line says how varied each is, within each rating (over all
# ratings, the generator's mix, with more Bad, would widen the gap)
gen_tops, human_tops = (
    {r: variety(f.loc[f["rating"] == r, "explanation"].tolist()) for r in LABELS} for f in (gen, humans)
)
ratio = {r: gen_tops[r]["opening_share"] / human_tops[r]["opening_share"] for r in LABELS}
r_top = max(LABELS, key=lambda r: gen_tops[r]["opening_share"])
# the annotators' consistency weighted to the majority ratings' mix the generator explains (theirs is at
# their own ratings' mix, with fewer Bad)
mix = gen["rating"].value_counts(normalize=True)
human_by_rating = humans.groupby("rating")["consistent"].mean()
human_at_mix = float(sum(mix[r] * human_by_rating[r] for r in mix.index))
answers.append(
    f"**Explanations.** A rating classifier trained on people's explanations reads the generator's explanations "
    f"as the rating they explain {gen['consistent'].mean():.0%} of the time (the annotators' own explanations of "
    f"the same test items: {human_at_mix:.0%} at the same mix of ratings; a share above people's can come from "
    "stock phrasing rather than better explanations), and the generator repeats itself: "
    f"within each rating, its most common four-word opening starts {min(ratio.values()):.1f} to "
    f"{max(ratio.values()):.1f} times the share of explanations that people's most common opening starts "
    f'({r_top}: "{readable_opening(gen_tops[r_top]["opening"])}" {gen_tops[r_top]["opening_share"]:.0%} against '
    f"{human_tops[r_top]['opening_share']:.0%}). "
    f"The generator's embedding similarity to the annotators' explanations is {sim['mean']:.3f}, the retrieval "
    f"explainer's {sim['baseline_mean']:.3f} ({ci(sim, 1.0, 3, '')}). "
    + (
        f"Read blind by AI judges (not people; {audit_items} items, each majority rating weighing equally), "
        "closer words are not better explanations: "
        "on a 0-to-1 scale the generator's are fluent "
        f"{audit.loc['generator', 'fluent']:.2f} and accurate about the question and answer "
        f"{audit.loc['generator', 'accurate']:.2f}, people's {audit.loc['people', 'fluent']:.2f} and "
        f"{audit.loc['people', 'accurate']:.2f}, the retrieval explainer's "
        f"{audit.loc['retrieval_same_rating', 'fluent']:.2f} and {audit.loc['retrieval_same_rating', 'accurate']:.2f}. "
        if audit is not None
        else ""
    )
    + "See {doc}`explanations`."
)
# explain-then-rate is compared with the rate-only reranker of its own starting point (as its chapter)
EXPLAIN_RATE = MANIFEST_STAGES.get("explain_rate")
RATE_ONLY = (
    "feedback_kl"
    if (EXPLAIN_RATE or {}).get("config", {}).get("start", "minilm") == "relevance"
    else "feedback_kl_scratch"
)
EXPLAIN_RATE_DIRTY = dirty_commits(EXPLAIN_RATE) if EXPLAIN_RATE else []
# the paper's form is named beside ours where its runs are in results/ at a clean commit
PAPER_FORM = MANIFEST_STAGES.get("explain_rate_paper")
PAPER_FORM_SHOWN = PAPER_FORM is not None and not dirty_commits(PAPER_FORM)
if EXPLAIN_RATE and have(RATE_ONLY) and not EXPLAIN_RATE_DIRTY:
    # both forms against rate-only, as in the chapter, so that the Holm family (the two forms) is its own
    forms = pd.concat(
        [
            candidates[candidates["reranker"] == RATE_ONLY],
            load_table(RESULTS, "explain_rate_candidates.parquet"),
            *([load_table(RESULTS, "explain_rate_paper_candidates.parquet")] if PAPER_FORM_SHOWN else []),
        ],
        ignore_index=True,
    )
    # every RQA system the explain-then-rate stage rescored (the hybrid and fine-tuned MiniLM)
    forms = forms[forms["rqa"].isin(set(forms.loc[forms["reranker"] != RATE_ONLY, "rqa"]))]
    forms = forms[forms["domain"].isin(data.FEEDBACK_DOMAINS)]
    explain_vs_rate = compare_to_baseline(score_outcomes(forms), baseline=RATE_ONLY).table.xs(
        "feedback_explain_rate", level="reranker"
    )
    # the chapter's verdicts: both models' training seeds resampled as well as the questions
    explain_vs_rate_seeds = compare_to_baseline(
        score_outcomes(forms), baseline=RATE_ONLY, resample_seeds=True
    ).table.xs("feedback_explain_rate", level="reranker")
    explained = pd.concat(
        [
            predictions.query("reranker == @RATE_ONLY"),
            load_table(RESULTS, "explain_rate_predictions.parquet"),
            *([load_table(RESULTS, "explain_rate_paper_predictions.parquet")] if PAPER_FORM_SHOWN else []),
        ],
        ignore_index=True,
    )
    rating_kl = item_comparison(
        per_item_rating_scores(join_annotators(explained, test_items)),
        RATE_ONLY,
        "kl",
        "each explain-then-rate form vs rate-only",
    ).table
    rating_kl_seeds = item_comparison(
        per_item_rating_scores(join_annotators(explained, test_items), by_seed=True),
        RATE_ONLY,
        "kl",
        "each explain-then-rate form vs rate-only",
        resample_seeds=True,
    ).table
    paper_line = ""
    if PAPER_FORM_SHOWN:
        paper_form = explained[explained["reranker"] == "feedback_explain_rate_paper"]
        paper_bad = (predicted_rating(paper_form) == "Bad").mean()
        paper_line = (
            f" The paper's form of it, trained as the paper trains it, rates {paper_bad:.0%} of the "
            f"feedback_test items Bad (KL {ci(rating_kl.loc['feedback_explain_rate_paper'], 1.0, 3, 'nats')})."
        )
    answers.append(
        f"**Explain, then rate?** Our explain-then-rate reranker against the rate-only one (`{RATE_ONLY}`, "
        "the same starting point): accuracy "
        + "; ".join(f"on {r} {ci(row)}" for r, row in explain_vs_rate.iterrows())
        + "; KL to the annotators of feedback_test: "
        + f"{ci(rating_kl.loc['feedback_explain_rate'], 1.0, 3, 'nats')}; with both models' seeds resampled "
        "too, its accuracy is "
        + " and ".join(
            f"{verdict(row, with_mde=False)} on {r}" for r, row in explain_vs_rate_seeds.iterrows()
        )
        + f" and its KL {verdict(rating_kl_seeds.loc['feedback_explain_rate'], with_mde=False, higher_is_better=False)}"
        + f".{paper_line} See {{doc}}`explain_rate`."
    )
elif EXPLAIN_RATE_DIRTY:
    answers.append(
        "**Explain, then rate?** Not shown: its rows in `results/` were computed from uncommitted code; they "
        "return when `fqa run explain_rate` is rerun at a clean commit. See {doc}`explain_rate`."
    )
else:
    answers.append("**Explain, then rate?** " + pending(RATE_ONLY))
# the cost of the results the book shows: a stage computed from uncommitted code is not shown, nor counted
SHOWN_STAGES = {n: e for n, e in MANIFEST_STAGES.items() if not dirty_commits(e)}
costs, total = total_cost({"stages": SHOWN_STAGES})
# the relevance model is one model, counted once: in the rerank stage, as its `vanilla`
RELEVANCE_MIN = relevance_model_seconds(SHOWN_STAGES.get("rerank", {})) / 60
STAGE_NAMES = {
    "rqa": "retrieval systems",
    "relevance": "relevance-model recipes",
    "rerank": "rerankers",
    "explain": "explanations",
    "beyond": "beyond the paper",
    "explain_rate": "explain-then-rate (ours)",
    "explain_rate_paper": "explain-then-rate (paper's form)",
}
answers.append(
    f"**Cost of reproducing** on 2 CPU cores: {total / 60:.1f} hours of compute for the results shown ("
    # in the pipeline's order
    + ", ".join(
        f"{STAGE_NAMES.get(n, n)} {costs[n][0]:.0f} min"
        + (f" (the relevance model's {RELEVANCE_MIN:.0f} among them)" if n == "rerank" else "")
        for n in sorted(costs, key=[*STAGE_NAMES, *costs].index)
    )
    + f"; each model counted once, by its own training record), at most "
    f"{max(p for _, p in costs.values()):.1f} GiB of memory; the book itself builds from `results/` in minutes."
)
display(Markdown("\n".join(f"- {a}" for a in answers)))

# %% [markdown]
# ## What FeedbackQA is
#
# A retrieval QA system (RQA) answers a question Q by choosing one passage from its domain's FAQ
# collection. The dataset covers five public-health domains: Australia, US (CDC), UK, WHO, and Canada
# (Quebec). After deployment, crowd workers rated the system's answers as *Excellent*, *Acceptable*,
# *Could be Improved* or *Bad*, and explained each rating in a sentence or two.
#
# ## The protocol this book follows
#
# A reranker trained on that feedback rescores the RQA's candidates. For each of the RQA's top k = 5
# candidates A of a question Q:
#
# ```text
# S(A | Q, A_set) = P_theta(A | Q, A_set) + P_phi(y = Excellent | Q, A)
# ```
#
# - `P_theta` is the RQA's softmax over **all** passages of the question's domain file (not renormalised
#   over the top 5); `P_phi` is the reranker's rating distribution for the pair (Q, A).
# - If the gold passage is not among the top 5 the question counts as wrong; otherwise the candidate with
#   the highest S is the answer (ties go to the candidate the RQA ranked higher).
# - Accuracy is the share of test questions answered with the gold passage, per domain and overall. The
#   book reports both **micro** (over questions: big domains weigh more) and **macro** (the unweighted
#   mean of the per-domain accuracies) averages and labels which is which.
# - Passage text is the page title, the section headers and the section content joined by newlines,
#   empty parts skipped.
# - Test questions: each domain's QA `test.json` (Australia 474, US 572, UK 763, WHO 183; Canada has an
#   old and a new test file, 876 and 1467 questions).
#
# The paper's anchors (overall test accuracy, BERT RQA): RQA alone 64.75; with the FeedbackReranker
# 66.59; with the VanillaReranker (QA data only) 65.98; with the CombinedReranker (QA data + feedback)
# 67.97 (set beside ours in the table above).
#
# ## Which protocol produced the numbers
#
# The paper trains its rerankers on the `feedback_train` files of all four feedback domains (the
# **paper** protocol). Three of those files (Australia, US, UK) are not in the data this book is built
# from, so the book uses the **available** protocol: rerankers train on WHO `feedback_train` plus the four
# `feedback_valid` files, with model selection on a held-out 20% of those questions (grouped by question,
# stratified by domain, fixed seed). The test files are never trained on. When the full files are present
# the package switches to the paper protocol by itself. The protocol every stage ran under is recorded
# in `results/manifest.json`, and the chapters that train on feedback name it with their results.
#
# ## How to read the book
#
# - {doc}`data`: the data itself: counts per domain and split, label distributions, annotator
#   agreement, explanation lengths, and real examples.
# - {doc}`retrieval`: the RQA systems alone: accuracy@1 with confidence intervals, recall@k (the
#   ceiling of reranking), the pooled MTEB view, what the temperatures do, and failures.
# - {doc}`reranking`: the paper's main comparison: every RQA system alone and with each reranker
#   (the relevance model `vanilla`, the feedback rerankers continued from it, and the same losses trained
#   from MiniLM), per domain and overall, with paired-bootstrap CIs,
#   Holm-corrected p-values and win/tie/loss, beside the paper's numbers.
# - {doc}`ablation_score`: P(Excellent) or the expected rating as the reranker's score.
# - {doc}`ablation_loss`: KL to the annotator distribution or cross-entropy: rating quality,
#   calibration and QA accuracy, on items where annotators agree and where they disagree.
# - {doc}`explanations`: generated explanations of a rating against the annotators' own (the
#   annotators as reference): consistency with the rating, similarity, variety and grounding, and a blind
#   reading of a small sample by AI judges (fluent, supports its rating, accurate, specific).
# - {doc}`explain_rate`: the paper's explain-then-rate reranker, in the paper's form and ours, against the
#   rate-only one: QA accuracy, rating quality, and whether its explanations agree with its ratings.
# - {doc}`beyond_scoring`: beyond the paper, part I: calibration of P_theta and P(Excellent) and what
#   temperature scaling does to accuracy, the weight of the sum (w from 0 to 1, its stability across
#   domains and seeds, tuned out of sample), and reranking the top k for k = 1..20 against recall@k.
# - {doc}`beyond_feedback`: beyond the paper, part II: learning curves of the feedback reranker (10% to
#   100% of the feedback), leave-one-domain-out transfer against a size-matched control, and where the
#   best system fails, with examples.
# - {doc}`rerun` (appendix): how to rerun an ablation of your own: the steps on a fresh machine, the
#   compute each command takes, and where its results go.

# %% tags=["hide-input"]
# which chapters show less than their stage plans: said here, so that a reader knows before opening them
waiting = []
if EXPLAIN_RATE_DIRTY:
    waiting.append(
        "{doc}`explain_rate`: its results were computed from uncommitted code and are not shown until "
        "`fqa run explain_rate` is rerun at a clean commit"
    )
elif not PAPER_FORM_SHOWN:
    waiting.append(
        "{doc}`explain_rate`: the paper's form of the explain-then-rate reranker is not shown until "
        "`fqa run explain_rate --explain-rate-form paper --seeds 0` runs at a clean commit"
    )
beyond_stage = MANIFEST_STAGES.get("beyond", {})
if dirty_commits(beyond_stage):
    waiting.append(
        "{doc}`beyond_scoring` and {doc}`beyond_feedback`: computed from uncommitted code, not shown until "
        "`fqa run beyond` is rerun at a clean commit"
    )
elif beyond_stage.get("planned"):
    # per kind, in the words the chapters' sections use, so the counts match what a section says
    kind_names = {
        "selection": "rating temperatures",
        "deep": "reranking depth",
        "fraction": "learning curve",
        "leave_out": "domain transfer",
        "size_control": "transfer size control",
    }
    counts = ", ".join(
        f"{kind_names.get(kind, kind)} {n} of {total}"
        for kind, (n, total) in runs_by_kind(beyond_stage).items()
    )
    waiting.append(
        f"{{doc}}`beyond_scoring` and {{doc}}`beyond_feedback`: some runs of `fqa run beyond` are still planned "
        f"(runs present per section: {counts}); each section says which it still awaits"
    )
display(
    Markdown(
        "**Not complete yet:** " + "; ".join(waiting) + "."
        if waiting
        else "Every chapter shows all the runs its stage plans."
    )
)

# %% [markdown]
# Above each comparison table a one-line *signature* states every convention behind it (the test, the
# bootstrap resamples B and their seed, the strata, micro or macro, how training seeds enter, the Holm
# family's size and members, the package version) and `results:` the git commit(s) of the code that
# computed the results it reads (from `results/manifest.json`; `+dirty` would mark uncommitted code), so
# that a number can be recomputed exactly with `git checkout` of that commit.
#
# ## Deviations from the paper, in one place
#
# | what | paper | here | why |
# |---|---|---|---|
# | reranker training feedback | all four `feedback_train` files | WHO `feedback_train` + four `feedback_valid` (the **available** protocol) | three files absent from the data used here |
# | RQA model | BERT-base (or BART) poly-encoder, fine-tuned on GPU | all-MiniLM-L6-v2 bi-encoder (22.7M parameters) fine-tuned on 2 CPU cores; plus BM25 and zero-shot MiniLM | no model hub at run time; 2 CPU cores |
# | reranker model | BART-large with a rating head, fully fine-tuned | all-MiniLM-L6-v2 cross-encoder (22.7M parameters) with a 4-way head, all six transformer layers trained, max 128 tokens of question + passage, float32 on the CPU; 3 seeds per feedback variant, seed 0 only for the two cross-entropy `*_scratch` variants (the chapters say which seeds each table averages) | no model hub at run time; 2 CPU cores |
# | where the rerankers start | BART-large's pretrained weights | a relevance model trained here (the `vanilla` row): QA-train questions of all five domains, gold = Excellent, three negatives drawn from **zero-shot MiniLM**'s top 10 non-gold = Bad, listwise loss, one epoch, seed 0, shared by every seed; every feedback reranker continues from it; the same feedback losses trained from MiniLM are the `*_scratch` rows | no pretrained relevance model offline, and MiniLM is a sentence-embedding network, not a relevance model; one negative source for every RQA, so the reranker depends on no RQA it rescores |
# | combined reranker | trained on QA pseudo-ratings and feedback together | the relevance model continued on the feedback plus as many replayed pseudo pairs | one training on both (the pseudo pairs are replayed, not relearned from the start) |
# | what the rerankers rescore | the RQA's top 5 on the test sets | the same for all four RQA systems on the four feedback domains; Quebec's test sets (no feedback, outside the overall) are shown for the RQA alone | scoring is most of a feedback reranker's cost on 2 cores; a pair two systems share is scored once |
# | learning curves, transfer (not in the paper) | - | fractions of the `available` training feedback (1,545 rated pairs); a domain left out of training and model selection, against a control with as many pairs removed at random; one seed per run (seed 0); fraction 1 is the rerank stage's `feedback_kl` | what this data allows; one seed per run, since the settings are compared by a paired test over questions |
# | reranker epoch selection | feedback_valid | lowest KL to the annotators of a held-out 20% of the training questions (protocol `available`) | feedback_valid is training data in `available` |
# | explanation generator | a pretrained sequence-to-sequence model (BART-large) | an encoder-decoder warm-started from two all-MiniLM-L6-v2 copies (cross-attention and output layer untrained at start), six epochs; the rating is the decoder's forced first tokens; greedy plus four nucleus-sampled candidates, one kept by a chooser (a TF-IDF classifier of human explanations and the similarity to the pair, with penalties against over-used openings and against words no training text holds), for every row or only where greedy does not read as its rating, as a held-out rule adopts (Explanations chapter) | no pretrained English sequence-to-sequence model is available to this project |
# | judging explanations | a user study (people) | automatic proxies (similarity and ROUGE-L to the annotators, consistency by a classifier of human explanations, variety, grounding) and a blind reading of 200 explanations of 40 items by two AI-model judges with a fixed rubric (Explanations chapter) | this project cannot run a user study; the AI judges are not people and share one model's reading |
# | explain-then-rate reranker | BART-large: writes an explanation of the pair, then predicts the rating from it; loss = KL of the rating + explanation cross-entropy (weight 1) | MiniLM2MiniLM (two all-MiniLM-L6-v2 copies; the encoder's layers start from the relevance model, the cross-attention untrained) with a rating head on the decoder state after the explanation; the same loss and weight; two epochs; explanations of at most 24 tokens; 3 seeds (the paper's form: seed 0, greedy); rescores the hybrid and fine-tuned MiniLM only. In our form (the one compared) the head is trained on the state after the model's own explanation, not the annotators', also sees the encoder's mean state, and one lever against repeated explanations is chosen on seed 0's held-out pairs: an unlikelihood term against repeated openings, or writing its own explanation as a seeded nucleus draw in training and at inference; the paper's form is reported beside it | no pretrained English sequence-to-sequence model is available to this project; the paper's form, measured, writes one explanation and rates every feedback_test item Bad (consistent with exposure bias: trained on the annotators' words, it reads its own at inference), and our decoder's cross-attention starts untrained, so the head is given the pair directly; two RQA systems only, since writing an explanation for every candidate is this model's main cost |
# | P_theta scale | the model's own softmax | softmax of scores / T, one T per system fitted on the QA valid sets by NLL | BM25 and cosine scores are not log-probabilities |

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
from fqa_analysis.findings.reranking import answer_sentence
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
    # the strongest system's answer is the sentence under the title (answer_sentence, below)
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
        "{doc}`reranking`, 'Does feedback add to QA data?')."
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
# the book's answer, in the reranking chapter's words (findings.reranking)
# what the feedback itself adds: combined against vanilla, the paper's +1.99 (findings.reranking)
if pairs and (RQA, "combined") in claim.table.index:
    display(Markdown(f"**{answer_sentence(claim.table.loc[(RQA, 'combined')], RQA)}**"))

# %% [markdown]
# This book reproduces, tests and extends the evaluation of **FeedbackQA** (Li et al., Findings of ACL 2022,
# arXiv:2204.03025): how far user feedback on a deployed
# retrieval QA system (RQA; ratings and explanations of its answers) improves that system when a separately
# trained reranker rescores its candidate answers. How the numbers are computed and tested, the protocol,
# and every deviation from the paper are in {doc}`appendix/protocol`.
#
# ## In short
#
# Computed from `results/` when the book is built (the evidence is in the chapters).

# %% tags=["hide-input"]
if headline:
    display(Markdown(f"**In plain words:** {'; '.join(headline)}."))
display(Markdown("\n".join(f"- {line}" for line in short) if short else pending("feedback_kl")))

# %% [markdown]
# ## At a glance
#
# The evidence is in {doc}`reranking`. Overall accuracy@1 (micro) on the four feedback domains' test
# questions, seed means (± sd); Δ with its 95% CI (unadjusted), Holm p and, beside a null, the MDE in
# points ({doc}`appendix/protocol` says how to read them).

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

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
# # Explanations
#
# FeedbackQA's annotators explained every rating in a sentence or two ("Gives requirements and links in response."). A deployed system shows a rating and its explanation side by side, so an explanation must say what its rating says, about the question and answer at hand. This chapter measures four explainers trainable on two CPU cores against the annotators, with automatic measures on every feedback_test item and, on a small sample, a blind reading by two AI judges.

# %% tags=["hide-input"]
import textwrap

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from fqa_analysis import data
from fqa_analysis.core.audit import (
    DIMENSIONS,
    GREEDY,
    RUBRIC,
    agreement,
    audit_outcomes,
    changed_rows,
    label_shares,
)
from fqa_analysis.core.compare import N_RESAMPLES, compare, estimate
from fqa_analysis.core.levers import policy_misses, rule_bars
from fqa_analysis.core.plots import mark_group_levels, plot_grouped_bars, system_color
from fqa_analysis.core.ratings import LABELS
from fqa_analysis.core.report import (
    breakable,
    change_text,
    ci_table,
    comparison_table,
    holm_p_text,
    interval,
    signed_text,
    variety_table,
)
from fqa_analysis.core.results import (
    audit_judges,
    has_audit,
    has_table,
    load_audit,
    load_stage,
    load_table,
    results_dir,
    stage_cost,
)
from fqa_analysis.core.stats import unpaired_difference
from fqa_analysis.core.text_metrics import (
    OPENING_WORDS,
    corpus_bleu,
    distinct_share,
    opening_of,
    readable_opening,
    variety,
)

pd.set_option("display.max_colwidth", 120)
RESULTS = results_dir()
stage = load_stage(RESULTS, "explain")
explanations = load_table(RESULTS, "explanations.parquet")
humans = load_table(RESULTS, "explanation_humans.parquet")
top1 = load_table(RESULTS, "explanations_top1.parquet")
levers = load_table(RESULTS, "explanation_levers.parquet")
METRICS = ["rouge_l", "bleu", "embedding_sim", "consistent"]
NAMES = {"rouge_l": "ROUGE-L", "bleu": "BLEU", "embedding_sim": "embedding sim.", "consistent": "consistency"}
EXPLAINERS = list(dict.fromkeys(explanations["explainer"]))
RATINGS = list(reversed(LABELS))  # Excellent first
keys = ["domain", "item_id"]
majority = explanations[explanations["rating_source"] == "majority"]
human_items = humans.groupby(keys, sort=False)[METRICS].mean()
# the ratings this folder holds items of, among the majority rows and among people's explanations: a rerun on a
# subset (`fqa run explain --subset N`) can lack one, and its per-rating numbers are then left out, and said to be
RATED = [r for r in RATINGS if (majority["rating"] == r).any() and (humans["rating"] == r).any()]
UNRATED = [r for r in RATINGS if r not in RATED]
classifier = stage["rating_classifier_heldout_accuracy_by_rating"]
# the blind audit (results/explanation_audit, core.audit): judges' labels of a seeded sample of explanations;
# a results folder of one's own rerun has none until tools/audit_sheet.py draws one
AUDIT = has_audit(RESULTS)
NO_AUDIT = Markdown(
    "This results folder holds no labelled explanation audit (`explanation_audit/`): `tools/audit_sheet.py` draws its blind "
    "sheet from the results, and the judges' labels go beside it (README, *The pipeline*)."
)
if AUDIT:
    audit_key, judges = load_audit(RESULTS)
    audited = audit_outcomes(audit_key, judges)
    # the labels describe the texts of the results the sheet was drawn from: those the results changed since
    audit_changed = changed_rows(
        audit_key, explanations, load_table(RESULTS, "explain_rate_predictions.parquet")
    )
    audit_items = audit_key.drop_duplicates(["domain", "item_id"])
    AUDIT_SIZE = (
        f"{len(audit_items)} feedback_test items, "
        + " / ".join(f"{audit_items['stratum'].value_counts().get(r, 0)}" for r in RATINGS)
        + " of majority rating "
        + " / ".join(RATINGS)
    )
AUDIT_KEYS = ["stratum", "domain", "item_id"]
# the generator's greedy explanations, the first candidate its chooser weighed (a folder from a run before the
# stage kept them has none), and the blind reading of greedy against the adopted decoding: a sheet of its own
GREEDY_ROWS = has_table(RESULTS, "explanation_greedy.parquet")
DECODING_FOLDER = "explanation_audit_decoding"
DECODING_AUDIT = GREEDY_ROWS and has_audit(RESULTS, DECODING_FOLDER)
NO_GREEDY = Markdown(
    "This results folder holds no `explanation_greedy.parquet` (a run of the explain stage before it kept the "
    "greedy explanations): rerun `fqa run explain` to compare the decodings."
)
if GREEDY_ROWS:
    greedy_rows = load_table(RESULTS, "explanation_greedy.parquet")
if DECODING_AUDIT:
    decoding_key, decoding_judges = load_audit(RESULTS, DECODING_FOLDER)
    decoded = audit_outcomes(decoding_key, decoding_judges)
    decoding_changed = changed_rows(
        decoding_key,
        explanations,
        load_table(RESULTS, "explain_rate_predictions.parquet"),
        greedy=greedy_rows,
    )
# as the chapter's other tables and figures name them (one annotator per item stands for the humans)
SOURCE_NAMES = {
    "template": "template",
    "retrieval_same_rating": "retrieval (same)",
    "generator": "generator",
    GREEDY: "generator (greedy)",
    "explain_then_rate": "explain-then-rate",
    "people": "humans",
}
DIMENSION_NAMES = {
    "fluent": "fluent",
    "supports": "supports its rating",
    "accurate": "accurate",
    "specific": "specific",
}


def show(who, text, width=76):
    """Print one explanation, wrapped to the page."""
    print(textwrap.fill(f"{who}: {text}", width, initial_indent="  ", subsequent_indent="      "))


def say(text, width=76):
    """Print one line of the page's text, wrapped to the page's width."""
    print(textwrap.fill(text, width))


def vs(baseline, metric, part=majority):
    """Every explainer against `baseline` on one metric, paired over items (Holm over the explainers)."""
    return comparison(baseline, metric, part).table


def comparison(baseline, metric, part=majority):
    """:func:`vs` with its signature (the conventions behind the numbers)."""
    return compare(
        part,
        system="explainer",
        baseline=baseline,
        value=metric,
        keys=keys,
        strata=["domain"],
        seeds=None,
        commit=stage["git_commit"],
    )


# %% [markdown]
# ## Findings
#
# Computed from `results/` by the cells of this page (ratings: the annotators' majority):

# %% tags=["hide-input"]
gen = majority[majority["explainer"] == "generator"]
by_rating = majority.groupby(["explainer", "rating"])["consistent"].mean().unstack()
human_rating = humans.groupby("rating")["consistent"].mean()
sim_table = vs("retrieval_same_rating", "embedding_sim")
sim, N_AGAINST = sim_table.loc["generator"], len(sim_table)
rouge = vs("template", "rouge_l").loc["generator"]
# the decoding feedback_test was explained with: the policy the held-out levers adopted, else the configured one
USED = "adopted" if "adopted" in levers.columns and levers["adopted"].any() else "chosen"
chosen = levers[levers[USED]].set_index("lever").iloc[0]
# which bars of the adoption rule the chooser's policies miss: the best any policy reaches against each bar
policies = (
    levers[levers["policy"].fillna("").astype(str) != ""] if "policy" in levers.columns else levers.iloc[:0]
)
reference = levers.set_index("lever")
misses = [
    f"{r}: at most {policies[f'consistent_{r}'].max():.2f} against the classifier's held-out accuracy on "
    f"people's explanations, {classifier[r]:.2f}"
    for r in RATINGS
    if len(policies) and policies[f"consistent_{r}"].max() < classifier[r]
]
if len(policies) and "reference: retrieval_same_rating" in reference.index:
    bar = reference.loc["reference: retrieval_same_rating", "embedding_sim"]
    if policies["embedding_sim"].max() < bar:
        misses.append(
            f"the chooser's policies reach a similarity of at most {policies['embedding_sim'].max():.3f} "
            f"against retrieval's {bar:.3f}"
        )
    # a lever outside the rule's policies that does pass retrieval's similarity: say what it loses instead
    outside = levers[
        (levers["policy"].fillna("").astype(str) == "")
        & ~levers["lever"].str.startswith("reference:")
        & (levers["embedding_sim"] >= bar)
    ]
    for _, row in outside.iterrows():
        lost = [
            f"{r} ({row[f'consistent_{r}']:.2f})" for r in RATINGS if row[f"consistent_{r}"] < classifier[r]
        ]
        misses.append(
            f"'{row['lever']}', not one of the rule's policies, reaches {row['embedding_sim']:.3f} but falls "
            f"below the classifier's held-out accuracy on people's explanations for "
            f"{', '.join(lost) if lost else 'no rating'}"
        )
ADOPTION_MISS = "; ".join(misses) or (
    "no single policy met every bar at once" if len(policies) else "no policy measured"
)
compute_min, _ = stage_cost(stage)
train_min = float(stage["timings"]["generator/train"]["compute_s"]) / 60
train_cached = bool(stage["timings"]["generator/train"]["from_cache"])
BUDGET_MIN = 45  # the explain stage's compute budget on 2 cores (the project's target)
# the plain answer first: does the generator follow its rating, read like people, and vary like them?
gen_open = variety(gen["explanation"].tolist(), words=OPENING_WORDS)
# "as close to ... as" when the paired test finds no difference, else "closer to ... than" / "further from ... than"
sim_word, sim_than = (
    ("as close to", "as")
    if sim["p_holm"] >= 0.05
    else (("closer to", "than") if sim["delta"] > 0 else ("further from", "than"))
)
# the question and passage of every feedback_test item (the results hold ids only), for grounding
test_files = data.all_feedback(data.resolve_data_dir(None), None)["test"]
PAIRS = {(it.domain, it.item_id): (it.question, it.passage.text) for f in test_files for it in f.items}


def variety_row(frame):
    """:func:`variety` of one explainer's rows (their items' question and passage for grounding), and the
    share of its rows without a non-word (the stage's count; NaN for results from before it counted)."""
    pairs = [PAIRS[(d, i)] for d, i in zip(frame["domain"], frame["item_id"], strict=True)]
    row = variety(frame["explanation"].tolist(), pairs, words=4)
    if "nonwords" in frame:
        row["no_nonword"] = float((frame["nonwords"] == 0).mean())
    return row


grounded = {
    name: variety_row(frame)["grounding"]
    for name, frame in (
        ("generator", gen),
        ("retrieval_same_rating", majority[majority["explainer"] == "retrieval_same_rating"]),
        ("humans", humans),
    )
}
# the ratings the judging classifier reads people's held-out explanations of right less than half the time
weak = [r for r in RATED if classifier[r] < 0.5]
strong = [r for r in RATED if r not in weak]
# the annotators' overall consistency at the majority ratings' mix (theirs is at their own ratings' mix)
mix = gen.loc[gen["rating"].isin(RATED), "rating"].value_counts(normalize=True)
human_at_mix = float(sum(mix[r] * human_rating[r] for r in mix.index))
# generator minus people per rating, with a 95% CI: unpaired (the generator explains each item's majority
# rating, people their own ratings), the generator's items and people's explanations resampled apart
gap = {
    r: unpaired_difference(
        gen.loc[gen["rating"] == r, "consistent"],
        humans.loc[humans["rating"] == r, "consistent"],
        N_RESAMPLES,
    )
    for r in RATED
}
gap_above = [r for r in RATED if gap[r][1] > 0]
gap_below = [r for r in RATED if gap[r][2] < 0]
gap_apart = [r for r in RATED if r not in gap_above + gap_below]
# within each rating, the most common opening (the mix of ratings aside): the generator's and people's
# (computed once for every explainer and people: the variety figure and the per-rating openings table read it)
rating_openings = {
    who: {r: variety(f.loc[f["rating"] == r, "explanation"].tolist(), words=OPENING_WORDS) for r in RATED}
    for who, f in [*((e, majority[majority["explainer"] == e]) for e in EXPLAINERS), ("humans", humans)]
}
ratio = {
    r: rating_openings["generator"][r]["opening_share"] / rating_openings["humans"][r]["opening_share"]
    for r in RATED
}
r_top = max(RATED, key=lambda r: rating_openings["generator"][r]["opening_share"])


def paired_text(row, n_resamples, digits):
    """A comparison's row in words: the difference, its 95% CI and its Holm p."""
    return (
        f"{signed_text(row['delta'], digits)} {interval(row['delta_ci_low'], row['delta_ci_high'], digits)}, "
        "Holm p " + holm_p_text(row, digits, n_resamples)
    )


def audit_compare(outcomes, commit, **family):
    """A comparison of an audit's sources, paired over its items (resampled within majority rating)."""
    return compare(
        outcomes,
        system="source",
        within=["dimension"],
        value="score",
        keys=AUDIT_KEYS,
        strata=["stratum"],
        seeds=None,
        commit=commit,
        **family,
    )


def audit_estimates(outcomes):
    """An audit's mean score per (dimension, source), with its 95% CI over the items (within majority rating)."""
    return estimate(
        outcomes, ["dimension", "source"], value="score", keys=AUDIT_KEYS, strata=["stratum"], seeds=None
    ).set_index(["dimension", "source"])


def means_table(estimates, shown):
    """An audit's estimates under the reader's names (long, as the figure reads them) and as a CI table."""
    named = estimates.reset_index().rename(columns={"mean": "accuracy"})
    named["source"] = named["source"].map(SOURCE_NAMES)
    named["dimension"] = named["dimension"].map(DIMENSION_NAMES)
    table = ci_table(
        named,
        rows="source",
        columns="dimension",
        row_order=[SOURCE_NAMES[s] for s in shown],
        column_order=list(DIMENSION_NAMES.values()),
        scale=1.0,
        digits=2,
    )
    return named, table


def vs_greedy_table(cmp, within, system, digits):
    """A comparison of the adopted decoding with greedy as a reader's table, one row per ``within`` value."""
    return comparison_table(
        cmp.table,
        names=[within, system],
        scale=1.0,
        digits=digits,
        mean_header="adopted",
        delta_header="Δ vs greedy",
        n_resamples=cmp.n_resamples,
    ).droplevel(system)  # one pair: its name is the table's


# the audit: each source's mean per dimension with its CI, and each source against people
AUDIT_PLAIN, AUDIT_FINDING = "", ""
if AUDIT:
    AUDIT_SHOWN = [s for s in SOURCE_NAMES if s in set(audited["source"])]
    audit_means = audit_estimates(audited)
    AUDIT_COMMITS = ",".join(
        dict.fromkeys([stage["git_commit"], load_stage(RESULTS, "explain_rate")["git_commit"]])
    )
    audit_vs = audit_compare(
        audited,
        AUDIT_COMMITS,
        baseline="people",
        family="within",
        describe="each source vs people, Holm within each dimension",
    )
    # the generator against the retrieval explainer it beats on similarity: are closer words better explanations?
    audit_gen = audit_compare(
        audited,
        AUDIT_COMMITS,
        pairs=[("generator", "retrieval_same_rating")],
        family="table",
        describe="generator vs retrieval_same_rating, Holm over the dimensions",
    )
    # how far the first two judges agree (one judge alone: nothing to agree on); the template's fixed
    # sentences are easy to agree on, so also without its rows
    pair = list(judges.values())[:2]
    audit_agree = agreement(*pair) if len(judges) >= 2 else None
    if audit_agree is not None:
        others = set(audit_key.loc[audit_key["source"] != "template", "row_id"])
        audit_agree["kappa without template"] = agreement(*(j[j["row_id"].isin(others)] for j in pair))[
            "kappa"
        ]
    # what a mean hides: the share of rows every judge gave the best label, and the share every judge gave 0
    audit_shares = {d: label_shares(audit_key, judges, d) for d in ("fluent", "accurate", "supports")}
    # "supports its rating" on the ratings the consistency classifier reads reliably and on the others
    by_stratum = (
        audited[audited["dimension"] == "supports"]
        .assign(group=lambda f: f["stratum"].map(lambda r: "reliable" if r in strong else "weak"))
        .groupby(["group", "source"])["score"]
        .mean()
    )

    def audit_verdict(source):
        """Where a source's scores differ from people's (Holm p < 0.05), in words."""
        rows = audit_vs.table.xs(source, level="source")
        below = [DIMENSION_NAMES[d] for d, r in rows.iterrows() if r["p_holm"] < 0.05 and r["delta"] < 0]
        above = [DIMENSION_NAMES[d] for d, r in rows.iterrows() if r["p_holm"] < 0.05 and r["delta"] > 0]
        apart = [DIMENSION_NAMES[d] for d, r in rows.iterrows() if r["p_holm"] >= 0.05]

        def listed(names):
            """'a', 'a and b', 'a, b and c'."""
            return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"

        parts = (
            ([f"below on {listed(below)}"] if below else [])
            + ([f"above on {listed(above)}"] if above else [])
            + ([f"not told apart on {listed(apart)}"] if apart else [])
        )
        return f"{SOURCE_NAMES[source]}: " + ", ".join(parts)

    audit_verdicts = {s: audit_verdict(s) for s in AUDIT_SHOWN if s != "people"}
    mean_of = audit_means["mean"]
    vs_retrieval = audit_gen.table.xs("generator", level="source")

    def vs_text(dim):
        """The generator minus the retrieval explainer on one dimension, with its CI and Holm p."""
        return paired_text(vs_retrieval.loc[dim], audit_gen.n_resamples, 2)

    fl, ac = audit_shares["fluent"], audit_shares["accurate"]
    AUDIT_PLAIN = (
        f" Closer words are not better explanations: read blind by {len(judges)} AI judges (not people; "
        f"{len(audit_items)} items, each majority rating weighing equally; the audit section), "
        f"{fl.loc['generator', 'top']:.0%} of the generator's explanations are fully fluent to every judge and "
        f"{fl.loc['generator', 'zero']:.0%} incoherent to every judge (people's: {fl.loc['people', 'top']:.0%} and "
        f"{fl.loc['people', 'zero']:.0%}); {ac.loc['generator', 'top']:.0%} are wholly accurate about the question "
        f"and answer and {ac.loc['generator', 'zero']:.0%} make a claim every judge calls false (people's: "
        f"{ac.loc['people', 'top']:.0%} and {ac.loc['people', 'zero']:.0%}). Against the retrieval explainer it "
        f"beats on similarity, the generator's explanations are judged less fluent ({vs_text('fluent')}) and "
        f"no more accurate ({vs_text('accurate')}; retrieval copies fluent text about another pair)."
    )
    AUDIT_FINDING = (
        f"Read blind by {len(judges)} judges ({AUDIT_SIZE}; instances of an AI language model, not people; the "
        "audit section, whose table gives every mean): each source against people (paired over the items, Holm "
        "over the other sources within each dimension): "
        + "; ".join(audit_verdicts[s] for s in AUDIT_SHOWN if s != "people")
        + ". The template ties people on accuracy because a stock sentence is true whenever its rating is right: "
        "read accurate together with specific. Where the consistency classifier and the judges disagree (it puts "
        "the generator above people on Excellent and Bad, the judges below on supporting its rating), the judges "
        "read all four ratings equally: on the items rated "
        + " or ".join(strong)
        + f" they score the generator's support {by_stratum[('reliable', 'generator')]:.2f} (people "
        f"{by_stratum[('reliable', 'people')]:.2f}), on the others {by_stratum[('weak', 'generator')]:.2f} (people "
        f"{by_stratum[('weak', 'people')]:.2f})."
        + (
            f" The judges gave the same label {audit_agree['same'].min():.0%} to {audit_agree['same'].max():.0%} "
            f"of the time per dimension (unweighted Cohen's kappa {audit_agree['kappa'].min():.2f} to "
            f"{audit_agree['kappa'].max():.2f}; two instances of one model)."
            if audit_agree is not None
            else ""
        )
        + (
            f" {len(audit_changed)} of the explanations read have changed in the results since: their labels "
            "describe texts this page no longer shows."
            if audit_changed
            else ""
        )
    )
# greedy against the adopted decoding: what choosing among candidates changed (feedback_test, majority rows)
DECODING_FINDING = ""
if GREEDY_ROWS:
    greedy_major = greedy_rows[greedy_rows["rating_source"] == "majority"]
    chosen_text = gen.set_index(keys)["explanation"]
    KEPT_GREEDY = float(
        (chosen_text == greedy_major.set_index(keys)["explanation"].reindex(chosen_text.index)).mean()
    )
    decoding_auto = compare(
        pd.concat([gen, greedy_major]).melt(
            id_vars=["explainer", *keys],
            value_vars=["consistent", "embedding_sim", "rouge_l"],
            var_name="metric",
            value_name="value",
        ),
        system="explainer",
        pairs=[("generator", GREEDY)],
        within=["metric"],
        family="table",
        describe="the adopted decoding vs greedy on feedback_test, Holm over the metrics",
        value="value",
        keys=keys,
        strata=["domain"],
        seeds=None,
        commit=stage["git_commit"],
    )
    auto = decoding_auto.table.xs("generator", level="explainer")
    decoding_variety = {"generator": variety_row(gen), GREEDY: variety_row(greedy_major)}
    g_var, a_var = decoding_variety[GREEDY], decoding_variety["generator"]
    DECODING_FINDING = (
        "What choosing among candidates changed (the adopted decoding against the greedy explanation it starts "
        f"from, feedback_test, majority rating; the chooser kept the greedy text for {KEPT_GREEDY:.0%} of the "
        f"items; the section *Greedy or the adopted decoding*): top opening {g_var['opening_share']:.0%} to "
        f"{a_var['opening_share']:.0%}, distinct {g_var['distinct']:.0%} to {a_var['distinct']:.0%}, "
        + (
            f"explanations without a non-word {g_var['no_nonword']:.1%} to {a_var['no_nonword']:.1%}, "
            if g_var["no_nonword"] == g_var["no_nonword"]
            and a_var["no_nonword"] == a_var["no_nonword"]  # not NaN
            else ""
        )
        + f"embedding similarity {auto.loc['embedding_sim', 'baseline_mean']:.3f} to "
        f"{auto.loc['embedding_sim', 'mean']:.3f} ({paired_text(auto.loc['embedding_sim'], decoding_auto.n_resamples, 3)}), "
        f"consistency {auto.loc['consistent', 'baseline_mean']:.3f} to {auto.loc['consistent', 'mean']:.3f} "
        f"({paired_text(auto.loc['consistent'], decoding_auto.n_resamples, 3)}), ROUGE-L "
        f"{auto.loc['rouge_l', 'baseline_mean']:.3f} to {auto.loc['rouge_l', 'mean']:.3f} "
        f"({paired_text(auto.loc['rouge_l'], decoding_auto.n_resamples, 3)})"
        # the metrics choosing lowered (Holm p < 0.05), named: what its variety cost
        + "".join(
            f"; choosing lowered {' and '.join(NAMES[m] for m in cost)}"
            for cost in [[m for m, r in auto.iterrows() if r["p_holm"] < 0.05 and r["delta"] < 0]]
            if cost
        )
    )
    if DECODING_AUDIT:
        DECODING_SHOWN = ["generator", GREEDY]
        decoding_means = audit_estimates(decoded)
        decoding_vs = audit_compare(
            decoded,
            stage["git_commit"],
            pairs=[("generator", GREEDY)],
            family="table",
            describe="the adopted decoding vs greedy, Holm over the dimensions",
        )
        by_dim = decoding_vs.table.xs("generator", level="source")
        decoding_shares = {d: label_shares(decoding_key, decoding_judges, d) for d in ("fluent", "accurate")}
        decoding_agree = agreement(*list(decoding_judges.values())[:2]) if len(decoding_judges) >= 2 else None
        lost = [DIMENSION_NAMES[d] for d, r in by_dim.iterrows() if r["p_holm"] < 0.05 and r["delta"] < 0]
        won = [DIMENSION_NAMES[d] for d, r in by_dim.iterrows() if r["p_holm"] < 0.05 and r["delta"] > 0]
        DECODING_FINDING += (
            f". Read blind by {len(decoding_judges)} AI judges on the audit's {len(decoding_key.drop_duplicates(['domain', 'item_id']))} "
            "items (greedy to adopted): "
            + "; ".join(
                f"{DIMENSION_NAMES[d]} {decoding_means.loc[(d, GREEDY), 'mean']:.2f} to "
                f"{decoding_means.loc[(d, 'generator'), 'mean']:.2f} "
                f"({paired_text(by_dim.loc[d], decoding_vs.n_resamples, 2)})"
                for d in DIMENSIONS
            )
            + ": "
        )
        DECODING_VERDICT = (
            "the adopted decoding is "
            + (
                "judged worse on "
                + " and ".join(lost)
                + (" and better on " + " and ".join(won) if won else "")
                if lost
                else (
                    "judged better on " + " and ".join(won)
                    if won
                    else "not told apart from greedy on any dimension"
                )
            )
            # what a mean hides: the rows every judge calls incoherent, which sampled candidates add
            + "; incoherent to every judge: greedy "
            + f"{decoding_shares['fluent'].loc[GREEDY, 'zero']:.0%}, adopted "
            + f"{decoding_shares['fluent'].loc['generator', 'zero']:.0%}"
            + (
                ""
                if DIMENSION_NAMES["fluent"] not in lost
                else (
                    " (the held-out rule holds the adopted decoding's non-words to greedy's, and "
                    f"{a_var['no_nonword']:.1%} of its explanations have none, yet they read as less fluent: "
                    "the sampled candidates' incoherence lies mostly in how known words are put together, "
                    "which the non-word check does not see; the rule has no bar on judged fluency, since judges read "
                    "feedback_test only, so a deployment that values fluency over variety would keep greedy)"
                    if a_var["no_nonword"] == a_var["no_nonword"]  # not NaN: the results count non-words
                    else " (the held-out rule that adopted it weighs variety, similarity, consistency and "
                    "ROUGE-L, not fluency)"
                )
            )
        )
        DECODING_FINDING += DECODING_VERDICT
    DECODING_FINDING += "."
# words no training text holds (the stage's lexicon): counted by stages from stop 51 on
NONWORD_FINDING = ""
if "nonwords" in gen and "nonwords" in humans:
    clean = {
        "the generator's": gen,
        **({"its greedy ones": greedy_major} if GREEDY_ROWS and "nonwords" in greedy_major else {}),
        "people's": humans,
    }
    clean_share = {name: float((frame["nonwords"] == 0).mean()) for name, frame in clean.items()}
    NONWORD_FINDING = (
        "Words that no training explanation, question or passage holds (a fluency check without a language "
        "model; the variety table): "
        + ", ".join(f"{share:.1%} of {name}" for name, share in clean_share.items())
        + " explanations have none."
    )
lines = [
    (
        f"This results folder holds no {' or '.join(UNRATED)} item explained both by the explainers (majority "
        "rating) and by people, so every per-rating number below covers " + ", ".join(RATED) + " only."
        if UNRATED
        else ""
    ),
    "**In plain words:** for the ratings a classifier of explanation text reads reliably ("
    + ", ".join(strong)
    + ": it reads "
    + " / ".join(f"{classifier[r]:.0%}" for r in strong)
    + " of held-out human explanations right), the generator's explanations are read as their rating "
    + " and ".join(
        f"{by_rating.loc['generator', r]:.2f} of the time for {r} (people {human_rating[r]:.2f})"
        for r in strong
    )
    + (
        f"; for {' and '.join(weak)} the classifier reads even people's explanations right only "
        + " / ".join(f"{classifier[r]:.0%}" for r in weak)
        + " of the time, so the comparison there ("
        + "; ".join(f"{by_rating.loc['generator', r]:.2f} vs {human_rating[r]:.2f}" for r in weak)
        + ") says little"
        if weak
        else ""
    )
    + f". The generator's explanations are {sim_word} people's (embedding similarity {sim['mean']:.3f}) "
    f"{sim_than} a retrieved explanation of a similar pair ({sim['baseline_mean']:.3f}), below people's agreement "
    f"with each other ({humans['embedding_sim'].mean():.3f}), and it repeats itself: within each rating, its "
    f"most common {OPENING_WORDS}-word opening starts {min(ratio.values()):.1f} to {max(ratio.values()):.1f} "
    f"times the share of explanations that people's most common opening starts ({r_top}: "
    f'"{readable_opening(rating_openings["generator"][r_top]["opening"])}" {rating_openings["generator"][r_top]["opening_share"]:.0%} '
    f'against people\'s "{readable_opening(rating_openings["humans"][r_top]["opening"])}" '
    f"{rating_openings['humans'][r_top]['opening_share']:.0%}; the per-rating openings table)." + AUDIT_PLAIN,
    "Consistency with the rating (the share a classifier trained on human explanations reads as that "
    "rating), generator vs annotators: "
    + "; ".join(f"{r} {by_rating.loc['generator', r]:.2f} (humans {human_rating[r]:.2f})" for r in RATED)
    + f"; overall {gen['consistent'].mean():.3f} (humans {humans['consistent'].mean():.3f} at their own "
    f"ratings' mix, {human_at_mix:.3f} weighted to the majority ratings' mix the generator explains). "
    "Generator minus people, with a 95% bootstrap CI (the generator's items and people's explanations "
    "resampled apart): "
    + "; ".join(f"{r} {signed_text(gap[r][0], 3)} {interval(gap[r][1], gap[r][2], 3)}" for r in RATED)
    + ": "
    + "; ".join(
        part
        for part in (
            f"above people for {' and '.join(gap_above)}" if gap_above else "",
            f"below people for {' and '.join(gap_below)}" if gap_below else "",
            f"not told apart for {' and '.join(gap_apart)} (the interval holds 0)" if gap_apart else "",
        )
        if part
    )
    + ".",
    f"Embedding similarity to the annotators: generator {sim['mean']:.3f}, the rating-filtered retrieval "
    f"explainer {sim['baseline_mean']:.3f} (difference {change_text(sim, 1.0, 3, '', N_RESAMPLES)}; paired over items, "
    f"Holm over the {N_AGAINST} other explainers against it; a `≤ p` is a bound: no resample of "
    f"{N_RESAMPLES:,} was as extreme, so the raw p is at its floor 1/{N_RESAMPLES + 1:,}, times the Holm family's "
    f"size); humans {humans['embedding_sim'].mean():.3f}.",
    f"ROUGE-L: generator {rouge['mean']:.3f}, template {rouge['baseline_mean']:.3f} "
    f"(difference {change_text(rouge, 1.0, 3, '', N_RESAMPLES)}; Holm over the {N_AGAINST} other explainers against "
    "the template); "
    f"humans {humans['rouge_l'].mean():.3f}. Sentence BLEU: generator {gen['bleu'].mean():.3f}, template "
    f"{majority.loc[majority['explainer'] == 'template', 'bleu'].mean():.3f}, humans {humans['bleu'].mean():.3f}"
    + (
        ": people's own explanations score below the template's fixed sentences on "
        + " and ".join(
            n
            for n, m in (("ROUGE-L", "rouge_l"), ("BLEU", "bleu"))
            if humans[m].mean() < majority.loc[majority["explainer"] == "template", m].mean()
        )
        + ", so a higher word overlap here does not mean a better explanation."
        if humans["rouge_l"].mean() < majority.loc[majority["explainer"] == "template", "rouge_l"].mean()
        else "."
    ),
    f"Distinct explanations: generator {distinct_share(gen['explanation'].tolist()):.0%} of {len(gen):,} "
    f"(humans {distinct_share(humans['explanation'].tolist()):.0%}).",
    f"Grounding (the share of an explanation's content words found in its question or passage): generator "
    f"{grounded['generator']:.2f}, retrieval_same_rating {grounded['retrieval_same_rating']:.2f}, humans "
    f"{grounded['humans']:.2f}: the generator names "
    + (
        "fewer of the pair's own words than people do"
        if grounded["generator"] < grounded["humans"]
        else "at least as many of the pair's own words as people do"
    )
    + " (the variety table below; the examples show what it names).",
    NONWORD_FINDING,
    (
        f"Decoding, adopted on held-out explanations by the rule below: {chosen.name}"
        if USED == "adopted"
        else "No decoding policy met the adoption rule on held-out explanations ("
        + ADOPTION_MISS
        + f"), so feedback_test is explained with the configured decoding, {chosen.name}"
    )
    + f" (held-out: similarity {chosen['embedding_sim']:.3f}, top opening {chosen['opening_share']:.0%}; greedy "
    f"{reference.loc['greedy', 'embedding_sim']:.3f} / {reference.loc['greedy', 'opening_share']:.0%}; the "
    f"levers table; on feedback_test its top opening is {gen_open['opening_share']:.0%}, where its usual Bad "
    f"opening meets Bad as the majority rating of {(gen['rating'] == 'Bad').mean():.0%} of items).",
    AUDIT_FINDING,
    DECODING_FINDING,
    f"The consistency classifier itself reads held-out human explanations right "
    f"{classifier['overall']:.0%} of the time ("
    + ", ".join(f"{r} {classifier[r]:.0%}" for r in RATINGS)
    + "): an explainer that writes the words the classifier ties to a rating can score above it, so "
    "consistency is read with similarity.",
    f"The stage cost {compute_min:.0f} minutes of compute on this 2-core CPU"
    + (
        f", counting the generator's training ({train_min:.1f} min, done by an earlier run at the same "
        "settings and reused from the cache here)"
        if train_cached
        else ""
    )
    + ", "
    + (
        f"within the project's {BUDGET_MIN}-minute target for this stage."
        if compute_min <= BUDGET_MIN
        else f"over the project's {BUDGET_MIN}-minute target for this stage (the cost section names its "
        "costliest step)."
    ),
]
display(Markdown("\n".join(f"- {x}" for x in lines if x)))

# %% [markdown]
# ## The explainers
#
# All behind `explain(question, passage, rating) -> text` (`fqa_analysis.models.explainer`):
#
# - `template`: one fixed, hand-written sentence per rating (the floor);
# - `retrieval_same_rating`: the explanation of the most similar training (question, passage) pair with the same rating (zero-shot MiniLM embeddings, cosine); `retrieval_any_rating`: the same without the rating filter;
# - `generator`: an encoder-decoder warm-started from two copies of all-MiniLM-L6-v2 (transformers `EncoderDecoderModel`; its cross-attention and its output layer's transform start untrained, since the pretrained models available to this project are sentence encoders, none an English sequence-to-sequence model: a deviation from the paper's BART-large). The encoder reads (question, passage); the **rating is the decoder's forced first tokens** (`excellent:`, `bad:`, ...), cut from the output, so the decoder sees it through its pretrained self-attention. Trained on every annotator's explanation (the explanations of one pair share an encoder pass), the epoch with the lowest held-out loss kept. It writes a greedy explanation and samples four more (nucleus sampling, p = 0.9, with the project's own sampler, `models/sampling.py`: the same nucleus as transformers' top-p, found without sorting the whole vocabulary at every step), either for every row or only where a TF-IDF logistic regression trained on human training explanations (the chooser's classifier, not the evaluation's) does not read the greedy one as the rating, and keeps the candidate with the highest log P(rating | text) + w × cosine(text, question + passage), greedy included. Whether to sample for every row or only where greedy disagrees, the weight w, a penalty against the generator's over-used openings and one against words no training text holds are chosen on held-out explanations by a pre-specified rule (the levers section); the findings name the decoding used.
#
# **Given the rating.** Every explainer here is told the rating it explains (the annotators' majority; the `feedback_kl` reranker's prediction; or, in *Explaining the QA system's own answers*, the rating that system's reranker predicts) and writes a justification of it; the explain-then-rate reranker, which writes an explanation *before* rating and rates from it, has its own chapter. **How the paper judged explanations**: with people (a study of whether the generated explanations help users decide whether an answer is correct); this project cannot run a user study, so it measures automatic proxies instead (similarity and ROUGE-L to the annotators' explanations, consistency with the rating, variety, grounding) and a small blind reading by two AI judges (*Read by two judges*), and none of its numbers is comparable to the paper's human judgements.
#
# **Training data** (the split the rerankers use, the `available` protocol): the copy of FeedbackQA available here has feedback_train for WHO only (the other domains' files could not be mirrored; the Data chapter), so WHO's feedback_train and the four domains' feedback_valid files are pooled; **train** = 80% of those questions (the generator, the chooser's TF-IDF classifier and the evaluation's consistency classifier); **held-out** = the other 20% of each domain's questions (the epoch kept, the decoding levers, the consistency classifier's accuracy); **test** = feedback_test, never trained or tuned on.
#
# **Evaluation** on feedback_test (three explanations per item). A human's explanation is scored against the *other two*; a system's explanation is scored against each of the three pairs of two and the scores averaged, so both see two references. Metrics: ROUGE-L F1 (best reference), sentence BLEU (sacrebleu, exp smoothing), embedding similarity (best cosine to a reference, zero-shot MiniLM), and **consistency**: a logistic-regression rating classifier on MiniLM embeddings of explanation text, trained once on the human training explanations (never on any system's output, and fixed before the generator is trained), labels the explanation; it is consistent when the label is the rating it explains.
#
# **Which rating is explained**: `majority`, the annotators' majority (ties to the lower rating), which isolates explanation quality from rating errors, or `predicted`, the `feedback_kl` reranker's (seed 0) most likely rating (what a deployed system knows), stored by the explain stage beside the explanations of it, so that ratings and explanations always come from one run.

# %% [markdown]
# ## How human-like: the metric table
#
# Mean over items (0 to 1, as in the findings) with a 95% percentile bootstrap interval (B = 10,000, resampled within domains). The `human` row is each annotator against the other two, averaged over an item's annotators.

# %% tags=["hide-input"]
long = []
for source in ("majority", "predicted"):
    part = explanations[explanations["rating_source"] == source]
    for metric in METRICS:
        wide = part.pivot_table(index=keys, columns="explainer", values=metric, sort=False)[EXPLAINERS]
        wide["human"] = human_items[metric].reindex(wide.index)
        per_item = wide.reset_index().melt(id_vars=keys, var_name="explainer", value_name=metric)
        ci = estimate(per_item, ["explainer"], value=metric, keys=keys, strata=["domain"], seeds=None)
        for _, r in ci.iterrows():
            name = r["explainer"]
            long.append(
                {
                    "explainer": name if name == "human" else f"{name} ({source})",
                    "metric": NAMES[metric],
                    "accuracy": r["mean"],
                    "ci_low": r["ci_low"],
                    "ci_high": r["ci_high"],
                }
            )
long = pd.DataFrame(long).drop_duplicates(["explainer", "metric"])
# the two rating sources explain different ratings: their mixes explain the template's gap between them
mix = (
    explanations[explanations["explainer"] == EXPLAINERS[0]]
    .groupby("rating_source")["rating"]
    .value_counts(normalize=True)
    .unstack(fill_value=0.0)
    .reindex(columns=RATINGS, fill_value=0.0)
)
for source in ("majority", "predicted"):
    print(f"ratings explained ({source}): " + ", ".join(f"{r} {mix.loc[source, r]:.0%}" for r in RATINGS))
never = [r for r in RATINGS if mix.loc["predicted", r] == 0]
if never:
    print(
        textwrap.fill(
            f"{stage['config']['rating_reranker']} never predicts {' or '.join(never)} as the most likely rating "
            "here, so the predicted rows' consistency covers the other ratings only and is not comparable "
            "with the majority rows'.",
            100,
        )
    )
rows = [f"{e} ({s})" for s in ("majority", "predicted") for e in EXPLAINERS] + ["human"]
ci_table(
    long,
    rows="explainer",
    columns="metric",
    row_order=rows,
    column_order=list(NAMES.values()),
    scale=1.0,
    digits=3,
)

# %% [markdown]
# Corpus BLEU on sacrebleu's 0 to 100 scale (its system-level score, which pools n-gram counts over items and is the number usually reported; the sentence BLEU above is on 0 to 1), with each item's first two annotators as references for every system and the third annotator as the human:

# %% tags=["hide-input"]
refs = humans.pivot_table(index=keys, columns="annotator", values="explanation", aggfunc="first", sort=False)
rows = []
for (explainer, source), part in explanations.groupby(["explainer", "rating_source"], sort=False):
    part = part.set_index(keys).reindex(refs.index)
    rows.append(
        {
            "explainer": f"{explainer} ({source})",
            "corpus BLEU": 100 * corpus_bleu(part["explanation"].tolist(), refs[[0, 1]].to_numpy().tolist()),
        }
    )
rows.append(
    {
        "explainer": "human (annotator 3)",
        "corpus BLEU": 100 * corpus_bleu(refs[2].tolist(), refs[[0, 1]].to_numpy().tolist()),
    }
)
# majority first, as in the metric table
bleu_table = pd.DataFrame(rows).set_index("explainer")
bleu_table = bleu_table.reindex(
    [f"{e} ({s})" for s in ("majority", "predicted") for e in EXPLAINERS] + ["human (annotator 3)"]
)
rouge_means = majority.groupby("explainer")["rouge_l"].mean()
human_bleu = bleu_table.loc["human (annotator 3)", "corpus BLEU"]
say(
    "at or above the humans (majority rating): ROUGE-L "
    + (", ".join(e for e in EXPLAINERS if rouge_means[e] >= human_items["rouge_l"].mean()) or "none")
    + "; corpus BLEU "
    + (
        ", ".join(e for e in EXPLAINERS if bleu_table.loc[f"{e} (majority)", "corpus BLEU"] >= human_bleu)
        or "none"
    )
)
bleu_table.round(2)

# %% tags=["hide-input"]
# what the tables above show, from their numbers: consistency rewards a rating's usual phrasing
tpl = majority[majority["explainer"] == "template"]
sim_means = majority.groupby("explainer")["embedding_sim"].mean()
best_sim = sim_means.idxmax()
display(
    Markdown(
        "**What this shows.** Consistency above the humans' does not mean better than human: an explainer "
        "that uses each rating's usual phrasing more regularly than people do writes what the classifier "
        f"reads. The template, one stock sentence per rating, is the extreme case: consistency "
        f"{tpl['consistent'].mean():.2f} (humans {humans['consistent'].mean():.2f}) with "
        f"{distinct_share(tpl['explanation'].tolist()):.1%} of its explanations distinct. Read consistency "
        "together with similarity and variety. Word overlap (ROUGE-L, BLEU) rewards the same usual "
        f"phrasing: the template's ROUGE-L is {tpl['rouge_l'].mean():.3f} against the humans' "
        f"{humans['rouge_l'].mean():.3f} with each other (the line above the BLEU table names every explainer "
        "at or above them), so overlap does not separate stock sentences from people's. Embedding similarity "
        f"does: the template reaches {sim_means['template']:.3f}, the best explainer, {best_sim}, "
        f"{sim_means[best_sim]:.3f}, the humans "
        f"{humans['embedding_sim'].mean():.3f}."
    )
)

# %% [markdown]
# ## Against the template floor and the retrieval explainer
#
# Each explainer minus a baseline (majority rating), per metric: the template (the floor), and the rating-filtered retrieval explainer (what copying a person's explanation of a similar pair gives). Paired bootstrap over items (stratified by domain), Holm over the other explainers of a metric against the same baseline; the CI is not adjusted; MDE beside a difference that is not significant; `of human` is the explainer's mean as a share of the human mean. A Holm p written `≤ p` is at the bootstrap's floor: no resample was as extreme as the observed difference, so the +1-corrected p is a bound, not an estimate.

# %% tags=["hide-input"]
rows, signatures = [], []
for baseline in ("template", "retrieval_same_rating"):
    for metric in METRICS:
        family = comparison(baseline, metric)
        signatures.append(family.signature())
        cmp = family.table.reindex([e for e in EXPLAINERS if e != baseline])
        for name, r in cmp.iterrows():
            rows.append(
                {
                    "against": baseline,
                    "metric": NAMES[metric],
                    "explainer": name,
                    "mean": f"{r['mean']:.3f}",
                    "Δ [95% CI, unadjusted]": f"{signed_text(r['delta'], 3)} "
                    + interval(r["delta_ci_low"], r["delta_ci_high"], 3),
                    "Holm p": holm_p_text(r, 3, family.n_resamples),
                    "MDE": f"{r['mde']:.3f}" if r["p_holm"] >= 0.05 and r["mde"] > 0 else "",
                    "of human": f"{r['mean'] / human_items[metric].mean():.0%}",
                }
            )
# one Holm family per (baseline, metric); the signature does not name the metric, so each baseline's
# four metrics share one line
print("\n".join(dict.fromkeys(signatures)))
pd.DataFrame(rows).set_index(["against", "metric", "explainer"]).rename(index=breakable)

# %% [markdown]
# ## Does the explanation say what its rating says?
#
# Consistency per majority rating (`items`: feedback_test items of that majority rating; `human expl.`: the annotators' explanations of that rating, the annotators' column), each explainer beside the annotators (their own ratings), and beside the **classifier's own accuracy** on held-out human explanations of that rating (`classifier acc.`): how often the classifier reads a human explanation of that rating right. An explainer can score above it by writing, for every item, the words the classifier ties to the rating (the template's fixed sentences do so for some ratings and miss others entirely, as the table shows), so consistency is read together with similarity to what people wrote.

# %% tags=["hide-input"]
table = by_rating.T.reindex(RATED)[EXPLAINERS]
table["humans"] = human_rating.reindex(RATED)
table["classifier (held-out humans)"] = [classifier[r] for r in RATED]
overall = {
    **majority.groupby("explainer")["consistent"].mean().to_dict(),
    "humans": humans["consistent"].mean(),
    "classifier (held-out humans)": classifier["overall"],
}
table.loc["overall"] = pd.Series(overall)
# people's consistency weighted to the majority ratings' mix the explainers explain (theirs is at their own mix)
# (the explainers' overall is at that mix already: their cells stay blank)
table.loc["overall, majority mix"] = pd.Series({"humans": human_at_mix})
table.index.name = "majority rating"
short = {
    "retrieval_same_rating": "retrieval (same)",
    "retrieval_any_rating": "retrieval (any)",
    "classifier (held-out humans)": "classifier acc.",
}
# how many items and human explanations each share is over (the middle ratings are the small ones)
counts = pd.DataFrame(
    {
        "items": gen["rating"].value_counts().reindex(RATED),
        "human expl.": humans["rating"].value_counts().reindex(RATED),
    }
)
counts.loc["overall"] = [len(gen), len(humans)]
# blank where a cell does not apply (the classifier and the counts at the majority mix)
shown_table = table.rename(columns=short).map(lambda v: "" if pd.isna(v) else f"{v:.3f}")
shown_table.join(counts.astype("Int64").astype(object)).where(lambda t: t.notna(), "")

# %% mystnb={"figure": {"caption": "Consistency with the rating explained, per majority rating: each explainer and the annotators (bars, with 95% percentile bootstrap intervals: items resampled within domains, people's explanations one by one); the dashed line is the consistency classifier's own accuracy on held-out human explanations of that rating (how often it reads a person's explanation right). A missing bar is a share of 0: the template's fixed sentence for that rating is never read as it. The line under the figure tests the generator against people per rating."}} tags=["hide-input"]
# each bar's CI: an explainer's items, or people's explanations (one row per annotator), resampled within domains
sources = [(e, majority[majority["explainer"] == e], keys) for e in EXPLAINERS]
sources.append(("humans", humans, [*keys, "annotator"]))
intervals = pd.concat(
    estimate(frame.assign(explainer=name), ["explainer", "rating"], value="consistent", keys=k,
             strata=["domain"], seeds=None)
    for name, frame, k in sources
)  # fmt: skip
intervals["explainer"] = intervals["explainer"].map(lambda n: short.get(n, n))
shown = (
    table.loc[RATED]
    .drop(columns="classifier (held-out humans)")
    .rename(columns=short)
    .rename_axis("rating")
    .reset_index()
    .melt(id_vars="rating", var_name="explainer", value_name="consistency")
    .merge(intervals[["explainer", "rating", "ci_low", "ci_high"]], on=["explainer", "rating"], how="left")
)
ax = plot_grouped_bars(shown, "rating", "explainer", "consistency", error=("ci_low", "ci_high"))
mark_group_levels(ax, [classifier[r] for r in RATED], "classifier accuracy (held-out humans)")
ax.legend(frameon=False, fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
ax.set_ylabel("share read as the rating explained")
ax.set_ylim(0, 1.05)
plt.show()

# %% tags=["hide-input"]
# the generator against people, per rating: the difference's own interval (computed with the findings), not
# the bars' overlap
for r in RATED:
    verdict = "above people" if r in gap_above else "below people" if r in gap_below else "not told apart"
    say(
        f"{r}: generator minus people {signed_text(gap[r][0], 3)} {interval(gap[r][1], gap[r][2], 3)}: {verdict}"
    )


# %% [markdown]
# ## Variety and grounding
#
# People explain each answer in their own words; a system that writes a few stock sentences can still score well on consistency and word overlap. Per explainer (majority rating) and for the annotators: the share of **distinct** explanations, the **most common opening** (first four words, lower-cased) and the share of explanations it opens, the mean length in words, and **grounding**: the share of an explanation's content words (not stop words) that occur in its question or passage, a rough measure of how much of what it names is about the pair at hand (generic words such as "answer" count as not found, for everyone alike). Where the results count them, **no non-word** is the share of explanations all of whose words occur in some training explanation, question or passage (the stage's lexicon; people's test explanations are not in it, so their typos and rare words are their own baseline): a spelling and lexicon check that needs no language model, not a judgement of grammar (words are the lower-cased runs of letters; a run with a digit, such as "19" or "2m", is not checked). The template and the retrieval explainers score 100% by construction: they write sentences of the training explanations.

# %% tags=["hide-input"]
# PAIRS and variety_row: defined with the findings (grounding is one of them)
QUESTIONS = {key: q for key, (q, _) in PAIRS.items()}
sources = {e: majority[majority["explainer"] == e] for e in EXPLAINERS}
sources["humans"] = humans
rows = {name: variety_row(frame) for name, frame in sources.items()}
varied = pd.DataFrame(rows).T  # the figure below reads it
# where the generator's top opening comes from: one rating's stock sentence, and that rating's share
top_open = gen_open["opening"]
opens = gen.groupby("rating")["explanation"].apply(
    lambda t: sum(opening_of(x) == top_open for x in t) / len(t)
)
top_rating = opens.idxmax()
majority_share = (gen["rating"] == top_rating).mean()
individual_share = (humans["rating"] == top_rating).mean()
held_share = levers.loc[levers[USED], "opening_share"].iloc[0]
display(
    Markdown(
        f'The generator\'s top opening ("{readable_opening(top_open)}") is its usual opening for {top_rating}: '
        f"it opens {opens[top_rating]:.0%} of its explanations of {top_rating} and "
        + ", ".join(f"{opens.get(r, 0.0):.0%} of its {r} ones" for r in RATINGS if r != top_rating)
        + f"; {top_rating} is the majority rating of {majority_share:.0%} of feedback_test items against "
        f"{individual_share:.0%} of the annotators' individual ratings. The held-out levers table below "
        "has one row per distinct (pair, rating) among the held-out annotators' ratings (a pair three annotators "
        "rated Bad is one row), on other questions: "
        f"the same decoding's top-opening share there is {held_share:.1%} (on feedback_test "
        f"{gen_open['opening_share']:.1%})."
    )
)
variety_table(rows)

# %% mystnb={"figure": {"caption": "Variety within each rating: left, the share of an explainer's explanations of that rating (majority rating; people: their own ratings) that open with its most common four words for that rating; right, the share of distinct explanations over all ratings (the template's 0.2% is too short a bar to see). Within a rating, so that an explainer of the majority ratings (more of them Bad) is not compared with people's own mix of ratings. The template writes one sentence per rating: 100% everywhere on the left."}} tags=["hide-input"]
# per rating, so the mix of ratings (majority vs people's own) does not shape the comparison
within = pd.DataFrame(
    [
        {
            "rating": r,
            "explainer": short.get(name, name),
            "share": rating_openings[name][r]["opening_share"],
        }
        for name in sources
        if name != "retrieval_any_rating"  # it ignores the rating it explains
        for r in RATED
    ]
)
fig, axes = plt.subplots(1, 2, figsize=(11, 3.4), gridspec_kw={"width_ratios": [3, 2]})
plot_grouped_bars(within, "rating", "explainer", "share", ax=axes[0], legend=False)
# one legend above both panels (the right panel names its bars on its own axis)
handles, labels = axes[0].get_legend_handles_labels()
fig.legend(handles, labels, loc="upper center", ncol=len(labels), frameon=False, bbox_to_anchor=(0.38, 1.06))
axes[0].set_ylim(0, 1.05)
axes[0].set_ylabel("share opening with the top 4 words")
names = list(varied.index)
# the reader's names (as in the consistency figure), each explainer's fixed colour
axes[1].barh(
    [short.get(n, n) for n in names], varied["distinct"].astype(float), color=[system_color(n) for n in names]
)
axes[1].set_xlim(0, 1)
axes[1].set_xlabel("share of distinct explanations")
axes[1].invert_yaxis()
plt.tight_layout()
plt.show()


# %% [markdown]
# Within each rating: the most common opening (four words) and the share of that rating's explanations it opens, for the generator and the retrieval explainer (majority rating) and for people (their own ratings), one row each; how many items and explanations each rating has is in the consistency table above. The template writes one sentence per rating, so its share is 100% in every row.

# %% tags=["hide-input"]
per_rating = {}
for name in ("generator", "retrieval_same_rating", "humans"):
    for r, v in rating_openings[name].items():
        per_rating[(r, short.get(name, name))] = {
            "most common opening": f'"{readable_opening(v["opening"])}"',
            "share of the rating's explanations": f"{v['opening_share']:.1%}",
        }
# one row per (rating, explainer): the openings' text is too wide for one column per explainer
per_rating = pd.DataFrame(per_rating).T.rename_axis(["rating", "explainer"])
# the generator's share against people's, per rating (ratio: computed with the findings)
say(
    "within each rating, the share of explanations the generator's most common opening starts, as a "
    "multiple of the share people's most common opening starts: "
    + ", ".join(f"{r} {ratio[r]:.1f}x" for r in RATED)
)
per_rating


# %% [markdown]
# ## Read by two judges: a blind audit
#
# The measures above cannot tell a fluent, true explanation from a string of the right words, and the paper judged its explanations with people. A small blind reading stands in for that (`fqa_analysis.core.audit`, `tools/audit_sheet.py`; sheet, key, labels and who the judges are in `results/explanation_audit/`). **The sample**: feedback_test items drawn with a seed, the same number for each majority rating (so the rarer middle ratings are read too), and for each item one explanation from each of five sources: **people** (one of the item's three annotators, drawn with the seed, with that annotator's own rating), the **template**, the rating-filtered **retrieval** explainer and the **generator** (each explaining the majority rating), and the **explain-then-rate** model of the next chapter (our form, seed 0, explaining the rating it then gives). The explanations were shuffled behind row ids, shown lower-cased with their white space collapsed (the generators write lower case only) and each under its question and answer with the rating it comes with; no source was named. Each judge labelled every row by the rubric below, without the key; the rubric, the sample and the sheet were committed before any label was written (the history of `results/explanation_audit/`). Blind to the key is not blind to style: the template's sentence recurs for every item of a rating, the generators leave artefacts ("covid - 19"), and the annotator's row may carry a rating the other rows of its item do not. The retrieval explainer that ignores the rating (`retrieval_any_rating`) is left out, to keep the sheet to five explanations per item. **The judges are not people** (who they are is printed below): read this as an audit of what the automatic measures miss, with few items behind each mean, not as the paper's user study.

# %% tags=["hide-input"]
if AUDIT:
    say(
        f"{AUDIT_SIZE}; {len(audit_key)} explanations; explanations the results have changed since the sheet "
        f"was drawn: {len(audit_changed)}"
        + (
            f" ({', '.join(audit_changed[:5])}: their labels describe texts this page no longer shows)"
            if audit_changed
            else ""
        )
    )
    for name, who in audit_judges(RESULTS).items():
        if name in judges:
            say(f"judge {name}: {who}")
    display(Markdown("The rubric, as the judges read it:\n\n" + RUBRIC.split("\n\n", 1)[-1]))
else:
    display(NO_AUDIT)

# %% [markdown]
# Mean score per source and dimension (each label divided by its dimension's highest, then averaged over the judges: 0 to 1, higher is better; every majority rating has the same number of items, so each weighs equally, while half of feedback_test's items are Bad), with a 95% percentile bootstrap interval over the items (resampled within their majority rating; an interval of zero width means every item got the same score):

# %% tags=["hide-input"]
if AUDIT:
    means, means_shown = means_table(audit_means, AUDIT_SHOWN)
    display(means_shown)
    say(
        "What a mean hides: the share of each source's explanations that every judge gave the best label (2), "
        "and the share every judge gave 0, for three dimensions:"
    )
    display(
        pd.concat({DIMENSION_NAMES[d]: f for d, f in audit_shares.items()}, axis=1)
        .rename(index=SOURCE_NAMES, columns={"top": "best", "zero": "0"})
        .reindex([SOURCE_NAMES[s] for s in AUDIT_SHOWN])
        .map(lambda v: f"{v:.0%}")
        .rename_axis("source")
    )
    say(
        "'supports its rating' per majority rating (the consistency classifier reads people's Excellent and Bad "
        "explanations reliably, the middle two hardly):"
    )
    display(
        audited[audited["dimension"] == "supports"]
        .pivot_table(index="source", columns="stratum", values="score", aggfunc="mean")
        .reindex(index=AUDIT_SHOWN, columns=RATINGS)
        .rename(index=SOURCE_NAMES)
        .map(lambda v: f"{v:.2f}")
        .rename_axis(index="source", columns="majority rating")
    )
else:
    display(NO_AUDIT)

# %% mystnb={"figure": {"caption": "The blind audit: mean score (0 to 1) per dimension and source, with 95% bootstrap intervals over the items; humans are one annotator per item. The judges (AI, not people) labelled each explanation without the key. A missing or barely visible bar is a score at or near 0 (the template and explain-then-rate on specific)."}} tags=["hide-input"]
if AUDIT:
    # bars in the table's order of sources (humans last, as in the consistency figure), each in its chapter-wide colour
    order = {SOURCE_NAMES[s]: k for k, s in enumerate(AUDIT_SHOWN)}
    audit_bars = means.rename(columns={"accuracy": "score"}).sort_values(
        "source", key=lambda c: c.map(order), kind="stable"
    )
    ax = plot_grouped_bars(audit_bars, "dimension", "source", "score", error=("ci_low", "ci_high"))
    ax.legend(frameon=False, fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    ax.set_ylabel("mean score (0 to 1)")
    ax.set_ylim(0, 1.05)
    plt.show()

# %% [markdown]
# Two audited items drawn with a seed, as the judges saw them (the question; each explanation with its rating) and as they labelled them: fluent / supports / accurate / specific per judge, and a judge's note where one was written.

# %% tags=["hide-input"]
if AUDIT:
    shown_items = audit_items.sample(2, random_state=0)
    for item in shown_items.itertuples():
        rows_of = audit_key[(audit_key["domain"] == item.domain) & (audit_key["item_id"] == item.item_id)]
        say(f"[{item.stratum}] {item.domain} item {item.item_id}: {PAIRS[(item.domain, item.item_id)][0]}")
        for row in rows_of.set_index("source").reindex(AUDIT_SHOWN).itertuples():
            show(f"{SOURCE_NAMES[row.Index]} (rated {row.rating})", row.explanation)
            for name, labels in judges.items():
                got = labels.set_index("row_id").loc[row.row_id]
                note = f' ("{got["note"]}")' if got["note"] else ""
                print(f"      judge {name}: " + " / ".join(str(got[d]) for d in DIMENSIONS) + note)
        print()
else:
    display(NO_AUDIT)

# %% [markdown]
# Each source against people (humans), per dimension: paired over the items (resampled within their majority rating), Holm over the other sources within each dimension. As in the tables above: the CI of Δ is not adjusted; the MDE (beside a difference that is not significant) is the smallest difference this test would find 80% of the time; W / T / L counts the items where the source scores above, level with and below the annotator; a Holm p written `≤ p` is at the bootstrap's floor (no resample was as extreme), a bound. With this few items only large differences can be told apart.

# %% tags=["hide-input"]
if AUDIT:
    print(audit_vs.signature())
    shown_vs = comparison_table(
        audit_vs.table.reindex([(d, s) for d in DIMENSIONS for s in AUDIT_SHOWN if s != "people"]),
        names=["dimension", "source"],
        scale=1.0,
        digits=2,
        mean_header="score",
        delta_header="Δ vs people",
        n_resamples=audit_vs.n_resamples,
    )
    display(shown_vs.rename(index={**DIMENSION_NAMES, **SOURCE_NAMES}))
else:
    display(NO_AUDIT)

# %% [markdown]
# How far the two judges agree (the first two, where a results folder holds more), per dimension: the share of rows both gave the same label, and unweighted Cohen's kappa (agreement beyond what their label shares give by chance; 1 is perfect, 0 chance), also without the template's rows, whose fixed sentences are easy to agree on. Where they disagree, the tables above average them. Two instances of one model share that model's reading of the rubric, so their agreement is likely higher than two people's would be: it shows that the labels are stable, not that they are right.

# %% tags=["hide-input"]
if AUDIT and audit_agree is not None:
    display(
        audit_agree.rename(index=DIMENSION_NAMES)
        .rename(
            columns={
                "same": "same label",
                "kappa": "Cohen's kappa",
                "kappa without template": "kappa, no template",
            }
        )
        .map(lambda v: f"{v:.2f}")
    )
else:
    display(Markdown("Fewer than two judges' labels in this results folder: no agreement to measure."))


# %% [markdown]
# ## Greedy or the adopted decoding
#
# The generator's adopted decoding (the levers section: greedy plus four nucleus samples per row, the chooser keeping one by the rating classifier and the similarity to the pair) was chosen on held-out explanations for variety and for closeness to people's words. Its first candidate is the greedy explanation, which the stage keeps beside the chosen one (`explanation_greedy.parquet`). What did choosing change? First the automatic measures of both on feedback_test (majority rating; Δ = adopted minus greedy, paired over the items, resampled within domains, Holm over the three metrics); then a blind reading of both on the audit's items.

# %% tags=["hide-input"]
if GREEDY_ROWS:
    say(
        f"the chooser kept the greedy text for {KEPT_GREEDY:.0%} of the {len(gen):,} items; elsewhere it kept a "
        "sampled candidate"
    )
    display(variety_table(decoding_variety).rename(index=SOURCE_NAMES))
    print(decoding_auto.signature())
    display(vs_greedy_table(decoding_auto, "metric", "explainer", 3).rename(index=NAMES))
else:
    display(NO_GREEDY)

# %% [markdown]
# **Read blind.** A second sheet (`results/explanation_audit_decoding/`, drawn by `tools/audit_sheet.py --sources generator,generator_greedy --folder explanation_audit_decoding`) holds the same items as the audit above (one seed draws the same items for every sheet), each with its two explanations of the majority rating, the adopted and the greedy one, shuffled behind row ids and shown as before; where the chooser kept the greedy text the two rows read the same. It is read by judges who have not read the first sheet, by the same rubric (the adopted explanations appear on both sheets, so the two panels' means for them, in this table and the audit's, show how far the choice of judges alone moves a mean); the cell below names them, or says that this results folder holds no labelled sheet yet. Where labels are there, it shows the mean score per dimension with its 95% CI over the items, then the adopted decoding minus greedy (paired over the items, resampled within majority rating, Holm over the four dimensions), the share of rows every judge gave the best label and 0, and the judges' agreement.

# %% tags=["hide-input"]
if DECODING_AUDIT:
    say(
        f"{len(decoding_key)} explanations of {len(decoding_key.drop_duplicates(['domain', 'item_id']))} items; "
        f"labelled texts changed in the results since the sheet was drawn: {len(decoding_changed)}"
    )
    for name, who in audit_judges(RESULTS, DECODING_FOLDER).items():
        if name in decoding_judges:
            say(f"judge {name}: {who}")
    display(means_table(decoding_means, DECODING_SHOWN)[1])
    print(decoding_vs.signature())
    display(vs_greedy_table(decoding_vs, "dimension", "source", 2).rename(index=DIMENSION_NAMES))
    say(DECODING_VERDICT)
    display(
        pd.concat({DIMENSION_NAMES[d]: f for d, f in decoding_shares.items()}, axis=1)
        .rename(index=SOURCE_NAMES, columns={"top": "best", "zero": "0"})
        .reindex([SOURCE_NAMES[s] for s in DECODING_SHOWN])
        .map(lambda v: f"{v:.0%}")
        .rename_axis("source")
    )
    if decoding_agree is not None:
        say(
            "the judges' agreement per dimension (same label; unweighted Cohen's kappa): "
            + "; ".join(
                f"{DIMENSION_NAMES[d]} {r['same']:.0%}, {r['kappa']:.2f}"
                for d, r in decoding_agree.iterrows()
            )
        )
elif GREEDY_ROWS:
    display(
        Markdown(
            f"This results folder holds no labelled `{DECODING_FOLDER}/`: `tools/audit_sheet.py --sources "
            f"generator,generator_greedy --folder {DECODING_FOLDER}` draws its sheet, and the judges' labels go "
            "beside it (README, *The pipeline*)."
        )
    )
else:
    display(NO_GREEDY)


# %% [markdown]
# ## What each lever changed (held-out explanations)
#
# Decided on the held-out 20% of the training questions, never on feedback_test: every (pair, rating) among the held-out explanations is explained once and scored against all of that pair's human explanations. **Longer training**: greedy decoding after every epoch (first rows of the held-out set). **Decoding**: greedy, greedy with a repetition penalty, one sampled candidate, the best of greedy + sampled candidates by the rating classifier, by the similarity to the pair, or by both (the chooser), for every row, and the same only for rows whose greedy explanation the chooser's classifier reads as another rating. The chooser scores a candidate by the classifier's log probability of the rating plus a **similarity weight** times its cosine similarity to the pair (rows named `3 x similarity` or `10 x similarity`; rows that name no weight use 1): a cosine lies in [-1, 1] while a log probability spans several units, so the table tries weights up to 10. The chooser's **opening penalty** subtracts from a candidate's score its opening's share of the generator's greedy explanations times a weight, against the generator's stock sentences; its **non-word penalty** subtracts a weight (10, more than the other terms usually differ by) per word of the candidate that no training explanation, question or passage holds (sampled wordpieces join into words such as "apprenticeshipes", which an earlier blind reading of the decoding, before this penalty existed, found in texts it read as incoherent). The `reference:` rows are the template and the rating-filtered retrieval explainer on the same rows, where the stage measured them. **The adoption rule** (pre-specified): of the chooser's policies, the stage explains feedback_test with the one that has the lowest top-opening share while its consistency with every rating stays at least the evaluation classifier's accuracy on held-out human explanations of that rating (the `classifier acc.` column of the consistency table), its similarity at least the retrieval reference's, its ROUGE-L at least the template's, and its share of explanations without a non-word at least greedy decoding's (a bar added after that earlier blind reading, whose sheet was then redrawn for the texts shown here; the bar is decided on the held-out rows like the others); where none qualifies, the configured decoding (the row marked `used`). Columns: consistency per rating (Exc., Acc., CbI = Could be Improved, Bad), embedding similarity, ROUGE-L, share distinct, and where measured the share of the most common 4-word opening (top opening), grounding and the share of explanations without a non-word (no non-word); `[misses: …]` after a policy row's name lists the bars of the rule it misses (`none`: it qualifies); rows without it are not policies the rule can adopt.

# %% tags=["hide-input"]
epochs = pd.DataFrame(stage["generator_history"]["epochs"]).set_index("epoch")
cols = ["loss", "select_loss", "consistent", "embedding_sim", "rouge_l", "distinct"]
names = {
    "loss": "train loss",
    "select_loss": "held-out loss",
    "consistent": "consistency",
    "embedding_sim": "embedding sim.",
    "rouge_l": "ROUGE-L",
    "distinct": "distinct",
}
kept = int(epochs["select_loss"].idxmin())
say(
    f"epoch kept: {kept} (lowest held-out loss, {epochs.loc[kept, 'select_loss']:.3f}); the metrics after the "
    "losses are greedy explanations of the first held-out rows (not the whole held-out set of the levers table)"
)
if kept == epochs.index.max() and len(epochs) > 1:
    # the budget stopped training, not the held-out loss
    say(
        f"the kept epoch is the last: held-out loss still fell from {epochs['select_loss'].iloc[-2]:.3f} to "
        f"{epochs['select_loss'].iloc[-1]:.3f}, so longer training may lower it further"
    )
epochs[[c for c in cols if c in epochs]].rename(columns=names).round(3)

# %% tags=["hide-input"]
# per-rating consistency (the rule's bars; overall consistency would not fit the page and decides nothing)
LEVER_COLUMNS = {
    **dict(zip([f"consistent_{r}" for r in RATINGS], ["Exc.", "Acc.", "CbI", "Bad"], strict=True)),
    "embedding_sim": "sim.",
    "rouge_l": "ROUGE-L",
    "distinct": "distinct",
    "opening_share": "top opening",
    "grounding": "grounding",
    "no_nonword": "no non-word",
}
# the variety columns where the stage measured them
shown_columns = {c: name for c, name in LEVER_COLUMNS.items() if c in levers.columns}
lever_table = levers.set_index("lever")[list(shown_columns)].rename(columns=shown_columns)
# two decimals for consistency and grounding (sim., ROUGE-L and the shares are set below), each rounded once
for column in ("Exc.", "Acc.", "CbI", "Bad", "grounding"):
    if column in lever_table:
        lever_table[column] = lever_table[column].round(2)
# similarity decides against the retrieval reference by the third decimal: shown to three
lever_table["sim."] = levers["embedding_sim"].round(3).to_numpy()
# and ROUGE-L against the template's: both to three decimals
lever_table["ROUGE-L"] = levers["rouge_l"].round(3).to_numpy()
# shares in % as in the variety table
for share in ("distinct", "top opening", "no non-word"):
    if share in lever_table:
        lever_table[share] = [f"{v:.1%}" for v in lever_table[share].astype(float)]
# which bars of the adoption rule each policy row misses (the rule of fqa_analysis.core.levers)
BAR_NAMES = {**{f"consistent_{r}": LEVER_COLUMNS[f"consistent_{r}"] for r in RATINGS}, "embedding_sim": "sim.",
             "rouge_l": "ROUGE-L", "no_nonword": "no non-word"}  # fmt: skip
misses = [
    None if m is None else (", ".join(BAR_NAMES[c] for c in m) or "none")
    for m in policy_misses(levers, classifier)
]
# the decoding the stage used, and the bars a policy misses, are in the row label (columns of their
# own would not fit the page)
lever_table.index = [
    lever
    + (f" ({'adopted' if USED == 'adopted' else 'configured'}, used)" if used else "")
    + (f" [misses: {miss}]" if miss is not None else "")
    for lever, used, miss in zip(levers["lever"], levers[USED], misses, strict=True)
]
lever_table.index.name = "lever"
say(
    f"{levers['rows'].iloc[0]} held-out (pair, rating) rows; feedback_test explained with: {chosen.name}"
    + (" (adopted by the rule above)" if USED == "adopted" else " (the configured decoding)")
)
# how close the decoding used came to each bar of the rule (the table rounds consistency to two decimals)
BAR_WORDS = {
    **{f"consistent_{r}": f"{r} consistency" for r in RATINGS},
    "embedding_sim": "similarity",
    "rouge_l": "ROUGE-L",
    "no_nonword": "share without a non-word",
}
margins = sorted((chosen[c] - bar, BAR_WORDS[c], chosen[c], bar) for c, bar in rule_bars(levers, classifier))
say(
    "its margins over the rule's bars, closest first: "
    + "; ".join(f"{name} {value:.3f} vs {bar:.3f} ({signed_text(m, 3)})" for m, name, value, bar in margins)
)
# the other policies that meet every bar: what the rule would adopt if the closest margin went the other way
qualifying = [
    (row["opening_share"], row["lever"])
    for row, miss in zip(levers.to_dict("records"), policy_misses(levers, classifier), strict=True)
    if miss == [] and row["lever"] != chosen.name
]
say(
    "other policies that meet every bar (top opening): "
    + ("; ".join(f"{lever} ({share:.1%})" for share, lever in sorted(qualifying)) or "none")
)
lever_table

# %% [markdown]
# ## Side by side
#
# One seeded feedback_test item for each majority rating: the question, the annotators' ratings and explanations, and every explainer's output for the majority rating.

# %% tags=["hide-input"]
for rating in RATINGS:
    pool = majority[(majority["rating"] == rating) & (majority["explainer"] == "generator")]
    if pool.empty:
        continue
    pick = pool.sample(n=1, random_state=11).iloc[0]
    d, i = pick["domain"], pick["item_id"]
    h = humans[(humans["domain"] == d) & (humans["item_id"] == i)]
    s = majority[(majority["domain"] == d) & (majority["item_id"] == i)]
    # an item whose annotators gave three different ratings has no majority: the tie goes to the lower
    split = h["rating"].nunique() == len(h) > 2
    print(
        f"[{rating}] {d} item {i}"
        + (" (three different ratings: the tie goes to the lowest)" if split else "")
    )
    show("question", QUESTIONS[(d, i)])
    for _, r in h.iterrows():
        show(f"human {r['annotator'] + 1} ({r['rating']})", r["explanation"])
    for _, r in s.iterrows():
        show(r["explainer"], r["explanation"])
    print()

# %% [markdown]
# ## Explaining the QA system's own answers
#
# What a user would see: the answer (seed 0) of the reranked system with the highest overall accuracy among the runs the explain stage read (named below the heading), that reranker's predicted rating of the answer, and each explainer's explanation of that rating. This is the deployed system, so its reranker is whichever is most accurate, trained on feedback or not; the predicted ratings of the sections above are `feedback_kl`'s. A seeded sample:

# %% tags=["hide-input"]
if stage["top1_system"]:
    rqa_name, reranker_name = stage["top1_system"]
    gloss = " (the relevance model, trained without feedback)" if reranker_name == "vanilla" else ""
    say(f"system: the {rqa_name} RQA reranked by {reranker_name}{gloss}")
for _, r in top1.sample(n=min(4, len(top1)), random_state=3).iterrows():
    say(f"[{r['domain']}] {r['question']}")
    answered = "the gold passage" if r["is_gold"] else "a passage that is not the gold one"
    print(f"  answered with {answered}; predicted rating: {r['predicted_rating']}")
    for e in EXPLAINERS:
        show(e, r[e])
    print()

# %% [markdown]
# How the reranker rated those answers: the share of each predicted rating among the system's answers that are the gold passage and among those that are not. A share of Excellent among the non-gold answers close to the gold answers' is what a reranker that cannot tell them apart gives.

# %% tags=["hide-input"]
shares = top1.groupby("is_gold")["predicted_rating"].value_counts(normalize=True).unstack(fill_value=0)
shares.index = shares.index.map({True: "gold answer", False: "other answer"})
shares.columns.name = "predicted rating"
shares.index.name = "answer"
used = [r for r in RATINGS if r in shares.columns]
if len(used) < len(RATINGS) and stage["top1_system"]:
    # a reader sees two ratings only and should know why: the reranker, not the explainers
    why = (
        ": vanilla is the relevance model, trained on QA pairs whose gold passage counts as Excellent and "
        "other passages as Bad, never on people's ratings, so the middle ratings are never its most likely"
        if reranker_name == "vanilla"
        else ""
    )
    say(f"{reranker_name} predicts {len(used)} of the {len(RATINGS)} ratings here ({', '.join(used)}){why}.")
if "Excellent" in shares.columns and {"gold answer", "other answer"} <= set(shares.index):
    n_gold, n_other = int(top1["is_gold"].sum()), int((~top1["is_gold"]).sum())
    n_other_excellent = int(((~top1["is_gold"]) & (top1["predicted_rating"] == "Excellent")).sum())
    # the verdict a user needs: an explanation follows the rating it is given, right or wrong
    display(
        Markdown(
            f"**What a user would read.** {n_gold:,} of the system's {len(top1):,} answers "
            f"({n_gold / len(top1):.0%}) are the gold passage. The reranker rates {n_other_excellent:,} of the "
            f"{n_other:,} others ({n_other_excellent / n_other:.0%}) Excellent (the gold answers: "
            f"{shares.loc['gold answer', 'Excellent']:.0%}). An answer that is not the gold passage may still "
            "answer the question, but the rating is the only judgment an explainer receives: each one explains "
            "the rating it is given and never questions it, so every answer rated Excellent comes with an "
            "explanation of an Excellent rating. The explanations are only as right as the rating. Whether an "
            "explanation is fluent and says what the passage says is measured only by the small AI-judged audit "
            "(*Read by two judges*), on feedback_test items rather than on these answers."
        )
    )
shares.reindex(columns=used).round(3)

# %% [markdown]
# ## Cost
#
# From `results/manifest.json` (stage `explain`, this 2-core machine), in the order the stage runs; `from cache`: the step was read from the content-keyed cache, and its compute is that of the run that made it.

# %% tags=["hide-input"]
timings = pd.DataFrame(stage["timings"]).T
# the order the stage runs its steps (the manifest sorts them by name)
ORDER = ["data", "rating_classifier", "generator/train", "generator/levers", "template/explain",
         "retrieval_same_rating/explain", "retrieval_any_rating/explain", "generator/explain", "humans"]  # fmt: skip
timings = timings.reindex(
    [s for s in ORDER if s in timings.index] + [s for s in timings.index if s not in ORDER]
)
print(f"whole stage: {compute_min:.1f} min of compute")
costliest = timings["compute_s"].astype(float).idxmax()
decode_used = stage["decode"]
say(
    f"costliest step: {costliest}, {float(timings.loc[costliest, 'compute_s']) / 60:.1f} min"
    + (
        f"; the decoding used samples {decode_used['candidates']} candidates for every row it explains (feedback_test and the QA system's answers)"
        if costliest == "generator/explain" and decode_used.get("sample_all")
        else ""
    )
)
timings.index.name = "step"
pd.DataFrame(
    {
        "compute (min)": (timings["compute_s"].astype(float) / 60).round(1),
        "peak memory (GiB)": (timings["compute_peak_rss_mb"].astype(float) / 1024).round(2),
        "from cache": ["yes" if c else "no" for c in timings["from_cache"]],
    },
    index=timings.index,
)

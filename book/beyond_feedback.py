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
# # Beyond the paper II: how much feedback, transfer across domains, where it fails
#
# Three questions the paper leaves open, for anyone who would collect feedback for their own QA system:
#
# 4. **How much feedback is needed?** Learning curves of the feedback reranker (KL loss) trained on 10%, 25%, 50% and 100% of the training questions.
# 5. **Does feedback transfer?** Each feedback domain left out of training *and* model selection, tested on that domain: does feedback on one public-health agency's answers help another's QA system?
# 6. **Where does the best system fail?** Per-domain error analysis with examples.
#
# All runs come from `fqa run beyond` (`feedback_experiments.parquet`, `feedback_experiment_ratings.parquet`; every model trained once and cached). Protocol `available` (see {doc}`data`): the training feedback is 80% of the questions of WHO's feedback_train and the four feedback_valid files pooled (20% of each domain's questions held out for model selection), 1,545 rated pairs, a fraction of the paper's (three feedback_train files are absent). Every experiment reranker is trained like the reranking chapter's `feedback_kl`: it continues from the one relevance model (every layer trained, KL loss) and rescores the hybrid RQA's top 5. **One seed per run** (seed 0; fraction 1 is seed 0 of the reranking chapter's `feedback_kl`): three seeds would triple the stage's training; every comparison below is a paired bootstrap over questions or items, which needs no second seed, but says nothing about the spread between seeds. Two measures: QA accuracy@1 over the four feedback domains' test questions, and the KL divergence of the predicted rating distribution from the annotators' on feedback_test (1,995 items, three annotators each), which sees changes the accuracy cannot.

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display
from myst_nb import glue

from fqa_analysis import data
from fqa_analysis.core.candidates import CANDIDATE_COLUMNS
from fqa_analysis.core.compare import compare, estimate
from fqa_analysis.core.experiments import (
    TRANSFER_RUNS,
    best_run,
    experiment_candidates,
    item_outcomes,
    transfer_outcomes,
)
from fqa_analysis.core.failures import failure_categories, page_overlap
from fqa_analysis.core.plots import plot_grouped_points, plot_lines
from fqa_analysis.core.ratings import item_ratings
from fqa_analysis.core.report import (
    CI_HEADER,
    change_text,
    comparison_table,
    holm_p_text,
    interval,
    markdown_records,
    p_text,
)
from fqa_analysis.core.reranking import (
    constant_rating_quality,
    join_annotators,
    per_item_rating_scores,
    score_outcomes,
)
from fqa_analysis.core.results import (
    dirty_commits,
    load_candidates,
    load_stage,
    load_table,
    missing_runs_note,
    rerankers_current,
    results_dir,
    stage_cost,
)
from fqa_analysis.models.reranker.pairs import training_prior

RESULTS = results_dir()
candidates = load_candidates(RESULTS)
stage = load_stage(RESULTS, "beyond")
RQA = stage["config"]["rqa"]
alone = candidates[(candidates["rqa"] == RQA) & (candidates["reranker"] == "none")]
alone = alone[alone["domain"].isin(data.FEEDBACK_DOMAINS)]
# the learning-curve and transfer runs continue from the rerank stage's models (fraction 1 is its
# feedback_kl): shown only when the beyond stage ran on the rerank stage's present rerankers
CURRENT = rerankers_current(stage["config"].get("rerank"), load_stage(RESULTS, "rerank"))
# a section is shown on all of its runs: the stage lands run by run (`fqa run beyond --beyond-runs`)
CURVE_NOTE = missing_runs_note(stage, ["fraction"], CURRENT)
# transfer reads the leave-out and control runs and, as "all feedback", fraction/1 (not the other fractions)
TRANSFER_NOTE = missing_runs_note(stage, ["fraction/1", "leave_out", "size_control"], CURRENT)
CURVE, TRANSFER = CURVE_NOTE is None, TRANSFER_NOTE is None
present = [r for r in stage.get("run_commits", {}) if not r.startswith(("selection/", "deep/"))]
planned = [r for r in stage.get("planned", []) if not r.startswith(("selection/", "deep/"))]
print(
    f"RQA {RQA}, protocol `{stage['protocol']}`; "
    + (
        f"experiment runs present: {len(present)}, still planned: {len(planned)}"
        if CURRENT
        else "the beyond stage's runs are not shown yet: they ran on other rerankers than the rerank stage's present ones"
    )
)

# %% tags=["hide-input"]
# the experiment runs present (their sizes and training times), whatever sections they complete
RUNS_SHOWN = CURRENT and not dirty_commits(stage) and bool(stage.get("experiment_runs"))
if RUNS_SHOWN:
    runs = pd.DataFrame(
        [
            {"run": k, **{c: v for c, v in r.items() if c != "history"}}
            for k, r in stage["experiment_runs"].items()
        ]
    )
    runs[["experiment", "setting", "seed"]] = runs["run"].str.split("/", expand=True)
if CURVE:
    experiments = load_table(RESULTS, "feedback_experiments.parquet")
    exp_candidates = experiment_candidates(experiments, candidates, RQA)
    outcomes = score_outcomes(pd.concat([alone, exp_candidates[CANDIDATE_COLUMNS]], ignore_index=True))
    test_items = item_ratings(
        data.feedback_frame(data.available_feedback(data.resolve_data_dir(None), "test"))
    )
    # the constant any rating model must beat: the training prior (the training feedback's average rating)
    prior = training_prior(
        stage["protocol"],
        data.available_feedback(data.resolve_data_dir(None), "train"),
        data.available_feedback(data.resolve_data_dir(None), "valid"),
        stage["config"]["rerank"]["holdout"],
    )
    prior_kl = constant_rating_quality(prior, test_items)["kl"]
    exp_ratings = load_table(RESULTS, "feedback_experiment_ratings.parquet")
    exp_ratings["reranker"] = exp_ratings["experiment"] + ":" + exp_ratings["setting"]
    items = item_outcomes(per_item_rating_scores(join_annotators(exp_ratings, test_items)))
    print(
        f"{len(runs)} reranker runs; {outcomes.question_id.size:,} (run, question) outcomes, the RQA alone's included"
    )


# %% [markdown]
# ## Findings
#
# Computed from `results/` when the book is built, by the cell under "How the findings are computed" at the end of this page:
#
# ```{glue:md} findings
# :format: myst
# ```
#
#

# %% [markdown]
# ## 4. How much feedback is needed
#
# Fractions are nested (the 10% questions lie inside the 25%, and so on) and stratified by domain; model selection always uses the same held-out pairs; fraction 1 is the `feedback_kl` model (seed 0) of the reranking chapter. QA accuracy (points) and the difference from the RQA alone with its 95% CI and Holm-corrected p (paired bootstrap over the 1,992 questions, stratified by test set, B = 10,000):


# %% tags=["hide-input"]
def share_label(run: str) -> str:
    """'fraction:0.25' as a reader's '25% of the feedback'."""
    return f"{float(run.split(':')[1]):.0%} of the feedback" if run.startswith("fraction:") else run


if CURVE:
    fraction_rows = outcomes[
        outcomes["reranker"].str.startswith("fraction:") | (outcomes["reranker"] == "none")
    ]
    curve_cmp = compare(
        fraction_rows,
        system="reranker",
        baseline="none",
        within=["rqa"],
        describe="each share of the feedback vs the RQA alone",
        commit=stage["git_commit"],
    )
    curve = curve_cmp.table.droplevel("rqa")  # one RQA system: one row per feedback fraction
    accuracy = fraction_rows.groupby("reranker")["correct"].mean().rename("accuracy")
    sizes = runs[runs["experiment"] == "fraction"].groupby("setting")["fit_pairs"].mean()
    learning = curve[["delta", "delta_ci_low", "delta_ci_high", "mde", "p_value", "p_holm"]]
    learning = (
        (100 * accuracy)
        .to_frame()
        .join(100 * learning[["delta", "delta_ci_low", "delta_ci_high", "mde"]])
        .join(learning[["p_value", "p_holm"]])
    )
    learning.insert(0, "training pairs", [sizes.get(r.split(":")[-1], 0) for r in learning.index])
    print(curve_cmp.signature())
    display(
        comparison_table(
            curve.rename(index=share_label), names=["feedback used"], delta_header="Δ vs RQA alone"
        ).assign(**{"training pairs": [int(sizes.get(r.split(":")[-1], 0)) for r in curve.index]})
    )
else:
    display(Markdown(CURVE_NOTE))

# %% tags=["hide-input"]
# the lead-in is part of the output: where the section awaits runs, no sentence introduces a missing table
if CURVE:
    display(
        Markdown(
            "Rating quality on feedback_test as the feedback grows: mean KL(annotators || P_phi) in nats "
            "(its 95% bootstrap CI over items is drawn in the figure below), and the difference from the full "
            "model (fraction 1) with its unadjusted 95% CI, Holm over the three smaller fractions:"
        )
    )
    frac_items = items[items["reranker"].str.startswith("fraction:")]
    kl_frac = estimate(frac_items, ["reranker"], value="kl")
    kl_cmp = compare(
        frac_items,
        system="reranker",
        baseline="fraction:1",
        value="kl",
        describe="each smaller share vs all the feedback",
        commit=stage["git_commit"],
    )
    kl_table = kl_frac.set_index("reranker").join(
        kl_cmp.table[["delta", "delta_ci_low", "delta_ci_high", "p_holm"]]
    )
    print(kl_cmp.signature())
    kl_shown = comparison_table(
        kl_cmp.table.rename(index=share_label),
        names=["feedback used"],
        scale=1.0,
        digits=4,
        mean_header="KL (nats)",
        delta_header="Δ vs all the feedback",
    ).drop(columns="W / T / L", errors="ignore")
    # the reference every row is compared with, as its own row
    kl_shown.loc[share_label("fraction:1")] = (
        [f"{kl_table.loc['fraction:1', 'mean']:.4f}"] + ["(reference)"] + ["" for _ in kl_shown.columns[2:]]
    )
    display(kl_shown)
    rerank_ratings = load_table(RESULTS, "rating_predictions.parquet")
    # per_item_rating_scores averages a reranker's seeds per item: one call per seed
    seed_kl = pd.Series(
        {
            int(seed): per_item_rating_scores(join_annotators(rows, test_items))["kl"].mean()
            for seed, rows in rerank_ratings[rerank_ratings["reranker"] == "feedback_kl"].groupby("seed")
        }
    )
    if len(seed_kl) > 1:  # why the reranking chapter prints another KL for the same reranker
        display(
            Markdown(
                f"All the feedback is seed 0 of the reranking chapter's `feedback_kl` (KL {seed_kl.loc[0]:.4f}); "
                f"that chapter's tables average its {len(seed_kl)} seeds ({seed_kl.mean():.4f}; per seed "
                + ", ".join(f"{v:.4f}" for v in seed_kl)
                + "), so it prints another KL for the same reranker; for the same reason the accuracy table above "
                "(seed 0, Holm over the four shares) and the reranking chapter's (three seeds averaged per question, "
                "Holm over its rerankers) print slightly different accuracies, gains and p-values for it."
            )
        )


# %% mystnb={"figure": {"caption": "Left: accuracy gain of the reranked hybrid over the hybrid alone (points, 95% CI) against the share of the training feedback used; right: KL from the annotators' distribution to P_phi on feedback_test (nats, 95% CI; dashed: the training prior, a constant prediction). One seed per run; log-scaled x axis."}} tags=["hide-input"]
if CURVE:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    gain = curve.reset_index().assign(fraction=lambda f: f["reranker"].str.split(":").str[1].astype(float))
    gain = gain.assign(
        **{c: 100 * gain[c] for c in ("delta", "delta_ci_low", "delta_ci_high")}, system="feedback_kl"
    )
    plot_lines(gain, "fraction", "delta", "system", "delta_ci_low", "delta_ci_high", ax=axes[0])
    axes[0].axhline(0, color="grey", linewidth=0.8)
    axes[0].set_ylabel("accuracy gain over the RQA alone (points)")
    kl_plot = kl_frac.assign(
        fraction=kl_frac["reranker"].str.split(":").str[1].astype(float), system="feedback_kl"
    )
    plot_lines(kl_plot, "fraction", "mean", "system", "ci_low", "ci_high", ax=axes[1])
    axes[1].axhline(prior_kl, color="grey", linestyle="--", linewidth=0.8)
    axes[1].annotate(
        f"training prior {prior_kl:.3f}",
        (1.0, prior_kl),
        xycoords=("axes fraction", "data"),
        ha="right",
        va="bottom",
        fontsize="small",
        color="grey",
    )
    axes[1].set_ylabel("KL to annotators on feedback_test (nats)")
    shares = sorted(gain["fraction"].unique())
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xticks(shares, [f"{f:.0%}" for f in shares])
        ax.minorticks_off()
        ax.set_xlabel("share of the training feedback used (its questions)")
    for ax in axes:  # one line per panel: the y label says what it is
        ax.get_legend().remove()
    plt.tight_layout()
    plt.show()


# %% [markdown]
# ## 5. Transfer across domains
#
# For every feedback domain d: the RQA alone, the reranker trained on **all feedback**, the reranker trained **without d's feedback** (removed from training and from model selection), and a **size-matched control** that removes as many training pairs at random from all domains and selects on the same pairs as the leave-out run. The leave-out run and its control differ only in *which* feedback is missing: their difference on domain d is the value of d's own feedback beyond what the other domains' feedback gives (Δ = without d's feedback − control: a negative Δ in accuracy or a positive Δ in KL means d's own feedback matters; about zero means feedback transfers). Everything is measured on domain d's questions (and items) only; Holm over the four domains of each comparison.

# %% tags=["hide-input"]
if TRANSFER:
    transfer = transfer_outcomes(outcomes)
    CONTROL = "size-matched control"
    # one test per domain (the leave-out run against its control), Holm over the four domains
    OWN = [("without own domain", CONTROL)]
    FAMILY = "without own domain vs size-matched control, in each domain"
    qa_cmp = compare(
        transfer,
        system="training",
        pairs=OWN,
        within=["domain"],
        describe=FAMILY,
        commit=stage["git_commit"],
    )
    order = list(TRANSFER_RUNS.values())

    def run_means(frame, value="correct"):
        """Per domain (rows), every run's mean (columns) over the domain's own questions or items."""
        means = estimate(frame, ["domain", "training"], value=value)
        return means.pivot(index="domain", columns="training", values="mean").sort_index()

    qa = run_means(transfer)[order] * 100
    own = qa_cmp.table.xs("without own domain", level="training")
    qa["leave-out - control"] = 100 * own["delta"]
    qa["95% CI"] = [
        f"[{100 * a:+.2f}, {100 * b:+.2f}]"
        for a, b in zip(own["delta_ci_low"], own["delta_ci_high"], strict=True)
    ]
    qa["p (Holm)"] = own["p_holm"]
    print("QA accuracy@1 on the domain's own test questions (%); Δ = without own domain - control, in points")
    print("each domain resampled over its own questions:", qa_cmp.signature())
    SHORT = {"all feedback": "all", "without own domain": "without own", "size-matched control": "control"}
    display(
        qa.round(2)
        .rename(columns={**SHORT, "leave-out - control": "Δ", "95% CI": CI_HEADER})
        .assign(
            Δ=[f"{100 * d:+.2f}" for d in own["delta"]],
            **{
                CI_HEADER: [
                    interval(100 * a, 100 * b)
                    for a, b in zip(own["delta_ci_low"], own["delta_ci_high"], strict=True)
                ],
                # beside a null, the smallest true difference the test would find (80% power)
                "MDE": [
                    f"{100 * m:.2f}" if p >= 0.05 else ""
                    for m, p in zip(own["mde"], own["p_holm"], strict=True)
                ],
                "p (Holm)": [holm_p_text(r, n_resamples=qa_cmp.n_resamples) for _, r in own.iterrows()],
            },
        )
        .rename_axis(columns=None)
    )
else:
    display(Markdown(TRANSFER_NOTE))

# %% tags=["hide-input"]
if TRANSFER:
    item_transfer = transfer_outcomes(items)
    item_transfer = item_transfer[item_transfer["training"] != "RQA alone"]
    kl_t = compare(
        item_transfer,
        system="training",
        pairs=OWN,
        within=["domain"],
        describe=FAMILY,
        value="kl",
        commit=stage["git_commit"],
    )
    kl_tab = run_means(item_transfer, "kl")[order[1:]]
    own_kl = kl_t.table.xs("without own domain", level="training")
    kl_tab["leave-out - control"] = own_kl["delta"]
    kl_tab["95% CI"] = [
        f"[{a:+.4f}, {b:+.4f}]" for a, b in zip(own_kl["delta_ci_low"], own_kl["delta_ci_high"], strict=True)
    ]
    kl_tab["p (Holm)"] = own_kl["p_holm"]
    print("each domain resampled over its own items:", kl_t.signature())
    print("KL(annotators || P_phi) on the domain's own feedback_test items (nats; lower is better)")
    display(
        kl_tab.round(4)
        .rename(columns={**SHORT, "leave-out - control": "Δ", "95% CI": CI_HEADER})
        .assign(
            Δ=[f"{d:+.4f}" for d in own_kl["delta"]],
            **{
                CI_HEADER: [
                    interval(a, b, 4)
                    for a, b in zip(own_kl["delta_ci_low"], own_kl["delta_ci_high"], strict=True)
                ],
                "MDE": [
                    f"{m:.4f}" if p >= 0.05 else ""
                    for m, p in zip(own_kl["mde"], own_kl["p_holm"], strict=True)
                ],
                "p (Holm)": [holm_p_text(r, n_resamples=kl_t.n_resamples) for _, r in own_kl.iterrows()],
            },
        )
        .rename_axis(columns=None)
    )


# %% mystnb={"figure": {"caption": "KL from the annotators' distribution to P_phi on each domain's own feedback_test items (nats, lower is better; points with their 95% bootstrap CI over the domain's items), for the reranker trained on all feedback, the one trained without that domain's feedback and its size-matched control (the y axis does not start at 0: the points' distances, not their heights, compare)."}} tags=["hide-input"]
if TRANSFER:
    runs_kl = estimate(item_transfer, ["domain", "training"], value="kl")
    shown = runs_kl[runs_kl["training"].isin(["all feedback", "without own domain", "size-matched control"])]
    shown = shown.assign(
        training=pd.Categorical(
            shown["training"], ["all feedback", "without own domain", "size-matched control"], ordered=True
        )
    ).sort_values(["domain", "training"])
    ax = plot_grouped_points(
        shown.astype({"training": str}), "domain", "training", "mean", "ci_low", "ci_high"
    )
    ax.set_ylabel("KL to annotators, own domain (nats)")
    plt.show()


# %% [markdown]
# ## 6. Where the best system fails
#
# The best system is chosen by code: the (RQA, reranker) with the highest seed-averaged accuracy over the four feedback domains in `candidates.parquet` (for a reranked system, its first seed is analysed). Every wrong answer falls in one category by the gold passage's rank in the RQA's list: **misranked** (gold in the top 5, another passage picked: what a reranker could fix), **near miss** (gold at rank 6..20: a deeper reranker could reach it), **retrieval miss** (gold below 20).

# %% tags=["hide-input"]
all_outcomes = score_outcomes(candidates)
best = best_run(all_outcomes)
mine = all_outcomes[(all_outcomes["rqa"] == best[0]) & (all_outcomes["reranker"] == best[1])]
mine = mine[(mine["seed"] == mine["seed"].min()) & mine["domain"].isin(data.FEEDBACK_DOMAINS)]
ranks = load_table(RESULTS, "rqa_ranks.parquet")
categorised = failure_categories(mine, ranks)
acc = estimate(categorised, ["domain"]).set_index("domain")
shares = pd.crosstab(categorised["domain"], categorised["category"], normalize="index") * 100
table = (100 * acc[["mean", "ci_low", "ci_high"]]).join(shares.drop(columns="correct"))
table.insert(0, "questions", acc["n"].astype(int))
print(
    f"best system: {best[0]} + {best[1]}"
    + (" (the relevance model: trained on QA data only, no feedback)" if best[1] == "vanilla" else "")
    + "; accuracy and error shares in % of the domain's questions"
)
table.round(2).assign(
    **{
        "95% CI": [
            interval(lo, hi, 2, signed=False)
            for lo, hi in zip(table["ci_low"], table["ci_high"], strict=True)
        ]
    }
).rename(columns={"mean": "accuracy"})[
    ["questions", "accuracy", "95% CI", "misranked", "near miss", "retrieval miss"]
]

# %% [markdown]
# FAQ pages are split into many passages, so a wrong passage may still come from the gold's own page (a user scrolling the page would find the answer) or be a different page altogether. Share of wrong answers from the gold's page, by category:

# %% tags=["hide-input"]
data_dir = data.resolve_data_dir(None)
splits = {
    (d, s): data.load_qa_split(data_dir, d, s)
    for d, s in categorised[["domain", "split"]].drop_duplicates().values
}
wrong = page_overlap(categorised[categorised["category"] != "correct"], splits)
same = wrong.groupby(["domain", "category"])["same_page"].agg(["mean", "size"]).unstack("category")
pd.DataFrame(
    {
        c: [
            f"{100 * m:.0f}% of {int(n)}" if n == n else ""
            for m, n in zip(same[("mean", c)], same[("size", c)], strict=True)
        ]
        for c in same["mean"].columns
    },
    index=same.index,
).rename_axis(columns="wrong answers from the gold's page")

# %% [markdown]
# Examples: two seeded misranked and two near-miss answers per domain (picked and gold shown as page | headers):

# %% tags=["hide-input"]
examples = wrong[wrong["category"].isin(["misranked", "near miss"])]
examples = examples.sort_values(["domain", "category", "question_id"]).sample(frac=1.0, random_state=0)
examples = examples.groupby(["domain", "category"]).head(2).sort_values(["domain", "category"])
questions = alone.drop_duplicates(["domain", "split", "question_id"]).set_index(
    ["domain", "split", "question_id"]
)["question"]
examples = examples.assign(
    question=[questions[k] for k in zip(examples.domain, examples.split, examples.question_id, strict=True)]
)
display(
    Markdown(
        markdown_records(
            examples.assign(
                where=examples["domain"] + ", " + examples["category"],
                **{
                    "gold's rank by the RQA": examples["gold_rank"].astype(int),
                    "picked from the gold's page": examples["same_page"].map({True: "yes", False: "no"}),
                },
            ),
            "question",
            ["where", "gold's rank by the RQA", "picked", "gold", "picked from the gold's page"],
        )
    )
)

# %% [markdown]
# ## What it costs
#
# Training time of each experiment run present, measured when it was trained (the sum of its epochs' wall time, kept with the model in the cache and copied to the manifest), and the compute of the steps this stage's manifest recorded.

# %% tags=["hide-input"]
if RUNS_SHOWN:
    runs_cost = runs.assign(
        train_min=[
            sum(e["wall_s"] for e in stage["experiment_runs"][r]["history"]["epochs"]) / 60
            for r in runs["run"]
        ]
    )
    summary = (
        runs_cost.groupby("experiment", sort=False)["train_min"]
        .agg(["count", "mean", "sum"])
        .round(1)
        .rename(columns={"count": "runs", "mean": "training (min) per run", "sum": "training (min) in all"})
    )
    summary.index.name = "experiment"
    reused = "fraction/1/seed0" in set(runs_cost["run"])
    print(
        f"experiment runs present: {runs_cost.train_min.sum():.1f} min of training"
        + (" (fraction 1's included: its model is the rerank stage's feedback_kl, seed 0)" if reused else "")
        + f"; every step of `fqa run beyond` recorded in the manifest: {stage_cost(stage)[0]:.1f} min of compute"
    )
    display(summary)
else:
    display(Markdown(CURVE_NOTE or TRANSFER_NOTE or "*No experiment run is in `results/` yet.*"))

# %% [markdown]
# ## How the findings are computed
#
# The findings at the top of the page, one line each, from the tables above:

# %% tags=["hide-input"]
lines = []
if CURVE:
    # the plain answer first: does more feedback help the QA system, and the ratings?
    gains = learning.drop(index="none")
    gains = gains.loc[sorted(gains.index, key=lambda r: float(r.split(":")[1]))]
    below_prior = [r for r in gains.index if kl_table.loc[r, "mean"] < prior_kl]
    falling = bool((kl_table.loc[gains.index, "mean"].diff().dropna() < 0).all())
    lines.append(
        "**In plain words:** "
        + (
            "more feedback brings the predicted ratings closer to people's"
            if falling
            else "the predicted ratings do not come steadily closer to people's with more feedback"
        )
        + " (KL on feedback_test "
        + " → ".join(f"{kl_table.loc[r, 'mean']:.3f}" for r in gains.index)
        + f" nats from {gains.index[0].split(':')[1]} to {gains.index[-1].split(':')[1]} of the training "
        f"questions; the training prior: {prior_kl:.3f}"
        + (f", below it from {below_prior[0].split(':')[1]} on" if below_prior else ", never below it")
        + "), but "
        + (
            "no share of it makes the QA system measurably more accurate than the RQA alone "
            f"(Holm p ≥ {p_text(gains['p_holm'].min())}; MDE {gains['mde'].min():.2f} to {gains['mde'].max():.2f} "
            "points)."
            if (gains["p_holm"] >= 0.05).all()
            else "its effect on QA accuracy is in the table below."
        )
    )
for r, row in learning.drop(index="none").iterrows() if CURVE else []:
    kl_r = kl_table.loc[r, "mean"]
    lines.append(
        f"Feedback {r.split(':')[1]} ({row['training pairs']:.0f} pairs): over the RQA alone "
        f"{change_text(row, 1.0)}; "
        f"KL on feedback_test {kl_r:.4f} nats."
    )
for d in qa.index if TRANSFER else []:
    lines.append(
        f"Transfer, {d}: without its own feedback vs the size-matched control, QA {change_text(own.loc[d])}; "
        f"KL {change_text(own_kl.loc[d], 1.0, 4, 'nats')}."
    )
if TRANSFER:
    # transfer in plain words: does a domain's own feedback matter beyond the other domains'?
    qa_sig = [d for d in own.index if own.loc[d, "p_holm"] < 0.05]
    kl_worse = [d for d in own_kl.index if own_kl.loc[d, "p_holm"] < 0.05 and own_kl.loc[d, "delta"] > 0]
    lines.insert(
        1 if CURVE else 0,
        "**Transfer, in plain words:** leaving a domain's own feedback out "
        + (
            f"changes QA accuracy on it measurably only for {', '.join(qa_sig)}"
            if qa_sig
            else f"changes QA accuracy on that domain measurably for none of the {len(own)} domains (MDE "
            f"{100 * own['mde'].min():.2f} to {100 * own['mde'].max():.2f} points)"
        )
        + ", and makes the ratings of its items significantly further from people's "
        + (f"only for {', '.join(kl_worse)}" if kl_worse else "for none")
        + " (against a control with as many pairs removed at random; Holm over the domains).",
    )
if not CURVE:
    lines.append(
        "The learning curve is not shown yet: some of its runs of `fqa run beyond` are still planned (section 4 names them)."
    )
if not TRANSFER:
    lines.append(
        "The transfer experiment is not shown yet: some of its runs of `fqa run beyond` are still planned (section 5 names them)."
    )
errors = categorised[categorised["category"] != "correct"]["category"].value_counts(normalize=True)
share = {k: 100 * errors.get(k, 0.0) for k in ("misranked", "near miss", "retrieval miss")}
lines.append(
    f"Failures of {best[0]} + {best[1]}: accuracy {100 * acc['mean'].min():.1f}.."
    f"{100 * acc['mean'].max():.1f}% by domain; of its errors {share['misranked']:.0f}% misranked in "
    f"the top 5, {share['near miss']:.0f}% near misses (rank 6-20), {share['retrieval miss']:.0f}% "
    f"retrieval misses; {100 * wrong['same_page'].mean():.0f}% of wrong answers come from the gold's page."
)
glue("findings", Markdown("\n".join(f"- {line}" for line in lines)), display=False)

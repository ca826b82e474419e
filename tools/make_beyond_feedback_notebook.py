"""Write book/beyond_feedback.ipynb: how much feedback, transfer across domains, where it fails (issue 6)."""

from nbgen import code, md, write

cells = [
    md(
        "# Beyond the paper II: how much feedback, transfer across domains, where it fails\n\n"
        "Three questions the paper leaves open, for anyone who would collect feedback for their own QA system:\n\n"
        "4. **How much feedback is needed?** Learning curves of the feedback reranker (KL loss) trained on 10%, "
        "25%, 50% and 100% of the training questions.\n"
        "5. **Does feedback transfer?** Each feedback domain left out of training *and* model selection, tested "
        "on that domain: does feedback on one public-health agency's answers help another's QA system?\n"
        "6. **Where does the best system fail?** Per-domain error analysis with examples.\n\n"
        "All runs come from `fqa run beyond` (`feedback_experiments.parquet`, `feedback_experiment_ratings.parquet`; "
        "every model trained once and cached). Protocol `available` (DESIGN §3): the training feedback is WHO's "
        "feedback_train plus 80% of the four feedback_valid files' questions, 1,545 rated pairs, a fraction of the "
        "paper's (three feedback_train files are absent). The rerankers are the fully fine-tuned MiniLM "
        "cross-encoders of the reranking chapter (every layer trained), and they rescore the hybrid RQA's top 5. "
        "**One seed per run** (seed 0; fraction 1 is seed 0 of the reranking chapter's `feedback_kl`): a fully "
        "trained run costs about four minutes on two CPU cores, so three seeds of all 11 runs would take the "
        "stage past its 90-minute budget; every comparison below is a paired bootstrap over questions or items, "
        "which needs no second seed, but says nothing about the spread between seeds. Two measures: QA "
        "accuracy@1 over the four feedback domains' test questions, and the KL divergence of the predicted rating "
        "distribution from the annotators' on feedback_test (1,995 items, three annotators each), which sees "
        "changes the accuracy cannot."
    ),
    code(
        "import matplotlib.pyplot as plt\n"
        "import pandas as pd\n\n"
        "from fqa_analysis import beyond, data\n"
        "from fqa_analysis.candidates import CANDIDATE_COLUMNS\n"
        "from fqa_analysis.plots import plot_grouped_bars, plot_lines\n"
        "from fqa_analysis.ratings import item_ratings\n"
        "from fqa_analysis.rerank_analysis import join_annotators, per_item_rating_scores, score_outcomes\n"
        "from fqa_analysis.results import load_candidates, load_manifest, load_table, results_dir\n\n"
        "RESULTS = results_dir()\n"
        "candidates = load_candidates(RESULTS)\n"
        'stage = load_manifest(RESULTS)["stages"]["beyond"]\n'
        'RQA = stage["config"]["rqa"]\n'
        'experiments = load_table(RESULTS, "feedback_experiments.parquet")\n'
        "exp_candidates = beyond.experiment_candidates(experiments, candidates, RQA)\n"
        'alone = candidates[(candidates["rqa"] == RQA) & (candidates["reranker"] == "none")]\n'
        'alone = alone[alone["domain"].isin(data.FEEDBACK_DOMAINS)]\n'
        "outcomes = score_outcomes(pd.concat([alone, exp_candidates[CANDIDATE_COLUMNS]], ignore_index=True))\n"
        'test_items = item_ratings(data.feedback_frame(data.available_feedback(data.resolve_data_dir(None), "test")))\n'
        'exp_ratings = load_table(RESULTS, "feedback_experiment_ratings.parquet")\n'
        'exp_ratings["reranker"] = exp_ratings["experiment"] + ":" + exp_ratings["setting"]\n'
        "items = beyond.item_outcomes(per_item_rating_scores(join_annotators(exp_ratings, test_items)))\n"
        'runs = pd.DataFrame([{"run": k, **{c: v for c, v in r.items() if c != "history"}} for k, r in stage["experiment_runs"].items()])\n'
        'runs[["experiment", "setting", "seed"]] = runs["run"].str.split("/", expand=True)\n'
        'print(f"RQA {RQA}; {len(runs)} reranker runs; {outcomes.question_id.size:,} (run, question) outcomes")'
    ),
    md(
        "## 4. How much feedback is needed\n\n"
        "Fractions are nested (the 10% questions lie inside the 25%, and so on) and stratified by domain; model "
        "selection always uses the same held-out pairs; fraction 1 is the `feedback_kl` model (seed 0) of the "
        "reranking chapter. QA accuracy (points) and the difference from the RQA alone with its 95% CI and "
        "Holm-corrected p (paired bootstrap over the 1,992 questions, stratified by test set, B = 10,000):"
    ),
    code(
        'fraction_rows = outcomes[outcomes["reranker"].str.startswith("fraction:") | (outcomes["reranker"] == "none")]\n'
        'curve_cmp = beyond.compare_within(fraction_rows, ["rqa"], "reranker", "none")\n'
        'accuracy = fraction_rows.groupby("reranker")["correct"].mean().rename("accuracy")\n'
        'sizes = runs[runs["experiment"] == "fraction"].groupby("setting")["fit_pairs"].mean()\n'
        'learning = curve_cmp.set_index("reranker")[["delta", "delta_ci_low", "delta_ci_high", "p_value", "p_holm"]]\n'
        'learning = (100 * accuracy).to_frame().join(100 * learning[["delta", "delta_ci_low", "delta_ci_high"]]).join(learning[["p_value", "p_holm"]])\n'
        'learning.insert(0, "training pairs", [sizes.get(r.split(":")[-1], 0) for r in learning.index])\n'
        'print(curve_cmp["signature"].iloc[0])\n'
        "learning.round(3)"
    ),
    md(
        "Rating quality on feedback_test as the feedback grows: mean KL(annotators || P_phi) in nats with a 95% "
        "bootstrap CI over items, and the difference from the full model (fraction 1), "
        "Holm over the three smaller fractions:"
    ),
    code(
        'frac_items = items[items["reranker"].str.startswith("fraction:")]\n'
        'kl_frac = beyond.accuracy_by(frac_items, ["reranker"], column="kl")\n'
        'kl_cmp = beyond.compare_within(frac_items.assign(all="all"), ["all"], "reranker", "fraction:1", column="kl")\n'
        'kl_table = kl_frac.set_index("reranker").join(kl_cmp.set_index("reranker")[["delta", "delta_ci_low", "delta_ci_high", "p_holm"]])\n'
        'print(kl_cmp["signature"].iloc[0])\n'
        "kl_table.round(4)"
    ),
    code(
        "fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))\n"
        'gain = curve_cmp[curve_cmp["reranker"] != "none"].assign(fraction=lambda f: f["reranker"].str.split(":").str[1].astype(float))\n'
        'gain = gain.assign(**{c: 100 * gain[c] for c in ("delta", "delta_ci_low", "delta_ci_high")}, system="feedback_kl")\n'
        'plot_lines(gain, "fraction", "delta", "system", "delta_ci_low", "delta_ci_high", ax=axes[0])\n'
        'axes[0].axhline(0, color="grey", linewidth=0.8)\n'
        'axes[0].set_ylabel("accuracy gain over the RQA alone (points)")\n'
        'kl_plot = kl_frac.assign(fraction=kl_frac["reranker"].str.split(":").str[1].astype(float), system="feedback_kl")\n'
        'plot_lines(kl_plot, "fraction", "mean", "system", "ci_low", "ci_high", ax=axes[1])\n'
        'axes[1].set_ylabel("KL to annotators on feedback_test (nats)")\n'
        "for ax in axes:\n"
        '    ax.set_xscale("log")\n'
        '    ax.set_xlabel("share of the training questions")\n'
        "plt.tight_layout()\n"
        "plt.show()"
    ),
    md(
        "## 5. Transfer across domains\n\n"
        "For every feedback domain d: the RQA alone, the reranker trained on **all feedback**, the reranker "
        "trained **without d's feedback** (removed from training and from model selection), and a **size-matched "
        "control** that removes as many training pairs at random from all domains and selects on the same pairs "
        "as the leave-out run. The leave-out run and its control differ only in *which* feedback is missing: "
        "their difference on domain d is the value of d's own feedback beyond what the other domains' feedback "
        "gives (positive = own-domain feedback matters, about zero = feedback transfers). Everything is measured "
        "on domain d's questions (and items) only; Holm over the four domains of each comparison."
    ),
    code(
        "transfer = beyond.transfer_outcomes(outcomes)\n"
        'qa_cmp = beyond.compare_within(transfer, ["domain"], "training", "size-matched control")\n'
        "order = list(beyond.TRANSFER_RUNS.values())\n"
        'qa = qa_cmp.pivot_table(index="domain", columns="training", values="mean")[order] * 100\n'
        'own = qa_cmp[qa_cmp["training"] == "without own domain"].set_index("domain")\n'
        'qa["leave-out - control"] = 100 * own["delta"]\n'
        'qa["95% CI"] = [f"[{100 * a:+.2f}, {100 * b:+.2f}]" for a, b in zip(own["delta_ci_low"], own["delta_ci_high"], strict=True)]\n'
        'qa["p (Holm)"] = own["p_holm"]\n'
        'print("QA accuracy@1 on the domain\'s own test questions (points)")\n'
        'print("each domain resampled over its own questions; first domain:", qa_cmp["signature"].iloc[0])\n'
        "qa.round(3)"
    ),
    code(
        "item_transfer = beyond.transfer_outcomes(items)\n"
        'item_transfer = item_transfer[item_transfer["training"] != "RQA alone"]\n'
        'kl_t = beyond.compare_within(item_transfer, ["domain"], "training", "size-matched control", column="kl")\n'
        'kl_tab = kl_t.pivot_table(index="domain", columns="training", values="mean")[order[1:]]\n'
        'own_kl = kl_t[kl_t["training"] == "without own domain"].set_index("domain")\n'
        'kl_tab["leave-out - control"] = own_kl["delta"]\n'
        'kl_tab["95% CI"] = [f"[{a:+.4f}, {b:+.4f}]" for a, b in zip(own_kl["delta_ci_low"], own_kl["delta_ci_high"], strict=True)]\n'
        'kl_tab["p (Holm)"] = own_kl["p_holm"]\n'
        'print("KL(annotators || P_phi) on the domain\'s own feedback_test items (nats; lower is better)")\n'
        "kl_tab.round(4)"
    ),
    code(
        'shown = kl_t[kl_t["training"] != "size-matched control"].assign(value=lambda f: f["mean"])\n'
        'ax = plot_grouped_bars(shown, "domain", "training", "value")\n'
        'ax.set_ylabel("KL to annotators, own domain (nats)")\n'
        "ax.set_ylim(shown['value'].min() * 0.95, shown['value'].max() * 1.03)\n"
        "plt.show()"
    ),
    md(
        "## 6. Where the best system fails\n\n"
        "The best system is chosen by code: the (RQA, reranker) with the highest seed-averaged accuracy over the "
        "four feedback domains in `candidates.parquet` (for a reranked system, its first seed is analysed). "
        "Every wrong answer falls in one category by the gold passage's rank in the RQA's list: **misranked** "
        "(gold in the top 5, another passage picked: what a reranker could fix), **near miss** (gold at rank "
        "6..20: a deeper reranker could reach it), **retrieval miss** (gold below 20)."
    ),
    code(
        "all_outcomes = score_outcomes(candidates)\n"
        "best = beyond.best_run(all_outcomes)\n"
        'mine = all_outcomes[(all_outcomes["rqa"] == best[0]) & (all_outcomes["reranker"] == best[1])]\n'
        'mine = mine[(mine["seed"] == mine["seed"].min()) & mine["domain"].isin(data.FEEDBACK_DOMAINS)]\n'
        'ranks = load_table(RESULTS, "rqa_ranks.parquet")\n'
        "categorised = beyond.failure_categories(mine, ranks)\n"
        'acc = beyond.accuracy_by(categorised, ["domain"]).set_index("domain")\n'
        'shares = pd.crosstab(categorised["domain"], categorised["category"], normalize="index") * 100\n'
        'table = (100 * acc[["mean", "ci_low", "ci_high"]]).join(shares.drop(columns="correct"))\n'
        'table.insert(0, "questions", acc["n"].astype(int))\n'
        'print(f"best system: {best[0]} + {best[1]}; accuracy and error shares in % of the domain\'s questions")\n'
        "table.round(2)"
    ),
    md(
        "FAQ pages are split into many passages, so a wrong passage may still come from the gold's own page "
        "(a user scrolling the page would find the answer) or be a different page altogether. Share of wrong "
        "answers from the gold's page, by category:"
    ),
    code(
        "data_dir = data.resolve_data_dir(None)\n"
        'splits = {(d, s): data.load_qa_split(data_dir, d, s) for d, s in categorised[["domain", "split"]].drop_duplicates().values}\n'
        'wrong = beyond.page_overlap(categorised[categorised["category"] != "correct"], splits)\n'
        'same = wrong.groupby(["domain", "category"])["same_page"].agg(["mean", "size"]).unstack("category")\n'
        'same["mean"] = (100 * same["mean"]).round(1)\n'
        "same"
    ),
    md(
        "Examples: two seeded misranked and two near-miss answers per domain (picked and gold shown as page | headers):"
    ),
    code(
        'examples = wrong[wrong["category"].isin(["misranked", "near miss"])]\n'
        'examples = examples.sort_values(["domain", "category", "question_id"]).sample(frac=1.0, random_state=0)\n'
        'examples = examples.groupby(["domain", "category"]).head(2).sort_values(["domain", "category"])\n'
        'questions = alone.drop_duplicates(["domain", "split", "question_id"]).set_index(["domain", "split", "question_id"])["question"]\n'
        "examples = examples.assign(question=[questions[k] for k in zip(examples.domain, examples.split, examples.question_id, strict=True)])\n"
        'with pd.option_context("display.max_colwidth", 90):\n'
        '    display(examples[["domain", "category", "gold_rank", "question", "picked", "gold", "same_page"]].reset_index(drop=True))'
    ),
    md(
        "## What it costs\n\n"
        "Training time of each experiment run, measured when it was trained (the sum of its epochs' wall "
        "time, kept with the model in the cache and copied to the manifest), and the compute of the steps "
        "this stage's manifest recorded. The runs were trained and scored by an earlier invocation of "
        "the stage that was interrupted (to reuse the RQA rows instead of retraining the fine-tuned MiniLM) "
        "before it wrote its manifest, so their scoring time is not recorded here."
    ),
    code(
        'runs_cost = runs.assign(train_s=[sum(e["wall_s"] for e in stage["experiment_runs"][r]["history"]["epochs"]) for r in runs["run"]])\n'
        'summary = runs_cost.groupby("experiment")["train_s"].agg(["count", "mean", "sum"]).round(1)\n'
        'recorded = sum(v["compute_s"] for v in stage["timings"].values())\n'
        'print(f"experiment runs: {runs_cost.train_s.sum() / 60:.1f} min of training "\n'
        '      "(fraction 1, included, is the rerank stage\'s model); "\n'
        '      f"steps recorded in the manifest: {recorded / 60:.1f} min")\n'
        "summary"
    ),
    md(
        "## Findings\n\nOne line each, computed from the tables above (the closing note of issue 6 repeats them):"
    ),
    code(
        "lines = []\n"
        "for r, row in learning.drop(index='none').iterrows():\n"
        "    kl_r = kl_table.loc[r, 'mean']\n"
        "    lines.append(\n"
        "        f\"Feedback {r.split(':')[1]} ({row['training pairs']:.0f} pairs): {row.delta:+.2f} points \"\n"
        '        f"over the RQA alone [{row.delta_ci_low:+.2f}, {row.delta_ci_high:+.2f}], Holm p {row.p_holm:.3g}; "\n'
        '        f"KL on feedback_test {kl_r:.4f} nats."\n'
        "    )\n"
        "for d in qa.index:\n"
        "    q_d, q_p = qa.loc[d, 'leave-out - control'], qa.loc[d, 'p (Holm)']\n"
        "    k_d, k_p = kl_tab.loc[d, 'leave-out - control'], kl_tab.loc[d, 'p (Holm)']\n"
        "    lines.append(\n"
        '        f"Transfer, {d}: without its own feedback vs the size-matched control, QA {q_d:+.2f} points "\n'
        '        f"(Holm p {q_p:.3g}), KL {k_d:+.4f} nats (Holm p {k_p:.3g})."\n'
        "    )\n"
        "errors = categorised[categorised['category'] != 'correct']['category'].value_counts(normalize=True)\n"
        "share = {k: 100 * errors.get(k, 0.0) for k in ('misranked', 'near miss', 'retrieval miss')}\n"
        "lines.append(\n"
        "    f\"Failures of {best[0]} + {best[1]}: accuracy {100 * acc['mean'].min():.1f}..\"\n"
        "    f\"{100 * acc['mean'].max():.1f}% by domain; of its errors {share['misranked']:.0f}% misranked in \"\n"
        "    f\"the top 5, {share['near miss']:.0f}% near misses (rank 6-20), {share['retrieval miss']:.0f}% \"\n"
        "    f\"retrieval misses; {100 * wrong['same_page'].mean():.0f}% of wrong answers come from the gold's page.\"\n"
        ")\n"
        'print("\\n".join(f"- {line}" for line in lines))'
    ),
    md(
        "**Reading.** More feedback brings the reranker's rating distributions measurably closer to the annotators' (every smaller fraction has a significantly higher KL than the full feedback, 10% by far the most) but moves QA accuracy at no size: what the reranker learns from ratings does not tell it which of five similar passages is the gold one. In rating quality, transfer is domain-specific: without its own feedback the reranker is significantly worse on Australia's items than the size-matched control, on UK's it is slightly better, on CDC's and WHO's no different; QA accuracy differs in no domain. The best system's errors are mostly misranked top-5 answers, and about half of all wrong answers come from the gold passage's own FAQ page: near-duplicates that a passage-level metric counts as wrong, though a user reading the page may find the answer."
    ),
]

write("book/beyond_feedback.ipynb", cells)

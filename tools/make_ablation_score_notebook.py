"""Write book/ablation_score.ipynb: P(Excellent) or the expected rating as the reranker's score."""

from nbgen import code, hidden, md, write

cells = [
    md(
        "# Ablation: P(Excellent) or the expected rating\n\n"
        "The paper adds the reranker's probability of the top rating to the RQA's probability, "
        "S = P_theta + P_phi(Excellent). That throws away the rest of the rating distribution: a passage "
        "the reranker thinks is surely Acceptable scores the same as one it thinks is surely Bad. The "
        "alternative keeps it: S = P_theta + E[y]/3, the expected rating on the 0..3 scale (Bad 0, Could be "
        "improved 1, Acceptable 2, Excellent 3) divided by 3 so that both scores lie in [0, 1]. Both rules are "
        "applied to the **same** trained rerankers (every variant, every seed, every RQA system); only the "
        "scoring changes, so the comparison is paired question by question."
    ),
    hidden(
        "import matplotlib.pyplot as plt\n"
        "import pandas as pd\nfrom IPython.display import Markdown\n\n"
        "from fqa_analysis.plots import plot_grouped_bars\n"
        "from fqa_analysis.report import mean_sd_table\n"
        "from fqa_analysis.rerank_analysis import score_ablation, score_outcomes, score_separation, seed_table\n"
        "from fqa_analysis.results import load_candidates, load_manifest, results_dir\n\n"
        "RESULTS = results_dir()\n"
        "candidates = load_candidates(RESULTS)\n"
        'stage = load_manifest(RESULTS)["stages"]["rerank"]\n'
        'SYSTEMS = [s for s in ("bm25", "minilm", "minilm_ft", "hybrid") if s in set(candidates["rqa"])]\n'
        'VARIANTS = list(stage["config"]["variants"])\n'
        'rated = candidates[candidates["reranker"] != "none"]\n'
        "ablation = score_ablation(candidates)\n"
        "separation = score_separation(candidates)"
    ),
    md("## Findings\n\nComputed from `results/` by the cells of this page:"),
    hidden(
        'significant = ablation[ablation["p_holm"] < 0.05]\n'
        'better = significant[significant["delta"] > 0]\n'
        'worse = significant[significant["delta"] < 0]\n'
        "hyb = ablation[ablation['rqa'] == 'hybrid'].set_index('reranker')\n"
        "sep = separation[separation['rqa'] == 'hybrid'].set_index('reranker')\n"
        "lines = [\n"
        '    f"E[y]/3 is significantly better than P(Excellent) in {len(better)} of {len(ablation)} (RQA, reranker) "\n'
        '    f"pairs, significantly worse in {len(worse)}, and not significantly different in "\n'
        '    f"{len(ablation) - len(significant)} (Holm-corrected p < 0.05); mean difference "\n'
        "    f\"{100 * ablation['delta'].mean():+.2f} points.\",\n"
        '    "On the hybrid RQA, E[y]/3 - P(Excellent) in points: "\n'
        "    + '; '.join(f\"{r} {100 * row['delta']:+.2f} (Holm p {row['p_holm']:.3g})\" for r, row in hyb.iterrows()) + '.',\n"
        '    "AUC of the two scores on the hybrid\'s top 5 (P(Excellent) / E[y]/3): "\n'
        "    + '; '.join(f\"{r} {row['auc_p_excellent']:.3f} / {row['auc_expected_rating']:.3f}\" for r, row in sep.iterrows()) + '.',\n"
        "]\n"
        'display(Markdown("\\n".join(f"- {x}" for x in lines)))'
    ),
    md(
        "## Accuracy under both rules\n\n"
        "Overall accuracy@1 (four feedback domains, micro), mean ± sd over the three seeds, per RQA system "
        "and reranker:"
    ),
    code(
        "tables = []\n"
        'for rule in ("p_excellent", "expected_rating"):\n'
        "    t = seed_table(score_outcomes(rated, rule))\n"
        '    tables.append(t[t["test_set"] == "overall (micro)"].assign(test_set=rule))\n'
        "both = pd.concat(tables, ignore_index=True)\n"
        "rescored = [s for s in SYSTEMS if s in set(rated['rqa'])]\n"
        "mean_sd_table(both, row_order=[(r, v) for r in rescored for v in VARIANTS], digits=2)"
    ),
    md(
        "## Is the difference real?\n\n"
        "For every (RQA, reranker): seed-averaged per-question outcomes under each rule, a paired bootstrap "
        "over the 1,992 overall questions (resampled within test sets, B = 10,000) of "
        "accuracy(E[y]/3) - accuracy(P(Excellent)), two-sided p, Holm-corrected over all "
        "(RQA, reranker) pairs of the table. `changed_picks` is the share of (question, seed) answers that differ "
        "between the rules; W/T/L counts questions where E[y]/3 is better / equal / worse."
    ),
    code(
        "shown = ablation.copy()\n"
        'for c in ["acc_p_excellent", "acc_expected_rating", "delta", "delta_ci_low", "delta_ci_high"]:\n'
        "    shown[c] = (100 * shown[c]).round(2)\n"
        'shown["changed_picks"] = shown["changed_picks"].round(4)\n'
        "shown.round({'p_value': 4, 'p_holm': 4})"
    ),
    code(
        "plot_data = ablation.assign(delta_pts=100 * ablation['delta'])\n"
        'ax = plot_grouped_bars(plot_data, "rqa", "reranker", "delta_pts")\n'
        'ax.axhline(0, color="grey", linewidth=0.8)\n'
        'ax.set_ylabel("accuracy(E[y]/3) - accuracy(P(Exc)), points")\n'
        "plt.show()"
    ),
    md(
        "## What decides the difference\n\n"
        "Two properties of a score decide what adding it to P_theta does. **Separation**: how well the score "
        "alone ranks the gold passage above the other top-5 candidates (ROC AUC over all candidates of all "
        "seeds). **Spread**: how much the score varies within one question's five candidates (mean "
        "within-question sd). With S = P_theta + score, a score with a larger spread than P_theta overrides "
        "the RQA's order; a flat score leaves the RQA in charge. E[y]/3 averages over the whole distribution, "
        "so it also credits answers the reranker thinks Acceptable rather than Excellent."
    ),
    code("separation.set_index(['rqa', 'reranker']).round(4)"),
    md(
        "With the fully trained rerankers the two rules still hardly differ, for a reason the spread table "
        "shows. The rerankers that separate gold from the other candidates (`vanilla`, `combined`) learned "
        "from pseudo-ratings that are only Excellent or Bad, so they put almost no mass on the middle ratings "
        "and E[y]/3 is nearly P(Excellent) for them (few or no changed picks). The feedback-only rerankers "
        "spread mass over all four ratings, which is where the rules can disagree, but their scores barely "
        "vary within one question's five candidates (a spread of about a twentieth of P_theta's), so the RQA "
        "decides almost every pick under either rule. The question of the ablation needs a reranker that both "
        "separates gold passages and grades the others; none of this configuration does both."
    ),
    code(
        "fb = rated[rated['domain'].isin(['Australia', 'CDC', 'UK', 'WHO'])]\n"
        "mass = fb.groupby('reranker')[['p_bad', 'p_could_be_improved', 'p_acceptable', 'p_excellent']].mean()\n"
        "mass.reindex(VARIANTS).round(3)  # mean predicted distribution over the rescored candidates"
    ),
]

write("book/ablation_score.ipynb", cells)

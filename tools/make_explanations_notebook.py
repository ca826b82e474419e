"""Write book/explanations.ipynb: how human-like the generated explanations are (issue 5)."""

from nbgen import code, md, write

cells = [
    md(
        "# Explanations\n\n"
        "FeedbackQA's annotators explained every rating in a sentence or two (\"Gives requirements and links "
        'in response."). An explanation lets a user judge an answer without reading all of it. This chapter '
        "measures how close explainers trainable on two CPU cores come to the annotators.\n\n"
        "**Explainers** (`fqa_analysis.explain`), all behind `explain(question, passage, rating) -> text`:\n\n"
        "- `template`: one fixed, hand-written sentence per rating (the floor);\n"
        "- `retrieval_same_rating`: the explanation of the most similar training (question, passage) pair "
        "with the same rating (zero-shot MiniLM embeddings, cosine); `retrieval_any_rating`: the same without "
        "the rating filter;\n"
        "- `generator`: an encoder-decoder warm-started from two copies of all-MiniLM-L6-v2 (transformers "
        "`EncoderDecoderModel`; the decoder's cross-attention and output layer start untrained, since no "
        "English seq2seq weights are on PyPI), fine-tuned on (rating, question, passage) -> explanation, one "
        "example per annotator, the epoch with the lowest held-out loss kept; greedy decoding without repeated "
        "trigrams.\n\n"
        "**Training data**: the rerankers' (protocol `available`: WHO feedback_train and 80% of the questions "
        "of the four feedback_valid files; the other 20% choose the generator's epoch). feedback_test is never "
        "trained on.\n\n"
        "**Evaluation** on feedback_test (three explanations per item). A human's explanation is scored "
        "against the *other two*; to compare fairly, a system's explanation is scored against each of the "
        "three pairs of two and the three scores are averaged, so both see two references. Metrics: ROUGE-L "
        "F1 (best reference), sentence BLEU (sacrebleu, exp smoothing, both references), embedding similarity "
        "(the best cosine to a reference, zero-shot MiniLM), and **consistency**: a logistic-regression rating "
        "classifier on MiniLM embeddings of explanation text (trained on the training explanations) labels "
        "the explanation, which is consistent when the label is the rating it explains.\n\n"
        "**Which rating is explained**: `predicted`, the `feedback_kl` reranker's (seed 0) most likely rating "
        "for the item (what a deployed system knows), or `majority`, the annotators' majority (ties to the "
        "lower rating), which isolates explanation quality from rating errors."
    ),
    code(
        "import pandas as pd\n\n"
        "from fqa_analysis.report import ci_table\n"
        "from fqa_analysis.results import load_manifest, load_table, results_dir\n"
        "from fqa_analysis.stats import bootstrap_means, paired_bootstrap\n"
        "from fqa_analysis.text_metrics import corpus_bleu\n\n"
        'pd.set_option("display.max_colwidth", 200)\n'
        "RESULTS = results_dir()\n"
        'stage = load_manifest(RESULTS)["stages"]["explain"]\n'
        'explanations = load_table(RESULTS, "explanations.parquet")\n'
        'humans = load_table(RESULTS, "explanation_humans.parquet")\n'
        'top1 = load_table(RESULTS, "explanations_top1.parquet")\n'
        'METRICS = ["rouge_l", "bleu", "embedding_sim", "consistent"]\n'
        'EXPLAINERS = list(dict.fromkeys(explanations["explainer"]))\n'
        "print(f\"protocol {stage['protocol']}; {explanations[['domain', 'item_id']].drop_duplicates().shape[0]} \"\n"
        "      f\"feedback_test items; training explanations (fit, select): {stage['training_explanations']}\")"
    ),
    md(
        "## How human-like: the metric table\n\n"
        "Mean over items with a 95% percentile bootstrap interval (B = 10,000, resampled within domains). The "
        "`human` row is each annotator against the other two, averaged over the three annotators of an item: "
        "the ceiling."
    ),
    code(
        'keys = ["domain", "item_id"]\n'
        "human_items = humans.groupby(keys, sort=False)[METRICS].mean()\n"
        "long = []\n"
        'for source in ("predicted", "majority"):\n'
        '    part = explanations[explanations["rating_source"] == source]\n'
        "    for metric in METRICS:\n"
        '        wide = part.pivot_table(index=keys, columns="explainer", values=metric, sort=False)[EXPLAINERS]\n'
        '        wide["human"] = human_items[metric].reindex(wide.index)\n'
        '        strata = list(wide.index.get_level_values("domain"))\n'
        '        ci = bootstrap_means(wide.reset_index(drop=True), strata, "micro")\n'
        "        for name, r in ci.iterrows():\n"
        '            long.append({"system": f"{name}" if name == "human" else f"{name} ({source})",\n'
        '                         "metric": metric, "accuracy": r["mean"], "ci_low": r["ci_low"], "ci_high": r["ci_high"]})\n'
        'long = pd.DataFrame(long).drop_duplicates(["system", "metric"])\n'
        'rows = [f"{e} ({s})" for s in ("predicted", "majority") for e in EXPLAINERS] + ["human"]\n'
        'ci_table(long, rows="system", columns="metric", row_order=rows, column_order=METRICS, digits=1)'
    ),
    code(
        'print("cells: mean x 100 [95% CI]; references: the two other annotators (leave-one-out); "\n'
        '      "bootstrap over items stratified by domain, B=10000, seed=0")'
    ),
    md(
        "Corpus BLEU (sacrebleu's system-level score, which pools n-gram counts over items and is the number "
        "usually reported), with each item's first two annotators as references for every system and the "
        "third annotator as the human:"
    ),
    code(
        "refs = humans.pivot_table(index=keys, columns='annotator', values='explanation', aggfunc='first', sort=False)\n"
        "rows = []\n"
        'for (explainer, source), part in explanations.groupby(["explainer", "rating_source"], sort=False):\n'
        "    part = part.set_index(keys).reindex(refs.index)\n"
        "    pairs = refs[[0, 1]].to_numpy().tolist()\n"
        '    rows.append({"system": f"{explainer} ({source})", "corpus_bleu": 100 * corpus_bleu(part["explanation"].tolist(), pairs)})\n'
        'rows.append({"system": "human (annotator 3)", "corpus_bleu": 100 * corpus_bleu(refs[2].tolist(), refs[[0, 1]].to_numpy().tolist())})\n'
        'pd.DataFrame(rows).set_index("system").round(2)'
    ),
    md(
        "## Are the differences real, and how far from the ceiling?\n\n"
        "Each explainer against the template floor on the predicted rating, per metric: paired bootstrap over "
        "items (stratified by domain), Holm over the explainers of a metric. The last column is the share of "
        "the human ceiling reached (system mean / human mean)."
    ),
    code(
        "rows = []\n"
        'part = explanations[explanations["rating_source"] == "predicted"]\n'
        "for metric in METRICS:\n"
        '    wide = part.pivot_table(index=keys, columns="explainer", values=metric, sort=False)[EXPLAINERS]\n'
        '    strata = list(wide.index.get_level_values("domain"))\n'
        '    cmp = paired_bootstrap(wide.reset_index(drop=True), "template", strata)\n'
        "    frame = cmp.to_frame().reset_index()\n"
        '    frame["metric"] = metric\n'
        '    frame["share_of_human"] = frame["mean"] / human_items[metric].mean()\n'
        "    rows.append(frame)\n"
        "tests = pd.concat(rows, ignore_index=True)\n"
        'tests[["metric", "system", "mean", "delta", "delta_ci_low", "delta_ci_high", "p_holm", "share_of_human"]].round(4)'
    ),
    md(
        "**What this shows.** On word overlap (ROUGE-L, BLEU) the generator matches or exceeds a human's overlap "
        "with the other two annotators, and even the fixed template comes close: FeedbackQA explanations share "
        'stock phrases ("the answer ...", "does not address the question"), so overlap metrics reward '
        "generic text. Embedding similarity separates the systems from the humans: every explainer stays "
        "well below the human ceiling, the retrieval explainers closest. Consistency (next section) shows the "
        "generator's main failure: trained for three epochs on about 3,000 explanations with an untrained "
        "decoder head, it largely ignores the rating it is asked to explain and repeats one frequent phrasing "
        "(see the examples), so its explanations agree with the rating about as often as the retrieval "
        "explainer without the rating filter. The template is consistent by construction, which is why "
        "consistency has to be read together with similarity."
    ),
    md(
        "## Consistency with the rating\n\n"
        "The rating classifier's accuracy on held-out *human* explanations bounds what the consistency column "
        'can show: a human explanation is "consistent" only as often as the classifier reads it right.'
    ),
    code(
        'print(f"rating classifier accuracy on held-out human explanations: "\n'
        "      f\"{stage['rating_classifier_heldout_accuracy']:.3f}\")\n"
        'by_rating = explanations[explanations["rating_source"] == "majority"].groupby(["explainer", "rating"])["consistent"].mean()\n'
        'human_by_rating = humans.groupby("rating")["consistent"].mean().rename("human")\n'
        "by_rating.unstack(0).join(human_by_rating).round(3)"
    ),
    md(
        "## Side by side\n\n"
        "A seeded sample of feedback_test items: the question, the answer's page title, the three annotators' "
        "ratings and explanations, and every explainer's output for the reranker's predicted rating."
    ),
    code(
        'sample = explanations[explanations["rating_source"] == "predicted"]\n'
        "chosen = sample[keys].drop_duplicates().sample(n=min(4, len(sample)), random_state=7)\n"
        "for _, key in chosen.iterrows():\n"
        "    d, i = key['domain'], key['item_id']\n"
        "    h = humans[(humans['domain'] == d) & (humans['item_id'] == i)]\n"
        "    s = sample[(sample['domain'] == d) & (sample['item_id'] == i)]\n"
        "    print(f\"[{d} item {i}] predicted rating: {s['rating'].iloc[0]}\")\n"
        "    for _, r in h.iterrows():\n"
        "        print(f\"  human {r['annotator'] + 1} ({r['rating']}): {r['explanation']}\")\n"
        "    for _, r in s.iterrows():\n"
        "        print(f\"  {r['explainer']}: {r['explanation']}\")\n"
        "    print()"
    ),
    md(
        "## Explaining the QA system's own answers\n\n"
        "What a user would see: the best reranked system's answer (seed 0) to a test question, the reranker's "
        "predicted rating of that answer, and each explainer's explanation. A seeded sample:"
    ),
    code(
        "print(f\"system: {stage['top1_system']}\")\n"
        "cols = ['domain', 'question', 'is_gold', 'predicted_rating', *EXPLAINERS]\n"
        "top1.sample(n=min(5, len(top1)), random_state=3)[cols].reset_index(drop=True)"
    ),
    code(
        "shares = top1.groupby('is_gold')['predicted_rating'].value_counts(normalize=True).unstack(fill_value=0)\n"
        "shares.round(3)  # predicted rating of right (True) and wrong (False) answers"
    ),
    md("## Cost\n\nFrom `results/manifest.json` (stage `explain`, this 2-core machine):"),
    code(
        'timings = pd.DataFrame(stage["timings"]).T\n'
        "print(f\"whole stage: {timings['compute_s'].sum() / 60:.1f} min of compute\")\n"
        'timings[["compute_s", "compute_peak_rss_mb", "wall_s", "from_cache"]]'
    ),
    code('pd.DataFrame(stage["generator_history"]["epochs"]).set_index("epoch").round(4)'),
]

write("book/explanations.ipynb", cells)

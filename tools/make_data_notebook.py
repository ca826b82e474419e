"""Write book/data.ipynb (cells only; `make notebooks` executes it and stores outputs)."""

from nbgen import code, md, write

cells = [
    md(
        "# The FeedbackQA data\n\n"
        "What the evaluation is run on: five public-health FAQ domains, the questions asked of each, "
        "the passage pool each question is answered from, and the feedback that users gave on answers. "
        "Every number on this page is computed here from the data files by `fqa_analysis` functions "
        "that the unit tests check; nothing is typed in by hand."
    ),
    code(
        "import matplotlib.pyplot as plt\n"
        "import pandas as pd\n\n"
        "from fqa_analysis import data, ratings\n"
        "from fqa_analysis.datacheck import check_data\n"
        "from fqa_analysis.plots import plot_agreement, plot_explanation_lengths, plot_label_distribution\n\n"
        'pd.set_option("display.max_colwidth", 200)\n'
        "data_dir = data.resolve_data_dir(None)  # --data-dir / $FQA_DATA_DIR / the cache `fqa data fetch` fills\n"
        "report = check_data(data_dir)\n"
        "assert report.ok, [p.message() for p in report.problems]\n"
        'print(f"training protocol available here: {report.protocol}")'
    ),
    md(
        "## Counts per domain and split\n\n"
        "`questions` is the number of QA examples (QA files) or of distinct questions (feedback files); "
        "`pool` is the size of the domain's candidate pool in that file; `items` is the number of rated "
        "(question, passage) pairs; `ratings` is how many annotators rated each item. "
        "The paper calls CDC *US* and Quebec *Canada*. Quebec has no feedback and two test files "
        "(old and new FAQ collection), whose pool (588 passages) differs from the train/valid pool (314)."
    ),
    code('report.display_counts().drop(columns="paper").set_index(["kind", "domain", "split"])'),
    md(
        "### What is missing here, and what it changes\n\n"
        "Three per-domain `feedback_train` files (Australia, CDC/US, UK) and the combined release files are "
        "not in the local mirror (they are 4 MiB or larger). The paper trains its rerankers on all four "
        "`feedback_train` files; here only WHO's exists, so the `available` protocol (DESIGN §3) trains on "
        "WHO `feedback_train` plus the four `feedback_valid` files. With the full files in the data folder "
        "the `paper` protocol is used automatically. The notes of the check:"
    ),
    code("for note in report.notes:\n    print(note)"),
    md(
        "## Rating labels\n\n"
        "Each rated answer has two ratings (train, valid) or three (test). The figure pools all ratings of a "
        "domain and split."
    ),
    code(
        "feedback = data.feedback_frame(\n"
        "    [f for split in data.FEEDBACK_SPLITS for f in data.available_feedback(data_dir, split)]\n"
        ")\n"
        "plot_label_distribution(feedback)\n"
        'plt.title("Share of each rating label", pad=28)\n'
        "plt.show()"
    ),
    code("ratings.label_distribution(feedback).round(3)"),
    md(
        "Most rated answers are judged *Excellent* or *Bad*: the middle of the scale is used less. This is why "
        "scoring candidates by P(Excellent) and by the expected rating can differ (the ablation of a later "
        "chapter)."
    ),
    md(
        "## Annotator agreement\n\n"
        "`unanimous`: share of items on which all annotators gave the same label; `pairwise`: share of "
        "annotator pairs (within an item) that agree; `alpha_ordinal`: Krippendorff's alpha with the ordinal "
        "metric on the 0-3 scale (1 = perfect agreement, 0 = chance). Annotator positions are not identities; "
        "alpha does not need them."
    ),
    code("agree = ratings.agreement(feedback)\nagree.round(3)"),
    code('plot_agreement(agree)\nplt.title("Agreement per domain and split")\nplt.show()'),
    md(
        "Agreement is moderate: annotators often disagree by one step, which is what a KL loss against the "
        "annotator distribution (rather than a single majority label) is meant to respect. How the tie rule "
        "of the majority label matters: with two annotators who disagree there is no majority; "
        '`ratings.majority_label` takes the lower rating by default (`tie="lower"`).'
    ),
    code(
        "items = ratings.item_ratings(feedback)\n"
        'items.groupby("split")["unanimous"].agg(["mean", "size"]).rename(\n'
        '    columns={"mean": "share unanimous", "size": "items"}\n'
        ").round(3)"
    ),
    md(
        "## Explanation lengths\n\nWords per explanation, by the rating it explains (boxes: quartiles; whiskers: 1.5 IQR)."
    ),
    code('plot_explanation_lengths(feedback)\nplt.title("Explanation length by rating")\nplt.show()'),
    code(
        "lengths = ratings.explanation_lengths(feedback)\n"
        'summary = lengths.groupby("rating")["words"].describe()\n'
        'summary.reindex(list(ratings.LABELS))[["count", "mean", "25%", "50%", "75%", "max"]].round(1)'
    ),
    md(
        "## Examples\n\n"
        "A few rated answers drawn with a fixed seed from the test feedback (three annotators each): the "
        "question, the answer passage, each annotator's rating and explanation."
    ),
    code(
        'test_feedback = feedback[feedback["split"] == "test"]\n'
        "for row in ratings.example_items(test_feedback, n=4, seed=7).itertuples():\n"
        '    print(f"[{row.domain}] Q: {row.question}")\n'
        '    answer = row.passage_text.replace("\\n", " | ")\n'
        "    print(f\"A: {answer[:400]}{'...' if len(answer) > 400 else ''}\")\n"
        "    for label, why in zip(row.ratings, row.explanations, strict=True):\n"
        '        print(f"  - {label}: {why}")\n'
        "    print()"
    ),
]

write("book/data.ipynb", cells)

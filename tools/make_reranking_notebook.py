"""Write book/reranking.ipynb: the paper's main comparison (issue 4). Needs the rerank stage's results.

Not in _toc.yml until `fqa run rerank` has produced results/ for every variant x seed.
"""

from nbgen import code, md, write

cells = [
    md(
        "# Reranking with feedback\n\n"
        "Does feedback make the QA system more accurate? Each RQA system's top-5 candidates are rescored with "
        "S = P_theta + P(Excellent), where P(Excellent) comes from a reranker trained on rated answers. The same "
        "trained reranker rescores every RQA system (the paper's decoupling); it is never retrained per RQA."
    ),
    code(
        "import pandas as pd\n\n"
        "from fqa_analysis import data\n"
        "from fqa_analysis.metrics import seed_averaged, seed_summary\n"
        "from fqa_analysis.results import load_candidates, load_manifest, results_dir\n"
        "from fqa_analysis.scoring import select_top1\n"
        "from fqa_analysis.stats import paired_bootstrap, paired_outcomes\n\n"
        "RESULTS = results_dir()\n"
        "candidates = load_candidates(RESULTS)\n"
        'manifest = load_manifest(RESULTS)["stages"]\n'
        "print(f\"protocol: {manifest['rerank']['protocol']}; seeds: {manifest['rerank']['config']['seeds']}\")\n"
        "outcomes = select_top1(candidates)\n"
        'feedback_outcomes = outcomes[outcomes["domain"].isin(data.FEEDBACK_DOMAINS)]'
    ),
    md("## The main table: seed mean ± sd of overall accuracy (four feedback domains)"),
    code(
        'micro = seed_summary(feedback_outcomes, "micro")\n'
        'macro = seed_summary(feedback_outcomes, "macro")\n'
        'table = micro.merge(macro, on=["protocol", "rqa", "reranker"], suffixes=("_micro", "_macro"))\n'
        'table[["rqa", "reranker", "mean_micro", "sd_micro", "mean_macro", "sd_macro", "seeds_micro"]].round(4)'
    ),
    md("## Significance against the RQA alone (seed-averaged outcomes, Holm across rerankers)"),
    code(
        "averaged = seed_averaged(feedback_outcomes)\n"
        'for rqa, block in averaged.groupby("rqa", sort=False):\n'
        '    wide = paired_outcomes(block, ["reranker"])\n'
        '    strata = list(wide.index.get_level_values("domain"))\n'
        '    cmp = paired_bootstrap(wide.reset_index(drop=True), baseline="none", strata=strata)\n'
        '    print(rqa, "|", cmp.signature())\n'
        "    display(cmp.to_frame().round(4))"
    ),
    md(
        "Paper (BERT RQA, overall): alone 64.75; + FeedbackReranker 66.59; + VanillaReranker 65.98; "
        "+ CombinedReranker 67.97. Protocol differences: see the introduction's table of deviations."
    ),
]

write("book/reranking.ipynb", cells)

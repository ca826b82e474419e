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
# # Reranking with feedback

# %% tags=["parameters", "hide-input"] mystnb={"code_prompt_show": "Show the page's settings", "code_prompt_hide": "Hide the page's settings"}
# The page's settings, at the book's values. Change one and re-execute the notebook to get that
# ablation from the stored predictions, no model trained (the "Rerun an ablation" page), e.g.
#   python tools/execute_notebooks.py book/reranking.ipynb -p WEIGHT 0.25
SCORE = "p_excellent"  # the reranker's part of S: "p_excellent" (the paper's) or "expected_rating" (E[y]/3)
WEIGHT = None  # None: S = P_theta + score (the paper's sum); w in [0, 1]: S = (1 - w) P_theta + w score
DEPTH = 5  # how many of the RQA's top 5 candidates the reranker rescores, 1..5
RQA_SHOWN = None  # the RQA system the page's answer is about; None: the strongest one rescored (hybrid)
RERANKERS_SHOWN = (
    None  # the rerankers the page compares, e.g. ["vanilla", "combined"]; None: every one present
)

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
from IPython.display import Markdown, display

from fqa_analysis.core.paper import PAPER_GAINS, PAPER_OVERALL_ACCURACY, table2_check
from fqa_analysis.core.plots import plot_gains
from fqa_analysis.core.report import breakable, comparison_caption, comparison_table, paper_shape_table
from fqa_analysis.core.results import results_dir
from fqa_analysis.findings.reranking import PAPER_KEYS, findings_lines, ordered, page_answer, reranking_page

page = reranking_page(results_dir(), SCORE, WEIGHT, DEPTH, RQA_SHOWN, RERANKERS_SHOWN)
RQA, gains = page.rqa, page.micro.table.loc[page.rqa]
OVER = f"{page.overall_questions:,} questions"
if (ANSWER := page_answer(page)) is not None:
    display(Markdown(f"**{ANSWER}**"))

# %% [markdown]
# A retrieval QA system (RQA) proposes its top 5 passages; a reranker rescores them with the paper's S = P_theta + P_phi(Excellent), P_phi the reranker's rating distribution, and the highest S answers. One reranker, trained apart from any RQA, rescores every RQA system (the paper's decoupling). Overall = the four feedback domains' test questions. A change that is not significant carries its MDE, the smallest true change the test would find with 80% power. The rerankers, their training, the per-domain and per-run tables and the costs are in the {doc}`appendix <appendix/reranking>`.

# %% tags=["hide-input"]
if (over_qa := page.over_qa) is not None and set(PAPER_KEYS) - {"none"} <= set(gains.index):
    means = {
        "none": gains["baseline_mean"].iloc[0],
        **{k: gains.loc[k, "mean"] for k in PAPER_KEYS if k != "none"},
    }
    display(Markdown(table2_check(means, over_qa.table.loc[(RQA, "combined")], RQA).markdown()))
display(Markdown("\n".join(f"- {x}" for x in findings_lines(page))))
if page.settings_note:
    display(Markdown(page.settings_note))

# %% [markdown]
# ## The main table
#
# Overall accuracy@1 in % (micro: each question weighs the same), the mean over the seeds each reranker has (± sd over them; `vanilla` is one model); one row per RQA system, one column per reranker the paper has, and the paper's own row (BERT poly-encoder RQA, BART-large rerankers) last. `vanilla` is the relevance model (QA data only), `feedback_kl` continues it on the feedback, `combined` on the feedback and replayed QA pairs; `feedback_ce_*` continue it with a cross-entropy loss instead ({doc}`ablation_loss`) and `*_scratch` train on the feedback from MiniLM. Our RQA systems are not the paper's, so the gain over the RQA alone is the comparable quantity.

# %% tags=["hide-input"]
PAPER_ROW = {k: PAPER_OVERALL_ACCURACY[v] for k, v in PAPER_KEYS.items()}
COLUMNS = {"none": "alone", "feedback_kl": "+ feedback", "vanilla": "+ vanilla", "combined": "+ combined"}
paper_shape_table(page.table, page.rescored, COLUMNS, paper=PAPER_ROW)

# %% [markdown]
# ## Is the gain real?
#
# Each reranker against the RQA alone: the change in overall accuracy@1 with its 95% CI (unadjusted) and Holm's p over the rerankers of one RQA system. The figure shows every RQA system; the table the strongest, the others are in the {ref}`appendix <rerank-appendix-gains>`.

# %% mystnb={"figure": {"caption": "Change in overall accuracy@1 (points) over the RQA alone, per RQA system (panels) and reranker (rows): dots are seed means, bars the 95% paired-bootstrap CI (unadjusted). Hollow diamonds: the paper's gains over its own RQA."}} tags=["hide-input"]
PAPER_GAIN = {k: PAPER_GAINS[v] for k, v in PAPER_KEYS.items() if k != "none"}
plot_gains(ordered(page.micro.table, page).reset_index(), PAPER_GAIN)
plt.tight_layout()

# %% tags=["hide-input"]
display(
    comparison_table(ordered(page.micro.table, page).loc[[RQA]], names=["RQA", "reranker"]).rename(
        index=breakable, level="reranker"
    )
)
display(Markdown(comparison_caption(page.micro, OVER)))

# %% [markdown]
# ## Does feedback add to QA data?
#
# The paper's claim: its CombinedReranker and FeedbackReranker beat its VanillaReranker (QA data alone) by 1.99 and 0.61 points. Here `combined` and `feedback_kl` against `vanilla`, which both continue from. The last column resamples each reranker's training seeds too: a difference no larger than another draw of seeds would make is then not told apart.

# %% tags=["hide-input"]
if page.over_qa is None:
    display(Markdown("*Needs `vanilla` and `combined` or `feedback_kl` in `results/`; not there yet.*"))
else:
    table = comparison_table(
        ordered(page.over_qa.table, page),
        names=("RQA", "reranker vs vanilla"),
        seeds_resampled=page.over_qa_seeds,
    )
    display(table)
    display(Markdown(comparison_caption(page.over_qa, OVER)))

# %% [markdown]
# (reranking-why)=
# ## Why our numbers differ from the paper's
#
# The paper's feedback adds +1.99 points to its QA-only reranker; ours is `combined` minus `vanilla`. Each row is one difference; the last column says what varying it did, where we could vary it. The per-run table is in the {ref}`appendix <rerank-appendix-factors>`.

# %% tags=["hide-input"]
from fqa_analysis.core.differences import (
    PAPER_CONTRIBUTION,
    contribution_points,
    difference_rows,
    why_answer,
    why_missing,
    why_we_differ,
)
from fqa_analysis.core.plots import plot_forest
from fqa_analysis.core.report import markdown_table

# a folder holding a subset of the runs the section needs gets a note of what it lacks instead
WHY_NOTE = why_missing(page.results)
why = None if WHY_NOTE else why_we_differ(page.results)
if why is None:
    display(Markdown(WHY_NOTE))
else:
    display(Markdown(why_answer(why, bold=False)))
    display(Markdown(markdown_table(difference_rows(why).set_index("difference"))))

# %% mystnb={"figure": {"caption": "The feedback's contribution to the reranked hybrid, in points, with its unadjusted 95% CI (filled: Holm p < 0.05). Top: combined minus vanilla in the book's configuration and each factor run (seed 0, Holm over the factor table). Bottom: feedback_kl trained on a share of the feedback minus vanilla (seed 0, Holm over the shares). Dashed: the paper's +1.99."}} tags=["hide-input"]
if why is not None:
    ax = plot_forest(contribution_points(why), PAPER_CONTRIBUTION, "paper")
    ax.set_xlabel("the feedback's contribution (points)")
    plt.tight_layout()
    plt.show()

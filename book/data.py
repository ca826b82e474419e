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
# # The FeedbackQA data

# %% tags=["hide-input"]
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from fqa_analysis import data
from fqa_analysis.core import ratings
from fqa_analysis.core.plots import (
    AGREEMENT_MEASURES,
    plot_agreement,
    plot_explanation_lengths,
    plot_label_distribution,
)
from fqa_analysis.data.check import check_data
from fqa_analysis.findings.dataset import answer_sentence

pd.set_option("display.max_colwidth", 200)
data_dir = data.resolve_data_dir(None)  # --data-dir / $FQA_DATA_DIR / the cache `fqa data fetch` fills
report = check_data(data_dir)
assert report.ok, [p.message() for p in report.problems]
counts = report.display_counts()
feedback = data.feedback_frame(
    [f for split in data.FEEDBACK_SPLITS for f in data.available_feedback(data_dir, split)]
)
items = ratings.item_ratings(feedback)
agree = ratings.agreement(feedback)
lengths = ratings.explanation_lengths(feedback)
TRAIN_DOMAINS = {f.domain for f in data.available_feedback(data_dir, "train")}
display(Markdown(f"**{answer_sentence(items, TRAIN_DOMAINS)}**"))

# %% [markdown]
# What the evaluation is run on: five public-health FAQ domains, the questions asked of each, the passage pool each question is answered from, and the feedback that users gave on answers. Every number on this page is computed here from the data files by `fqa_analysis` functions that the unit tests check; nothing is typed in by hand.

# %% [markdown]
# ## Findings
#
# Computed from the data files when the book is built:

# %% tags=["hide-input"]
qa = counts[counts["kind"] == "qa"].astype({"questions": int})
shares = feedback["rating"].value_counts(normalize=True)
absent = [n for n in report.notes if "absent" in n]
lines = [
    f"{qa['domain'].nunique()} domains, {qa['questions'].sum():,} QA questions in all "
    f"({qa.loc[qa['split'] == 'train', 'questions'].sum():,} for training); every question is answered "
    "from its own domain's pool of "
    + ", ".join(f"{d} {int(p)}" for d, p in qa.drop_duplicates("domain").set_index("domain")["pool"].items())
    + " passages.",
    f"{feedback['item_id'].groupby([feedback['domain'], feedback['split']]).nunique().sum():,} rated "
    f"(question, answer) items with {len(feedback):,} ratings and explanations in the files present "
    f"(Quebec has no feedback). Ratings: "
    + ", ".join(f"{label} {100 * shares.get(label, 0):.0f}%" for label in ratings.LABELS)
    + (
        ": the middle of the scale is used least."
        # said only when the two middle ratings are the two least used
        if set(shares.reindex(list(ratings.LABELS)).fillna(0).nsmallest(2).index) == set(ratings.LABELS[1:3])
        else "."
    ),
    "Annotators agree moderately: all of an item's annotators give the same rating on "
    + " and ".join(
        f"{100 * r.share:.0f}% of the {r.items:,} items rated by {r.annotators} ({r.splits})"
        for r in ratings.unanimous_by_raters(items).reset_index().itertuples()
    )
    + f"; Krippendorff's ordinal alpha ranges "
    f"{agree['alpha_ordinal'].min():.2f}-{agree['alpha_ordinal'].max():.2f} over domains and splits.",
    f"Explanations are short: median {lengths['words'].median():.0f} words "
    f"(Bad {lengths.loc[lengths['rating'] == 'Bad', 'words'].median():.0f}, Excellent "
    f"{lengths.loc[lengths['rating'] == 'Excellent', 'words'].median():.0f}).",
    f"{len(absent)} optional files are absent from the data folder ("
    + ", ".join(f"`{n.split(' ')[0]}`" for n in absent)
    + "), so the training protocol here is "
    f"`{report.protocol}` (see below for what that changes).",
]
display(Markdown("\n".join(f"- {x}" for x in lines)))

# %% [markdown]
# ## Counts per domain and split
#
# `questions` is the number of QA examples (QA files) or of distinct questions (feedback files); `pool` is the size of the domain's candidate pool in that file; `items` is the number of rated (question, passage) pairs; `ratings per item` is how many annotators rated each item. The paper calls CDC *US* and Quebec *Canada*. Quebec has no feedback and two test files (old and new FAQ collection), whose pool (588 passages) differs from the train/valid pool (314).

# %% tags=["hide-input"]
counts.drop(columns="paper").set_index(["kind", "domain", "split"]).rename(
    columns={"ratings": "ratings per item"}
)

# %% [markdown]
# ### What is missing here, and what it changes
#
# Three per-domain `feedback_train` files (Australia, CDC/US, UK) and the combined release files are not in the data folder this book is built from. The paper trains its rerankers on all four `feedback_train` files; here only WHO's exists, so the `available` protocol pools WHO `feedback_train` and the four `feedback_valid` files and trains on 80% of their questions (the other 20% of each domain's questions choose epochs and settings). With the full files in the data folder the `paper` protocol is used automatically. The notes of the check:

# %% tags=["hide-input"]
for note in report.notes:
    # the check's console note points at the architecture document; here the paragraph above says it
    print(note.replace(" (ARCHITECTURE.md#training-protocols)", ""))

# %% [markdown]
# ## Rating labels
#
# Each rated answer has two ratings (train, valid) or three (test). The figure pools all ratings of a domain and split.

# %% mystnb={"figure": {"caption": "Share of each rating label per domain and split, all ratings pooled."}} tags=["hide-input"]
plot_label_distribution(feedback)
plt.title("Share of each rating label", pad=28)
plt.show()

# %% tags=["hide-input"]
ratings.label_distribution(feedback).round(3).rename(columns={"n": "ratings"})

# %% [markdown]
# Most rated answers are judged *Excellent* or *Bad*; the middle of the scale is used less. Scoring a candidate by P(Excellent) or by the expected rating can differ only where a reranker puts mass on the middle ratings ({doc}`ablation_score` measures how much).

# %% [markdown]
# ## Annotator agreement
#
# **Unanimous**: share of items on which all annotators gave the same label (two annotators on train and valid items, three on test items, so the test splits' shares are lower by construction); **pairwise**: share of annotator pairs (within an item) that agree; **Krippendorff's α**: alpha with the ordinal metric on the 0-3 scale (1 = perfect agreement, 0 = chance). Annotator positions are not identities; alpha does not need them.

# %% tags=["hide-input"]
agree.set_index(["domain", "split"]).round(3).rename(
    columns={"ratings_per_item": "ratings per item", "alpha_ordinal": "Krippendorff's α (ordinal)"}
)

# %% mystnb={"figure": {"caption": "Agreement per domain and split: unanimous share, pairwise agreement and Krippendorff's ordinal alpha."}} tags=["hide-input"]
# one panel per measure, stacked, so each reads at page width
fig, axes = plt.subplots(3, 1, figsize=(8, 8.4), sharex=True)
for ax, measure in zip(axes, AGREEMENT_MEASURES, strict=True):
    plot_agreement(agree, ax=ax, measure=measure)
    if ax is not axes[0]:
        ax.get_legend().remove()
plt.tight_layout()
plt.show()

# %% [markdown]
# How far apart an item's ratings lie (highest minus lowest rating, in steps of the 0-3 scale), as a share of all rated items; a KL loss against the annotators' distribution (rather than a single majority label) is meant to respect this spread. The majority label's tie rule: where no rating has more votes than every other (two annotators who disagree, or three who all differ), the majority label is the lowest of the tied ratings. Below it, the unanimous share per split.

# %% tags=["hide-input"]
spread = ratings.rating_spread(feedback)
print(
    f"ratings one step apart on {spread[1]:.0%} of the items, two or three steps apart on "
    f"{spread[2] + spread[3]:.0%}"
)
display(
    spread.rename("share of items")
    .to_frame()
    .T.rename(columns=lambda k: f"{k} step{'' if k == 1 else 's'}")
    .round(3)
)

# %% tags=["hide-input"]
items.groupby("split")["unanimous"].agg(["mean", "size"]).rename(
    columns={"mean": "share unanimous", "size": "items"}
).round(3)

# %% [markdown]
# ## Explanation lengths
#
# Words per explanation, by the rating it explains (boxes: quartiles; whiskers: 1.5 IQR).

# %% mystnb={"figure": {"caption": "Words per explanation by the rating it explains (boxes: quartiles; whiskers: 1.5 IQR; single points beyond the whiskers are not drawn and the axis ends at 60 words: the table below gives each rating's maximum)."}} tags=["hide-input"]
plot_explanation_lengths(feedback)
plt.title("Explanation length by rating")
plt.show()

# %% tags=["hide-input"]
summary = lengths.groupby("rating")["words"].describe()
summary = summary.reindex(list(ratings.LABELS))[["count", "mean", "25%", "50%", "75%", "max"]].round(1)
# quartiles and maximum of word counts: whole numbers where they are whole
summary = summary.astype({c: int for c in summary.columns if c != "mean" and (summary[c] % 1 == 0).all()})
summary.rename(
    columns={"count": "explanations", "25%": "1st quartile", "50%": "median", "75%": "3rd quartile"}
).rename_axis("rating")

# %% [markdown]
# ## Examples
#
# A few rated answers drawn with a fixed seed from the test feedback (three annotators each): the question, the answer passage, each annotator's rating and explanation.

# %% tags=["hide-input"]
test_feedback = feedback[feedback["split"] == "test"]
for row in ratings.example_items(test_feedback, n=4, seed=7).itertuples():
    print(f"[{row.domain}] Q: {row.question}")
    answer = row.passage_text.replace("\n", " | ")
    print(f"A: {answer[:400]}{'...' if len(answer) > 400 else ''}")
    for label, why in zip(row.ratings, row.explanations, strict=True):
        print(f"  - {label}: {why}")
    print()

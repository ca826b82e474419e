"""The retrieval chapter and its appendix: the RQA systems alone, read once and worded.

:func:`retrieval_page` reads a results folder (the RQA systems' candidates, ranks and temperatures,
the rqa stage's manifest entry) into a :class:`RetrievalPage`; :func:`answer_sentence` and
:func:`findings_lines` word what the chapter finds.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from fqa_analysis import data
from fqa_analysis.core.compare import Comparison, compare
from fqa_analysis.core.metrics import accuracy_with_ci, recall_curve
from fqa_analysis.core.paper import PAPER_OVERALL_ACCURACY
from fqa_analysis.core.report import change_text, holm_p_text
from fqa_analysis.core.results import load_candidates, load_stage, load_table, stage_cost
from fqa_analysis.core.scoring import select_top1
from fqa_analysis.models.retrieval import SYSTEMS

__all__ = ["RetrievalPage", "answer_sentence", "findings_lines", "retrieval_page"]

#: How the chapter names the two systems built from others.
_MADE_OF = {"hybrid": ": fine-tuned MiniLM fused with BM25", "minilm_ft": ": fine-tuned MiniLM"}


@dataclass(frozen=True)
class RetrievalPage:
    """What the retrieval chapter and its appendix show, read from one results folder.

    Attributes:
        results: The results folder.
        stage: The rqa stage's manifest entry.
        rqa_rows: The RQA systems' own candidates (reranker ``none``).
        ranks: Each question's gold rank per system, in its domain pool and in the pooled corpus.
        temps: Each system's fitted temperature and its calibration on the QA valid sets.
        systems: The systems present, weakest first.
        acc: Accuracy@1 with its 95% CI per system and test set (overall micro and macro too).
        comparison: Every system against bm25 over the feedback domains' test questions (Holm).
        fusion: hybrid against minilm_ft alone (None without both).
        curve: Recall@k for k = 1..20 per system over the feedback domains' test questions.
    """

    results: Path
    stage: dict[str, Any]
    rqa_rows: pd.DataFrame
    ranks: pd.DataFrame
    temps: pd.DataFrame
    systems: list[str]
    acc: pd.DataFrame
    comparison: Comparison
    fusion: Comparison | None
    curve: pd.DataFrame

    @property
    def micro(self) -> pd.Series:
        """Overall (micro) accuracy@1 per system."""
        return self.acc[self.acc["test_set"] == "overall (micro)"].set_index("system")["accuracy"]

    @property
    def best(self) -> str:
        """The system with the highest overall (micro) accuracy@1."""
        return str(self.micro.idxmax())

    @property
    def recall5(self) -> pd.Series:
        """Recall@5 per system: the ceiling of a top-5 reranker."""
        return self.curve[self.curve["k"] == 5].set_index("rqa")["recall"]


def retrieval_page(results: Path) -> RetrievalPage:
    """Read ``results`` once and compute what the retrieval chapter and its appendix show."""
    candidates = load_candidates(results)
    rqa_rows = candidates[candidates["reranker"] == "none"]
    ranks = load_table(results, "rqa_ranks.parquet")
    stage = load_stage(results, "rqa")
    outcomes = select_top1(rqa_rows)
    feedback = outcomes[outcomes["domain"].isin(data.FEEDBACK_DOMAINS)]
    # the fusion against its dense part alone: does adding bm25 help the fine-tuned model?
    fused = [("hybrid", "minilm_ft")] if {"hybrid", "minilm_ft"} <= set(feedback["rqa"]) else []
    commit = stage["git_commit"]
    return RetrievalPage(
        results=results,
        stage=stage,
        rqa_rows=rqa_rows,
        ranks=ranks,
        temps=load_table(results, "rqa_temperatures.parquet"),
        systems=[s for s in SYSTEMS if s in set(rqa_rows["rqa"])],  # weakest first
        acc=accuracy_with_ci(outcomes, "rqa", n_resamples=10_000, seed=0),
        comparison=compare(feedback, system="rqa", baseline="bm25", commit=commit),
        fusion=compare(feedback, system="rqa", pairs=fused, commit=commit) if fused else None,
        curve=recall_curve(ranks[ranks["domain"].isin(data.FEEDBACK_DOMAINS)], range(1, 21), by=["rqa"]),
    )


def _inside(row: Any, value: float) -> bool:
    """Whether ``value`` (in %) lies inside a row's 95% CI (shares)."""
    return bool(100 * row["ci_low"] <= value <= 100 * row["ci_high"])


def answer_sentence(page: RetrievalPage) -> str:
    """The chapter's answer in one sentence (at most 30 words): the best system beside the paper's RQA.

    Example (the sentence for the book's results):
        "Our best retrieval system (hybrid) answers 64.6% of the test questions, level with the paper's
        RQA (64.75%); a perfect top-5 reranker could add at most 21.0 points."
    """
    paper = PAPER_OVERALL_ACCURACY["rqa_alone"]
    best, micro = page.best, page.micro
    row: Any = page.acc.set_index(["system", "test_set"]).loc[(best, "overall (micro)")]
    side = "level with" if _inside(row, paper) else ("above" if 100 * micro[best] > paper else "below")
    return (
        f"Our best retrieval system ({best}) answers {100 * micro[best]:.1f}% of the test questions, {side} "
        f"the paper's RQA ({paper}%); a perfect top-5 reranker could add at most "
        f"{100 * (page.recall5[best] - micro[best]):.1f} points."
    )


def findings_lines(page: RetrievalPage) -> list[str]:
    """The chapter's findings, one bullet each.

    In plain words, accuracy per system, the best against bm25 and the fusion, recall@5, and the
    stage's protocol and cost.
    """
    paper = PAPER_OVERALL_ACCURACY["rqa_alone"]
    # Any: label lookups into these tables return rows and scalars the pandas stubs cannot narrow
    by: Any = page.acc.set_index(["system", "test_set"])
    micro, best, r5 = page.micro, page.best, page.recall5
    cmp: Any = page.comparison.table
    best_micro, best_macro = by.loc[(best, "overall (micro)")], by.loc[(best, "overall (macro)")]
    inside = _inside(best_micro, paper)
    macro_side = (
        "also level with it"
        if _inside(best_macro, paper)
        else ("above" if 100 * best_macro["accuracy"] > paper else "below") + " it, outside our 95% CI"
    )
    gap = 100 * (r5[best] - micro[best])
    plain = (
        f"**In plain words:** our best retrieval system ({best}{_MADE_OF.get(best, '')}) answers "
        f"{100 * micro[best]:.1f}% of the test questions right, "
        + ("level with" if inside else ("above" if 100 * micro[best] > paper else "below"))
        + f" the paper's RQA ({paper}%"
        + ("; inside our 95% CI)" if inside else ")")
        + f" on the micro average; on the macro average {100 * best_macro['accuracy']:.1f}%, {macro_side} "
        f"(the paper does not say which average it reports); the right passage is in its top 5 for "
        f"{100 * r5[best]:.1f}% of them, so a perfect top-5 reranker could add at most {gap:.1f} points."
    )
    overall = by.xs("overall (micro)", level="test_set").reindex(page.systems)
    accuracy = (
        "Overall accuracy@1 of the RQA alone (four feedback domains, micro, 95% CI): "
        + "; ".join(
            f"{s} {100 * r['accuracy']:.1f} [{100 * r['ci_low']:.1f}, {100 * r['ci_high']:.1f}]"
            for s, r in overall.iterrows()
        )
        + f". The paper's BERT poly-encoder: {paper}."
    )
    against = (
        f"The best system, {best}, is {abs(100 * micro[best] - paper):.1f} points "
        f"{'above' if micro[best] * 100 >= paper else 'below'} the paper's RQA (micro); against bm25: "
        + ", ".join(
            f"{s} {100 * cmp.loc[s, 'delta']:+.1f} points (Holm p {holm_p_text(dict(cmp.loc[s]))})"
            for s in page.systems
            if s != "bm25"
        )
        + "."
    )
    if "minilm_ft" in cmp.index:
        against += (
            f" Lexical and dense retrieval fail on different questions: minilm_ft answers "
            f"{int(cmp.loc['minilm_ft', 'wins']):,} test questions bm25 gets wrong and bm25 "
            f"{int(cmp.loc['minilm_ft', 'losses']):,} that minilm_ft gets wrong"
        )
    if page.fusion is not None:
        fused = change_text(dict(page.fusion.table.iloc[0]), digits=1)
        against += f"; fusing them (hybrid) against minilm_ft alone: {fused} (one comparison, table below)."
    return [
        plain,
        accuracy,
        against,
        "Recall@5, the ceiling of a top-5 reranker: "
        + ", ".join(f"{s} {100 * r5[s]:.1f}%" for s in page.systems)
        + f"; the gap to accuracy@1 that feedback could win is {gap:.1f} points for {best}.",
        f"Protocol `{page.stage['protocol']}`, k = {page.stage['config']['k']}; the stage cost "
        f"{stage_cost(page.stage)[0]:.0f} minutes of compute on this 2-core CPU.",
    ]

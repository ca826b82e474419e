"""Stage ``explain`` of ``fqa run``: train the explainers, explain, and score against humans.

Outputs (in ``results/``):

* ``explanations.parquet``: one row per (explainer, rating source, feedback_test item): the
  explanation and its per-item metrics (ROUGE-L, BLEU, embedding similarity against the
  leave-one-out reference pairs, and consistency with the rating it explains). Rating sources:
  ``predicted`` (argmax of the ``feedback_kl`` reranker's P_phi, seed 0: what a deployed system
  would know) and ``majority`` (the annotators' majority: explanation quality alone);
* ``explanation_humans.parquet``: the same metrics for every annotator's own explanation
  against the other two (the human ceiling), one row per (item, annotator);
* ``explanation_greedy.parquet``: the same rows and metrics for the generator's greedy
  explanation of each row, the first of the candidates its chooser weighed (explainer
  ``generator_greedy``; equal to the generator's row where the chooser kept it);
* ``explanations_top1.parquet``: for the best reranked system, each feedback-domain test
  question's answer, its predicted rating and every explainer's explanation;
* ``explanation_levers.parquet``: the generator's decoding levers on held-out explanations;
* ``manifest.json``: stage ``explain`` with the generator's history, wall time and memory.

Consistency: a logistic-regression rating classifier on MiniLM embeddings of explanation text,
trained on the training explanations, labels each explanation; an explanation is consistent
when the label is the rating it explains. Its accuracy on held-out human explanations is
recorded, since it bounds what consistency can show.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fqa_analysis import data
from fqa_analysis.cache import atomic_write_parquet, default_cache_root
from fqa_analysis.core.candidates import RATING_COLUMNS
from fqa_analysis.core.levers import policy_misses
from fqa_analysis.core.ratings import LABELS, majority_label
from fqa_analysis.core.reranking import score_outcomes, seed_table
from fqa_analysis.core.results import load_candidates, load_table
from fqa_analysis.core.text_metrics import (
    bleu,
    distinct_share,
    leave_one_out,
    lexicon,
    loo_score,
    nonwords,
    rouge_l,
    variety,
)
from fqa_analysis.errors import DataError, DataProblem
from fqa_analysis.models.explainer import (
    CACHE_VERSION,
    CandidateChooser,
    DecodeConfig,
    Explainer,
    ExplanationExample,
    GeneratorConfig,
    GeneratorExplainer,
    RetrievalExplainer,
    TemplateExplainer,
    explanation_examples,
    train_generator,
)
from fqa_analysis.models.explanation_scoring import Embedder, rating_classifier
from fqa_analysis.models.reranker.pairs import feedback_item_sets
from fqa_analysis.profiling import stage
from fqa_analysis.stages.manifest import add_compute_times, provenance, update_manifest
from fqa_analysis.stages.plan import data_fingerprint, remember_finished

__all__ = [
    "RUN_FIELDS",
    "ExplainRunConfig",
    "adopt_policy",
    "adopted_decode",
    "config_record",
    "plan_units",
    "run_explain",
    "training_seconds",
]


#: Config fields that only say which runs ran (none: the stage computes all of its rows each time).
RUN_FIELDS: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExplainRunConfig:
    """What ``fqa run explain`` computes.

    Attributes:
        generator: How the generator is trained.
        decode: How it writes (greedy, or the chooser's pick among sampled candidates).
        rating_reranker: Reranker variant whose predicted rating is explained (seed 0).
        subset: First N items of every feedback split and N questions per test set (CI).
        holdout: Held-out share of questions (``available`` protocol), as for the rerankers.
        adopt: Whether the held-out levers choose the decoding of feedback_test (:func:`adopt_policy`).
    """

    generator: GeneratorConfig = field(default_factory=GeneratorConfig)
    decode: DecodeConfig = field(default_factory=DecodeConfig)
    rating_reranker: str = "feedback_kl"
    subset: int | None = None
    holdout: float = 0.2
    #: Adopt the decoding policy from the held-out levers by :func:`adopt_policy` (the configured
    #: ``decode`` is the fallback); False decodes feedback_test exactly as ``decode`` says.
    adopt: bool = True


def _predicted_ratings(out_dir: Path, items: Sequence[data.FeedbackItem], reranker: str) -> list[str]:
    """Argmax of the reranker's P_phi (seed 0) for each feedback_test item."""
    preds = load_table(out_dir, "rating_predictions.parquet")
    preds = preds[(preds["reranker"] == reranker) & (preds["seed"] == 0)]
    keyed = {
        (str(d), int(i)): int(np.argmax(row))
        for d, i, row in zip(preds["domain"], preds["item_id"], preds[RATING_COLUMNS].to_numpy(), strict=True)
    }
    out = []
    for it in items:
        key = (it.domain, int(it.item_id))
        if key not in keyed:
            raise DataError(
                DataProblem(
                    out_dir / "rating_predictions.parquet",
                    f"{it.domain} feedback_test item {it.item_id}",
                    f"no rating prediction of reranker {reranker!r}, seed 0",
                    "run `fqa run rerank` (same data and --subset) before `fqa run explain`",
                )
            )
        out.append(LABELS[keyed[key]])
    return out


def _item_metrics(
    texts: Sequence[str],
    ratings: Sequence[str],
    items: Sequence[data.FeedbackItem],
    embedder: Embedder,
    classifier: Any,
    known: frozenset[str],
) -> pd.DataFrame:
    """Per-item metrics of one explainer's texts (leave-one-out references), consistency, non-words."""
    labels = classifier.predict(embedder.vectors(texts))
    rows = []
    for text, rating, label, it in zip(texts, ratings, labels, items, strict=True):
        refs = list(it.explanations)
        rows.append(
            {
                "rouge_l": loo_score(text, refs, rouge_l),
                "bleu": loo_score(text, refs, bleu),
                "embedding_sim": loo_score(text, refs, embedder.max_cosine),
                "consistent": float(LABELS[int(label)] == rating),
                "nonwords": len(nonwords(text, known)),
            }
        )
    return pd.DataFrame(rows)


def _explainer_frame(
    protocol: str,
    name: str,
    source: str,
    texts: Sequence[str],
    ratings: Sequence[str],
    items: Sequence[data.FeedbackItem],
    embedder: Embedder,
    classifier: Any,
    known: frozenset[str],
) -> pd.DataFrame:
    """One explainer's rows of one rating source: the texts with their :func:`_item_metrics`."""
    return pd.DataFrame(
        {
            "protocol": protocol,
            "explainer": name,
            "rating_source": source,
            "domain": [it.domain for it in items],
            "item_id": [it.item_id for it in items],
            "rating": list(ratings),
            "explanation": list(texts),
        }
    ).join(_item_metrics(texts, ratings, items, embedder, classifier, known))


def _human_metrics(
    items: Sequence[data.FeedbackItem], embedder: Embedder, classifier: Any, known: frozenset[str]
) -> pd.DataFrame:
    """Every annotator's explanation against the other two (the human ceiling)."""
    texts = [e for it in items for e in it.explanations]
    labels = iter(classifier.predict(embedder.vectors(texts)))
    rows = []
    for it in items:
        for a, ((text, refs), rating) in enumerate(
            zip(leave_one_out(it.explanations), it.ratings, strict=True)
        ):
            rows.append(
                {
                    "domain": it.domain,
                    "item_id": it.item_id,
                    "annotator": a,
                    "rating": rating,
                    "explanation": text,
                    "rouge_l": rouge_l(text, refs),
                    "bleu": bleu(text, refs),
                    "embedding_sim": embedder.max_cosine(text, refs),
                    "consistent": float(LABELS[int(next(labels))] == rating),
                    "nonwords": len(nonwords(text, known)),
                }
            )
    return pd.DataFrame(rows)


def _best_system(candidates: pd.DataFrame) -> tuple[str, str]:
    """The (rqa, reranker) with the highest seed-mean overall micro accuracy among reranked runs."""
    rated = candidates[candidates["reranker"] != "none"]
    table = seed_table(score_outcomes(rated))
    overall = table[table["test_set"] == "overall (micro)"].sort_values(
        "mean", ascending=False, kind="stable"
    )
    best = overall.iloc[0]
    return str(best["rqa"]), str(best["reranker"])


def _top1_rows(
    out_dir: Path, data_dir: Path, subset: int | None
) -> tuple[pd.DataFrame, list[tuple[str, str, str]]]:
    """The best system's seed-0 answer to every feedback-domain test question, with its predicted rating."""
    candidates = load_candidates(out_dir)
    rqa, reranker = _best_system(candidates)
    run = candidates[
        (candidates["rqa"] == rqa) & (candidates["reranker"] == reranker) & (candidates["seed"] == 0)
    ]
    run = run[run["domain"].isin(list(data.FEEDBACK_DOMAINS))]
    picks = score_outcomes(run)
    rows = run.merge(
        picks[["domain", "split", "question_id", "passage_id"]],
        on=["domain", "split", "question_id", "passage_id"],
    )
    if subset is not None:
        rows = rows.groupby("domain", sort=False).head(subset)
    pools = {d: data.load_qa_split(data_dir, d, "test") for d in data.FEEDBACK_DOMAINS}
    texts = [pools[d].passages[int(p)].text for d, p in zip(rows["domain"], rows["passage_id"], strict=True)]
    ratings = [LABELS[int(i)] for i in np.argmax(rows[RATING_COLUMNS].to_numpy(), axis=1)]
    frame = rows[
        ["rqa", "reranker", "seed", "domain", "split", "question_id", "question", "passage_id", "is_gold"]
    ].copy()
    frame["passage_text"] = texts
    frame["predicted_rating"] = ratings
    frame["p_excellent"] = rows["p_excellent"].to_numpy()
    return frame.reset_index(drop=True), list(zip(frame["question"], texts, ratings, strict=True))


#: Held-out rows the generator's per-epoch monitor decodes (greedy): enough for a trend, cheap.
MONITOR_ROWS = 160
#: The repetition penalty the levers table tries beside plain greedy decoding.
REPETITION_PENALTY = 1.3
#: Weights of the chooser's penalty against over-used openings the levers table tries.
OPENING_WEIGHTS: tuple[float, ...] = (1.0, 3.0)
#: Weights of the chooser's similarity term the levers table tries (1: the earlier chooser).
SIM_WEIGHTS: tuple[float, ...] = (1.0, 3.0, 10.0)
#: Weights of the chooser's penalty per non-word (a word no training text holds) the levers table
#: tries: 10 per word is more than the other terms usually differ by between candidates (a log
#: probability ratio of e^10, a cosine gap of 1 at similarity weight 10), so the candidate with
#: fewer non-words nearly always wins.
NONWORD_WEIGHTS: tuple[float, ...] = (10.0,)
#: The levers table's columns naming a chooser policy's setting, in the order of ``_levers``' tuples.
POLICY_COLUMNS = ("policy", "opening_weight", "sim_weight", "nonword_weight")
#: The two decoding policies of the chooser (``DecodeConfig.sample_all`` True / False).
EVERY_ROW, WHERE_DISAGREES = "every row", "where greedy disagrees"


def _chooser_lever(
    k: int, policy: str, sim_weight: float, opening_weight: float, nonword_weight: float = 0.0
) -> str:
    """The levers table's name of a chooser row (names of the earlier table kept for weight 1).

    Example:
        >>> _chooser_lever(5, EVERY_ROW, 1.0, 0.0)
        'best of 5: classifier + similarity'
        >>> _chooser_lever(5, EVERY_ROW, 3.0, 1.0)
        'best of 5: classifier + 3 x similarity, opening penalty 1'
        >>> _chooser_lever(5, WHERE_DISAGREES, 10.0, 0.0)
        'best of 5 where greedy disagrees, 10 x similarity'
        >>> _chooser_lever(5, EVERY_ROW, 10.0, 1.0, 10.0)
        'best of 5: classifier + 10 x similarity, opening penalty 1, non-word penalty 10'
    """
    similarity = "similarity" if sim_weight == 1 else f"{sim_weight:g} x similarity"
    opening = f", opening penalty {opening_weight:g}" if opening_weight else ""
    opening += f", non-word penalty {nonword_weight:g}" if nonword_weight else ""
    if policy == EVERY_ROW:
        return f"best of {k}: classifier + {similarity}{opening}"
    weighted = "" if sim_weight == 1 else f", {similarity}"
    return f"best of {k} where greedy disagrees{weighted}{opening}"


def _classifier_accuracy(
    classifier: Any, embedder: Embedder, held: Sequence[ExplanationExample]
) -> dict[str, float]:
    """The consistency classifier's accuracy on held-out human explanations: overall and per rating."""
    predicted = classifier.predict(embedder.vectors([e.explanation for e in held]))
    right = [LABELS[int(p)] == e.rating for p, e in zip(predicted, held, strict=True)]
    shares = _shares_by_rating(right, [e.rating for e in held])
    return {"overall": shares.pop(""), **shares}


def _shares_by_rating(hits: Sequence[bool], ratings: Sequence[str]) -> dict[str, float]:
    """Share of hits over all rows (key ``""``) and per rating (NaN where a rating has no rows)."""
    hit, rated = np.asarray(hits, dtype=bool), np.asarray(ratings)
    out = {"": float(hit.mean()) if len(hit) else float("nan")}
    for label in LABELS:
        mask = rated == label
        out[label] = float(hit[mask].mean()) if mask.any() else float("nan")
    return out


def _held_out_rows(
    select: Sequence[ExplanationExample],
) -> tuple[list[tuple[str, str, str]], list[list[str]]]:
    """Distinct held-out (question, passage, rating) rows and every explanation of their pair."""
    refs: dict[tuple[str, str], list[str]] = {}
    for e in select:
        refs.setdefault((e.question, e.passage_text), []).append(e.explanation)
    rows = list(dict.fromkeys((e.question, e.passage_text, e.rating) for e in select))
    return rows, [refs[(q, p)] for q, p, _ in rows]


def _held_out_figures(
    texts: Sequence[str],
    rows: Sequence[tuple[str, str, str]],
    refs: Sequence[Sequence[str]],
    embedder: Embedder,
    classifier: Any,
    known: frozenset[str],
) -> dict[str, float]:
    """Consistency (overall, per rating), similarity to the pair's explanations, variety, grounding, words.

    ``no_nonword``: the share of texts without a word absent from ``known`` (a lexicon).
    """
    labels = classifier.predict(embedder.vectors(texts))
    varied = variety(texts, [(q, p) for q, p, _ in rows], known=known)
    consistent = [LABELS[int(label)] == r for label, (_, _, r) in zip(labels, rows, strict=True)]
    shares = _shares_by_rating(consistent, [r for _, _, r in rows])
    return {
        "consistent": shares.pop(""),
        "embedding_sim": float(
            np.mean([embedder.max_cosine(t, ref) for t, ref in zip(texts, refs, strict=True)])
        ),
        "rouge_l": float(np.mean([rouge_l(t, ref) for t, ref in zip(texts, refs, strict=True)])),
        "distinct": distinct_share(texts),
        "opening_share": varied["opening_share"],
        "grounding": varied["grounding"],
        "no_nonword": varied["no_nonword"],
        **{f"consistent_{label}": share for label, share in shares.items()},
    }


def _levers(
    generator: GeneratorExplainer,
    chooser: CandidateChooser,
    select: Sequence[ExplanationExample],
    embedder: Embedder,
    classifier: Any,
    decode: DecodeConfig,
    references: Sequence[Explainer] = (),
) -> pd.DataFrame:
    """Decoding levers measured on the held-out explanations (never on feedback_test).

    Rows: greedy; greedy with a repetition penalty; one sampled candidate as is; the best of
    greedy + sampled candidates kept by the classifier, the similarity, or both (the chooser),
    for every row, at each similarity weight (:data:`SIM_WEIGHTS`) with and without a penalty
    against over-used openings (:data:`OPENING_WEIGHTS`), each with and without a penalty against
    non-words (:data:`NONWORD_WEIGHTS`, words absent from the chooser's lexicon); and, at each
    similarity weight, the chooser's pick only where greedy disagrees with the rating. Column
    ``chosen`` marks the row that ``decode`` (the stage's setting) reproduces; ``policy`` (``every
    row`` or ``where greedy disagrees``), ``opening_weight``, ``sim_weight`` and ``nonword_weight``
    name the decoding of the rows the stage
    could adopt (:func:`adopt_policy`), empty elsewhere. ``references`` (e.g. the template and the
    rating-filtered retrieval explainer) are measured on the same rows, as ``reference: <name>``,
    the bars :func:`adopt_policy` holds a policy to.
    """
    rows, refs = _held_out_rows(select)
    nan = float("nan")
    policies: dict[str, tuple[str, float, float, float]] = {}
    candidates = generator.candidates_many(rows)
    variants: dict[str, list[str]] = {"greedy": [c[0] for c in candidates]}
    penalised = GeneratorExplainer(
        generator.model,
        generator.tokenizer,
        replace(decode, candidates=0, repetition_penalty=REPETITION_PENALTY),
        source_max_len=generator.source_max_len,
        bf16=generator.bf16,
    )
    variants[f"greedy, repetition penalty {REPETITION_PENALTY}"] = penalised.explain_many(rows)
    if decode.candidates:
        variants["one sampled candidate"] = [c[1] for c in candidates]
        k = 1 + decode.candidates
        for name, weights in (
            (f"best of {k}: rating classifier", (1.0, 0.0)),
            (f"best of {k}: similarity to the pair", (0.0, 1.0)),
        ):
            picks = chooser.with_weights(*weights).choose(rows, candidates)
            variants[name] = [c[i] for c, i in zip(candidates, picks, strict=True)]
        # the chooser (classifier + similarity) at each similarity weight, with over-used openings
        # penalised (by their share of the greedy explanations) or not; the stage's own weights are
        # always among them
        agree = chooser.agrees(rows, variants["greedy"])
        chosen = "greedy"
        stage_penalties = (decode.opening_weight, decode.nonword_weight)
        for sim in sorted({*SIM_WEIGHTS, decode.sim_weight}):
            for opening in sorted({0.0, *OPENING_WEIGHTS, decode.opening_weight}):
                for nonword in sorted({0.0, *NONWORD_WEIGHTS, decode.nonword_weight}):
                    name = _chooser_lever(k, EVERY_ROW, sim, opening, nonword)
                    weighted = chooser.with_weights(chooser.rating_weight, sim, opening, nonword)
                    picks = weighted.choose(rows, candidates)
                    variants[name] = [c[i] for c, i in zip(candidates, picks, strict=True)]
                    policies[name] = (EVERY_ROW, opening, sim, nonword)
            # keep greedy where the chooser's classifier already reads it as the rating (the
            # chooser, at the stage's penalty weights, picks for the other rows)
            every = variants[_chooser_lever(k, EVERY_ROW, sim, *stage_penalties)]
            name = _chooser_lever(k, WHERE_DISAGREES, sim, *stage_penalties)
            variants[name] = [c[0] if ok else t for c, ok, t in zip(candidates, agree, every, strict=True)]
            policies[name] = (WHERE_DISAGREES, decode.opening_weight, sim, decode.nonword_weight)
            if sim == decode.sim_weight:
                policy = EVERY_ROW if decode.sample_all else WHERE_DISAGREES
                chosen = _chooser_lever(k, policy, sim, *stage_penalties)
    else:
        chosen = "greedy"
    for explainer in references:
        variants[f"reference: {explainer.name}"] = explainer.explain_many(rows)
    return pd.DataFrame(
        [
            {
                "lever": name,
                "chosen": name == chosen,
                # a policy's setting; empty for the rows no rule can adopt
                **dict(zip(POLICY_COLUMNS, policies.get(name, ("", nan, nan, nan)), strict=True)),
                "rows": len(rows),
                **_held_out_figures(texts, rows, refs, embedder, classifier, chooser.known),
            }
            for name, texts in variants.items()
        ]
    )


def adopt_policy(levers: pd.DataFrame, human_consistency: Mapping[str, float]) -> str | None:
    """The decoding policy that writes the fewest stock openings without losing what was won.

    On the held-out rows of :func:`_levers`: a row with a ``policy`` qualifies when its
    consistency with each rating is at least the humans' (the consistency classifier's accuracy on
    held-out human explanations of that rating), its embedding similarity at least the
    rating-filtered retrieval explainer's (``reference: retrieval_same_rating``) and its ROUGE-L at
    least the template's (``reference: template``), and its share of explanations without a
    non-word at least greedy decoding's (row ``greedy``: sampled candidates must not read less like
    words than greedy). Of the qualifying rows, the one with the
    lowest share of its most common opening; ties go to the configured row (``chosen``), then to
    the table's order. A bar whose reference row is absent is not applied
    (:func:`fqa_analysis.core.levers.policy_misses` names the bars each row misses).

    Returns:
        The adopted row's ``lever``, or None when no row qualifies (the configured decoding stays).

    Example:
        >>> levers = pd.DataFrame({
        ...     "lever": ["stock", "varied", "too varied", "reference: template"],
        ...     "chosen": [True, False, False, False],
        ...     "policy": ["where greedy disagrees", "every row", "every row", ""],
        ...     "consistent_Bad": [0.9, 0.8, 0.5, 1.0], "embedding_sim": [0.5, 0.5, 0.5, 0.3],
        ...     "rouge_l": [0.3, 0.3, 0.3, 0.2], "opening_share": [0.4, 0.2, 0.1, 0.9]})
        >>> adopt_policy(levers, {"Bad": 0.7})  # "too varied" loses consistency with Bad
        'varied'
        >>> adopt_policy(levers, {"Bad": 0.95}) is None
        True
    """
    ok = np.array([m == [] for m in policy_misses(levers, human_consistency)], dtype=bool)
    qualified = levers[ok].assign(_order=np.arange(len(levers))[ok])
    if qualified.empty:
        return None
    best = qualified.sort_values(["opening_share", "chosen", "_order"], ascending=[True, False, True])
    return str(best["lever"].iloc[0])


def adopted_decode(levers: pd.DataFrame, lever: str | None, decode: DecodeConfig) -> DecodeConfig:
    """The decoding that reproduces the ``lever`` row of :func:`_levers` (``decode`` when None).

    Example:
        >>> levers = pd.DataFrame({"lever": ["a"], "policy": ["every row"], "opening_weight": [3.0],
        ...                        "sim_weight": [10.0]})
        >>> d = adopted_decode(levers, "a", DecodeConfig())
        >>> d.sample_all, d.opening_weight, d.sim_weight, d.nonword_weight
        (True, 3.0, 10.0, 0.0)
    """
    if lever is None:
        return decode
    at = levers["lever"].tolist().index(lever)
    policy, weight = str(levers["policy"].iloc[at]), float(levers["opening_weight"].to_numpy(dtype=float)[at])
    # tables written before the similarity weight was a lever measured weight 1 only
    sim = float(levers["sim_weight"].to_numpy(dtype=float)[at]) if "sim_weight" in levers else 1.0
    # and those written before the non-word penalty measured none
    nonword = float(levers["nonword_weight"].to_numpy(dtype=float)[at]) if "nonword_weight" in levers else 0.0
    return replace(
        decode, sample_all=policy == EVERY_ROW, opening_weight=weight, sim_weight=sim, nonword_weight=nonword
    )


def _epoch_monitor(
    select: Sequence[ExplanationExample],
    embedder: Embedder,
    classifier: Any,
    config: ExplainRunConfig,
    known: frozenset[str],
) -> Any:
    """Held-out figures of greedy decoding after each training epoch (the "longer training" lever)."""
    rows, refs = _held_out_rows(select)
    rows, refs = rows[:MONITOR_ROWS], refs[:MONITOR_ROWS]
    greedy = replace(config.decode, candidates=0)

    def monitor(model: Any, tokenizer: Any) -> dict[str, float]:
        explainer = GeneratorExplainer(
            model,
            tokenizer,
            greedy,
            source_max_len=config.generator.source_max_len,
            bf16=config.generator.bf16,
        )
        return _held_out_figures(explainer.explain_many(rows), rows, refs, embedder, classifier, known)

    return monitor


def training_seconds(history: dict[str, Any]) -> float:
    """Wall time that training the generator took: recorded, or the sum of its epochs' times.

    Example:
        >>> training_seconds({"train_s": 12.5, "epochs": []})
        12.5
        >>> training_seconds({"epochs": [{"wall_s": 10.0, "eval_s": 1.0}, {"wall_s": 9.0}]})
        20.0
    """
    if "train_s" in history:
        return float(history["train_s"])
    return float(sum(e["wall_s"] + e.get("eval_s", 0.0) for e in history["epochs"]))


def plan_units(config: ExplainRunConfig) -> list[str]:
    """The runs an invocation under ``config`` computes, as ``fqa run --plan`` lists them."""
    return [""]


def config_record(config: ExplainRunConfig) -> dict[str, Any]:
    """The configuration the stage records in the manifest (and compares a rerun with)."""
    return asdict(config)


def run_explain(
    data_dir: Path, out_dir: Path, config: ExplainRunConfig | None = None, cache_root: Path | None = None
) -> dict[str, Any]:
    """Run the explain stage on top of the rerank stage's outputs in ``out_dir``."""
    config = config or ExplainRunConfig()
    cache_root = cache_root or default_cache_root()
    protocol = data.training_protocol(data_dir)
    timings: dict[str, Any] = {}
    from_cache: dict[str, bool] = {}
    with stage(timings, "data"):
        fb = data.all_feedback(data_dir, config.subset)
        fit_items, select_items = feedback_item_sets(protocol, fb["train"], fb["valid"], config.holdout)
        fit, select = explanation_examples(fit_items), explanation_examples(select_items)
        test_items = [it for f in fb["test"] for it in f.items]
        sources = {
            "predicted": _predicted_ratings(out_dir, test_items, config.rating_reranker),
            "majority": [majority_label(it.ratings, tie="lower") for it in test_items],
        }
        top1, top1_rows = _top1_rows(out_dir, data_dir, config.subset)
        # what counts as a word: the training explanations and every text an explainer reads (held-out
        # and test explanations are never in it, so people's own typos and rare words count too)
        known = lexicon(
            [t for e in fit for t in (e.question, e.passage_text, e.explanation)]
            + [t for e in select for t in (e.question, e.passage_text)]
            + [t for it in test_items for t in (it.question, it.passage.text)]
            + [t for q, p, _ in top1_rows for t in (q, p)]
        )
    embedder = Embedder()
    with stage(timings, "rating_classifier"):
        # trained on human training explanations only, fixed before any generator is trained
        classifier = rating_classifier(embedder, fit)
        classifier_acc = _classifier_accuracy(classifier, embedder, select)
        chooser = CandidateChooser(
            fit,
            embedder.encoder,
            sim_weight=config.decode.sim_weight,
            opening_weight=config.decode.opening_weight,
            nonword_weight=config.decode.nonword_weight,
            known=known,
        )
        chooser_acc = chooser.accuracy(select)
    with stage(timings, "generator/train"):
        monitor = _epoch_monitor(select, embedder, classifier, config, known)
        model_dir, history = train_generator(fit, select, config.generator, cache_root, monitor)
    from_cache["generator/train"] = bool(history["from_cache"])
    generator = GeneratorExplainer.load(model_dir, config.generator, config.decode, chooser)
    template = TemplateExplainer()
    retrieval_same = RetrievalExplainer(fit, same_rating=True, encoder=embedder.encoder)
    with stage(timings, "generator/levers"):
        levers = _levers(
            generator,
            chooser,
            select,
            embedder,
            classifier,
            config.decode,
            references=[template, retrieval_same],
        )
    # the held-out levers choose how feedback_test is explained (never feedback_test itself)
    adopted = adopt_policy(levers, classifier_acc) if config.adopt else None
    levers["adopted"] = levers["lever"] == adopted
    decode = adopted_decode(levers, adopted, config.decode)
    if decode != config.decode:
        generator = GeneratorExplainer(
            generator.model,
            generator.tokenizer,
            decode,
            chooser.with_weights(
                chooser.rating_weight, decode.sim_weight, decode.opening_weight, decode.nonword_weight
            ),
            source_max_len=generator.source_max_len,
            bf16=generator.bf16,
        )
    explainers: list[Explainer] = [
        template,
        retrieval_same,
        RetrievalExplainer(fit, same_rating=False, encoder=embedder.encoder),
        generator,
    ]
    test_rows = {
        source: [(it.question, it.passage.text, r) for it, r in zip(test_items, ratings, strict=True)]
        for source, ratings in sources.items()
    }
    # one call per explainer over every row: identical rows are explained once and alike
    every = [*test_rows["predicted"], *test_rows["majority"], *top1_rows]
    frames, greedy_frames = [], []
    # an explainer's rows of one rating source, scored: frame(name, source, texts, ratings)
    frame = partial(
        _explainer_frame, protocol, items=test_items, embedder=embedder, classifier=classifier, known=known
    )
    for explainer in explainers:
        with stage(timings, f"{explainer.name}/explain"):
            if isinstance(explainer, GeneratorExplainer):
                # the greedy texts the chooser weighed come with the choice (no extra decoding)
                chosen, greedy = explainer.explain_and_greedy(every)
                greedy_of = dict(zip(every, greedy, strict=True))
            else:
                chosen = explainer.explain_many(every)
            texts_of = dict(zip(every, chosen, strict=True))
            for source, ratings in sources.items():
                rows = test_rows[source]
                frames.append(frame(explainer.name, source, [texts_of[row] for row in rows], ratings))
                if isinstance(explainer, GeneratorExplainer):
                    texts = [greedy_of[row] for row in rows]
                    greedy_frames.append(frame("generator_greedy", source, texts, ratings))
            top1[explainer.name] = [texts_of[row] for row in top1_rows]
    with stage(timings, "humans"):
        humans = _human_metrics(test_items, embedder, classifier, known)
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_parquet(out_dir / "explanations.parquet", pd.concat(frames, ignore_index=True))
    atomic_write_parquet(
        out_dir / "explanation_greedy.parquet",
        pd.concat(greedy_frames, ignore_index=True),
    )
    atomic_write_parquet(out_dir / "explanation_humans.parquet", humans.assign(protocol=protocol))
    atomic_write_parquet(out_dir / "explanations_top1.parquet", top1.assign(protocol=protocol))
    atomic_write_parquet(out_dir / "explanation_levers.parquet", levers.assign(protocol=protocol))
    recorded_config = config_record(config)
    add_compute_times(out_dir / "manifest.json", "explain", timings, from_cache, recorded_config)
    # the generator's cost is known from its own history, whichever run trained it
    timings["generator/train"]["compute_s"] = round(training_seconds(history), 2)
    if "peak_rss_mb" in history:
        timings["generator/train"]["compute_peak_rss_mb"] = history["peak_rss_mb"]
    entry = {
        "stage": "explain",
        "protocol": protocol,
        "config": recorded_config,
        "training_explanations": [len(fit), len(select)],
        "generator_history": history,
        "rating_classifier_heldout_accuracy": classifier_acc["overall"],
        "rating_classifier_heldout_accuracy_by_rating": classifier_acc,
        "chooser_classifier_heldout_accuracy": chooser_acc,
        "lexicon_words": len(known),
        # how feedback_test was explained: the configured decoding or the policy the levers adopted
        "adopted_lever": adopted,
        "decode": asdict(decode),
        "top1_system": [str(top1["rqa"].iloc[0]), str(top1["reranker"].iloc[0])] if len(top1) else None,
        **provenance(timings, CACHE_VERSION),
    }
    # the runs this invocation finished, for `fqa run --plan` (stages/plan.py)
    remember_finished(
        cache_root, "explain", recorded_config, RUN_FIELDS, data_fingerprint(data_dir), plan_units(config)
    )
    update_manifest(out_dir / "manifest.json", "explain", entry)
    return entry

"""Stage ``relevance`` of ``fqa run``: choose the relevance model's recipe on held-out QA-train questions.

The relevance model (the ``vanilla`` reranker, which every feedback-trained reranker continues
from) is trained on QA data alone. Its recipe (loss, negatives per question and their source, the
QA-train domains, epochs) is chosen here by measurement, never on a test file: every recipe trains
seed 0 on the QA-train questions outside the held-out tenth
(:func:`~fqa_analysis.models.reranker.inputs.is_held_out`) and rescores the held-out questions of
the four feedback domains: the gold passage and the ``eval_depth - 1`` best non-gold passages of
zero-shot MiniLM's ranking (the same candidates for every recipe). A recipe's seed-0 model has the
content key of the rerank stage's ``vanilla`` seed 0 under that recipe, so the chosen recipe's
model is trained once for both stages.

Outputs (in ``results/``): ``relevance_recipes.parquet``, one row per (recipe, held-out question,
candidate) with ``p_*`` and ``is_gold`` (the book computes AUC and accuracy alone from it with
:func:`fqa_analysis.core.reranking.recipe_table`), and the manifest entry ``relevance`` (each
recipe's training history, pairs and compute).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from fqa_analysis import data
from fqa_analysis.cache import atomic_write_parquet, default_cache_root
from fqa_analysis.core.candidates import RATING_COLUMNS
from fqa_analysis.models.reranker.encoder import encode_pairs, pair_id
from fqa_analysis.models.reranker.inputs import is_held_out, pseudo_pairs, ranked_passages, relevance_splits
from fqa_analysis.models.reranker.network import CACHE_VERSION
from fqa_analysis.models.reranker.scoring import score_cached, stored_probabilities
from fqa_analysis.models.reranker.store import train_relevance
from fqa_analysis.models.reranker.variants import RerankRunConfig
from fqa_analysis.profiling import stage
from fqa_analysis.stages.manifest import (
    accumulated_entry,
    add_compute_times,
    model_training_compute,
    provenance,
    update_manifest,
)
from fqa_analysis.stages.plan import data_fingerprint, remember_finished

__all__ = [
    "RECIPES",
    "RUN_FIELDS",
    "Recipe",
    "RelevanceRunConfig",
    "config_record",
    "eval_candidates",
    "plan_units",
    "run_relevance",
]


#: Config fields that only say which runs ran: which recipes ran, and the rerank settings this stage
#: does not read (variants, seeds, systems).
RUN_FIELDS: tuple[str, ...] = ("recipes", "rerank.variants", "rerank.seeds", "rerank.score_rqa")


@dataclass(frozen=True)
class Recipe:
    """One way to train the relevance model.

    Each field carries the name of the setting it sets everywhere: the
    :class:`~fqa_analysis.models.reranker.variants.RerankRunConfig` field, the ``fqa run`` option
    (``--relevance-loss``, ``--pseudo-negatives``, ...) and the manifest's record
    (:data:`~fqa_analysis.core.results.RECIPE_SETTINGS`); ``relevance_epochs`` is ``vanilla``'s entry of
    ``RerankRunConfig.variant_epochs``.
    """

    relevance_loss: str
    pseudo_negatives: int
    relevance_domains: tuple[str, ...]
    negative_source: str = "minilm"
    relevance_epochs: int = 1

    def apply(self, config: RerankRunConfig) -> RerankRunConfig:
        """``config`` with this recipe's relevance settings."""
        return replace(
            config,
            relevance_loss=self.relevance_loss,
            pseudo_negatives=self.pseudo_negatives,
            relevance_domains=self.relevance_domains,
            negative_source=self.negative_source,
            variant_epochs={**config.variant_epochs, "vanilla": self.relevance_epochs},
        )


#: The measured recipes, one lever changed at a time from the earlier stage's
#: ``pointwise_1neg_feedback``: the loss (listwise, with one negative a pairwise term), negatives
#: per question, the QA-train domains (the feedback domains' 4,407 questions, or Quebec's 5,060
#: too), the negatives' source, epochs. The rerank stage's default
#: (:class:`~fqa_analysis.models.reranker.variants.RerankRunConfig`) is ``listwise_3neg_all``, measured first.
RECIPES: dict[str, Recipe] = {
    "listwise_3neg_all": Recipe("listwise", 3, data.DOMAINS),
    "pointwise_1neg_feedback": Recipe("pointwise", 1, data.FEEDBACK_DOMAINS),
    "listwise_1neg_feedback": Recipe("listwise", 1, data.FEEDBACK_DOMAINS),
    "listwise_3neg_feedback": Recipe("listwise", 3, data.FEEDBACK_DOMAINS),
    "listwise_3neg_all_bm25": Recipe("listwise", 3, data.DOMAINS, negative_source="bm25"),
    "listwise_3neg_all_2ep": Recipe("listwise", 3, data.DOMAINS, relevance_epochs=2),
}


@dataclass(frozen=True)
class RelevanceRunConfig:
    """What ``fqa run relevance`` computes.

    Attributes:
        recipes: Names of :data:`RECIPES` to train and measure. Default: the book's rows (those in
            the committed results/), the stage's recipe and the simplest one it is compared with;
            the others, such as the stage's recipe on the four feedback domains' QA data only (what
            Quebec's QA data adds), are measured on request (``--recipes``), each about an hour on 2
            cores.
        rerank: The rerank stage's settings the recipes modify (model, subset, negative pool).
        seed: Training seed of every recipe (the recipes are compared on one seed; the paired
            comparison is over held-out questions).
        eval_depth: Candidates per held-out question: the gold and the best non-gold of zero-shot
            MiniLM's ranking.
    """

    recipes: tuple[str, ...] = ("listwise_3neg_all", "pointwise_1neg_feedback")
    rerank: RerankRunConfig = field(default_factory=RerankRunConfig)
    seed: int = 0
    eval_depth: int = 5


def eval_candidates(
    splits: list[data.QASplit], ranked: dict[str, list[list[int]]], depth: int
) -> pd.DataFrame:
    """The held-out questions' candidates: the gold and the ``depth - 1`` best non-gold passages.

    Args:
        splits: QA-train splits of the feedback domains.
        ranked: Per domain, each question's passage ids best first (at least ``depth`` of them).
        depth: Candidates per question.

    Returns:
        ``domain, question_id, question, passage_id, rank, is_gold, passage_text``; ``rank`` is
        the candidate's 1-based position among them (the gold keeps its ranking position when it
        is among the first ``depth``, and is last otherwise).

    Raises:
        ValueError: No question of ``splits`` is held out.
    """
    rows = []
    for s in splits:
        for q, ranking in zip(s.questions, ranked[s.domain], strict=True):
            if not is_held_out(q.question):
                continue
            others = [pid for pid in ranking if pid != q.passage_id][: depth - 1]
            where = ranking.index(q.passage_id) if q.passage_id in ranking[:depth] else depth - 1
            ids = others[:where] + [q.passage_id] + others[where:]
            for rank, pid in enumerate(ids, start=1):
                rows.append(
                    {
                        "domain": s.domain,
                        "question_id": q.question_id,
                        "question": q.question,
                        "passage_id": pid,
                        "rank": rank,
                        "is_gold": pid == q.passage_id,
                        "passage_text": s.passages[pid].text,
                    }
                )
    if not rows:
        raise ValueError(
            "no held-out QA-train question in the feedback domains (one in ten by a hash of its text); "
            "run on more questions (a larger --subset or none)"
        )
    return pd.DataFrame(rows)


def plan_units(config: RelevanceRunConfig) -> list[str]:
    """The runs an invocation under ``config`` computes, as ``fqa run --plan`` lists them."""
    return list(config.recipes)


def config_record(config: RelevanceRunConfig) -> dict[str, Any]:
    """The configuration the stage records in the manifest (and compares a rerun with)."""
    return asdict(config)


def run_relevance(
    data_dir: Path,
    out_dir: Path,
    config: RelevanceRunConfig | None = None,
    cache_root: Path | None = None,
    replace_runs: bool = False,
) -> dict[str, Any]:
    """Train every recipe's relevance model (seed 0) and score the held-out questions' candidates.

    Runs accumulate as in every stage (:func:`~fqa_analysis.stages.manifest.accumulated_entry`):
    this run's recipes replace their rows, the folder's other recipes stay under the same
    configuration; under another one the run is refused before any work unless ``replace_runs``.

    Raises:
        ConfigurationMismatchError: ``out_dir`` holds the stage under another configuration.
    """
    config = config or RelevanceRunConfig()
    cache_root = cache_root or default_cache_root()
    unknown = [r for r in config.recipes if r not in RECIPES]
    if unknown:
        raise ValueError(f"unknown recipe(s) {unknown}; use some of {', '.join(RECIPES)}")
    recorded_config = config_record(config)
    earlier_entry = accumulated_entry(out_dir, "relevance", recorded_config, RUN_FIELDS, replace_runs)
    timings: dict[str, Any] = {}
    from_cache: dict[str, bool] = {}
    with stage(timings, "data"):
        feedback_only = replace(config.rerank, relevance_domains=data.FEEDBACK_DOMAINS)
        feedback_splits = relevance_splits(data_dir, feedback_only)
        ranked = ranked_passages(feedback_splits, "minilm", config.rerank.negative_pool + 1, cache_root)
        table = eval_candidates(feedback_splits, ranked, config.eval_depth)
        sets = {
            name: pseudo_pairs(data_dir, RECIPES[name].apply(config.rerank), cache_root)
            for name in config.recipes
        }
    eval_questions = set(table["question"])
    for name, (fit, _) in sets.items():
        leaked = eval_questions & {p.question for p in fit}
        if leaked:  # a guard on the held-out rule: the recipes are compared on unseen questions only
            raise ValueError(f"recipe {name}: {len(leaked)} held-out question(s) among its training pairs")
    eval_ids = [pair_id(q, p) for q, p in zip(table["question"], table["passage_text"], strict=True)]
    pairs = [(p.question, p.passage_text) for fit, select in sets.values() for p in fit + select]
    pairs += list(zip(table["question"], table["passage_text"], strict=True))
    with stage(timings, "lower_layers"):
        states = encode_pairs(pairs, config.rerank.model, cache_root)
    from_cache["lower_layers"] = states.from_cache
    frames, record = [], {}
    for name in config.recipes:
        recipe = RECIPES[name]
        fit, select = sets[name]
        model = replace(config.rerank.model, epochs=recipe.relevance_epochs)
        with stage(timings, f"{name}/train"):
            trained = train_relevance(
                fit, select, states, recipe.apply(config.rerank), config.seed, cache_root
            )
        weights, history, folder = trained.weights, trained.history, trained.folder
        from_cache[f"{name}/train"] = trained.from_cache
        with stage(timings, f"{name}/score"):
            probs, from_cache[f"{name}/score"] = score_cached(folder, weights, eval_ids, states, model)
        p = stored_probabilities(probs)
        frames.append(
            table.drop(columns=["passage_text", "question"]).assign(
                recipe=name, seed=config.seed, **dict(zip(RATING_COLUMNS, p.T, strict=True))
            )
        )
        record[name] = {
            **asdict(recipe),
            "fit_pairs": len(fit),
            "fit_questions": len({p.question for p in fit}),
            "select_pairs": len(select),
            "history": history,
        }
    cols = ["recipe", "seed", "domain", "question_id", "passage_id", "rank", "is_gold", *RATING_COLUMNS]
    path = out_dir / "relevance_recipes.parquet"
    # a run of some recipes keeps the rows (and records) of the others under the same configuration
    if path.exists() and earlier_entry:
        kept = pd.read_parquet(path)
        frames.insert(0, kept[~kept["recipe"].isin(config.recipes)])
    out = pd.concat([f for f in frames if not f.empty], ignore_index=True)[cols]
    atomic_write_parquet(path, out)
    earlier = earlier_entry.get("recipes", {})
    record = {**{k: v for k, v in earlier.items() if k in set(out["recipe"])}, **record}
    manifest = out_dir / "manifest.json"
    add_compute_times(manifest, "relevance", timings, from_cache, recorded_config, RUN_FIELDS)
    model_training_compute(timings, {name: r["history"] for name, r in record.items()})
    entry_timings = {
        **{
            k: v
            for k, v in earlier_entry.get("timings", {}).items()
            if k.split("/")[0] in record and k.split("/")[0] not in config.recipes
        },
        **timings,
    }
    entry = {
        "stage": "relevance",
        "protocol": data.training_protocol(data_dir),
        "config": recorded_config,
        "recipes": record,
        "eval_questions": len(eval_questions),
        **provenance(entry_timings, CACHE_VERSION),
    }
    # the runs this invocation finished, for `fqa run --plan` (stages/plan.py)
    remember_finished(
        cache_root, "relevance", recorded_config, RUN_FIELDS, data_fingerprint(data_dir), plan_units(config)
    )
    update_manifest(manifest, "relevance", entry)
    return entry

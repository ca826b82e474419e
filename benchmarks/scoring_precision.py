"""Benchmark: scoring precision of a trained relevance model, float32 vs int8 dynamic vs bfloat16.

Loads (or trains) one recipe's seed-0 relevance model exactly as ``fqa run relevance`` does (from
the cache after that stage ran), scores the held-out QA-train candidates of the recipe table in
float32 and with int8 dynamic quantization of the linear layers, and a sample under bfloat16
autocast (emulated, hence slow, on CPUs without native bf16), and prints pairs/s and the AUC of
each. The rule it informs: adopt int8 scoring where it is at least 1.5x faster and the AUC moves by
less than 0.005. Not a test: it prints figures. Usage:

    .venv/bin/python benchmarks/scoring_precision.py [--recipe listwise_3neg_all] [--bf16-pairs 256]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np

from fqa_analysis import data
from fqa_analysis.cache import default_cache_root
from fqa_analysis.core.reranking import auc
from fqa_analysis.models.reranker.encoder import encode_pairs, pair_id
from fqa_analysis.models.reranker.inputs import ranked_passages, relevance_splits
from fqa_analysis.models.reranker.network import predict
from fqa_analysis.models.reranker.store import relevance_model
from fqa_analysis.profiling import peak_rss_mb
from fqa_analysis.stages.relevance import RECIPES, RelevanceRunConfig, eval_candidates


def main() -> None:
    """Load the model, score under each precision, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--recipe", default="listwise_3neg_all", choices=list(RECIPES))
    parser.add_argument("--bf16-pairs", type=int, default=256)
    args = parser.parse_args()
    config = RelevanceRunConfig()
    cache = default_cache_root()
    data_dir = data.resolve_data_dir(None)
    splits = relevance_splits(data_dir, replace(config.rerank, relevance_domains=data.FEEDBACK_DOMAINS))
    table = eval_candidates(
        splits, ranked_passages(splits, "minilm", config.rerank.negative_pool + 1, cache), config.eval_depth
    )
    model = replace(config.rerank.model, bf16=False)
    states = encode_pairs(list(zip(table["question"], table["passage_text"], strict=True)), model, cache)
    relevance = relevance_model(data_dir, RECIPES[args.recipe].apply(config.rerank), config.seed, cache)
    weights, cached = relevance.weights, relevance.from_cache
    print(f"recipe {args.recipe}: model {'from the cache' if cached else 'trained now'}; {len(table)} pairs")
    ids = [pair_id(q, p) for q, p in zip(table["question"], table["passage_text"], strict=True)]
    gold = table["is_gold"].to_numpy(dtype=bool)
    sample = np.random.default_rng(0).choice(len(ids), size=min(args.bf16_pairs, len(ids)), replace=False)
    results = {}
    for name, settings, rows in (
        ("float32", model, np.arange(len(ids))),
        ("int8 dynamic", replace(model, int8_scoring=True), np.arange(len(ids))),
        ("bfloat16 autocast", replace(model, bf16=True), sample),
    ):
        t0 = time.perf_counter()
        probs = predict(weights, [ids[i] for i in rows], states, settings)
        seconds = time.perf_counter() - t0
        results[name] = (rows, probs[:, 3])
        print(
            f"{name:18s} {len(rows) / seconds:7.1f} pairs/s over {len(rows)} pairs | "
            f"AUC {auc(probs[:, 3], gold[rows]):.4f} | peak {peak_rss_mb():.0f} MiB",
            flush=True,
        )
    base = results["float32"][1]
    for name in ("int8 dynamic", "bfloat16 autocast"):
        rows, pe = results[name]
        ref = base[rows]
        print(
            f"{name} vs float32 on the same pairs: AUC {auc(pe, gold[rows]):.4f} vs "
            f"{auc(ref, gold[rows]):.4f}, max |dP(Excellent)| {np.abs(pe - ref).max():.4f}"
        )


if __name__ == "__main__":
    main()

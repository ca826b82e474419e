"""Probe: how well one reranker configuration learns, by its held-out KL per epoch.

Trains the ``vanilla`` (pseudo-ratings: gold = Excellent vs negatives drawn from zero-shot
MiniLM's top-10 non-gold = Bad) and ``feedback_kl`` training sets of the rerank stage with the given
settings, and prints the held-out KL after every epoch and the wall time. Used to
decide the stage's configuration; not a test. Usage:

    .venv/bin/python benchmarks/reranker_probe.py --frozen 3 --pooling cls --lr 1e-4 --epochs 4
"""

from __future__ import annotations

import argparse
import time

from fqa_analysis import data
from fqa_analysis.cache import default_cache_root
from fqa_analysis.models.reranker.encoder import RerankConfig, encode_pairs
from fqa_analysis.models.reranker.inputs import example_ids, pseudo_pairs
from fqa_analysis.models.reranker.network import train_reranker
from fqa_analysis.models.reranker.pairs import feedback_training_sets
from fqa_analysis.models.reranker.variants import RerankRunConfig
from fqa_analysis.profiling import peak_rss_mb


def main() -> None:
    """Train and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--frozen", type=int, default=RerankConfig.frozen_layers)
    parser.add_argument("--pooling", default=RerankConfig.pooling)
    parser.add_argument("--lr", type=float, default=RerankConfig.lr)
    parser.add_argument("--epochs", type=int, default=RerankConfig.epochs)
    parser.add_argument("--variants", default="vanilla,feedback_kl")
    parser.add_argument("--negatives", type=int, default=RerankRunConfig.pseudo_negatives)
    args = parser.parse_args()
    data_dir = data.resolve_data_dir(None)
    fb = {s: data.available_feedback(data_dir, s) for s in ("train", "valid")}
    sets = {
        "feedback_kl": feedback_training_sets(data.training_protocol(data_dir), fb["train"], fb["valid"]),
        "vanilla": pseudo_pairs(
            data_dir, RerankRunConfig(pseudo_negatives=args.negatives), default_cache_root()
        ),
    }
    config = RerankConfig(frozen_layers=args.frozen, pooling=args.pooling, lr=args.lr, epochs=args.epochs)
    pairs = [(p.question, p.passage_text) for fit, select in sets.values() for p in fit + select]
    t0 = time.perf_counter()
    states = encode_pairs(pairs, config, default_cache_root())
    print(f"{config}\nlower layers: {time.perf_counter() - t0:.0f} s for {len(set(pairs))} pairs", flush=True)
    for name in args.variants.split(","):
        fit, select = sets[name]
        t0 = time.perf_counter()
        history = train_reranker(
            example_ids(fit, "kl"), example_ids(select, "kl"), states, config, seed=0
        ).history
        kls = [round(e["select_kl"], 3) for e in history["epochs"]]
        print(
            f"{name}: held-out KL by epoch {kls} | {time.perf_counter() - t0:.0f} s | "
            f"peak {peak_rss_mb():.0f} MiB",
            flush=True,
        )


if __name__ == "__main__":
    main()

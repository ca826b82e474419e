"""Benchmark: reranker throughput on this machine, to size the rerank stage.

Prints pairs/s of the cached lower-layer pass, and train steps/s and scoring pairs/s of the top
layers, for several ``frozen_layers``. Not a test: it prints figures. Usage:

    .venv/bin/python benchmarks/rerank_speed.py [--pairs 640] [--frozen 4,5]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from fqa_analysis import data
from fqa_analysis.models.reranker.encoder import RerankConfig, encode_pairs, pair_id
from fqa_analysis.models.reranker.network import predict, train_reranker
from fqa_analysis.profiling import peak_rss_mb


def main() -> None:
    """Measure and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=640)
    parser.add_argument("--frozen", default="4,5")
    parser.add_argument("--no-bf16", dest="bf16", action="store_false")
    args = parser.parse_args()
    data_dir = data.resolve_data_dir(None)
    items = [it for f in data.available_feedback(data_dir, "valid") for it in f.items][: args.pairs]
    pairs = [(it.question, it.passage.text) for it in items]
    rng = np.random.default_rng(0)
    targets = rng.dirichlet(np.ones(4), size=len(pairs))
    ids = [pair_id(q, p) for q, p in pairs]
    print(f"{len(pairs)} feedback pairs, max_len 128, 2 threads")
    for frozen in (int(x) for x in args.frozen.split(",")):
        config = RerankConfig(frozen_layers=frozen, epochs=1, bf16=args.bf16)
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            states = encode_pairs(pairs, config, Path(tmp))
            enc = time.perf_counter() - t0
            t0 = time.perf_counter()
            examples = list(zip(ids, targets, strict=True))
            run = train_reranker(examples, examples[:64], states, config, seed=0)
            weights, history = run.weights, run.history
            train = time.perf_counter() - t0
            t0 = time.perf_counter()
            predict(weights, ids, states, config)
            score = time.perf_counter() - t0
        steps = history["steps"]
        print(
            f"frozen_layers={frozen}: lower pass {len(pairs) / enc:6.1f} pairs/s | "
            f"train {steps / train:5.2f} steps/s (batch 32, incl. selection on 64) | "
            f"score {len(pairs) / score:6.1f} pairs/s | peak {peak_rss_mb():.0f} MiB"
        )


if __name__ == "__main__":
    main()

"""Benchmark: the explanation generator's training step and sampled decoding, float32 against bfloat16.

What bfloat16 autocast would save the explain stage on a CPU with native bfloat16 (AMX,
``avx512_bf16``). The project computes ``results/`` in float32 on every CPU (the same numbers and
cache keys on any CPU; ``models.reranker.encoder.uses_bf16``), so this only says what the 45-minute
budget would gain from giving that up. Trains a fresh MiniLM2MiniLM generator for ``--steps`` steps of
8 training pairs each (the stage's batch), then samples ``--candidates`` explanations for ``--rows``
training pairs, once per precision, alternating (float32, bfloat16, float32, bfloat16) so that drift in
the machine's load hits both. Not a test: it prints figures. Usage:

    .venv/bin/python benchmarks/explain_precision.py [--steps 12] [--rows 64] [--candidates 4]

Measured here (2 cores, an untrained generator, the defaults; the two rounds): training 2.03 / 1.84 s
per step in float32, 1.44 / 1.31 s in bfloat16 (29% less); sampled decoding 18.1 / 16.7 s and
15.8 / 14.4 s (13-14% less). Applied to the explain stage's recorded steps (training 31.5 min, levers
6.8, explanations 19.7, the rest 3.2): about 48 minutes instead of 61, still over 45.
"""

from __future__ import annotations

import argparse
import time

from fqa_analysis import data
from fqa_analysis.models.explainer import (
    DecodeConfig,
    GeneratorConfig,
    GeneratorExplainer,
    _loss,
    _pairs,
    explanation_examples,
    new_encoder_decoder,
)
from fqa_analysis.models.reranker.pairs import feedback_item_sets
from fqa_analysis.models.retrieval import minilm_path
from fqa_analysis.profiling import peak_rss_mb
from fqa_analysis.stages.explain import ExplainRunConfig


def main() -> None:
    """Measure and print the figures."""
    import torch
    from transformers import AutoTokenizer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--candidates", type=int, default=4)
    args = parser.parse_args()
    torch.set_num_threads(GeneratorConfig.threads)
    data_dir = data.resolve_data_dir(None)
    feedback = data.all_feedback(data_dir)
    fit, _ = feedback_item_sets(
        data.training_protocol(data_dir), feedback["train"], feedback["valid"], ExplainRunConfig().holdout
    )
    pairs = _pairs(explanation_examples(fit))
    tokenizer = AutoTokenizer.from_pretrained(minilm_path())
    rows = [(p.question, p.passage_text, "Bad") for p in pairs[: args.rows]]
    print(f"{args.steps} training steps of 8 pairs; {len(rows)} rows x {args.candidates} sampled candidates")
    for bf16 in (False, True, False, True):
        torch.manual_seed(0)
        model = new_encoder_decoder(tokenizer)
        config = GeneratorConfig(bf16=bf16)
        optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr)
        model.train()
        start = time.perf_counter()
        for step in range(args.steps):
            loss = _loss(model, tokenizer, pairs[step * 8 : (step + 1) * 8], config)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        per_step = (time.perf_counter() - start) / args.steps
        decode = DecodeConfig(candidates=args.candidates, sample_all=True)
        explainer = GeneratorExplainer(model, tokenizer, decode, bf16=bf16)
        start = time.perf_counter()
        explainer._generate(rows, sample=True)
        sampled = time.perf_counter() - start
        name = "bfloat16" if bf16 else "float32"
        print(f"{name:<9} training {per_step:5.2f} s/step   sampled decoding {sampled:6.1f} s")
    print(f"peak memory {peak_rss_mb() / 1024:.2f} GiB")


if __name__ == "__main__":
    main()

"""Benchmark: the explanation generator's sampled decoding, transformers' sampler against ours.

Decodes ``--rows`` feedback_test pairs (rating Bad) with ``--candidates`` nucleus samples each
(p = 0.9, no 3-gram repeated), once with ``transformers``' own sampler (``do_sample=True,
top_p``: a full-vocabulary sort and draw at every step) and once with
:class:`fqa_analysis.models.sampling.NucleusSampler` (what the explain stage uses), and prints the
wall time of each, and of greedy decoding, on a fresh MiniLM2MiniLM generator by default. The
weights matter only through how flat the next-token distributions are: a trained generator's are
peakier, so its nucleus search is cheaper (the README's figures use ``--model``). Not a test: it
prints figures. Usage:

    .venv/bin/python benchmarks/explain_sampling.py [--rows 64] [--candidates 4] [--model DIR]

``--model``: a trained generator's folder (``<cache>/explainer/<key>/best``) instead of a fresh one.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from fqa_analysis import data
from fqa_analysis.models.explainer import (
    DecodeConfig,
    GeneratorConfig,
    GeneratorExplainer,
    _prefix_ids,
    encoder_inputs,
    new_encoder_decoder,
)
from fqa_analysis.models.retrieval import minilm_path
from fqa_analysis.profiling import peak_rss_mb


def _transformers_sampling(explainer: GeneratorExplainer, rows: list[tuple[str, str, str]], k: int) -> None:
    """The decoding the stage used before ``models/sampling.py``: ``generate(do_sample=True)``."""
    import torch

    d = explainer.decode
    with torch.inference_mode():
        for lo in range(0, len(rows), 32):
            batch = rows[lo : lo + 32]
            src = encoder_inputs(explainer.tokenizer, [r[:2] for r in batch], explainer.source_max_len)
            prefix = torch.tensor([_prefix_ids(explainer.tokenizer, "Bad")] * len(batch))
            torch.manual_seed(lo)
            explainer.model.generate(
                input_ids=src["input_ids"],
                attention_mask=src["attention_mask"],
                decoder_input_ids=prefix,
                max_new_tokens=d.max_new_tokens,
                no_repeat_ngram_size=d.no_repeat_ngram_size,
                num_beams=1,
                do_sample=True,
                top_p=d.top_p,
                top_k=0,
                num_return_sequences=k,
            )


def _timed(label: str, run: Any) -> None:
    start = time.perf_counter()
    run()
    print(f"{label:<44} {time.perf_counter() - start:7.1f} s")


def main() -> None:
    """Measure and print the figures."""
    import torch
    from transformers import AutoTokenizer

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=64)
    parser.add_argument("--candidates", type=int, default=4)
    parser.add_argument("--model", type=Path, default=None)
    args = parser.parse_args()
    data_dir = data.resolve_data_dir(None)
    items = [it for f in data.available_feedback(data_dir, "test") for it in f.items][: args.rows]
    rows = [(it.question, it.passage.text, "Bad") for it in items]
    config, decode = GeneratorConfig(), DecodeConfig(candidates=args.candidates)
    torch.set_num_threads(config.threads)
    if args.model is None:
        tokenizer = AutoTokenizer.from_pretrained(minilm_path())
        torch.manual_seed(0)
        explainer = GeneratorExplainer(
            new_encoder_decoder(tokenizer),
            tokenizer,
            decode,
            bf16=False,
        )
    else:
        explainer = GeneratorExplainer.load(args.model, config, decode)
    print(f"{len(rows)} feedback_test pairs, {args.candidates} candidates each, 2 threads")
    _timed("greedy (one text per row)", lambda: explainer._generate(rows, sample=False))
    _timed(
        "sampled: transformers (sort + full draw)",
        lambda: _transformers_sampling(explainer, rows, args.candidates),
    )
    _timed("sampled: models/sampling.NucleusSampler", lambda: explainer._generate(rows, sample=True))
    print(f"peak memory {peak_rss_mb() / 1024:.2f} GiB")


if __name__ == "__main__":
    main()

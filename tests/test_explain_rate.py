"""The explain-then-rate reranker: decoder batches by hand, and a tiny model that learns to rate."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fqa_analysis.models.explain_rate import (
    ExplainRateConfig,
    RatedExplanations,
    _decoder_batch,
    train_explain_rate,
)


def test_decoder_batch_reads_the_rating_after_the_explanation() -> None:
    from transformers import AutoTokenizer

    from fqa_analysis.models.retrieval import minilm_path

    tokenizer = AutoTokenizer.from_pretrained(minilm_path())
    ids, mask, labels, last = _decoder_batch(tokenizer, ["off topic", "yes"], 32)
    body = tokenizer("off topic", add_special_tokens=False)["input_ids"]
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    assert ids[0].tolist() == [cls, *body, sep]
    # position j predicts token j + 1; the [SEP] position predicts nothing (the head reads it)
    assert labels[0].tolist() == [*body, sep, -100]
    assert last.tolist() == [len(body) + 1, 2]
    assert ids[1, last[1]].item() == sep
    # the shorter row is padded: no loss and no attention past its [SEP]
    assert labels[1].tolist()[2:] == [-100] * (labels.shape[1] - 2)
    assert mask[1].tolist() == [1, 1, 1] + [0] * (mask.shape[1] - 3)


def test_tiny_model_learns_to_rate_what_it_explains(tmp_path: Path) -> None:
    """Trained for a few steps on two pairs, it rates the Excellent pair higher and writes its words.

    Goes through the real path: grouped explanations, the combined loss, selection by held-out KL
    with generated explanations, the cache, and greedy generation then rating at inference.
    """
    good = RatedExplanations(
        "Do masks work?", "Masks reduce spread.", (0.0, 0.0, 0.0, 1.0), ("Explains clearly how masks help.",)
    )
    bad = RatedExplanations(
        "Do masks work?",
        "Flights are cancelled.",
        (1.0, 0.0, 0.0, 0.0),
        ("Off topic, it talks about travel.",),
    )
    config = ExplainRateConfig(
        epochs=30, batch_pairs=2, lr=1e-3, warmup=0.0, max_steps=30, bf16=False, max_new_tokens=8
    )
    model, _, history = train_explain_rate([good, bad], [good, bad], config, seed=0, cache_root=tmp_path)
    assert history["steps"] == 30 and not history["from_cache"]
    assert history["epochs"][-1]["select_kl"] < history["epochs"][0]["select_kl"]
    probs, texts = model.predict([(good.question, good.passage_text), (bad.question, bad.passage_text)])
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
    assert probs[0, 3] > probs[1, 3] and probs[1, 0] > probs[0, 0]
    assert "travel" in texts[1] and "travel" not in texts[0]
    # cached: the same call trains nothing and predicts the same
    again, _, cached = train_explain_rate([good, bad], [good, bad], config, seed=0, cache_root=tmp_path)
    assert cached["from_cache"]
    np.testing.assert_allclose(again.predict([(good.question, good.passage_text)])[0], probs[:1], atol=1e-6)

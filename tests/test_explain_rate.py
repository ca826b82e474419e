"""The explain-then-rate reranker: decoder batches by hand, and a tiny model that learns to rate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fqa_analysis.cache import config_key
from fqa_analysis.models.explain_rate import (
    ExplainRateConfig,
    ExplainRateModel,
    RatedExplanations,
    _decoder_batch,
    train_explain_rate,
)
from fqa_analysis.stages.explain_rate import ExplainRateRunConfig, adopt_lever, lever_configs, lever_name


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


def test_own_form_rates_what_it_wrote_and_learns_only_the_annotators_words() -> None:
    """``head_reads="own"``: the rating part is the cross-entropy of what inference predicts.

    Same weights, dropout off: the token part equals the paper form's (the model's own words are
    read, never learned); the rating part equals -sum(target * log P_phi) of :meth:`predict`, which
    generates the explanation and then rates it; the paper form rates the annotators' words instead.
    """
    import torch

    pairs = [
        RatedExplanations(
            "Do masks work?", "Masks reduce spread.", (0.0, 0.0, 0.5, 0.5), ("Clear.", "Good.")
        ),
        RatedExplanations("Do masks work?", "Flights are cancelled.", (1.0, 0.0, 0.0, 0.0), ("Off topic.",)),
    ]
    losses = {}
    for form in ("own", "human"):
        config = ExplainRateConfig(bf16=False, max_new_tokens=6, head_reads=form, head_input="decoder")
        model = ExplainRateModel.new(config, seed=0)
        model.modules.eval()
        with torch.no_grad():
            losses[form] = model.loss(pairs)[1:]
        if form == "own":
            probs, _ = model.predict([(p.question, p.passage_text) for p in pairs])
            expected = -np.mean(
                [np.sum(np.array(p.target) * np.log(q)) for p, q in zip(pairs, probs, strict=True)]
            )
            assert losses[form][0] == pytest.approx(expected, rel=1e-4)
    assert losses["own"][1] == pytest.approx(losses["human"][1], rel=1e-5)
    assert losses["own"][0] != pytest.approx(losses["human"][0], rel=1e-3)


def test_opening_unlikelihood_adds_a_penalty_where_own_explanations_share_an_opening(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Own explanations that open alike: the term is positive, and the rating and token parts stay."""
    import torch

    from fqa_analysis.models import explain_rate

    # an untrained decoder's greedy explanations share their first token (checked below) and
    # drift apart after it: an opening of one token
    monkeypatch.setattr(explain_rate, "OPENING_TOKENS", 1)

    pairs = [
        RatedExplanations("Do masks work?", "Masks reduce spread.", (0.0, 0.0, 0.5, 0.5), ("Clear.",)),
        RatedExplanations("Can I travel?", "Flights are cancelled.", (1.0, 0.0, 0.0, 0.0), ("Off topic.",)),
    ]
    parts = {}
    for weight in (0.0, 2.0):
        config = ExplainRateConfig(bf16=False, max_new_tokens=6, opening_unlikelihood=weight)
        model = ExplainRateModel.new(config, seed=0)
        model.modules.eval()
        with torch.no_grad():
            total, rating, token = model.loss(pairs)
            written = model.predict([(p.question, p.passage_text) for p in pairs])[1]
        parts[weight] = (float(total), rating, token)
    assert written[0].split()[0] == written[1].split()[0]  # a shared opening, the term's target
    assert parts[2.0][1:] == pytest.approx(parts[0.0][1:], rel=1e-6)  # rating and token parts as before
    assert parts[2.0][0] > parts[0.0][0] + 1e-4
    with pytest.raises(ValueError, match="head_reads='own' only"):
        ExplainRateConfig(head_reads="human", head_input="decoder", opening_unlikelihood=1.0)
    assert "opening_unlikelihood" not in config_key(ExplainRateConfig())  # cached models keep their keys
    assert config_key(ExplainRateConfig(opening_unlikelihood=1.0))["opening_unlikelihood"] == 1.0


def test_sampled_own_explanations_are_seeded_varied_and_keyed_apart() -> None:
    """``own_top_p``: the explanation the head reads is a seeded nucleus draw, in training and at inference.

    A tiny ``own_top_p`` keeps one token in every nucleus, so the draw is the greedy text; a full
    nucleus (1.0) from an untrained decoder, whose distributions are flat, writes other texts,
    the same for the same seed. The rating part of the loss reads the drawn text.
    """
    import torch

    pairs = [
        RatedExplanations("Do masks work?", "Masks reduce spread.", (0.0, 0.0, 0.5, 0.5), ("Clear.",)),
        RatedExplanations("Can I travel?", "Flights are cancelled.", (1.0, 0.0, 0.0, 0.0), ("Off topic.",)),
    ]
    questions = [(p.question, p.passage_text) for p in pairs]
    written, ratings = {}, {}
    for top_p in (None, 1e-6, 1.0):
        model = ExplainRateModel.new(ExplainRateConfig(bf16=False, max_new_tokens=6, own_top_p=top_p), seed=0)
        model.modules.eval()
        with torch.no_grad():
            ratings[top_p] = model.loss(pairs, sample_seed=3)[1]
            written[top_p] = model.predict(questions)[1]
            again = model.predict(questions)[1]
        assert again == written[top_p]  # seeded: the same call, the same texts
    assert written[1e-6] == written[None]  # a one-token nucleus is greedy decoding
    assert ratings[1e-6] == pytest.approx(ratings[None], rel=1e-6)
    assert written[1.0] != written[None]
    assert ratings[1.0] != pytest.approx(ratings[None], rel=1e-4)  # the head read other texts
    with pytest.raises(ValueError, match="own_top_p must be in"):
        ExplainRateConfig(own_top_p=0.0)
    assert "own_top_p" not in config_key(ExplainRateConfig())  # cached greedy models keep their keys
    assert config_key(ExplainRateConfig(own_top_p=0.9))["own_top_p"] == 0.9


def test_forms_are_checked_and_keyed_apart() -> None:
    with pytest.raises(ValueError, match="head_reads must be one of"):
        ExplainRateConfig(head_reads="annotators")
    with pytest.raises(ValueError, match="head_input must be one of"):
        ExplainRateConfig(head_input="encoder")
    # the key leaves the form's settings out at their declared defaults (our form) only
    paper = config_key(ExplainRateConfig(head_reads="human", head_input="decoder"))
    assert (paper["head_reads"], paper["head_input"]) == ("human", "decoder")
    ours = config_key(ExplainRateConfig())
    assert "head_reads" not in ours and "head_input" not in ours and "device" not in ours
    assert config_key(ExplainRateConfig(device="cuda"))["device"] == "cuda"


def test_head_sees_the_encoder_summary_beside_the_decoder_state() -> None:
    """``decoder+encoder``: the head's input is [decoder state at [SEP]; masked mean of the encoder]."""
    import torch

    config = ExplainRateConfig(bf16=False)
    model = ExplainRateModel.new(config, seed=0)
    model.modules.eval()
    assert model.head.in_features == 2 * 384
    seen = []
    model.head.register_forward_hook(lambda _m, args, _out: seen.append(args[0]))
    with torch.no_grad():
        hidden, mask = model._encode(
            [("Do masks work?", "Masks reduce spread."), ("Hi?", "A much longer passage.")]
        )
        model._read(hidden, mask, ["Clear.", "Off topic."])
    n = int(mask[0].sum())
    np.testing.assert_allclose(
        seen[0][0, 384:].numpy(), hidden[0, :n].mean(dim=0).numpy(), rtol=1e-5, atol=1e-6
    )


def test_explain_rate_resumed_from_a_checkpoint_ends_with_the_weights_of_an_uninterrupted_run(
    tmp_path: Path,
) -> None:
    import torch

    from fqa_analysis.models.checkpoint import TrainingInterruptedError

    pairs = [
        RatedExplanations(
            "Do masks work?", "Masks reduce spread.", (0.0, 0.0, 0.0, 1.0), ("Explains masks.",)
        ),
        RatedExplanations("Do masks work?", "Flights stop.", (1.0, 0.0, 0.0, 0.0), ("Off topic, travel.",)),
        RatedExplanations("Wash hands?", "Use soap.", (0.0, 0.0, 1.0, 0.0), ("Says how.",)),
    ]
    config = ExplainRateConfig(epochs=2, batch_pairs=1, lr=1e-3, warmup=0.0, bf16=False, max_new_tokens=4)
    whole, _, _ = train_explain_rate(pairs, pairs[:1], config, seed=0, cache_root=tmp_path / "whole")
    with pytest.raises(TrainingInterruptedError):
        train_explain_rate(
            pairs, pairs[:1], config, seed=0, cache_root=tmp_path / "resumed", stop_after_steps=4
        )
    resumed, _, history = train_explain_rate(
        pairs, pairs[:1], config, seed=0, cache_root=tmp_path / "resumed"
    )
    assert history["steps"] == 6 and not history["from_cache"]
    a, b = whole.state(), resumed.state()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_seed_zero_measures_each_lever_once_and_adopts_the_least_repeated_that_rates_as_well() -> None:
    """Levers: the configured setting, each unlikelihood weight, each nucleus; the rule picks one."""
    run = ExplainRateRunConfig(unlikelihood_levers=(2.0, 0.0), top_p_levers=(0.5, 0.9))
    settings = lever_configs(run)
    assert [(c.opening_unlikelihood, c.own_top_p) for c in settings] == [
        (0.0, None),
        (2.0, None),
        (0.0, 0.5),
        (0.0, 0.9),
    ]  # weight 0 greedy is the configured setting: trained once
    assert [lever_name(c) for c in settings][2] == "unlikelihood0_top_p0.5"
    # held-out KL 0.926 + tolerance 0.005 = 0.931: the 0.9 nucleus (0.933) rates worse, so it is
    # out although its explanations repeat least; of the rest, the 0.5 nucleus repeats least (18%)
    levers = pd.DataFrame(
        {"select_kl": [0.926, 0.927, 0.9263, 0.933], "select_opening_share": [1.0, 0.39, 0.18, 0.04]}
    )
    assert adopt_lever(levers) == 2
    assert adopt_lever(levers.assign(select_kl=[0.926, 0.927, 0.932, 0.933])) == 1
    unchosen = ExplainRateRunConfig(unlikelihood_levers=(), top_p_levers=())
    assert lever_configs(unchosen) == [ExplainRateConfig()]
    paper = ExplainRateConfig(head_reads="human", head_input="decoder")
    assert lever_configs(ExplainRateRunConfig(model=paper)) == [paper]  # reads annotators' words

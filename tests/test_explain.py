"""Explanation metrics and the model-free explainers, on tiny hand-made examples."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from fqa_analysis.core.text_metrics import (
    bleu,
    corpus_bleu,
    lcs_length,
    leave_one_out,
    loo_score,
    rouge_l,
    tokens,
)
from fqa_analysis.models.explainer import (
    CandidateChooser,
    DecodeConfig,
    ExplanationExample,
    GeneratorConfig,
    GeneratorExplainer,
    RetrievalExplainer,
    TemplateExplainer,
    _decoder_batch,
    train_generator,
)
from fqa_analysis.models.retrieval import DenseSystem


def test_rouge_l_by_hand() -> None:
    # candidate "the answer is vague" vs reference "the answer is clear and complete":
    # LCS "the answer is" = 3; P = 3/4, R = 3/6 -> F1 = 2 * .75 * .5 / 1.25 = 0.6
    assert rouge_l("The answer is vague.", ["the answer is clear and complete"]) == pytest.approx(0.6)
    # the best reference counts
    assert rouge_l("links given", ["no match here", "links given"]) == 1.0
    assert rouge_l("", ["anything"]) == 0.0
    assert lcs_length(tokens("a b c d"), tokens("b d")) == 2
    with pytest.raises(ValueError, match="at least one reference"):
        rouge_l("x", [])


def test_bleu_orders_and_bounds() -> None:
    refs = ["the answer gives clear steps to follow"]
    exact = bleu("the answer gives clear steps to follow", refs)
    partial = bleu("the answer gives steps", refs)
    unrelated = bleu("bananas are yellow", refs)
    assert exact == pytest.approx(1.0)
    assert 0.0 < partial < exact
    assert unrelated < partial
    assert corpus_bleu(["the answer gives clear steps to follow"], [refs]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="same number of references"):
        corpus_bleu(["a", "b"], [["x"], ["y", "z"]])


def test_leave_one_out_gives_humans_and_systems_the_same_references() -> None:
    explanations = ["good answer", "good answer indeed", "bad answer"]
    pairs = leave_one_out(explanations)
    assert [len(refs) for _, refs in pairs] == [2, 2, 2]
    # a system that copies annotator 0: vs (1, 2) ROUGE-L F1 of "good answer" vs "good answer indeed" = 0.8;
    # vs (0, 2) and (0, 1) it matches exactly -> (0.8 + 1 + 1) / 3
    assert loo_score("good answer", explanations, rouge_l) == pytest.approx((0.8 + 1 + 1) / 3)


def _example(question: str, rating: str, explanation: str) -> ExplanationExample:
    return ExplanationExample("WHO", question, "passage", rating, explanation)


class _WordEncoder(DenseSystem):
    """A fake bi-encoder: unit vectors of word counts over a fixed vocabulary (no model)."""

    VOCAB = ("masks", "hands", "travel", "vaccine", "passage")

    def encode(self, texts: Sequence[str], max_len: int, desc: str = "encode") -> np.ndarray:
        rows = np.array([[t.lower().count(w) for w in self.VOCAB] for t in texts], dtype=np.float32)
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)


def test_retrieval_explainer_borrows_the_nearest_same_rating_explanation() -> None:
    train = [
        _example("Do masks work?", "Excellent", "Explains how masks help."),
        _example("Wash hands how?", "Excellent", "Gives hand washing steps."),
        _example("Masks for kids?", "Bad", "Talks about adults only."),
    ]
    same = RetrievalExplainer(train, same_rating=True, encoder=_WordEncoder())
    anyr = RetrievalExplainer(train, same_rating=False, encoder=_WordEncoder())
    # a masks question rated Bad: the only Bad example; without the rating filter the first masks example
    assert same.explain("Masks masks?", "passage", "Bad") == "Talks about adults only."
    assert anyr.explain("Masks masks?", "passage", "Bad") == "Explains how masks help."
    # no training example rated Acceptable: falls back to every example
    assert same.explain("hands?", "passage", "Acceptable") == "Gives hand washing steps."
    assert same.name == "retrieval_same_rating" and anyr.name == "retrieval_any_rating"


def test_explainers_reject_unknown_ratings() -> None:
    assert TemplateExplainer().explain("q", "p", "Excellent").startswith("The answer directly")
    with pytest.raises(ValueError, match="unknown rating"):
        TemplateExplainer().explain("q", "p", "Great")
    with pytest.raises(ValueError, match="at least one training explanation"):
        RetrievalExplainer([], encoder=_WordEncoder())


def test_generator_follows_the_rating_it_is_given(tmp_path: Path) -> None:
    """A tiny generator trained for a few steps writes different texts for one pair under two ratings.

    Goes through the real path: train_generator (grouped pairs, forced rating prefix), the saved
    model loaded by GeneratorExplainer.load, greedy decoding.
    """
    train = [
        _example("Do masks work?", "Excellent", "Explains clearly how masks help."),
        _example("Do masks work?", "Bad", "Off topic, it talks about travel."),
        _example("Wash hands how?", "Excellent", "Explains clearly how to wash hands."),
        _example("Wash hands how?", "Bad", "Off topic, it talks about travel."),
    ]
    config = GeneratorConfig(epochs=30, batch_pairs=2, lr=1e-3, warmup=0.0, max_steps=30, bf16=False)
    model_dir, history = train_generator(train, train[:2], config, tmp_path)
    assert history["steps"] == 30 and history["pairs"] == 2 and not history["from_cache"]
    explainer = GeneratorExplainer.load(model_dir, config, DecodeConfig(candidates=0, max_new_tokens=8))
    good, bad = explainer.explain_many([("Do masks work?", "passage", r) for r in ("Excellent", "Bad")])
    assert good != bad
    assert "travel" in bad and "travel" not in good  # each follows its rating's training text
    # sampled candidates: a nucleus of one token (tiny top_p) draws the greedy text every time,
    # so the sampling path reads the pair and the rating's prefix as greedy decoding does
    rows = [("Do masks work?", "passage", r) for r in ("Excellent", "Bad")]
    narrow = GeneratorExplainer(
        explainer.model,
        explainer.tokenizer,
        DecodeConfig(candidates=3, top_p=1e-6, max_new_tokens=8),
        bf16=False,
    )
    assert narrow.candidates_many(rows) == [[good] * 4, [bad] * 4]
    wide = GeneratorExplainer(
        explainer.model,
        explainer.tokenizer,
        DecodeConfig(candidates=3, top_p=1.0, max_new_tokens=8),
        bf16=False,
    )
    sampled = wide.candidates_many(rows)
    assert [len(c) for c in sampled] == [4, 4] and sampled == wide.candidates_many(rows)  # seeded
    with pytest.raises(ValueError, match="need a CandidateChooser"):
        wide.explain_many(rows)  # choosing among candidates needs the chooser: before any decoding
    # every row sampled and chosen: the greedy texts come back beside the choice, as greedy decoding
    # writes them, and each choice is one of its row's candidates (the same seeded draws as above)
    every = GeneratorExplainer(
        explainer.model,
        explainer.tokenizer,
        DecodeConfig(candidates=3, top_p=1.0, max_new_tokens=8, sample_all=True),
        CandidateChooser(train, encoder=_WordEncoder()),
        bf16=False,
    )
    chosen, greedy = every.explain_and_greedy(rows)
    assert greedy == [good, bad]
    assert [c in s for c, s in zip(chosen, sampled, strict=True)] == [True, True]
    assert every.explain_many(rows) == chosen
    # cached: the second call trains nothing
    assert train_generator(train, train[:2], config, tmp_path)[1]["from_cache"]


def test_decoder_batch_scores_the_explanation_not_the_forced_prefix() -> None:
    from transformers import AutoTokenizer

    from fqa_analysis.models.retrieval import minilm_path

    tokenizer = AutoTokenizer.from_pretrained(minilm_path())
    decoder_in, mask, labels = _decoder_batch(tokenizer, [("Bad", "off topic"), ("Excellent", "yes")], 40)
    bad = [tokenizer.cls_token_id, *tokenizer("bad:", add_special_tokens=False)["input_ids"]]
    assert decoder_in[0, : len(bad)].tolist() == bad
    body = tokenizer("off topic", add_special_tokens=False)["input_ids"]
    # the labels of the prefix positions are ignored; then the explanation and [SEP]
    assert labels[0].tolist()[: len(bad) - 1] == [-100] * (len(bad) - 1)
    assert labels[0].tolist()[len(bad) - 1 :] == [*body, tokenizer.sep_token_id]
    # the shorter row is padded: no loss and no attention there
    exc = tokenizer("excellent:", add_special_tokens=False)["input_ids"]
    n = 1 + len(exc) + 1 + 1  # [CLS] prefix "yes" [SEP]
    assert labels[1].tolist()[n - 1 :] == [-100] * (labels.shape[1] - n + 1)
    assert mask[1].tolist()[: n - 1] == [1] * (n - 1)


def _chooser_examples() -> list[ExplanationExample]:
    """Four training explanations: two Excellent ("great ..."), two Bad ("off topic ...")."""
    return [
        _example("q1", "Excellent", "Great answer, fully answers it."),
        _example("q2", "Excellent", "Great, gives every detail."),
        _example("q3", "Bad", "Off topic, wrong subject."),
        _example("q4", "Bad", "Off topic, about travel."),
    ]


def test_chooser_keeps_the_candidate_that_reads_as_the_rating() -> None:
    train = _chooser_examples()
    chooser = CandidateChooser(train, encoder=_WordEncoder(), sim_weight=0.0)
    rows = [("q", "passage", "Bad"), ("q", "passage", "Excellent")]
    candidates = [["Great answer.", "Off topic here."], ["Great answer.", "Off topic here."]]
    assert chooser.choose(rows, candidates) == [1, 0]
    assert chooser.agrees(rows, ["Great answer.", "Great answer."]).tolist() == [False, True]
    assert chooser.accuracy(train) == 1.0
    # the similarity term alone prefers the candidate about the pair's topic ("masks")
    by_sim = chooser.with_weights(rating_weight=0.0, sim_weight=1.0)
    assert by_sim.choose([("masks?", "masks", "Bad")], [["Off topic.", "Talks about masks."]]) == [1]
    assert chooser.sim_weight == 0.0  # with_weights leaves the original alone


def test_the_opening_penalty_steers_away_from_the_generators_stock_opening() -> None:
    train = _chooser_examples()
    chooser = CandidateChooser(train, encoder=_WordEncoder(), sim_weight=0.0)
    # three rows whose greedy explanation (first candidate) opens the same way; the classifier reads
    # both candidates as Bad equally (only "off topic" is in its vocabulary)
    rows = [("q", "p", "Bad")] * 3
    stock = "off topic wrong subject entirely"
    candidates = [[stock, "this is off topic"]] * 3
    assert chooser.choose(rows, candidates) == [0, 0, 0]  # no penalty: the tie goes to greedy
    # penalised by 3 x its share of the greedy texts (1.0), the stock opening loses
    assert chooser.with_weights(1.0, 0.0, opening_weight=3.0).choose(rows, candidates) == [1, 1, 1]
    # the corpus decides what is over-used: an opening no corpus text has costs nothing
    assert chooser.with_weights(1.0, 0.0, 3.0).choose(rows, candidates, corpus=["x y z w"]) == [0, 0, 0]


def test_generator_resumed_from_a_checkpoint_saves_the_weights_of_an_uninterrupted_run(
    tmp_path: Path,
) -> None:
    import torch
    from safetensors.torch import load_file

    from fqa_analysis.models.checkpoint import TrainingInterruptedError

    train = [
        _example("Do masks work?", "Excellent", "Explains clearly how masks help."),
        _example("Do masks work?", "Bad", "Off topic, it talks about travel."),
        _example("Wash hands how?", "Excellent", "Explains clearly how to wash hands."),
    ]
    # one pair a step, two pairs an epoch, three epochs: stopped in the second epoch's middle
    config = GeneratorConfig(epochs=3, batch_pairs=1, lr=1e-3, warmup=0.0, bf16=False)
    whole, _ = train_generator(train, train[:1], config, tmp_path / "whole")
    with pytest.raises(TrainingInterruptedError):
        train_generator(train, train[:1], config, tmp_path / "resumed", stop_after_steps=3)
    resumed, history = train_generator(train, train[:1], config, tmp_path / "resumed")
    assert history["steps"] == 6 and not history["from_cache"]
    a, b = load_file(whole / "model.safetensors"), load_file(resumed / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_the_nonword_penalty_keeps_a_candidate_made_of_known_words() -> None:
    from fqa_analysis.core.text_metrics import lexicon, nonwords

    train = _chooser_examples()
    known = lexicon(["off topic about social distancing and masks"])
    # a token with a digit ("2m") is not a word to check; a typo or a joined wordpiece is not in the lexicon
    assert nonwords("Off topic: social dinc and masks 2m", known) == ["dinc"]
    rows = [("q", "p", "Bad")]
    # the classifier prefers the first (two non-words); one penalty per non-word turns it round
    candidates = [["off topic social dinc masksk", "about masks"]]
    chooser = CandidateChooser(train, encoder=_WordEncoder(), sim_weight=0.0, known=known)
    assert chooser.choose(rows, candidates) == [0]
    assert chooser.with_weights(1.0, 0.0, nonword_weight=10.0).choose(rows, candidates) == [1]
    # equal non-words: the penalty does not decide
    assert chooser.with_weights(1.0, 0.0, nonword_weight=10.0).choose(
        rows, [["off topic", "about masks"]]
    ) == [0]
    with pytest.raises(ValueError, match="needs a lexicon"):
        CandidateChooser(train, encoder=_WordEncoder(), nonword_weight=1.0)
    with pytest.raises(ValueError, match="needs a lexicon"):
        CandidateChooser(train, encoder=_WordEncoder()).with_weights(1.0, 0.0, nonword_weight=1.0)


def test_variety_counts_distinct_texts_openings_and_grounded_words() -> None:
    from fqa_analysis.core.text_metrics import content_words, grounding, variety

    assert content_words("The answer mentions the visa") == ["answer", "mentions", "visa"]
    # 1 of 3 content words (visa) is in the pair
    assert grounding("The answer mentions the visa", "Do I need a visa?", "Apply online.") == pytest.approx(
        1 / 3
    )
    assert grounding("It is not.", "q", "p") != grounding("It is not.", "q", "p")  # NaN: nothing to ground
    texts = ["This answer is irrelevant here", "This answer is irrelevant now", "Gives the visa rules"]
    v = variety(texts, [("visa rules?", "")] * 3, words=4)
    assert v["distinct"] == 1.0 and v["opening"] == "this answer is irrelevant"
    assert v["opening_share"] == pytest.approx(2 / 3) and v["words"] == pytest.approx(14 / 3)
    # content words: (answer, irrelevant), (answer, irrelevant), (gives, visa, rules): 0, 0, 2/3
    assert v["grounding"] == pytest.approx((0 + 0 + 2 / 3) / 3)

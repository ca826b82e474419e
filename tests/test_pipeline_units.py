from __future__ import annotations

import hashlib
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from fqa_analysis.cache import atomic_write_json, content_key, file_sha256
from fqa_analysis.core.candidates import validate_candidates
from fqa_analysis.data import load_qa_split
from fqa_analysis.models.retrieval import BM25System, candidate_rows, domain_batches


def test_candidate_rows_follow_the_contract(tiny_data: Path) -> None:
    split = load_qa_split(tiny_data, "WHO", "test")  # 2 questions, gold 0 and 1, pool of 3
    scores = np.array([[0.0, 2.0, 1.0], [np.log(2.0), 0.0, 0.0]])
    run = {"protocol": "available", "rqa": "x", "reranker": "none", "seed": 0}
    rows = candidate_rows(split, scores, temperature=1.0, run=run, k=2)
    assert validate_candidates(rows) == 2
    first = rows[rows["question_id"] == 0]
    assert first["passage_id"].tolist() == [1, 2]
    assert not first["is_gold"].any()  # gold 0 is third: outside the top 2, still 2 rows
    second = rows[rows["question_id"] == 1]
    assert second["passage_id"].tolist() == [0, 1] and second["is_gold"].tolist() == [False, True]
    # p_rqa is the softmax over the WHOLE pool: 2/(2+1+1) and 1/4, not renormalised.
    assert second["p_rqa"].tolist() == pytest.approx([0.5, 0.25])


def test_bm25_ranks_the_matching_passage_first() -> None:
    passages = ["wash your hands with soap", "masks in public transport", "vaccines for children"]
    scores = BM25System().score(["should children get vaccines", "the and of"], passages)
    assert scores.shape == (2, 3)
    assert int(np.argmax(scores[0])) == 2
    assert scores[1].tolist() == [0.0, 0.0, 0.0]  # only stop words


def test_domain_batches_never_repeat_a_gold_passage() -> None:
    examples = [(f"q{i}", "p", i % 3) for i in range(10)]
    batches = domain_batches(examples, 4, np.random.default_rng(1))
    assert sum(len(b) for b in batches) == 10
    for batch in batches:
        ids = [ex[2] for ex in batch]
        assert len(ids) == len(set(ids)) and len(batch) <= 4


def test_cache_helpers(tmp_path: Path) -> None:
    assert content_key("a", {"x": 1}) != content_key("a", {"x": 2})
    path = tmp_path / "sub" / "m.json"
    atomic_write_json(path, {"b": 1})
    assert path.read_text() == '{\n "b": 1\n}\n'
    # sha256 of the 13 bytes '{\n "b": 1\n}\n', computed independently
    assert file_sha256(path) == hashlib.sha256(b'{\n "b": 1\n}\n').hexdigest()
    assert not list(tmp_path.rglob("*.part"))


def test_reranker_keys_leave_later_settings_out_only_at_their_declared_defaults() -> None:
    from dataclasses import asdict

    from fqa_analysis.models.reranker.encoder import RerankConfig, model_key

    config = RerankConfig(bf16=False)
    # the rule of the models cached before pooling/device/int8_scoring existed, written out by hand
    later = ("pooling", "device", "int8_scoring", "encoder_layers")
    earlier = {k: v for k, v in asdict(config).items() if k not in later}
    assert model_key(config) == earlier
    assert model_key(RerankConfig(bf16=False, pooling="mean", device="cuda")) == {
        **earlier,
        "pooling": "mean",
        "device": "cuda",
    }
    assert model_key(RerankConfig(bf16=False, lr=1e-4))["lr"] == 1e-4
    assert model_key(RerankConfig(bf16=False, encoder_layers=2)) == {**earlier, "encoder_layers": 2}


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"encoder_layers": 0}, "encoder_layers=0: MiniLM has layers 1..6"),
        ({"encoder_layers": 7}, "encoder_layers=7: MiniLM has layers 1..6"),
        ({"encoder_layers": 2, "frozen_layers": 3}, "frozen_layers=3: 0..encoder_layers (2)"),
    ],
)
def test_a_capacity_minilm_lacks_is_refused(settings: dict[str, int], message: str) -> None:
    from fqa_analysis.models.reranker.encoder import RerankConfig

    with pytest.raises(ValueError, match=re.escape(message)):
        RerankConfig(**settings)


def test_a_smaller_cross_encoder_keeps_minilms_first_layers() -> None:
    import torch

    from fqa_analysis.models.reranker.encoder import RerankConfig
    from fqa_analysis.models.reranker.network import _Top

    whole = _Top(RerankConfig(threads=1), seed=0)
    small = _Top(RerankConfig(threads=1, encoder_layers=2), seed=0)
    top = _Top(RerankConfig(threads=1, encoder_layers=2, frozen_layers=1), seed=0)
    assert (len(whole.layers), len(small.layers), len(top.layers)) == (6, 2, 1)
    first, second = (dict(layer.named_parameters()) for layer in small.layers)
    # layer i of the small model is MiniLM's layer i (the lower layers, not the upper ones)
    for name, value in whole.layers[1].named_parameters():
        assert torch.equal(second[name], value)
    assert torch.equal(
        dict(top.layers[0].named_parameters())["output.dense.weight"], second["output.dense.weight"]
    )
    assert not torch.equal(first["output.dense.weight"], second["output.dense.weight"])


def test_compute_times_survive_a_cached_rerun(tmp_path: Path) -> None:
    from fqa_analysis.stages.manifest import add_compute_times

    manifest = tmp_path / "manifest.json"
    config = {"subset": None, "finetune": {"epochs": 4}}
    old = {
        "stages": {
            "rqa": {"config": config, "timings": {"a/fit": {"wall_s": 900.0}, "a/test": {"wall_s": 60.0}}}
        }
    }
    atomic_write_json(manifest, old)
    timings = {"a/fit": {"wall_s": 0.5}, "a/test": {"wall_s": 70.0}}
    add_compute_times(
        manifest, "rqa", timings, {"a/fit": True, "a/test": False}, {**config, "systems": ["a"]}, ("systems",)
    )
    assert timings["a/fit"] == {"wall_s": 0.5, "from_cache": True, "compute_s": 900.0}
    assert timings["a/test"]["compute_s"] == 70.0  # recomputed: this run's time
    other = {"a/fit": {"wall_s": 0.5}}
    add_compute_times(manifest, "rqa", other, {"a/fit": True}, {"subset": 8, "finetune": {"epochs": 4}})
    assert other["a/fit"]["compute_s"] == 0.5  # a different configuration's times are not borrowed
    atomic_write_json(
        manifest,
        {
            "stages": {
                "rerank": {"config": config, "timings": {"a/fit": {"wall_s": 9.0, "peak_rss_mb": 6000.0}}}
            }
        },
    )
    peaks = {"a/fit": {"wall_s": 0.1, "peak_rss_mb": 900.0}, "a/new": {"wall_s": 2.0, "peak_rss_mb": 1000.0}}
    add_compute_times(manifest, "rerank", peaks, {"a/fit": True, "a/new": False}, config)
    assert peaks["a/fit"]["compute_peak_rss_mb"] == 6000.0  # the computing run's memory, carried over
    assert peaks["a/new"]["compute_peak_rss_mb"] == 1000.0
    rerank = {"a/fit": {"wall_s": 0.5}}
    atomic_write_json(manifest, old)
    add_compute_times(manifest, "rerank", rerank, {"a/fit": True}, config)
    assert rerank["a/fit"]["compute_s"] == 0.5  # another stage's times are not borrowed
    atomic_write_json(manifest, old)
    more = {"a/test": {"wall_s": 30.0}}
    add_compute_times(manifest, "rqa", more, {"a/test": False}, config, (), frozenset({"a/test"}))
    assert more["a/test"]["compute_s"] == 90.0  # finished what the previous run began: 60 + 30


def test_rerank_stage_needs_the_rqa_stage_first(tiny_data: Path, tmp_path: Path) -> None:
    from fqa_analysis.cli import main

    code = main(
        ["run", "rerank", "--data-dir", str(tiny_data), "--out", str(tmp_path / "empty"), "--subset", "2"]
    )
    assert code == 1  # a DataError, reported without a traceback


def test_results_loader_names_the_file_and_the_fix(tmp_path: Path) -> None:
    from fqa_analysis.core.results import load_candidates
    from fqa_analysis.errors import DataError

    with pytest.raises(
        DataError,
        match=r"candidates\.parquet, \(whole file\): the results file does not exist\. "
        r"Fix: run `fqa run rqa --out ",
    ):
        load_candidates(tmp_path)
    (tmp_path / "candidates.parquet").write_bytes(b"PAR1 truncated")
    with pytest.raises(DataError, match="not a readable Parquet file"):
        load_candidates(tmp_path)


def test_a_model_in_training_does_not_share_the_embedding_memo() -> None:
    from fqa_analysis.models.retrieval import DenseSystem

    shared_a, shared_b = DenseSystem(), DenseSystem()
    private = DenseSystem(memo={})
    assert shared_a._memo is shared_b._memo
    assert private._memo is not shared_a._memo


def test_score_cached_runs_only_pairs_the_model_never_scored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fqa_analysis.models.reranker import scoring
    from fqa_analysis.models.reranker.encoder import RerankConfig

    asked: list[list[str]] = []

    def fake_predict(weights: object, ids: list[str], states: object, model: object) -> np.ndarray:
        asked.append(list(ids))
        # a different value at every call, so a re-scored pair would show
        return np.array([[len(asked), ord(i[0]), 0.0, 0.0] for i in ids])

    monkeypatch.setattr(scoring, "predict", fake_predict)
    model = RerankConfig()

    # every pair as long as every other: the order scored is the ids' sorted order
    states = SimpleNamespace(length=lambda pid: 1)

    def score(ids: list[str]) -> tuple[np.ndarray, bool]:
        return scoring.score_cached(tmp_path, {}, ids, states, model)  # type: ignore[arg-type]

    first, cached = score(["b", "a"])
    assert asked == [["a", "b"]] and not cached
    assert first[:, :2].tolist() == [[1, 98], [1, 97]]  # rows follow the ids asked for
    second, cached = score(["c", "b"])
    assert asked[-1] == ["c"] and not cached  # b keeps its first value
    assert second[:, :2].tolist() == [[2, 99], [1, 98]]
    third, cached = score(["a", "c"])
    assert cached and len(asked) == 2 and third[:, 0].tolist() == [1, 2]


def test_load_stage_names_the_missing_stage_and_the_command(tmp_path: Path) -> None:
    from fqa_analysis.core.results import load_stage
    from fqa_analysis.errors import DataError

    (tmp_path / "manifest.json").write_text('{"stages": {"rqa": {"protocol": "available"}}}')
    assert load_stage(tmp_path, "rqa") == {"protocol": "available"}
    with pytest.raises(DataError) as err:
        load_stage(tmp_path, "explain")
    message = str(err.value)
    assert "manifest.json" in message and "'explain'" in message and "['rqa']" in message
    assert f"fqa run explain --out {tmp_path}" in message


def test_a_section_of_independent_groups_shows_the_groups_whose_runs_are_all_in() -> None:
    from fqa_analysis.core.results import complete_groups, missing_runs_note

    stage = {
        "stage": "beyond",
        "git_commit": "c0",
        "run_commits": {
            "selection/vanilla/seed0": "c0",
            "selection/kl/seed0": "c0",
            "selection/kl/seed1": "c1",
            "selection/ce/seed0": "c1",
            "deep/combined/seed0": "c0",
        },
        "planned": ["selection/ce/seed1", "selection/ce/seed2", "fraction/1/seed0"],
    }
    # ce has a seed planned: shown only when all three are in
    assert complete_groups(stage, "selection", True) == ["vanilla", "kl"]
    assert complete_groups(stage, "deep", True) == ["combined"]
    assert complete_groups(stage, "fraction", True) == []
    assert complete_groups(stage, "selection", False) == []
    assert (
        complete_groups({**stage, "run_commits": {"selection/kl/seed0": "c+dirty"}}, "selection", True) == []
    )
    note = missing_runs_note(stage, ["selection"], True, shown=["vanilla", "kl"])
    assert note == (
        "*Shown for vanilla, kl (all of their runs present): 2 runs of this section are still planned "
        "(selection/ce/seed1, selection/ce/seed2); "
        "`fqa run beyond --beyond-runs 'selection/*'` computes them.*"
    )
    assert missing_runs_note(stage, ["deep"], True, shown=["combined"]) is None


def test_candidate_texts_are_the_rqa_systems_own_candidates_passages(tiny_data: Path) -> None:
    import pandas as pd

    from fqa_analysis.models.reranker.inputs import candidate_texts

    split = load_qa_split(tiny_data, "WHO", "test")
    scores = np.array([[0.0, 2.0, 1.0], [1.0, 0.0, 0.0]])
    run = {"protocol": "available", "rqa": "x", "reranker": "none", "seed": 0}
    own = candidate_rows(split, scores, temperature=1.0, run=run, k=2)
    reranked = own.assign(reranker="feedback_kl")
    other = own.assign(rqa="y")
    rows, texts = candidate_texts(tiny_data, pd.concat([own, reranked, other]), ["x"], ["WHO", "CDC"])
    assert rows["passage_id"].tolist() == [1, 2, 0, 1] and set(rows["reranker"]) == {"none"}
    assert ["Answer number 1 of WHO." in t for t in texts] == [True, False, False, True]
    assert "Answer number 2 of WHO." in texts[1] and "Answer number 0 of WHO." in texts[2]
    with pytest.raises(ValueError, match=r"no rows of RQA system\(s\) \['z'\].*run `fqa run rqa`"):
        candidate_texts(tiny_data, own, ["z"], ["WHO"])


def test_one_epoch_of_fine_tuning_is_kept_without_a_validation_pass(
    tiny_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One epoch leaves nothing to select: the model is kept and the valid sets are never encoded."""
    from fqa_analysis import data
    from fqa_analysis.models import retrieval
    from fqa_analysis.models.retrieval import FineTuneConfig, FineTunedSystem

    scored: list[int] = []
    real_score = retrieval.DenseSystem.score

    def counting_score(self: retrieval.DenseSystem, questions: list[str], passages: list[str]) -> np.ndarray:
        scored.append(len(questions))
        return real_score(self, questions, passages)

    monkeypatch.setattr(retrieval.DenseSystem, "score", counting_score)
    train = [data.load_qa_split(tiny_data, d, "train") for d in ("WHO", "UK")]
    valid = [data.load_qa_split(tiny_data, d, "valid") for d in ("WHO", "UK")]
    system = FineTunedSystem(FineTuneConfig(epochs=1, batch_size=2, max_steps=1))
    history = system.fit(train, valid, tmp_path)
    assert scored == []  # no validation pass
    assert history["best_epoch"] == 1 and history["epochs"][0]["valid_acc1"] is None
    assert (tmp_path / "minilm_ft" / system._fit_key / "best" / "config.json").exists()


def test_accumulated_entry_keeps_runs_of_one_configuration_and_names_what_differs(tmp_path: Path) -> None:
    from fqa_analysis.stages.manifest import ConfigurationMismatchError, accumulated_entry, update_manifest

    update_manifest(
        tmp_path / "manifest.json",
        "rerank",
        {
            "config": {"model": {"lr": 1e-4, "bf16": False}, "seeds": [0], "variants": {"a": {}}},
            "histories": {},
        },
    )
    same = {"model": {"lr": 1e-4, "bf16": False}, "seeds": [1], "variants": {"b": {}}}
    assert accumulated_entry(tmp_path, "rerank", same, ("seeds", "variants"))["config"]["seeds"] == [0]
    other = {"model": {"lr": 5e-5, "bf16": True}, "seeds": [1], "variants": {}}
    with pytest.raises(ConfigurationMismatchError, match=r"differs in: model\.bf16, model\.lr\)"):
        accumulated_entry(tmp_path, "rerank", other, ("seeds", "variants"))
    assert accumulated_entry(tmp_path, "rerank", other, ("seeds", "variants"), replace=True) == {}
    # a dotted run field leaves out one nested setting only
    nested = {"model": {"lr": 1e-4, "bf16": True}, "seeds": [0], "variants": {}}
    assert accumulated_entry(tmp_path, "rerank", nested, ("seeds", "variants", "model.bf16")) != {}
    assert accumulated_entry(tmp_path, "other_stage", same) == {}


def test_a_frozen_warm_start_computes_what_the_full_model_computes(tmp_path: Path) -> None:
    """The relevance model split at layer k (lower layers run once, the upper ones trained) is one model."""
    import torch

    from fqa_analysis.models.reranker.encoder import (
        RerankConfig,
        encode_pairs,
        lower_layer_weights,
        pair_id,
        upper_layer_weights,
    )
    from fqa_analysis.models.reranker.network import _Top, predict

    pairs = [
        ("how do I renew my visa", "Apply online before the visa expires."),
        ("is the office open", "No."),
    ]
    ids = [pair_id(q, p) for q, p in pairs]
    full = RerankConfig(threads=1)
    # a "trained" model: MiniLM with a seeded head, every weight nudged so no layer equals MiniLM's
    weights = {k: v + 0.01 * torch.randn_like(v) for k, v in _Top(full, seed=3).modules.state_dict().items()}
    expected = predict(weights, ids, encode_pairs(pairs, full, tmp_path), full)
    frozen = RerankConfig(threads=1, frozen_layers=4)
    lower = ("relevance", lower_layer_weights(weights, 4))
    states = encode_pairs(pairs, frozen, tmp_path, lower=lower)
    got = predict(upper_layer_weights(weights, 4), ids, states, frozen)
    # equal up to the fp16 the cached states are stored in
    assert np.abs(got - expected).max() < 2e-3
    # MiniLM's own lower layers give other states: the weights passed are the ones run
    plain = predict(upper_layer_weights(weights, 4), ids, encode_pairs(pairs, frozen, tmp_path), frozen)
    assert np.abs(plain - expected).max() > 1e-3
    assert len(lower[1]) == 4 * len([k for k in weights if k.startswith("0.0.")])


def test_training_keeps_its_selection_scores_so_no_stage_scores_those_pairs_again(tmp_path: Path) -> None:
    from fqa_analysis.models.reranker.encoder import PairStates, RerankConfig
    from fqa_analysis.models.reranker.network import predict
    from fqa_analysis.models.reranker.scoring import has_scores, score_cached
    from fqa_analysis.models.reranker.store import train_or_load

    rng = np.random.default_rng(5)
    ids = ["a", "b", "c", "d", "e"]
    np.save(tmp_path / "hidden_0.npy", rng.normal(size=(5, 4, 384)).astype(np.float16))
    np.save(tmp_path / "lengths_0.npy", np.array([4, 2, 3, 4, 1], dtype=np.int32))
    states = PairStates(tmp_path, {pid: (0, i) for i, pid in enumerate(ids)}, 1)
    examples = [(pid, np.eye(4)[i]) for i, pid in enumerate(ids[:3])]
    select = [("d", np.array([0.0, 0.0, 1.0, 0.0])), ("e", np.array([0.5, 0.5, 0.0, 0.0]))]
    config = RerankConfig(frozen_layers=5, epochs=2, bf16=False)
    model = train_or_load("v", 0, examples, select, states, config, tmp_path / "cache")
    assert not model.from_cache and not has_scores(model.folder)  # no stage has scored with it yet
    probs, from_cache = score_cached(model.folder, model.weights, ["d", "e"], states, config)
    # served from training's selection pass, the values the trained weights give
    assert from_cache
    np.testing.assert_allclose(probs, predict(model.weights, ["d", "e"], states, config), atol=1e-6)
    # a pair outside the selection set is scored as before
    _, from_cache = score_cached(model.folder, model.weights, ["a", "d"], states, config)
    assert not from_cache and has_scores(model.folder)


@pytest.mark.parametrize(("per_seed", "relevance"), [(False, 0), (True, 2)])
def test_a_warm_seed_starts_from_its_own_relevance_model_only_under_relevance_per_seed(
    monkeypatch: pytest.MonkeyPatch, per_seed: bool, relevance: int
) -> None:
    """Seed 2 of feedback_kl continues from vanilla seed 0 (the book's) or, per seed, vanilla seed 2."""
    from fqa_analysis.models.reranker import store
    from fqa_analysis.models.reranker.variants import RerankRunConfig

    trained: list[int] = []

    def relevance_model(fit, select, states, config, seed, cache_root):
        trained.append(seed)
        return SimpleNamespace(weights={"seed": seed}, folder=Path(f"vanilla-seed{seed}"))

    started: list[tuple[str, dict]] = []

    def variant_model(variant, seed, examples, select, states, model, cache_root, init=None):
        started.append((init[0].name, init[1]))
        return SimpleNamespace(variant=variant, seed=seed)

    monkeypatch.setattr(store, "train_relevance", relevance_model)
    monkeypatch.setattr(store, "train_or_load", variant_model)
    monkeypatch.setattr(store, "variant_examples", lambda inputs, variant: ([], []))
    inputs = SimpleNamespace(sources={"pseudo": ([], [])})
    config = RerankRunConfig(variants=("vanilla", "feedback_kl"), relevance_per_seed=per_seed)
    store.stage_model(inputs, "feedback_kl", 2, None, config, Path("cache"))
    assert trained == [relevance]
    assert started == [(f"vanilla-seed{relevance}", {"seed": relevance})]
    # seed 0 is the same start either way: its runs stay cached
    assert config.relevance_seed(0) == 0

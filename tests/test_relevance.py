"""The relevance model: listwise groups and loss, the recipe table, its held-out candidates."""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fqa_analysis import data
from fqa_analysis.core.reranking import recipe_comparison, recipe_outcomes, recipe_table
from fqa_analysis.models.reranker.encoder import RerankConfig, uses_bf16
from fqa_analysis.models.reranker.inputs import is_held_out
from fqa_analysis.models.reranker.pairs import RatedPair, question_groups
from fqa_analysis.models.reranker.variants import VARIANTS, RerankRunConfig
from fqa_analysis.stages.manifest import _git_commit
from fqa_analysis.stages.relevance import RECIPES, eval_candidates


def _rows(recipe: str, pe: list[list[float]], gold: list[int]) -> pd.DataFrame:
    """A recipe's rows: question i has candidates ranked 1..k with P(Excellent) pe[i], gold at gold[i]."""
    out = []
    for q, (scores, g) in enumerate(zip(pe, gold, strict=True)):
        for r, p in enumerate(scores):
            out.append(
                {
                    "recipe": recipe,
                    "seed": 0,
                    "domain": "WHO",
                    "question_id": q,
                    "passage_id": r,
                    "rank": r + 1,
                    "is_gold": r == g,
                    "p_bad": 1 - p,
                    "p_could_be_improved": 0.0,
                    "p_acceptable": 0.0,
                    "p_excellent": p,
                }
            )
    return pd.DataFrame(out)


def test_recipe_table_by_hand() -> None:
    # recipe a: q0 gold (rank 2) first; q1 gold (rank 1) second; q2 gold tied at the top with rank 1 ahead
    a = _rows("a", [[0.1, 0.9, 0.2], [0.3, 0.5, 0.1], [0.4, 0.4, 0.0]], [1, 0, 1])
    # recipe b: every gold first
    b = _rows("b", [[0.1, 0.9, 0.2], [0.6, 0.5, 0.1], [0.1, 0.4, 0.0]], [1, 0, 1])
    table = recipe_table(pd.concat([a, b]))
    cmp = recipe_comparison(pd.concat([a, b]), baseline="a", n_resamples=200)
    assert table.loc["a", "alone"] == pytest.approx(1 / 3)
    assert table.loc["a", "mrr"] == pytest.approx((1 + 0.5 + 0.5) / 3)
    # a: golds 0.9, 0.3, 0.4 against 0.1, 0.2, 0.5, 0.1, 0.4, 0.0: wins 6 + 4 + (4 + half a tie)
    assert table.loc["a", "auc"] == pytest.approx((6 + 4 + 4.5) / 18)
    # pooled over questions: b's gold of q2 (0.4) is below q1's other candidate (0.5)
    assert table.loc["b", "alone"] == 1.0 and table.loc["b", "auc"] == pytest.approx(17 / 18)
    assert cmp.table.loc["b", "delta"] == pytest.approx(2 / 3)
    assert list(cmp.table.index) == ["b"] and cmp.family_size == 1  # no self-comparison row
    assert list(table.index) == ["a", "b"] and table.loc["b", "questions"] == 3


def test_recipe_outcomes_refuse_a_question_without_one_gold() -> None:
    rows = _rows("a", [[0.1, 0.9]], [1]).assign(is_gold=False)
    with pytest.raises(ValueError, match="has 0 gold rows"):
        recipe_outcomes(rows)


def test_recipe_table_refuses_recipes_on_different_questions() -> None:
    rows = pd.concat([_rows("a", [[0.1, 0.9], [0.2, 0.3]], [1, 0]), _rows("b", [[0.1, 0.9]], [1])])
    with pytest.raises(ValueError, match="different held-out questions"):
        recipe_comparison(rows, baseline="a", n_resamples=10)


def test_question_groups_put_the_gold_first_and_skip_lone_pairs() -> None:
    pairs = [
        RatedPair("A", "q1", "n1", ("Bad",), "pseudo"),
        RatedPair("A", "q1", "g", ("Excellent",), "pseudo"),
        RatedPair("B", "q1", "g", ("Excellent",), "pseudo"),  # same text, other domain: own group
        RatedPair("A", "q1", "n2", ("Bad",), "pseudo"),
        RatedPair("A", "q2", "g", ("Excellent",), "pseudo"),
    ]
    assert question_groups(pairs) == [[1, 0, 3]]


def test_listwise_loss_is_the_groups_mean_cross_entropy() -> None:
    torch = pytest.importorskip("torch")
    from fqa_analysis.models.reranker.network import listwise_loss

    lp = torch.log(torch.tensor([0.2, 0.2, 0.6, 0.5]))
    # group 1: softmax of log p over (0.2, 0.2, 0.6) = the normalised p: gold 0.2 -> -ln 0.2;
    # group 2 has one member: constant, left out
    assert float(listwise_loss(lp, [3, 1])) == pytest.approx(-np.log(0.2), rel=1e-5)


def test_bf16_on_cuda_only_never_on_a_cpu() -> None:
    # one precision per device kind: a CPU's flags never change the numbers or the cache keys
    assert uses_bf16("cuda") and not uses_bf16("cpu")
    assert RerankConfig().bf16 is False


def test_every_feedback_variant_starts_from_relevance_or_is_a_scratch_row() -> None:
    for name, variant in VARIANTS.items():
        expected = "minilm" if name == "vanilla" or name.endswith("_scratch") else "relevance"
        assert variant.start == expected, name
    assert {n.removesuffix("_scratch") for n in VARIANTS if n.endswith("_scratch")} <= set(VARIANTS)


def test_recipes_set_the_stage_fields() -> None:
    config = RECIPES["listwise_3neg_all_bm25"].apply(RerankRunConfig())
    assert (config.relevance_loss, config.pseudo_negatives, config.negative_source) == ("listwise", 3, "bm25")
    assert config.relevance_domains == data.DOMAINS and config.variant_epochs["vanilla"] == 1
    assert RECIPES["listwise_3neg_all_2ep"].apply(RerankRunConfig()).variant_epochs["vanilla"] == 2
    # the stage's default is one of the measured recipes
    default = RerankRunConfig()
    assert RECIPES["listwise_3neg_all"].apply(default) == default


def _split(questions: list[tuple[str, int]], n_passages: int) -> data.QASplit:
    passages = tuple(data.Passage("WHO", i, "u", f"title {i}", (), f"content {i}") for i in range(n_passages))
    qs = tuple(data.Question("WHO", "train", i, text, gold) for i, (text, gold) in enumerate(questions))
    return data.QASplit("WHO", "train", Path("WHO/train.json"), qs, passages)


def test_eval_candidates_hold_the_gold_and_the_best_others() -> None:
    held = [f"question {i}" for i in range(200) if is_held_out(f"question {i}")][:2]
    kept = next(f"question {i}" for i in range(200) if not is_held_out(f"question {i}"))
    split = _split([(held[0], 3), (held[1], 4), (kept, 0)], 6)
    # q0's gold (3) ranked 2nd: it keeps its place; q1's gold (4) outside the top 3: it comes last
    ranked = {"WHO": [[1, 3, 0, 2, 5], [0, 1, 2, 3, 4], [0, 1, 2, 3, 4]]}
    rows = eval_candidates([split], ranked, depth=3)
    assert rows.groupby("question_id")["passage_id"].apply(list).to_dict() == {0: [1, 3, 0], 1: [0, 1, 4]}
    assert rows["is_gold"].tolist() == [False, True, False, False, False, True]
    with pytest.raises(ValueError, match="no held-out QA-train question"):
        eval_candidates([_split([(kept, 0)], 3)], {"WHO": [[0, 1, 2]]}, depth=3)


def test_dirty_check_ignores_the_results_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "a.json").write_text("1")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results" / "a.json").write_text("2")
    assert not _git_commit().endswith("+dirty")
    (tmp_path / "code.py").write_text("x = 2\n")
    assert _git_commit().endswith("+dirty")


def test_a_run_records_the_commit_it_started_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fqa_analysis.stages import manifest

    def git(*args: str) -> str:
        out = subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, text=True)
        return out.stdout.strip()

    git("init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    first = git("rev-parse", "HEAD")
    monkeypatch.chdir(tmp_path)
    with manifest.pinned_commit() as pinned:
        assert pinned == first
        # work goes on while the run trains: a new commit and an uncommitted change
        (tmp_path / "code.py").write_text("x = 2\n")
        git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "second")
        (tmp_path / "code.py").write_text("x = 3\n")
        assert manifest.provenance({}, "v")["git_commit"] == first
    # after the block: the tree as it is now
    assert manifest.provenance({}, "v")["git_commit"] == git("rev-parse", "HEAD") + "+dirty"


def test_recipe_loader_names_a_missing_column(tmp_path: Path) -> None:
    from fqa_analysis.core.results import load_relevance_recipes
    from fqa_analysis.errors import DataError

    _rows("a", [[0.1, 0.9]], [1]).drop(columns=["rank"]).to_parquet(tmp_path / "relevance_recipes.parquet")
    with pytest.raises(DataError, match=r"missing column\(s\) \['rank'\].*fqa run relevance"):
        load_relevance_recipes(tmp_path)


def test_rerank_runs_accumulate_only_under_one_configuration() -> None:
    from fqa_analysis.stages.rerank import _kept_rows

    frame = pd.DataFrame(
        {
            "reranker": ["none", "vanilla", "vanilla", "feedback_kl", "frozen_thing"],
            "seed": [0, 0, 1, 0, 0],
            "p_bad": 0.0,
            "p_could_be_improved": 0.0,
            "p_acceptable": 0.0,
            "p_excellent": [np.nan, 0.1, 0.2, 0.3, 0.4],
        }
    )
    kept = _kept_rows(frame, set(VARIANTS), {"vanilla/seed1"})
    assert kept["reranker"].tolist() == ["none", "vanilla", "frozen_thing"]
    assert kept["seed"].tolist() == [0, 1, 0] and kept["p_excellent"].dtype == np.float32


def test_encoder_layers_come_from_the_rerankers_top_layers() -> None:
    torch = pytest.importorskip("torch")
    from fqa_analysis.models.explain_rate import load_encoder_layers

    encoder = torch.nn.ModuleList([torch.nn.Linear(2, 2) for _ in range(3)])
    # a reranker that trained the top two layers: its layer i is the encoder's layer 1 + i
    trained = torch.nn.ModuleList(
        [torch.nn.ModuleList([torch.nn.Linear(2, 2) for _ in range(2)]), torch.nn.Linear(2, 4)]
    )
    for p in trained.parameters():
        torch.nn.init.constant_(p, 7.0)
    before = encoder[0].weight.detach().clone()
    assert load_encoder_layers(encoder, trained.state_dict()) == 2
    assert torch.equal(encoder[0].weight, before)
    assert float(encoder[1].weight.detach().sum()) == 28.0 and float(encoder[2].bias.detach().sum()) == 14.0
    with pytest.raises(ValueError, match="hold 0 transformer layer"):
        load_encoder_layers(encoder, {"1.weight": torch.zeros(4, 2)})


def test_padding_never_reaches_the_reranker_score() -> None:
    # the layers see the padding mask (transformers' public create_bidirectional_mask): a pair padded
    # to 12 tokens scores as it does unpadded
    import torch

    from fqa_analysis.models.reranker.encoder import RerankConfig
    from fqa_analysis.models.reranker.network import _Top

    top = _Top(RerankConfig(), seed=0)
    top.modules.eval()
    hidden = torch.randn(2, 12, 384, generator=torch.Generator().manual_seed(1))
    mask = torch.ones(2, 12, dtype=torch.long)
    mask[1, 7:] = 0
    with torch.inference_mode():
        padded = top.logits(hidden, mask)[1]
        alone = top.logits(hidden[1:, :7], mask[1:, :7])[0]
        changed = top.logits(hidden.clone().index_fill_(1, torch.tensor([9]), 5.0), mask)[1]
    assert torch.allclose(padded, alone, atol=1e-5)
    assert torch.allclose(changed, padded, atol=1e-5)  # a padded position's content does not matter


def test_variant_epochs_are_declared_once_and_recorded_as_before() -> None:
    # the epochs live in each Variant; the config's map is derived from them and keeps the form
    # (and values) earlier manifests recorded, so their runs stay one configuration with new ones
    assert RerankRunConfig().variant_epochs == {
        "vanilla": 1,
        "combined": 1,
        "feedback_ce_annotator": 1,
        "feedback_ce_annotator_scratch": 1,
    }
    assert {v.epochs for name, v in VARIANTS.items() if name not in RerankRunConfig().variant_epochs} == {2}
    assert set(VARIANTS["feedback_kl"].record()) == {"source", "loss", "start", "epochs", "seeds"}


def test_a_recipe_recorded_under_the_old_short_names_matches_the_stage_config() -> None:
    from fqa_analysis.core.results import relevance_recipes, stage_recipe
    from fqa_analysis.stages.relevance import RECIPES

    # the relevance stage's record as earlier versions wrote it, and as this one does
    old = {"loss": "listwise", "negatives": 3, "domains": list(data.DOMAINS), "source": "minilm", "epochs": 1}
    new = {**dataclasses.asdict(RECIPES["listwise_3neg_feedback"]), "fit_pairs": 8}
    recipes = relevance_recipes({"recipes": {"listwise_3neg_all": old, "listwise_3neg_feedback": new}})
    assert recipes["listwise_3neg_all"]["pseudo_negatives"] == 3
    assert recipes["listwise_3neg_feedback"]["fit_pairs"] == 8
    # the rerank stage's default configuration, as its manifest records it
    config = json.loads(json.dumps(dataclasses.asdict(RerankRunConfig())))
    assert stage_recipe(recipes, config) == "listwise_3neg_all"
    two_epochs = {**config, "variant_epochs": {**config["variant_epochs"], "vanilla": 2}}
    assert stage_recipe(recipes, two_epochs) is None

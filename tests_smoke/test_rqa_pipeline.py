"""CI smoke test: `fqa run <every stage> --subset`, end to end on the real data.

Runs by `make smoke` (part of `make test`); needs the data (`make data`) and the model packages.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from fqa_analysis.cli import main
from fqa_analysis.core.candidates import validate_candidates
from fqa_analysis.models.reranker.variants import VARIANTS
from fqa_analysis.stages.beyond import BeyondRunConfig
from fqa_analysis.stages.explain import NONWORD_WEIGHTS, OPENING_WEIGHTS, SIM_WEIGHTS
from fqa_analysis.stages.relevance import RECIPES

SUBSET = 6
SYSTEMS = ["bm25", "minilm", "minilm_ft", "hybrid"]
TEST_SETS = 6  # four feedback domains + Quebec's two test files
RERANKED_SETS = 4  # the rerankers rescore the feedback domains (RerankRunConfig.score_domains)
RESCORED = len(SYSTEMS)  # ... of every RQA system (RerankRunConfig.score_rqa)


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, float]:
    root = tmp_path_factory.mktemp("smoke")
    out, cache = root / "results", root / "cache"
    argv = [
        "run",
        "rqa",
        "--subset",
        str(SUBSET),
        "--epochs",
        "1",
        "--max-steps",
        "3",
        "--out",
        str(out),
        "--cache-dir",
        str(cache),
    ]
    assert main(argv) == 0
    start = time.perf_counter()
    assert main(argv) == 0  # second run: everything from the cache
    rerun_s = time.perf_counter() - start
    rerank = [
        "run",
        "rerank",
        "--subset",
        str(SUBSET),
        "--seeds",
        "0",
        "--rerank-epochs",
        "1",
        "--max-steps",
        "2",
        "--out",
        str(out),
        "--cache-dir",
        str(cache),
    ]
    assert main(rerank) == 0
    relevance = [
        "run",
        "relevance",
        "--subset",
        str(SUBSET),
        "--max-steps",
        "2",
        "--recipes",
        ",".join(RECIPES),
    ]
    assert main([*relevance, "--out", str(out), "--cache-dir", str(cache)]) == 0
    # one sampled candidate besides the greedy one: the chooser's path, two decodings a row, not five
    explain = [
        *["run", "explain", "--subset", str(SUBSET), "--explain-epochs", "1", "--max-steps", "2"],
        *["--explain-candidates", "1"],
    ]
    assert main([*explain, "--out", str(out), "--cache-dir", str(cache)]) == 0
    # two learning-curve points: one trained, and fraction 1 read from the rerank stage's model
    beyond = [*("beyond" if a == "rerank" else a for a in rerank), "--fractions", "0.5,1"]
    assert main(beyond) == 0
    # runs accumulate: a second invocation recomputes two runs and keeps the others' rows
    assert main([*beyond, "--beyond-runs", "deep/*,fraction/0.5/*"]) == 0
    assert main([*beyond, "--beyond-runs", "deep/vanilla/*"]) == 2  # names no run: refused
    explain_rate = [
        "run",
        "explain_rate",
        "--subset",
        str(SUBSET),
        "--seeds",
        "0",
        "--explain-rate-epochs",
        "1",
    ]
    assert main([*explain_rate, "--max-steps", "2", "--out", str(out), "--cache-dir", str(cache)]) == 0
    paper_form = [*explain_rate, "--explain-rate-form", "paper", "--max-steps", "1"]
    assert main([*paper_form, "--out", str(out), "--cache-dir", str(cache)]) == 0
    return out, cache, rerun_s


def test_candidates_follow_the_contract(smoke_run: tuple[Path, Path, float]) -> None:
    out, _, _ = smoke_run
    candidates = pd.read_parquet(out / "candidates.parquet")
    assert validate_candidates(candidates, out / "candidates.parquet") == 5
    assert sorted(candidates["rqa"].unique()) == sorted(SYSTEMS)
    assert set(candidates["reranker"]) == {"none", *VARIANTS}
    reranked = len(VARIANTS) * RERANKED_SETS * RESCORED
    assert len(candidates) == (TEST_SETS * len(SYSTEMS) + reranked) * SUBSET * 5
    assert set(candidates["protocol"]) == {"available"}


def test_ranks_temperatures_and_manifest(smoke_run: tuple[Path, Path, float]) -> None:
    out, _, _ = smoke_run
    ranks = pd.read_parquet(out / "rqa_ranks.parquet")
    assert len(ranks) == len(SYSTEMS) * TEST_SETS * SUBSET
    feedback_domains = ranks[ranks["domain"] != "Quebec"]
    assert feedback_domains["gold_rank_pooled"].notna().all()
    assert ranks.loc[ranks["domain"] == "Quebec", "gold_rank_pooled"].isna().all()
    assert (ranks["gold_rank"] >= 1).all() and (ranks["gold_rank"] <= ranks["pool_size"]).all()
    temps = pd.read_parquet(out / "rqa_temperatures.parquet")
    assert (temps["temperature"] > 0).all()
    assert (temps["valid_nll_fitted"] <= temps["valid_nll_t1"] + 1e-9).all()
    manifest = json.loads((out / "manifest.json").read_text())["stages"]["rqa"]
    assert manifest["config"]["subset"] == SUBSET
    assert "minilm_ft/fit" in manifest["timings"]
    assert len(manifest["inputs_sha256"]) == 16


def test_rerun_is_cached_and_identical(smoke_run: tuple[Path, Path, float]) -> None:
    out, cache, rerun_s = smoke_run
    assert rerun_s < 60, f"a cached rerun took {rerun_s:.0f} s"
    assert list((cache / "scores").rglob("*.npy"))
    candidates = pd.read_parquet(out / "candidates.parquet")
    candidates = candidates[candidates["reranker"] == "none"]
    # The ranks in candidates agree with the gold ranks: gold in the top 5 exactly when rank <= 5.
    ranks = pd.read_parquet(out / "rqa_ranks.parquet")
    keys = ["rqa", "domain", "split", "question_id"]
    hit = candidates.groupby(keys)["is_gold"].any()
    merged = ranks.set_index(keys)["gold_rank"].le(5)
    assert hit.sort_index().tolist() == merged.sort_index().tolist()


def test_rerankers_score_every_rqa_with_the_same_model(smoke_run: tuple[Path, Path, float]) -> None:
    out, _, _ = smoke_run
    candidates = pd.read_parquet(out / "candidates.parquet")
    reranked = candidates[candidates["reranker"] == "feedback_kl"]
    # Decoupling: a (question, passage) pair gets the same P_phi whichever RQA proposed it.
    spread = reranked.groupby(["domain", "split", "question_id", "passage_id"])["p_excellent"].agg(
        ["min", "max"]
    )
    assert (spread["max"] - spread["min"]).max() < 1e-9
    predictions = pd.read_parquet(out / "rating_predictions.parquet")
    assert set(predictions["reranker"]) == set(VARIANTS)
    # stored rounded to 1e-5 (models.reranker.scoring.stored_probabilities): rows sum to 1 within 2e-5
    sums = (
        predictions[["p_bad", "p_could_be_improved", "p_acceptable", "p_excellent"]].astype(float).sum(axis=1)
    )
    assert (sums - 1).abs().max() <= 2e-5 + 1e-7
    stage = json.loads((out / "manifest.json").read_text())["stages"]["rerank"]
    assert stage["scored_pairs"] > 0 and "lower_layers" in stage["timings"]


def test_explainers_explain_every_item_and_humans_are_scored(smoke_run: tuple[Path, Path, float]) -> None:
    out, _, _ = smoke_run
    items = 4 * SUBSET  # the four feedback domains' test files, SUBSET items each
    explanations = pd.read_parquet(out / "explanations.parquet")
    explainers = {"template", "retrieval_same_rating", "retrieval_any_rating", "generator"}
    assert set(explanations["explainer"]) == explainers
    assert len(explanations) == len(explainers) * 2 * items  # two rating sources
    assert explanations["explanation"].str.len().gt(0).all()
    for metric in ("rouge_l", "bleu", "consistent"):
        assert explanations[metric].between(0, 1 + 1e-6).all(), metric
    assert explanations["embedding_sim"].between(-1 - 1e-6, 1 + 1e-6).all()  # a cosine
    humans = pd.read_parquet(out / "explanation_humans.parquet")
    assert len(humans) == 3 * items
    # the generator's greedy texts, the first candidate its chooser weighed: the same rows, scored alike
    greedy = pd.read_parquet(out / "explanation_greedy.parquet")
    generator = explanations[explanations["explainer"] == "generator"]
    assert set(greedy["explainer"]) == {"generator_greedy"} and len(greedy) == len(generator)
    assert greedy[["rating_source", "domain", "item_id", "rating"]].equals(
        generator[["rating_source", "domain", "item_id", "rating"]].reset_index(drop=True)
    )
    assert list(greedy.columns) == list(explanations.columns)
    top1 = pd.read_parquet(out / "explanations_top1.parquet")
    assert len(top1) == items and explainers <= set(top1.columns)
    stage = json.loads((out / "manifest.json").read_text())["stages"]["explain"]
    assert "generator/train" in stage["timings"] and "generator/levers" in stage["timings"]
    accuracy = stage["rating_classifier_heldout_accuracy_by_rating"]
    assert set(accuracy) == {"overall", "Bad", "Could be Improved", "Acceptable", "Excellent"}
    # the held-out levers: greedy, repetition penalty, one sample, best of k by the classifier and
    # by the similarity; per similarity weight the chooser with no and each opening penalty, each
    # with no and each non-word penalty, and the where-greedy-disagrees policy; then the template and
    # retrieval as references
    levers = pd.read_parquet(out / "explanation_levers.parquet")
    policies = len(SIM_WEIGHTS) * ((len(OPENING_WEIGHTS) + 1) * (len(NONWORD_WEIGHTS) + 1) + 1)
    rows = 5 + policies + 2
    assert levers["lever"].iloc[0] == "greedy" and len(levers) == rows and levers["chosen"].sum() == 1
    assert levers["lever"].tolist()[-2:] == ["reference: template", "reference: retrieval_same_rating"]
    # at most one policy adopted (none where no policy keeps the bars), and the manifest says which
    assert levers["adopted"].sum() <= 1 and (levers["policy"] != "").sum() == policies
    adopted = levers.loc[levers["adopted"], "lever"].tolist()
    assert stage["adopted_lever"] == (adopted[0] if adopted else None)
    assert stage["decode"]["sample_all"] == (bool(adopted) and "where greedy disagrees" not in adopted[0])
    assert levers["consistent"].between(0, 1).all() and levers["distinct"].between(0, 1).all()
    assert levers["opening_share"].between(0, 1).all() and levers["grounding"].dropna().between(0, 1).all()
    assert levers["no_nonword"].between(0, 1).all() and stage["lexicon_words"] > 0
    assert (levers["nonword_weight"] > 0).sum() == len(SIM_WEIGHTS) * (len(OPENING_WEIGHTS) + 1)
    assert (explanations["nonwords"] >= 0).all() and (humans["nonwords"] >= 0).all()
    assert {"consistent", "select_loss"} <= set(stage["generator_history"]["epochs"][0])


def test_explain_then_rate_scores_both_systems_and_explains_what_it_rates(
    smoke_run: tuple[Path, Path, float],
) -> None:
    out, cache, _ = smoke_run
    rows = pd.read_parquet(out / "explain_rate_candidates.parquet")
    path = out / "explain_rate_candidates.parquet"
    assert validate_candidates(rows, path) == 5
    assert set(rows["reranker"]) == {"feedback_explain_rate"} and set(rows["seed"]) == {0}
    assert sorted(rows["rqa"].unique()) == ["hybrid", "minilm_ft"]
    assert len(rows) == 2 * RERANKED_SETS * SUBSET * 5
    probs = rows[["p_bad", "p_could_be_improved", "p_acceptable", "p_excellent"]].sum(axis=1)
    assert ((probs - 1).abs() < 2e-5).all()
    # a pair both systems proposed has one P_phi: it was generated and rated once
    shared = rows.groupby(["domain", "split", "question_id", "passage_id"])["p_excellent"].nunique()
    assert (shared == 1).all()
    predictions = pd.read_parquet(out / "explain_rate_predictions.parquet")
    assert len(predictions) == RERANKED_SETS * SUBSET
    assert predictions["explanation"].str.len().gt(0).all()
    assert set(predictions["explanation_rating"]) <= {"Bad", "Could be Improved", "Acceptable", "Excellent"}
    entry = json.loads((out / "manifest.json").read_text())["stages"]["explain_rate"]
    assert entry["histories"]["seed0"]["steps"] == 2
    assert {"seed0/train", "seed0/score"} <= set(entry["timings"])
    # resumable: every scored pair sits in the model's cached chunks
    chunks = list((cache / "explain_rate").rglob("scores_*.parquet"))
    assert sum(len(pd.read_parquet(c)) for c in chunks) == 2 * entry["scored_pairs"]  # two forms


def test_the_papers_explain_then_rate_form_has_its_own_rows_and_entry(
    smoke_run: tuple[Path, Path, float],
) -> None:
    out, _, _ = smoke_run
    rows = pd.read_parquet(out / "explain_rate_paper_candidates.parquet")
    assert set(rows["reranker"]) == {"feedback_explain_rate_paper"}
    ours = pd.read_parquet(out / "explain_rate_candidates.parquet")
    keys = ["rqa", "domain", "split", "question_id", "rqa_rank", "passage_id"]
    assert rows[keys].equals(ours[keys])  # the same candidates, rescored by another model
    assert not rows["p_excellent"].equals(ours["p_excellent"])
    stages = json.loads((out / "manifest.json").read_text())["stages"]
    assert stages["explain_rate_paper"]["histories"]["seed0"]["steps"] == 1
    assert stages["explain_rate_paper"]["config"]["model"]["head_reads"] == "human"
    assert stages["explain_rate"]["config"]["model"]["head_input"] == "decoder+encoder"


def test_beyond_stage_reuses_the_rerank_models_and_covers_the_top_20(
    smoke_run: tuple[Path, Path, float],
) -> None:
    out, _, _ = smoke_run
    candidates = pd.read_parquet(out / "candidates.parquet")
    deep = pd.read_parquet(out / "deep_candidates.parquet")
    assert validate_candidates(deep, out / "deep_candidates.parquet") == 20
    assert set(deep["domain"]) == {"Australia", "CDC", "UK", "WHO"}
    per_run = deep.groupby(["rqa", "reranker"]).size()
    assert (per_run == 4 * SUBSET * 20).all()
    assert len(per_run) == len(SYSTEMS) + len(BeyondRunConfig().deep_rerankers)
    assert deep.loc[deep["reranker"] == "none", "p_rqa_t1"].between(0, 1).all()
    assert deep.loc[deep["reranker"] != "none", "p_rqa_t1"].isna().all()
    keys = ["rqa", "reranker", "seed", "domain", "split", "question_id", "rqa_rank"]
    # ranks 1..5 of the deep table are the candidate table's rows, P_phi included, to the bit
    top = deep[deep["rqa_rank"] <= 5].merge(candidates, on=keys, suffixes=("", "_c"))
    assert len(top) == len(deep[deep["rqa_rank"] <= 5])
    assert (top["passage_id"] == top["passage_id_c"]).all()
    assert (top["p_rqa"] - top["p_rqa_c"]).abs().max() <= 1e-6  # stored as float32 in the deep table
    rated = top["reranker"] != "none"
    assert (top.loc[rated, "p_excellent"] == top.loc[rated, "p_excellent_c"]).all()
    # fraction 1 of the learning curve IS the rerank stage's feedback_kl model: same P_phi
    experiments = pd.read_parquet(out / "feedback_experiments.parquet")
    assert set(experiments["experiment"]) == {"fraction", "leave_out", "size_control"}
    full = experiments[(experiments["experiment"] == "fraction") & (experiments["setting"] == "1")]
    mine = candidates[(candidates["rqa"] == "hybrid") & (candidates["reranker"] == "feedback_kl")]
    joined = full.merge(mine, on=["seed", "domain", "split", "question_id", "rqa_rank"], suffixes=("", "_c"))
    assert len(joined) == len(full) == 4 * SUBSET * 5
    assert (joined["p_excellent"] == joined["p_excellent_c"]).all()
    selection = pd.read_parquet(out / "selection_predictions.parquet")
    assert set(selection["reranker"]) == set(VARIANTS)
    stage = json.loads((out / "manifest.json").read_text())["stages"]["beyond"]
    assert stage["timings"]["fraction/1/seed0/train"]["from_cache"]
    # every run is present once, none planned; the kept runs' steps are carried over
    assert stage["planned"] == []
    assert {r.split("/")[0] for r in stage["run_commits"]} == {
        "selection",
        "fraction",
        "leave_out",
        "size_control",
        "deep",
    }
    assert "leave_out/WHO/seed0/train" in stage["timings"]
    selection_runs = [r for r in stage["run_commits"] if r.startswith("selection/")]
    assert len(selection.groupby(["reranker", "seed"])) == len(selection_runs)


def _outputs(nb: Any) -> str:
    """The text of every code cell's outputs."""
    return "\n".join(
        str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", ""))
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
    )


def _executed(page: str, results: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The book's ``page`` notebook executed on the results folder ``results`` ($FQA_RESULTS_DIR)."""
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("FQA_RESULTS_DIR", str(results))  # the kernel inherits the environment
    nb = nbformat.read(Path(__file__).resolve().parents[1] / "book" / f"{page}.ipynb", as_version=4)
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()  # raises CellExecutionError on any failing cell
    return nb


@pytest.mark.parametrize("page", ["ablation_score", "ablation_loss"])
def test_ablation_notebooks_run_on_another_results_folder(
    smoke_run: tuple[Path, Path, float], page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README "Rerun an ablation": a book notebook executed with $FQA_RESULTS_DIR reads that folder."""
    import nbformat

    out, _, _ = smoke_run
    stored = nbformat.read(Path(__file__).resolve().parents[1] / "book" / f"{page}.ipynb", as_version=4)
    nb = _executed(page, out, tmp_path, monkeypatch)
    # one seed of each variant on a subset: the outputs are not the book's
    assert _outputs(nb) and _outputs(nb) != _outputs(stored)


@pytest.mark.parametrize("page", ["reranking", "appendix/reranking", "ablation_loss"])
def test_chapters_run_on_a_results_folder_holding_a_subset(
    smoke_run: tuple[Path, Path, float], page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rerun is what a user makes it: two losses on two RQA systems; the page says what it lacks."""
    import shutil

    out, _, _ = smoke_run
    subset = tmp_path / "results"
    shutil.copytree(out, subset)
    kept = {"feedback_kl", "feedback_ce_majority"}
    rows = pd.read_parquet(subset / "candidates.parquet")
    rows = rows[
        (rows["reranker"] == "none") | (rows["reranker"].isin(kept) & rows["rqa"].isin(["bm25", "hybrid"]))
    ]
    rows.to_parquet(subset / "candidates.parquet")
    predictions = pd.read_parquet(subset / "rating_predictions.parquet")
    predictions[predictions["reranker"].isin(kept)].to_parquet(subset / "rating_predictions.parquet")
    nb = _executed(page, subset, tmp_path, monkeypatch)
    if page == "ablation_loss":
        assert "not in this results folder: `feedback_ce_annotator`" in _outputs(nb) + _markdown_outputs(nb)


def _markdown_outputs(nb: Any) -> str:
    """The Markdown a notebook's code cells displayed."""
    return "\n".join(
        str(o.get("data", {}).get("text/markdown", ""))
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
    )


def test_relevance_recipes_share_one_held_out_set(smoke_run: tuple[Path, Path, float]) -> None:
    out, _, _ = smoke_run
    rows = pd.read_parquet(out / "relevance_recipes.parquet")
    assert list(dict.fromkeys(rows["recipe"])) == list(RECIPES)
    questions = rows.groupby("recipe")[["domain", "question_id"]].apply(
        lambda b: frozenset(map(tuple, b.drop_duplicates().values))
    )
    assert len(set(questions)) == 1  # every recipe scored the same held-out questions
    assert (rows.groupby(["recipe", "domain", "question_id"])["is_gold"].sum() == 1).all()
    manifest = json.loads((out / "manifest.json").read_text())["stages"]
    assert set(manifest["relevance"]["recipes"]) == set(RECIPES)
    # the rerank stage's warm-started variants and their scratch rows were all trained
    assert {"feedback_kl/seed0", "feedback_kl_scratch/seed0"} <= set(manifest["rerank"]["histories"])


def test_warm_variants_with_frozen_lower_layers_run_in_their_own_folder(
    smoke_run: tuple[Path, Path, float], tmp_path: Path
) -> None:
    """`--warm-frozen-layers 4`: warm variants on the relevance model's lower layers, in their own folder."""
    import shutil

    out, cache, _ = smoke_run
    frozen = tmp_path / "frozen4"
    frozen.mkdir()
    shutil.copy(out / "candidates.parquet", frozen / "candidates.parquet")
    argv = ["run", "rerank", "--subset", str(SUBSET), "--variants", "feedback_kl", "--seeds", "0"]
    argv += ["--rerank-epochs", "1", "--max-steps", "2", "--cache-dir", str(cache)]
    assert main([*argv, "--warm-frozen-layers", "4", "--out", str(frozen)]) == 0
    entry = json.loads((frozen / "manifest.json").read_text())["stages"]["rerank"]
    assert entry["config"]["warm_frozen_layers"] == 4
    assert "relevance_lower_layers" in entry["timings"]
    rows = pd.read_parquet(frozen / "candidates.parquet")
    assert set(rows["reranker"]) == {"none", "feedback_kl"}  # the full runs copied in are dropped
    keys = ["rqa", "domain", "split", "question_id", "passage_id"]
    full = pd.read_parquet(out / "candidates.parquet").query("reranker == 'feedback_kl'").set_index(keys)
    mine = rows.query("reranker == 'feedback_kl'").set_index(keys).loc[full.index]
    assert len(mine) == len(full) and not (mine["p_excellent"] == full["p_excellent"]).all()
    # the full configuration's folder refuses the frozen runs (a stage never mixes configurations)
    assert main([*argv, "--warm-frozen-layers", "4", "--out", str(out)]) == 2


def test_a_page_setting_reruns_an_ablation_from_the_stored_predictions(
    smoke_run: tuple[Path, Path, float], tmp_path: Path
) -> None:
    """book/rerun.md: `-p NAME VALUE` re-executes a page with one setting changed, no model trained."""
    import os
    import subprocess
    import sys

    import nbformat

    out, _, _ = smoke_run
    root = Path(__file__).resolve().parents[1]
    tool = [
        sys.executable,
        str(root / "tools" / "execute_notebooks.py"),
        str(root / "book" / "ablation_score.ipynb"),
    ]
    env = {**os.environ, "FQA_RESULTS_DIR": str(out)}
    copy = tmp_path / "depth3.ipynb"
    done = subprocess.run(
        [*tool, "-p", "DEPTH", "3", "--output", str(copy)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    text = json.dumps(nbformat.read(copy, as_version=4)["cells"])
    assert "DEPTH = 3 (book: 5); every computed table, test and finding on it uses them" in text
    refused = subprocess.run(
        [*tool, "-p", "WEIGHT", "2", "--output", str(copy)], env=env, capture_output=True, text=True
    )
    assert refused.returncode == 1
    errors = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert (
        len(errors) == 1
        and "WEIGHT = 2: allowed None (the paper's sum P_theta + score) or a number" in errors[0]
    )


@pytest.mark.parametrize("lacks", ["table", "column"])
def test_a_chapter_on_a_folder_lacking_a_table_or_column_ends_in_one_line(
    smoke_run: tuple[Path, Path, float], tmp_path: Path, lacks: str
) -> None:
    """A chapter run on an incomplete folder says what is missing and which command writes it."""
    import os
    import shutil
    import subprocess
    import sys

    out, _, _ = smoke_run
    folder = tmp_path / "results"
    shutil.copytree(out, folder)
    page = "retrieval"
    if lacks == "table":
        (folder / "rqa_temperatures.parquet").unlink()
        expected = (
            "rqa_temperatures.parquet, (whole file): the results file does not exist. Fix: run `fqa run rqa"
        )
    else:
        page = "appendix/retrieval"  # the pooled view, which reads the column, is in the appendix
        ranks = pd.read_parquet(folder / "rqa_ranks.parquet").drop(columns="gold_rank_pooled")
        ranks.to_parquet(folder / "rqa_ranks.parquet")
        expected = (
            f"column 'gold_rank_pooled' is missing from {folder / 'rqa_ranks.parquet'}: `fqa run rqa --out"
        )
    root = Path(__file__).resolve().parents[1]
    tool = [
        sys.executable,
        str(root / "tools" / "execute_notebooks.py"),
        str(root / "book" / f"{page}.ipynb"),
    ]
    done = subprocess.run(
        [*tool, "--output", str(tmp_path / "page.ipynb")],
        env={**os.environ, "FQA_RESULTS_DIR": str(folder)},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 1
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and expected in errors[0], done.stderr[-1500:]

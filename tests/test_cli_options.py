"""`fqa run` checks every option before any work starts: one line naming option, value, allowed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fqa_analysis.cli import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["rerank", "--seeds", "x"], "argument --seeds: 'x' is not a comma-separated list of integers"),
        (
            ["beyond", "--beyond-runs", "deep/*,models/*"],
            "argument --beyond-runs: models/*: a run starts with",
        ),
        (["rerank", "--seeds", "0,-1"], "has a negative seed"),
        (["rerank", "--seeds", "0,0"], "repeats an item"),
        (["rerank", "--seeds", "0,,1"], "argument --seeds: '0,,1' has an empty item"),
        (["rerank", "--variants", "vanilla,"], "argument --variants: 'vanilla,' has an empty item"),
        (["rerank", "--relevance-loss", "pairwise"], "argument --relevance-loss: invalid choice: 'pairwise'"),
        (["rerank", "--negative-source", "hybrid"], "argument --negative-source: invalid choice: 'hybrid'"),
        (["rerank", "--relevance-domains", "WHO,Mars"], "argument --relevance-domains: unknown Mars"),
        (
            ["rerank", "--relevance-epochs", "0"],
            "argument --relevance-epochs: 0 is out of range (allowed: 1..10)",
        ),
        (["relevance", "--recipes", "best"], "argument --recipes: unknown best (allowed: listwise_3neg_all"),
        (["rerank", "--frozen-layers", "9"], "argument --frozen-layers: 9 is out of range (allowed: 0..6)"),
        (["rerank", "--layers", "7"], "argument --layers: 7 is out of range (allowed: 1..6)"),
        (["relevance", "--layers", "0"], "argument --layers: 0 is out of range (allowed: 1..6)"),
        (
            ["rerank", "--warm-frozen-layers", "6"],
            "argument --warm-frozen-layers: 6 is out of range (allowed: 0..5)",
        ),
        (
            ["rerank", "--rerank-epochs", "0"],
            "argument --rerank-epochs: 0 is out of range (allowed: 1 or more)",
        ),
        (
            ["rerank", "--variants", "vanila"],
            "argument --variants: unknown vanila (allowed: vanilla, feedback_kl",
        ),
        (
            ["rerank", "--pseudo-negatives", "11"],
            "argument --pseudo-negatives: 11 is out of range (allowed: 1..10)",
        ),
        (["rerank", "--device", "tpu"], "argument --device: invalid choice: 'tpu'"),
        (["rqa", "--systems", "bm25,bert"], "argument --systems: unknown bert (allowed: bm25, minilm"),
        (["rqa", "--subset", "0"], "argument --subset: 0 is out of range"),
        (["beyond", "--fractions", "0.5,2"], "argument --fractions: '0.5,2' has a share outside (0, 1]"),
        (["beyond", "--fractions", "half"], "is not a list of numbers"),
        (
            ["beyond", "--experiment-seeds", "0,a"],
            "argument --experiment-seeds: '0,a' is not a comma-separated",
        ),
        (["beyond", "--depth", "3"], "argument --depth: 3 is out of range (allowed: 5..100)"),
        (["explain", "--max-steps", "two"], "argument --max-steps: 'two' is not an integer"),
        (["explain", "--explain-candidates", "17"], "argument --explain-candidates: 17 is out of range"),
        (
            ["explain", "--explain-opening-weight", "-1"],
            "argument --explain-opening-weight: -1 is out of range (allowed: 0..100)",
        ),
        (
            ["explain", "--explain-opening-weight", "nan"],
            "argument --explain-opening-weight: nan is out of range",
        ),
        (["explain", "--explain-opening-weight", "lots"], "'lots' is not a number (allowed: 0..100)"),
        (
            ["explain", "--explain-sim-weight", "101"],
            "argument --explain-sim-weight: 101 is out of range (allowed: 0..100)",
        ),
        (
            ["explain", "--explain-nonword-weight", "-2"],
            "argument --explain-nonword-weight: -2 is out of range (allowed: 0..100)",
        ),
        (
            ["explain_rate", "--explain-rate-unlikelihood", "-0.5"],
            "argument --explain-rate-unlikelihood: -0.5 is out of range (allowed: 0..100)",
        ),
        (
            ["explain_rate", "--explain-rate-top-p", "0"],
            "argument --explain-rate-top-p: 0 is out of range (allowed: 0.01..1)",
        ),
        (
            ["explain_rate", "--explain-rate-top-p", "1.5"],
            "argument --explain-rate-top-p: 1.5 is out of range",
        ),
    ],
)
def test_a_bad_value_is_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["run", *argv])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1  # the error alone, not argparse's usage block


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["rqa", "--fractions", "0.5"],
            "--fractions is read by stage beyond only; it has no effect on `fqa run rqa`",
        ),
        (["rerank", "--explain-epochs", "3"], "--explain-epochs is read by stage explain only"),
        (["explain", "--seeds", "0"], "--seeds is read by stage rerank / beyond / explain_rate only"),
        (["rerank", "--experiment-seeds", "1"], "--experiment-seeds is read by stage beyond only"),
        (
            ["relevance", "--pseudo-negatives", "3"],
            "--pseudo-negatives is read by stage rerank / beyond / explain_rate only",
        ),
        (["rerank", "--recipes", "listwise_3neg_all"], "--recipes is read by stage relevance only"),
        (["beyond", "--warm-frozen-layers", "4"], "--warm-frozen-layers is read by stage rerank only"),
        (["all", "--warm-frozen-layers", "4"], "--warm-frozen-layers is read by `fqa run rerank` alone"),
        (["all", "--layers", "2"], "--layers is read by `fqa run rerank` and `fqa run relevance`, not"),
        (["explain", "--layers", "2"], "--layers is read by stage relevance / rerank / beyond only"),
        (["rerank", "--layers", "2", "--frozen-layers", "3"], "--frozen-layers 3 with --layers 2: the"),
        (["rerank", "--layers", "4", "--warm-frozen-layers", "4"], "so at most 3 can be frozen"),
        (
            ["rerank", "--warm-frozen-layers", "4", "--frozen-layers", "2"],
            "--frozen-layers with --warm-frozen-layers would train the relevance model",
        ),
        (["rerank", "--explain-rate-unlikelihood", "1"], "--explain-rate-unlikelihood is read by stage"),
        (
            ["explain_rate", "--explain-rate-form", "paper", "--explain-rate-unlikelihood", "1"],
            "--explain-rate-unlikelihood acts on the explanations our form writes",
        ),
        (
            ["rqa", "--systems", "bm25,minilm", "--epochs", "2"],
            "--epochs sets the fine-tuning of minilm_ft / hybrid",
        ),
    ],
)
def test_a_valid_but_pointless_option_is_refused_before_any_work(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # --data-dir points nowhere: the refusal must come before the data (or anything) is touched.
    code = main(["run", *argv, "--data-dir", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_cuda_without_a_gpu_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    code = main(["run", "rerank", "--device", "cuda", "--data-dir", str(tmp_path)])
    assert code == 2
    assert "--device cuda: torch sees no CUDA GPU" in capsys.readouterr().err


def test_auto_resolves_to_what_torch_sees(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    from fqa_analysis.models.reranker.encoder import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == "cuda"
    assert resolve_device("cpu") == "cpu"
    with pytest.raises(ValueError, match="unknown device 'gpu'"):
        resolve_device("gpu")


@pytest.mark.parametrize("stage", ["rqa", "relevance", "rerank"])
def test_a_run_under_another_configuration_is_refused_unless_replace(
    stage: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, tiny_data: Path
) -> None:
    import json

    out = tmp_path / "out"
    out.mkdir()
    manifest = {"stages": {stage: {"config": {"k": 99, "subset": 3}, "histories": {}}}}
    (out / "manifest.json").write_text(json.dumps(manifest))
    code = main(["run", stage, "--data-dir", str(tiny_data), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert f"holds stage {stage} under another configuration (differs in: " in err
    assert "add --replace" in err and len(err.strip().splitlines()) == 1
    # nothing was written: the refusal comes before any work
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json"]


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["run", "rqa", "--out", "{file}"], 2, "--out {file} is a file, not a folder"),
        (["run", "rerank", "--out", "{file}"], 2, "--out {file} is a file, not a folder"),
        (["run", "rqa", "--out", "{tmp}/new", "--cache-dir", "{file}"], 2, "--cache-dir {file} is a file"),
        (["data", "fetch", "--data-dir", "{file}"], 2, "--data-dir {file} is a file, not a folder"),
        (["data", "check", "--data-dir", "{file}"], 1, "--data-dir names a file, not a folder"),
        (
            ["data", "check", "--data-dir", "{empty}"],
            1,
            "no FeedbackQA files in {empty}. Fix: run `fqa data fetch",
        ),
        (["run", "rqa", "--data-dir", "{empty}", "--out", "{tmp}/new"], 1, "no FeedbackQA files in {empty}"),
    ],
)
def test_a_human_mistake_is_one_line_before_any_work(
    argv: list[str], code: int, message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    places = {"file": tmp_path / "a_file", "empty": tmp_path / "empty", "tmp": tmp_path}
    places["file"].write_text("not a folder")
    places["empty"].mkdir()
    assert main([a.format(**places) for a in argv]) == code
    assert message.format(**places) in _one_line_error(capsys)
    assert not (tmp_path / "new").exists()  # nothing written


def test_a_folder_without_write_permission_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import os

    # the tests may run as root, for whom every folder is writable: ask os.access instead
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != tmp_path)
    assert main(["run", "rqa", "--out", str(tmp_path / "out" / "deeper")]) == 2
    assert f"{tmp_path} is not writable; give a folder you can write to" in _one_line_error(capsys)


def test_ctrl_c_is_one_line_and_exit_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import fqa_analysis.cli as cli

    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_cmd_check", interrupted)
    assert main(["data", "check"]) == 130
    assert _one_line_error(capsys) == "interrupted; rerun the same command to resume"


@pytest.mark.parametrize("stage", ["rqa", "relevance", "rerank", "explain", "beyond", "explain_rate"])
def test_a_stage_help_lists_that_stage_options_only(stage: str, capsys: pytest.CaptureFixture[str]) -> None:
    from fqa_analysis.cli import COMMON_OPTIONS, STAGES

    with pytest.raises(SystemExit) as stop:
        main(["run", stage, "--help"])
    assert stop.value.code == 0
    shown = set(re.findall(r"^  --([a-z-]+)", capsys.readouterr().out, flags=re.MULTILINE))
    assert {o.replace("-", "_") for o in shown} == STAGES[stage] | COMMON_OPTIONS


def test_run_without_a_stage_is_all() -> None:
    from fqa_analysis.cli import parse_args

    assert parse_args(["run"]).stage == "all"
    assert parse_args(["run", "--subset", "3"]).stage == "all"
    assert parse_args(["run", "--subset", "3"]).subset == 3


def test_the_readme_options_table_is_the_cli_help() -> None:
    from fqa_analysis.cli import options_markdown

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    table = readme.split("<!-- options:start -->\n", 1)[1].split("\n<!-- options:end -->", 1)[0]
    assert table == options_markdown()

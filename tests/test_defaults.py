"""`fqa run STAGE` without options computes the configuration the committed results/ record.

A newcomer who runs the documented command must reproduce the book, not be refused for a setting
that drifted (the RQA's fine-tuning once defaulted to 3 epochs while results/ were computed with 4).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from fqa_analysis.cli import parse_args, stage_configs, stage_modules
from fqa_analysis.core.results import comparable_config, load_manifest

RESULTS = Path(__file__).resolve().parents[1] / "results"
MODULES: dict[str, ModuleType] = stage_modules()
#: The command of each manifest entry, as the book's rerun recipe gives it.
COMMANDS: dict[str, list[str]] = {
    **{name: ["run", name] for name in MODULES},
    "explain_rate_paper": ["run", "explain_rate", "--explain-rate-form", "paper"],
}


@pytest.mark.parametrize("entry", sorted(COMMANDS))
def test_a_stage_run_without_options_is_the_committed_configuration(entry: str) -> None:
    args = parse_args(COMMANDS[entry])
    (config,) = (
        stage_configs(args)[args.stage] if args.stage == "explain_rate" else [stage_configs(args)[args.stage]]
    )
    module = MODULES[args.stage]
    recorded = load_manifest(RESULTS)["stages"][entry]["config"]
    default = comparable_config(module.config_record(config), module.RUN_FIELDS)
    # a setting added after the entry was written counts at the value earlier code ran at
    # (core.results.LATER_SETTINGS)
    committed = comparable_config(recorded, module.RUN_FIELDS)
    differing = sorted(
        k for k in set(default) ^ set(committed) | {k for k in default if default[k] != committed.get(k)}
    )
    assert differing == [], {k: (default.get(k, "(absent)"), committed.get(k, "(absent)")) for k in differing}


def test_all_runs_every_stage_and_both_explain_then_rate_forms() -> None:
    configs = stage_configs(parse_args(["run"]))
    assert list(configs) == ["rqa", "relevance", "rerank", "explain", "beyond", "explain_rate"]
    assert [c.model.head_reads for c in configs["explain_rate"]] == ["own", "human"]


def test_the_plan_of_every_stage_on_the_committed_results_computes_nothing(
    tiny_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fqa_analysis.cli import main

    # the plan reads no model input: the tiny data folder stands for the data here
    assert (
        main(
            [
                "run",
                "--plan",
                "--out",
                str(RESULTS),
                "--data-dir",
                str(tiny_data),
                "--cache-dir",
                str(tmp_path),
            ]
        )
        == 0
    )
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1].startswith("plan: 0 to compute, 0 cached, ")
    assert lines[-1].endswith(" in the results folder, about 0 min")
    assert not [line for line in lines[1:-1] if "in the results folder" not in line]

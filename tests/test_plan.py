"""`fqa run --plan`: each run in the results folder, cached, or to compute, and what it would cost."""

from __future__ import annotations

from pathlib import Path

from fqa_analysis.stages.plan import PlannedRun, data_fingerprint, plan_lines, plan_stage, remember_finished

ENTRY = {
    "config": {"lr": 1, "seeds": [0]},
    "timings": {
        "data": {"compute_s": 30.0, "wall_s": 30.0},
        "a/seed0/train": {"compute_s": 600.0, "wall_s": 2.0},
        "a/seed0/score": {"compute_s": 60.0, "wall_s": 60.0},
        "b/seed0/train": {"compute_s": 120.0, "wall_s": 1.0},
    },
}


def test_runs_in_the_folder_cached_and_to_compute(tmp_path: Path) -> None:
    record = {"lr": 1, "seeds": [0, 1]}
    # seed 1 of a finished with this cache under the same configuration and data, b's did not
    remember_finished(tmp_path, "s", record, ("seeds",), "data-1", ["a/seed1"])
    plan = plan_stage(
        "s", ["a/seed0", "a/seed1", "b/seed1"], record, ("seeds",), ENTRY, ENTRY, tmp_path, "data-1"
    )
    assert [(p.run, p.status, p.seconds) for p in plan] == [
        ("a/seed0", "results", 660.0),
        ("a/seed1", "cached", 660.0),  # estimated from seed 0 of the same variant
        ("b/seed1", "compute", 120.0),  # compute_s, not this invocation's wall_s
        ("(shared)", "compute", 30.0),  # counted once, since something is computed
    ]
    assert plan_lines(plan)[-1] == "plan: 1 to compute, 1 cached, 1 in the results folder, about 2 min"


def test_other_data_or_another_configuration_is_not_cached_nor_in_the_folder(tmp_path: Path) -> None:
    remember_finished(tmp_path, "s", {"lr": 1}, (), "data-1", ["a/seed0"])
    other_data = plan_stage("s", ["a/seed0"], {"lr": 1}, (), {}, ENTRY, tmp_path, "data-2")
    other_config = plan_stage("s", ["a/seed0"], {"lr": 2}, (), ENTRY, ENTRY, tmp_path, "data-1")
    assert [p.status for p in other_data] == ["compute", "compute"]
    assert [p.status for p in other_config] == ["compute", "compute"]


def test_a_run_never_recorded_has_no_estimate_and_the_summary_says_so() -> None:
    plan = [PlannedRun("s", "c/seed0", "compute", None), PlannedRun("s", "a/seed0", "compute", 5400.0)]
    lines = plan_lines(plan)
    assert lines[:2] == [
        "stage  run               status      time",
        "s      c/seed0           to compute  no recorded time",
    ]
    assert lines[-1] == (
        "plan: 2 to compute, 0 cached, 0 in the results folder, "
        "about 1.5 h and 1 run(s) with no recorded time"
    )


def test_the_data_fingerprint_follows_the_content(tmp_path: Path) -> None:
    (tmp_path / "WHO").mkdir()
    (tmp_path / "WHO" / "test.json").write_text("[1]")
    before = data_fingerprint(tmp_path)
    (tmp_path / "WHO" / "test.json").write_text("[2]")
    assert data_fingerprint(tmp_path) != before

"""Every kind of bad input gets one clear message naming the file, the item and the fix."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tinydata import edit_json

from fqa_analysis import data
from fqa_analysis.cli import main
from fqa_analysis.data.check import check_data
from fqa_analysis.errors import DataError


def test_valid_tree_passes_with_counts(tiny_data: Path) -> None:
    report = check_data(tiny_data)
    assert report.ok, [p.message() for p in report.problems]
    assert report.protocol == "available"
    qa = report.counts[report.counts["kind"] == "qa"]
    assert len(qa) == 16  # 4 domains x 3 splits + Quebec x 4
    fb = report.counts[report.counts["kind"] == "feedback"].set_index(["domain", "split"])
    assert fb.loc[("WHO", "train"), "items"] == 4
    assert fb.loc[("WHO", "train"), "questions"] == 2
    assert fb.loc[("CDC", "test"), "ratings_per_item"] == "3"
    assert any("Australia/feedback_train.json is absent" in n for n in report.notes)


def _set(path: list[Any], value: Any) -> Callable[[Any], None]:
    def edit(obj: Any) -> None:
        for key in path[:-1]:
            obj = obj[key]
        obj[path[-1]] = value

    return edit


def _delete(path: list[Any]) -> Callable[[Any], None]:
    def edit(obj: Any) -> None:
        for key in path[:-1]:
            obj = obj[key]
        del obj[path[-1]]

    return edit


CASES = [
    ("UK/test.json", _delete(["examples", 1, "passage_id"]), "examples[1]", "missing field(s) 'passage_id'"),
    ("UK/test.json", _set(["examples", 0, "question"], "   "), "examples[0]", "the question is empty"),
    ("UK/train.json", _set(["examples", 1, "id"], 0), "examples[1]", "'id' 0 repeats examples[0]"),
    (
        "UK/test.json",
        _set(["examples", 1, "passage_id"], 7),
        "examples[1]",
        "gold 'passage_id' 7 is outside the pool of 3 passages",
    ),
    (
        "UK/valid.json",
        _delete(["passages", 2, "reference", "section_content"]),
        "passages[2]",
        "'reference' lacks field(s) 'section_content'",
    ),
    (
        "CDC/feedback_test.json",
        _set([3, "rating", 1], "Good"),
        "item [3]",
        "unknown rating label(s) 'Good'",
    ),
    (
        "CDC/feedback_test.json",
        _set([2, "feedback"], ["only one"]),
        "item [2]",
        "3 rating(s) but 1 explanation(s)",
    ),
    (
        "WHO/feedback_train.json",
        _set([0, "passage", "passage_id"], 99),
        "item [0].passage",
        "'passage_id' 99 is outside the WHO pool of 3 passages",
    ),
    ("WHO/feedback_valid.json", _delete([1, "rating"]), "item [1]", "missing field(s) 'rating'"),
    ("Australia/feedback_valid.json", _set([0, "question"], ""), "item [0]", "the question is empty"),
]


@pytest.mark.parametrize(("file", "edit", "item", "problem"), CASES)
def test_each_problem_is_named(
    tiny_data: Path, file: str, edit: Callable[[Any], None], item: str, problem: str
) -> None:
    edit_json(tiny_data / file, edit)
    report = check_data(tiny_data)
    assert len(report.problems) == 1
    message = report.problems[0].message()
    assert message.startswith(f"{tiny_data / file}, {item}: ")
    assert problem in message
    assert "Fix: " in message


def test_truncated_json_is_reported_as_truncated(tiny_data: Path) -> None:
    path = tiny_data / "WHO" / "test.json"
    path.write_text(path.read_text()[:-40])
    with pytest.raises(
        DataError, match=r"test\.json, line 1, column \d+: the file ends early \(truncated JSON\)"
    ):
        data.load_qa_split(tiny_data, "WHO", "test")


def test_malformed_json_names_line_and_column(tiny_data: Path) -> None:
    path = tiny_data / "WHO" / "valid.json"
    path.write_text('{"examples": [,]}\n')
    with pytest.raises(DataError, match=r"valid\.json, line 1, column 15: invalid JSON"):
        data.read_json(path)


def test_missing_required_file_fails_missing_optional_file_does_not(tiny_data: Path) -> None:
    (tiny_data / "UK" / "feedback_train.json").unlink(missing_ok=True)
    assert check_data(tiny_data).ok
    (tiny_data / "UK" / "feedback_test.json").unlink()
    (problem,) = check_data(tiny_data).problems
    assert "UK/feedback_test.json, (whole file): the file does not exist" in problem.message()


def test_loader_raises_instead_of_returning_partial_data(tiny_data: Path) -> None:
    edit_json(tiny_data / "CDC" / "feedback_valid.json", _set([0, "rating", 0], "excellent"))
    with pytest.raises(DataError, match="unknown rating label"):
        data.load_feedback_split(tiny_data, "CDC", "valid")


def test_cli_check_exit_codes_and_messages(tiny_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "check", "--data-dir", str(tiny_data)]) == 0
    out = capsys.readouterr().out
    assert "ok: every file is valid" in out
    assert "training protocol: available" in out
    edit_json(tiny_data / "CDC" / "feedback_test.json", _set([0, "rating", 0], "Great"))
    assert main(["data", "check", "--data-dir", str(tiny_data)]) == 1
    err = capsys.readouterr().err
    assert "1 problem(s):" in err
    assert "unknown rating label(s) 'Great'" in err
    assert "Traceback" not in err
    assert main(["data", "check", "--data-dir", str(tiny_data / "nope")]) == 1
    assert "does not exist" in capsys.readouterr().err

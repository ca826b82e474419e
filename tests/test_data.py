from __future__ import annotations

from pathlib import Path

import pytest
from tinydata import write_tree

from fqa_analysis import data
from fqa_analysis.errors import DataError


def test_passage_text_joins_non_empty_parts_with_newlines() -> None:
    assert data.passage_text("T", ["H1", "", "  ", "H2"], "C") == "T\nH1\nH2\nC"
    assert data.passage_text("", [], "C") == "C"


def test_load_qa_split_builds_typed_records(tiny_data: Path) -> None:
    split = data.load_qa_split(tiny_data, "WHO", "test")
    assert [q.question for q in split.questions] == ["WHO question 0?", "WHO question 1?"]
    assert [q.passage_id for q in split.questions] == [0, 1]
    assert split.passages[2].text == "WHO page 2\nHeader 2\nAnswer number 2 of WHO."
    frame = data.questions_frame([split])
    assert frame.shape == (2, 5)
    assert data.passages_frame(split)["passage_id"].tolist() == [0, 1, 2]


def test_feedback_frame_has_one_row_per_rating(tiny_data: Path) -> None:
    fb = data.load_feedback_split(tiny_data, "CDC", "test")
    assert len(fb.items) == 4
    frame = data.feedback_frame([fb])
    assert len(frame) == 12  # 4 items x 3 annotators
    first = frame[frame["item_id"] == 0]
    assert first["rating"].tolist() == ["Excellent", "Acceptable", "Bad"]
    assert first["annotator"].tolist() == [0, 1, 2]
    assert first["explanation"].tolist() == ["explanation 0", "explanation 1", "explanation 2"]


def test_quebec_has_two_test_splits() -> None:
    assert data.test_splits("Quebec") == ("test_old_faq_coll4", "test_new_faq_coll4")
    assert data.qa_splits("UK") == ("train", "valid", "test")


def test_training_protocol_follows_feedback_train_files(tmp_path: Path) -> None:
    assert data.training_protocol(write_tree(tmp_path / "a")) == "available"
    assert data.training_protocol(write_tree(tmp_path / "b", with_all_train=True)) == "paper"


def test_available_feedback_falls_back_to_release_file(tiny_data: Path) -> None:
    import json

    release = tiny_data / "release"
    release.mkdir()
    item = json.loads((tiny_data / "UK" / "feedback_valid.json").read_text())[0]
    item["domain"] = "US"  # the paper's name of CDC
    (release / "feedback_train.json").write_text(json.dumps([item]))
    found = data.available_feedback(tiny_data, "train")
    assert [(f.domain, len(f.items)) for f in found] == [("CDC", 1), ("WHO", 4)]
    assert data.training_protocol(tiny_data) == "available"  # UK and Australia still lack train


def test_resolve_data_dir_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a folder counts as a data folder once it holds a QA file
    for folder in (tmp_path, tmp_path / "x"):
        (folder / "WHO").mkdir(parents=True)
        (folder / "WHO" / "train.json").write_text("[]")
    monkeypatch.setenv("FQA_DATA_DIR", str(tmp_path))
    assert data.resolve_data_dir(None) == tmp_path
    other = tmp_path / "x"
    assert data.resolve_data_dir(other) == other
    (other / "WHO" / "train.json").unlink()
    with pytest.raises(DataError, match=r"no FeedbackQA files in .*x\. Fix: run `fqa data fetch --data-dir"):
        data.resolve_data_dir(other)
    with pytest.raises(DataError, match=r"--data-dir names a file, not a folder"):
        data.resolve_data_dir(tmp_path / "WHO" / "train.json")
    monkeypatch.setenv("FQA_DATA_DIR", str(tmp_path / "missing"))
    with pytest.raises(DataError, match=r"FQA_DATA_DIR does not exist\. Fix: run `fqa data fetch`"):
        data.resolve_data_dir(None)
    monkeypatch.delenv("FQA_DATA_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert data.default_cache_dir() == tmp_path / "cache" / "fqa-eval" / "feedbackqa"

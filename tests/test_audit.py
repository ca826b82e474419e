"""The blind explanation audit (core.audit): sample, sheet, judges' files, scores, agreement."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from fqa_analysis.core.audit import (
    DIMENSIONS,
    GREEDY,
    SOURCES,
    AuditConfig,
    agreement,
    audit_outcomes,
    audit_rows,
    changed_rows,
    cohen_kappa,
    judgement_frame,
    sheet_markdown,
)
from fqa_analysis.core.ratings import LABELS
from fqa_analysis.core.results import audit_judges, has_audit, has_table, load_audit
from fqa_analysis.data import FeedbackItem, Passage
from fqa_analysis.errors import DataError


def _items() -> list[FeedbackItem]:
    """Two items per majority rating (item ids 0..7), three annotators each."""
    items = []
    for k, rating in enumerate(LABELS * 2):
        other = "Bad" if rating != "Bad" else "Excellent"
        p = Passage("WHO", k, "https://x", f"title {k}", (), f"content {k}")
        items.append(
            FeedbackItem(
                "WHO", "test", k, f"question {k}?", p, (rating, rating, other), (f"a{k}", f"b{k}", f"c{k}")
            )
        )
    return items


def _explanations(items: list[FeedbackItem]) -> pd.DataFrame:
    rows = [
        {
            "explainer": e,
            "rating_source": source,
            "domain": it.domain,
            "item_id": it.item_id,
            "rating": it.ratings[0],
            "explanation": f"x{j} {source} {it.item_id}",
        }
        for it in items
        for j, e in enumerate(("template", "retrieval_same_rating", "generator"))
        for source in ("majority", "predicted")
    ]
    return pd.DataFrame(rows)


def _explain_rate(items: list[FeedbackItem]) -> pd.DataFrame:
    # seed 0 rates every item Excellent, seed 1 Bad
    return pd.DataFrame(
        [
            {
                "seed": s,
                "domain": it.domain,
                "item_id": it.item_id,
                "p_bad": 0.1 + 0.8 * s,
                "p_could_be_improved": 0.0,
                "p_acceptable": 0.0,
                "p_excellent": 0.9 - 0.8 * s,
                "explanation": f"ours seed {s} item {it.item_id}",
            }
            for it in items
            for s in (0, 1)
        ]
    )


def test_the_sample_holds_one_explanation_per_source_of_items_drawn_within_each_rating() -> None:
    items = _items()
    rows = audit_rows(items, _explanations(items), _explain_rate(items), AuditConfig(per_rating=1, seed=3))
    assert len(rows) == 4 * len(SOURCES)
    assert rows["row_id"].tolist() == [f"r{k:03d}" for k in range(1, 21)]
    per_item = rows.groupby("item_id")
    assert (
        per_item["source"].apply(sorted) == pd.Series({i: sorted(SOURCES) for i in per_item.groups})
    ).all()
    # one item per majority rating, and the item's majority is its stratum
    strata = rows.drop_duplicates("item_id").set_index("item_id")["stratum"]
    assert sorted(strata) == sorted(LABELS)
    assert all(items[int(str(i))].ratings[0] == s for i, s in strata.items())
    # the explainers' majority rows only; explain-then-rate seed 0 with its argmax rating
    gen = rows[rows["source"] == "generator"]
    assert all(t.startswith("x2 majority") for t in gen["explanation"])
    ours = rows[rows["source"] == "explain_then_rate"]
    assert set(ours["rating"]) == {"Excellent"} and all(
        t.startswith("ours seed 0") for t in ours["explanation"]
    )
    # people: one of the item's own annotators, with that annotator's rating
    for r in rows[rows["source"] == "people"].itertuples():
        i = int(str(r.item_id))
        k = [f"a{i}", f"b{i}", f"c{i}"].index(str(r.explanation))
        it = items[i]
        assert r.rating == it.ratings[k]
    # seeded: the same draw twice, another seed another order
    again = audit_rows(items, _explanations(items), _explain_rate(items), AuditConfig(per_rating=1, seed=3))
    pd.testing.assert_frame_equal(rows, again)


def test_the_sample_refuses_a_rating_with_too_few_items_and_a_missing_explanation() -> None:
    items = _items()
    with pytest.raises(ValueError, match="only 2 items have majority rating 'Bad'; per_rating is 3"):
        audit_rows(items, _explanations(items), _explain_rate(items), AuditConfig(per_rating=3))
    explanations = _explanations(items)
    explanations = explanations[explanations["explainer"] != "generator"]
    with pytest.raises(ValueError, match=r"no majority-rating row for .*'generator'"):
        audit_rows(items, explanations, _explain_rate(items), AuditConfig(per_rating=1))


def _greedy(items: list[FeedbackItem]) -> pd.DataFrame:
    """The generator's greedy rows: its majority and predicted rows with texts of their own."""
    frame = _explanations(items)
    frame = frame[frame["explainer"] == "generator"].assign(explainer=GREEDY)
    return frame.assign(explanation=[f"greedy {i}" for i in frame["item_id"]])


def test_a_sheet_of_two_sources_reads_the_same_items_as_the_full_sheet() -> None:
    items = _items()
    full = audit_rows(items, _explanations(items), _explain_rate(items), AuditConfig(per_rating=1, seed=3))
    config = AuditConfig(per_rating=1, seed=3, sources=("generator", GREEDY))
    rows = audit_rows(items, _explanations(items), _explain_rate(items), config, greedy=_greedy(items))
    assert len(rows) == 8 and rows["row_id"].tolist() == [f"r{k:03d}" for k in range(1, 9)]
    assert set(rows["item_id"]) == set(full["item_id"])  # one seed, one draw of items
    assert rows.groupby("item_id")["source"].apply(sorted).tolist() == [["generator", GREEDY]] * 4
    greedy = rows[rows["source"] == GREEDY]
    assert greedy["explanation"].tolist() == [f"greedy {i}" for i in greedy["item_id"]]
    # the same rating as the generator's row: both explain the item's majority rating
    generator = rows[rows["source"] == "generator"]
    assert dict(zip(greedy["item_id"], greedy["rating"], strict=True)) == dict(
        zip(generator["item_id"], generator["rating"], strict=True)
    )
    # a later greedy text that differs from the key's is a changed row; without the file, every greedy row is
    later = _greedy(items)
    first = int(str(greedy["item_id"].iloc[0]))
    later.loc[later["item_id"] == first, "explanation"] = "another text"
    assert changed_rows(rows, _explanations(items), _explain_rate(items), greedy=later) == [
        greedy["row_id"].iloc[0]
    ]
    assert changed_rows(rows, _explanations(items), _explain_rate(items)) == sorted(greedy["row_id"])
    with pytest.raises(ValueError, match="needs the greedy explanations"):
        audit_rows(items, _explanations(items), _explain_rate(items), config)
    with pytest.raises(ValueError, match=r"explanation_greedy.parquet has no majority-rating row"):
        audit_rows(items, _explanations(items), _explain_rate(items), config, greedy=_greedy(items).iloc[:0])
    for bad in (("generator", "generator"), ("oracle",), ()):
        with pytest.raises(ValueError, match="at most once, at least one"):
            AuditConfig(sources=bad)


def test_the_sheet_names_no_source() -> None:
    items = _items()
    rows = audit_rows(items, _explanations(items), _explain_rate(items), AuditConfig(per_rating=1))
    sheet = sheet_markdown(rows)
    assert sheet.count("## Item ") == 4 and sheet.count("- `r") == 20
    for source in SOURCES:
        assert source not in sheet
    # every explanation appears under its own item's question
    block = sheet.split("## Item ")[1]
    item = rows.set_index("row_id").loc[block.split("`")[1], "item_id"]
    assert f"question {item}?" in block


def _key() -> list[str]:
    return ["r001", "r002", "r003"]


def _folder(tmp_path: Path, judges: dict[str, str]) -> Path:
    """A results folder with a three-row key and the given judges' CSV texts."""
    folder = tmp_path / "explanation_audit"
    folder.mkdir()
    key = "row_id,stratum,domain,item_id,source,rating,explanation\n" + "".join(
        f"{r},Bad,WHO,{k},people,Bad,no.\n" for k, r in enumerate(_key())
    )
    (folder / "key.csv").write_text(key)
    for name, text in judges.items():
        (folder / f"judge_{name}.csv").write_text(text)
    return tmp_path


HEADER = "row_id,fluent,supports,accurate,specific"


def test_load_audit_takes_every_row_once_in_the_keys_order(tmp_path: Path) -> None:
    text = f'{HEADER},note\nr002,1,2,0,1,"false, names a visa"\nr001,2,2,2,0,\nr003,0,0,1,1,\n'
    key, judges = load_audit(_folder(tmp_path, {"b": text, "a": text}))
    assert list(judges) == ["a", "b"] and key["item_id"].tolist() == [0, 1, 2]
    frame = judges["a"]
    assert frame["row_id"].tolist() == _key()  # the key's order, not the file's
    assert list(frame.set_index("row_id").loc["r002"]) == [1, 2, 0, 1, "false, names a visa"]
    assert frame.set_index("row_id").loc["r001", "note"] == ""


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("row_id,fluent,supports,accurate\nr001,2,2,2\n", r"header: missing column\(s\) \['specific'\]"),
        (
            f"{HEADER}\nr001,2,2,2,0\nr002,2,3,2,0\nr003,2,2,2,1\n",
            r"line 3 \(row_id 'r002'\): supports is '3', not one of \[0, 1, 2\]",
        ),
        (
            f"{HEADER}\nr001,2,2,2,0\nr001,2,2,2,0\nr003,2,2,2,1\n",
            r"line 3 \(row_id 'r001'\): row id labelled twice(.|\n)*"
            r"1 row id\(s\) of the key not labelled: r002",
        ),
        (f"{HEADER}\nr009,2,2,2,0\n", r"line 2 \(row_id 'r009'\): row id not in the key"),
        ("", r"header: missing column"),
    ],
)
def test_a_judges_file_with_a_problem_is_named_with_its_line_and_fix(
    tmp_path: Path, text: str, message: str
) -> None:
    results = _folder(tmp_path, {"a": text})
    with pytest.raises(DataError, match=message) as err:
        load_audit(results)
    assert "judge_a.csv" in str(err.value) and "Fix:" in str(err.value)


def test_load_audit_without_judges_or_key(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"no judge's labels"):
        load_audit(_folder(tmp_path, {}))
    (tmp_path / "explanation_audit" / "key.csv").unlink()
    with pytest.raises(DataError, match=r"key.csv, \(whole file\): no such file.*tools/audit_sheet.py"):
        load_audit(tmp_path)


def test_judgement_frame_reads_records_without_a_file() -> None:
    records = [{"row_id": "r1", "fluent": "2", "supports": "1", "accurate": "0", "specific": "1"}]
    frame = judgement_frame(records, Path("j.csv"), ["r1"])
    assert frame.to_dict("records") == [
        {"row_id": "r1", "fluent": 2, "supports": 1, "accurate": 0, "specific": 1, "note": ""}
    ]


def test_outcomes_average_the_judges_on_a_zero_to_one_scale() -> None:
    key = pd.DataFrame(
        {"row_id": ["r1", "r2"], "stratum": "Bad", "domain": "WHO", "item_id": [0, 1], "source": "people"}
    )
    a = pd.DataFrame(
        {"row_id": ["r1", "r2"], "fluent": [2, 0], "supports": [1, 1], "accurate": [2, 2], "specific": [1, 0]}
    )
    b = pd.DataFrame(
        {"row_id": ["r2", "r1"], "fluent": [1, 2], "supports": [1, 0], "accurate": [0, 2], "specific": [1, 1]}
    )
    out = audit_outcomes(key, {"a": a, "b": b}).set_index(["dimension", "item_id"])["score"]
    # r2's fluent: (0 + 1) / 2 judges / 2 (the highest label) = 0.25; r1's supports (1 + 0) / 2 / 2
    assert out[("fluent", 1)] == 0.25 and out[("supports", 0)] == 0.25
    assert out[("accurate", 1)] == 0.5 and out[("specific", 1)] == 0.5 and out[("specific", 0)] == 1.0
    assert sorted(out.index.get_level_values(0).unique()) == sorted(DIMENSIONS)


def test_kappa_and_agreement_by_hand() -> None:
    # observed 5/6; judge x: 0 x3, 1 x3; judge y: 0 x2, 1 x4 -> chance (3*2 + 3*4)/36 = 0.5;
    # kappa (5/6 - 1/2) / (1/2) = 2/3
    assert cohen_kappa([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 1, 1]) == pytest.approx(2 / 3)
    assert cohen_kappa([1, 1], [1, 1]) != cohen_kappa([1, 1], [1, 1])  # nan: no chance to disagree
    a = pd.DataFrame(
        {"row_id": ["r1", "r2"], "fluent": [2, 1], "supports": [2, 2], "accurate": [0, 2], "specific": [1, 0]}
    )
    b = pd.DataFrame(
        {"row_id": ["r2", "r1"], "fluent": [1, 2], "supports": [2, 1], "accurate": [2, 0], "specific": [1, 1]}
    )
    table = agreement(a, b)
    assert table.loc["fluent", "same"] == 1.0 and table.loc["fluent", "kappa"] == 1.0
    assert table.loc["supports", "same"] == 0.5 and table.loc["specific", "same"] == 0.5


def test_has_audit_and_who_the_judges_are(tmp_path: Path) -> None:
    assert not has_audit(tmp_path)  # a rerun's own results folder: no audit yet
    text = f"{HEADER}\nr001,2,2,2,0\nr002,2,2,2,0\nr003,2,2,2,1\n"
    results = _folder(tmp_path, {"a": text, "b": text})
    assert has_audit(results)
    who = results / "explanation_audit" / "judges.json"
    with pytest.raises(DataError, match=r"judges.json, \(whole file\): no such file"):
        audit_judges(results)
    who.write_text('{"a": "a person"}')
    with pytest.raises(DataError, match=r"judge\(s\) \['b'\]: labels without a description"):
        audit_judges(results)
    who.write_text('{"a": "a person", "b": ""}')
    with pytest.raises(DataError, match="not an object of non-empty strings"):
        audit_judges(results)
    who.write_text('{"a": "a person", "b": "another person"}')
    assert audit_judges(results) == {"a": "a person", "b": "another person"}
    # another sheet lives in a folder of its own, read by name; the main audit is not it
    assert not has_audit(results, "explanation_audit_decoding")
    other = results / "explanation_audit_decoding"
    shutil.copytree(results / "explanation_audit", other)
    for judge in ("a", "b"):
        (other / f"judge_{judge}.csv").rename(other / f"labels_{judge}.txt")
    assert not has_audit(results, "explanation_audit_decoding")  # a sheet no judge has labelled yet
    (other / "labels_a.txt").rename(other / "judge_a.csv")
    (other / "judges.json").write_text('{"a": "a person"}')
    key, judges = load_audit(results, "explanation_audit_decoding")
    assert len(key) == 3
    assert list(judges) == ["a"] and audit_judges(results, "explanation_audit_decoding") == {"a": "a person"}
    assert list(load_audit(results)[1]) == ["a", "b"]


def test_has_table(tmp_path: Path) -> None:
    assert not has_table(tmp_path, "explanation_greedy.parquet")
    pd.DataFrame({"x": [1]}).to_parquet(tmp_path / "explanation_greedy.parquet")
    assert has_table(tmp_path, "explanation_greedy.parquet")
    assert not has_table(tmp_path, ".")  # a folder is not a table

"""Read the committed artifacts under ``results/`` (validated; no model needed).

Example:
    >>> from pathlib import Path
    >>> candidates = load_candidates(Path("results"))  # doctest: +SKIP
"""

from __future__ import annotations

import csv
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from fqa_analysis.core.audit import judgement_frame
from fqa_analysis.core.candidates import validate_candidates
from fqa_analysis.errors import DataError, DataProblem

__all__ = [
    "AUDIT_FOLDER",
    "FACTOR_FOLDER",
    "LATER_SETTINGS",
    "RECIPE_SETTINGS",
    "RELEVANCE_PER_SEED_FOLDER",
    "RELEVANCE_SEEDS_FOLDER",
    "RERANK_RUN_FIELDS",
    "ROW_ORDER",
    "TABLE_COMMANDS",
    "audit_judges",
    "comparable_config",
    "complete_groups",
    "counted_seconds",
    "dirty_commits",
    "factor_folders",
    "has_audit",
    "has_table",
    "lever_step_name",
    "load_audit",
    "load_candidates",
    "load_manifest",
    "load_relevance_recipes",
    "load_stage",
    "load_table",
    "missing_column_note",
    "missing_runs_note",
    "relevance_model_seconds",
    "relevance_recipes",
    "relevance_seed_folder",
    "rerankers_current",
    "results_dir",
    "runs_by_kind",
    "sorted_rows",
    "stage_cost",
    "stage_recipe",
    "total_cost",
]


FIX = "run `fqa run` to produce it, or check out the committed results/ folder"


#: The command that writes each results table (named in the error when a folder lacks one).
TABLE_COMMANDS: dict[str, str] = {
    "candidates.parquet": "fqa run rqa",
    "rqa_ranks.parquet": "fqa run rqa",
    "rqa_temperatures.parquet": "fqa run rqa",
    "relevance_recipes.parquet": "fqa run relevance",
    "rating_predictions.parquet": "fqa run rerank",
    "explanations.parquet": "fqa run explain",
    "explanation_humans.parquet": "fqa run explain",
    "explanation_greedy.parquet": "fqa run explain",
    "explanations_top1.parquet": "fqa run explain",
    "explanation_levers.parquet": "fqa run explain",
    "deep_candidates.parquet": "fqa run beyond",
    "feedback_experiments.parquet": "fqa run beyond",
    "feedback_experiment_ratings.parquet": "fqa run beyond",
    "selection_predictions.parquet": "fqa run beyond",
    "explain_rate_candidates.parquet": "fqa run explain_rate",
    "explain_rate_predictions.parquet": "fqa run explain_rate",
    "explain_rate_paper_candidates.parquet": "fqa run explain_rate --explain-rate-form paper",
    "explain_rate_paper_predictions.parquet": "fqa run explain_rate --explain-rate-form paper",
}


def load_table(results_dir: Path, name: str) -> pd.DataFrame:
    """Read ``results_dir/name`` (Parquet) in one fixed row order; a clear error if missing or unreadable.

    The rows come back sorted by every column, left to right (:func:`sorted_rows`), so that what a
    chapter computes from a table never depends on the order a stage happened to write its rows in
    (a tie in ``value_counts``, the first row of a group): the same folder gives the same pages on every
    machine, and so does a copy whose rows were shuffled (``tools/shuffled_results.py``, which
    ``make nbval`` executes the book against).
    """
    path = results_dir / name
    command = TABLE_COMMANDS.get(Path(name).name)
    fix = (
        f"run `{command} --out {path.parent}`, or check out the committed results/ folder" if command else FIX
    )
    if not path.exists():
        raise DataError(DataProblem(path, "(whole file)", "the results file does not exist", fix))
    try:
        frame = pd.read_parquet(path)
    except (OSError, ValueError) as exc:
        raise DataError(
            DataProblem(path, "(whole file)", f"not a readable Parquet file ({exc})", fix)
        ) from None
    return sorted_rows(frame)


#: Columns whose values sort in the order the chapters present them (baselines first), not
#: alphabetically; values not listed follow, alphabetically. Checked against the stages' own lists
#: by ``tests/test_determinism.py``.
ROW_ORDER: dict[str, tuple[str, ...]] = {
    # the RQA systems and the rerankers as the stages declare them: the RQA alone, the relevance
    # model, the feedback rerankers, then the ones trained from MiniLM
    "rqa": ("bm25", "minilm", "minilm_ft", "hybrid"),
    "reranker": (
        "none",
        "vanilla",
        "feedback_kl",
        "feedback_ce_annotator",
        "feedback_ce_majority",
        "combined",
        "feedback_kl_scratch",
        "feedback_ce_annotator_scratch",
        "feedback_ce_majority_scratch",
    ),
    "explainer": (
        "template",
        "retrieval_same_rating",
        "retrieval_any_rating",
        "generator",
        "generator_greedy",
    ),
    # the baseline recipe first, then one change at a time (the relevance stage's RECIPES)
    "recipe": (
        "pointwise_1neg_feedback",
        "listwise_1neg_feedback",
        "listwise_3neg_feedback",
        "listwise_3neg_all",
        "listwise_3neg_all_bm25",
        "listwise_3neg_all_2ep",
    ),
}


def _sort_key(column: pd.Series) -> pd.Series:
    declared = ROW_ORDER.get(str(column.name))
    if declared is None:
        return column
    rank = {v: i for i, v in enumerate(declared)}
    others = sorted({v for v in column.dropna().unique() if v not in rank}, key=str)
    rank.update({v: len(declared) + i for i, v in enumerate(others)})
    return column.map(rank)


def sorted_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``frame`` sorted by every column, left to right (stable; missing values last).

    Values sort naturally, except in the columns of :data:`ROW_ORDER`. Two tables that hold the
    same rows in any order come out identical, index included.

    Example:
        >>> a = pd.DataFrame({"k": ["b", "a", "a"], "v": [1.0, 2.0, None]})
        >>> sorted_rows(a).to_dict("list")
        {'k': ['a', 'a', 'b'], 'v': [2.0, nan, 1.0]}
        >>> sorted_rows(a.iloc[::-1]).equals(sorted_rows(a))
        True
        >>> sorted_rows(pd.DataFrame({"explainer": ["generator", "template"]}))["explainer"].tolist()
        ['template', 'generator']
    """
    if frame.empty or not len(frame.columns):
        return frame.reset_index(drop=True)
    return frame.sort_values(
        list(frame.columns), kind="stable", na_position="last", ignore_index=True, key=_sort_key
    )


def has_table(results_dir: Path, name: str) -> bool:
    """Whether ``results_dir`` holds the results file ``name`` (a folder from an older run may not).

    For a file the book can do without, so that a chapter says what it lacks instead of failing;
    :func:`load_table` reads it.
    """
    return (results_dir / name).is_file()


def load_candidates(results_dir: Path) -> pd.DataFrame:
    """``candidates.parquet``, checked against the contract of ARCHITECTURE.md#results-contract."""
    frame = load_table(results_dir, "candidates.parquet")
    validate_candidates(frame, results_dir / "candidates.parquet")
    return frame


#: Columns of ``relevance_recipes.parquet`` (``fqa run relevance``).
RECIPE_COLUMNS: tuple[str, ...] = (
    "recipe",
    "seed",
    "domain",
    "question_id",
    "passage_id",
    "rank",
    "is_gold",
    "p_bad",
    "p_could_be_improved",
    "p_acceptable",
    "p_excellent",
)


def load_relevance_recipes(results_dir: Path) -> pd.DataFrame:
    """``relevance_recipes.parquet``: the relevance model's recipes on held-out QA-train questions.

    Raises:
        DataError: The file is missing or unreadable, or lacks a column (names it and the command).
    """
    path = results_dir / "relevance_recipes.parquet"
    frame = load_table(results_dir, path.name)
    missing = [c for c in RECIPE_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(
            DataProblem(
                path,
                "(columns)",
                f"missing column(s) {missing}",
                f"rerun `fqa run relevance --out {results_dir}` with this version of the package",
            )
        )
    return frame


#: The relevance model's settings a recipe sets, each under its one name (the rerank stage's config
#: field and ``fqa run`` option), with the short name the relevance stage recorded before.
RECIPE_SETTINGS: dict[str, str] = {
    "relevance_loss": "loss",
    "pseudo_negatives": "negatives",
    "relevance_domains": "domains",
    "negative_source": "source",
    "relevance_epochs": "epochs",
}


def relevance_recipes(stage: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The relevance stage's recipe records (its manifest entry's ``recipes``), settings under one name.

    Example:
        >>> relevance_recipes({"recipes": {"r": {"loss": "listwise", "fit_pairs": 4}}})
        {'r': {'relevance_loss': 'listwise', 'fit_pairs': 4}}
    """
    short = {old: new for new, old in RECIPE_SETTINGS.items()}
    return {
        name: {short.get(k, k): v for k, v in record.items()}
        for name, record in stage.get("recipes", {}).items()
    }


def stage_recipe(recipes: dict[str, dict[str, Any]], rerank_config: dict[str, Any]) -> str | None:
    """The recipe (of :func:`relevance_recipes`) whose settings are the rerank stage's configuration's.

    Example:
        >>> config = {"relevance_loss": "listwise", "pseudo_negatives": 3, "relevance_domains": ["A"],
        ...     "negative_source": "minilm", "variant_epochs": {"vanilla": 1}}
        >>> recipe = {"relevance_loss": "listwise", "pseudo_negatives": 3, "relevance_domains": ["A"],
        ...     "negative_source": "minilm", "relevance_epochs": 1}
        >>> stage_recipe({"a": recipe, "b": {**recipe, "pseudo_negatives": 1}}, config)
        'a'
    """
    wanted = {k: rerank_config.get(k) for k in RECIPE_SETTINGS}
    wanted["relevance_epochs"] = rerank_config.get("variant_epochs", {}).get("vanilla")
    return next((name for name, r in recipes.items() if all(r.get(k) == v for k, v in wanted.items())), None)


#: The key's columns (``tools/audit_sheet.py`` writes them).
AUDIT_KEY_COLUMNS = ("row_id", "stratum", "domain", "item_id", "source", "rating", "explanation")


def _csv_records(path: Path, fix: str) -> list[dict[str, str]]:
    """The rows of a UTF-8 CSV file with a header, as dicts (a clear error if unreadable)."""
    if not path.is_file():
        raise DataError(DataProblem(path, "(whole file)", "no such file", fix))
    try:
        with path.open(newline="", encoding="utf-8") as f:
            return list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise DataError(
            DataProblem(
                path,
                "(whole file)",
                f"cannot be read as CSV ({err})",
                "write it as UTF-8 CSV with a header row",
            )
        ) from None


def _judge_files(folder: Path) -> dict[str, Path]:
    """Every judge's labels in an audit folder: name -> ``judge_<name>.csv``, in name order."""
    return {p.stem.removeprefix("judge_"): p for p in sorted(folder.glob("judge_*.csv"))}


#: The main audit's folder in a results folder (every source against people); others hold sheets
#: of their own (``explanation_audit_decoding``: the generator's greedy against its adopted decoding).
AUDIT_FOLDER = "explanation_audit"


def audit_judges(results_dir: Path, folder_name: str = AUDIT_FOLDER) -> dict[str, str]:
    """Who each judge of an explanation audit is: ``<folder_name>/judges.json`` (name -> words).

    Raises:
        DataError: The file is missing, not a JSON object of strings, or does not describe a judge
            whose labels are there (``judge_<name>.csv``).
    """
    folder = results_dir / folder_name
    path = folder / "judges.json"
    fix = 'write {"<name>": "who the judge is", ...} for every judge_<name>.csv'
    if not path.is_file():
        raise DataError(DataProblem(path, "(whole file)", "no such file", fix))
    try:
        who = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DataError(DataProblem(path, "(whole file)", f"not readable JSON ({err})", fix)) from None
    if not isinstance(who, dict) or not all(isinstance(v, str) and v.strip() for v in who.values()):
        raise DataError(DataProblem(path, "(whole file)", "not an object of non-empty strings", fix))
    missing = [name for name in _judge_files(folder) if name not in who]
    if missing:
        raise DataError(DataProblem(path, f"judge(s) {missing}", "labels without a description", fix))
    return {str(k): str(v) for k, v in who.items()}


def has_audit(results_dir: Path, folder_name: str = AUDIT_FOLDER) -> bool:
    """Whether ``results_dir`` holds a labelled explanation audit (key and a judge's labels).

    That is ``<folder_name>/key.csv`` and at least one ``judge_<name>.csv`` beside it. A results
    folder of one's own rerun has none until ``tools/audit_sheet.py`` draws a sheet and a judge
    labels it; the chapters then say so instead of showing labels of other explanations. A sheet
    drawn but not yet labelled is not an audit: it is committed before any label, so that the
    draw is seen to come first, and the chapters must not fail on it.
    """
    folder = results_dir / folder_name
    return (folder / "key.csv").is_file() and bool(_judge_files(folder))


def load_audit(
    results_dir: Path, folder_name: str = AUDIT_FOLDER
) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    """An explanation audit (:mod:`fqa_analysis.core.audit`): its key and every judge's labels.

    Reads ``<folder_name>/key.csv`` and each ``<folder_name>/judge_<name>.csv``, every one
    checked against the key (:func:`~fqa_analysis.core.audit.judgement_frame`).

    Returns:
        ``(key, {name: labels})``, judges in the order of their names.

    Raises:
        DataError: A missing or unreadable key, a key without its columns, no judge's file, or a
            judge's file with a problem (each named with its file, line and fix).
    """
    folder = results_dir / folder_name
    records = _csv_records(folder / "key.csv", "write the sheet and key with `python tools/audit_sheet.py`")
    missing = [c for c in AUDIT_KEY_COLUMNS if not records or c not in records[0]]
    if missing:
        raise DataError(
            DataProblem(
                folder / "key.csv",
                "header",
                f"missing column(s) {missing}",
                "rewrite it with tools/audit_sheet.py",
            )
        )
    key = pd.DataFrame(records)
    key["item_id"] = key["item_id"].astype(int)
    paths = _judge_files(folder)
    if not paths:
        raise DataError(
            DataProblem(
                folder,
                "(folder)",
                "no judge's labels (judge_<name>.csv)",
                "have the sheet labelled as rubric.md says and save each judge's CSV there",
            )
        )
    fix = "write the judge's labels as a UTF-8 CSV: row_id, fluent, supports, accurate, specific"
    judges = {
        name: judgement_frame(_csv_records(path, fix), path, key["row_id"].tolist())
        for name, path in paths.items()
    }
    return key, judges


def load_manifest(results_dir: Path) -> dict[str, Any]:
    """``manifest.json`` as a dict."""
    path = results_dir / "manifest.json"
    if not path.exists():
        raise DataError(DataProblem(path, "(whole file)", "the manifest does not exist", FIX))
    manifest: dict[str, Any] = json.loads(path.read_text())
    return manifest


def load_stage(results_dir: Path, stage: str) -> dict[str, Any]:
    """The manifest entry of one pipeline stage (config, timings, ...).

    Raises:
        DataError: The manifest is missing, or holds no entry of ``stage`` (names the command
            that writes it).
    """
    manifest = load_manifest(results_dir)
    stages = manifest.get("stages", {})
    if stage not in stages:
        raise DataError(
            DataProblem(
                results_dir / "manifest.json",
                f"stage {stage!r}",
                f"this results folder has no {stage!r} stage (it has: {sorted(stages) or 'none'})",
                f"run `fqa run {stage} --out {results_dir}`",
            )
        )
    entry: dict[str, Any] = stages[stage]
    return entry


#: Subfolder of a results folder with one rerank-stage folder per factor run (one setting varied).
FACTOR_FOLDER = "factors"


def factor_folders(results_dir: Path) -> dict[str, Path]:
    """The factor runs under ``results_dir/factors/``, by folder name (sorted), that hold a rerank entry.

    A folder whose run has not written its manifest yet (only the RQA rows it was started with,
    ``tools/factor_folder.py``) is left out.

    Example:
        >>> factor_folders(Path("/nonexistent"))
        {}
    """
    root = results_dir / FACTOR_FOLDER
    if not root.is_dir():
        return {}
    return {folder.name: folder for folder in sorted(root.iterdir()) if _has_rerank_entry(folder)}


def _has_rerank_entry(folder: Path) -> bool:
    """Whether a rerank stage has written ``folder`` (its manifest holds the entry)."""
    return (folder / "manifest.json").is_file() and "rerank" in load_manifest(folder).get("stages", {})


#: Subfolder of a results folder with the relevance model (``vanilla``) trained with other seeds
#: than the book's one (seed 0), rescoring the factor runs' RQA systems (``tools/factor_folder.py``).
RELEVANCE_SEEDS_FOLDER = "relevance_seeds"


#: Subfolder of a results folder with the warm variants' other seeds trained under
#: ``--relevance-per-seed``: seed k of ``feedback_kl`` and ``combined`` continued from the relevance
#: model of seed k (beside ``vanilla`` seed k), where the book's continue from seed 0.
RELEVANCE_PER_SEED_FOLDER = "relevance_per_seed"


def relevance_seed_folder(results_dir: Path, name: str = RELEVANCE_SEEDS_FOLDER) -> Path | None:
    """``results_dir/<name>`` when a rerank stage has written it (its manifest has the entry).

    ``name``: :data:`RELEVANCE_SEEDS_FOLDER` (the relevance model's other seeds) or
    :data:`RELEVANCE_PER_SEED_FOLDER` (warm variants started from their own seed's relevance model).

    Example:
        >>> relevance_seed_folder(Path("/nonexistent")) is None
        True
    """
    folder = results_dir / name
    return folder if _has_rerank_entry(folder) else None


def missing_column_note(column: str, folder: Path, reference: Path | None) -> str | None:
    """Which table of ``folder`` lacks ``column`` and the command that writes it (None if none does).

    A table lacks the column where its counterpart in ``reference`` (the project's committed
    ``results/``) holds it.

    Example:
        >>> import tempfile
        >>> mine, theirs = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp())
        >>> pd.DataFrame({"a": [1]}).to_parquet(mine / "rqa_ranks.parquet")
        >>> pd.DataFrame({"a": [1], "rank": [2]}).to_parquet(theirs / "rqa_ranks.parquet")
        >>> missing_column_note("rank", mine, theirs)  # doctest: +ELLIPSIS
        "column 'rank' is missing from .../rqa_ranks.parquet: `fqa run rqa --out ...` writes it"
    """
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    for name, command in sorted(TABLE_COMMANDS.items()):
        own = folder / name
        if not own.is_file() or column in pq.read_schema(own).names:
            continue
        other = reference / name if reference is not None else None
        if other is not None and other.is_file() and column in pq.read_schema(other).names:
            return f"column {column!r} is missing from {own}: `{command} --out {folder}` writes it"
    return None


def _one_line(shell: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None) -> list[str]:
    """IPython's handler of an error in a chapter: one line where one line says it.

    A :class:`DataError` shows as its message alone, a ``KeyError`` of a column a results table lacks
    as that table and the command that writes it, any other error as IPython shows it.
    """
    line = None
    if issubclass(etype, DataError):
        line = f"{etype.__name__}: {value}"
    elif issubclass(etype, KeyError) and value.args and isinstance(value.args[0], str):
        try:
            note = missing_column_note(value.args[0], results_dir(), _project_results())
        except (DataError, OSError, ValueError):
            note = None
        line = f"DataError: {note}" if note else None
    if line is None:
        stb: list[str] = shell.InteractiveTB.structured_traceback(etype, value, tb, tb_offset=tb_offset)
        return stb
    print(line, file=sys.stderr)
    return [line]


def _project_results() -> Path | None:
    """The project's committed ``results/``, if any.

    Found from the working directory upwards, else beside the package in a source checkout.
    """
    here = Path.cwd().resolve()
    for folder in (here, *here.parents, Path(__file__).resolve().parents[2]):
        if (folder / "_toc.yml").exists() and (folder / "results").is_dir():
            return folder / "results"
    return None


def results_dir() -> Path:
    """``$FQA_RESULTS_DIR``, else the ``results/`` folder of the project (found from the cwd upwards).

    Every chapter finds its folder here first, so in a notebook this also makes a :class:`DataError`
    (a results file or stage the folder lacks, with the file, the item and the command that writes
    it) show as that one line instead of a long traceback whose last line is the useful one.
    """
    try:
        shell = get_ipython()  # type: ignore[name-defined]  # a builtin inside IPython only
    except NameError:
        shell = None
    if shell is not None:
        shell.set_custom_exc((DataError, KeyError), _one_line)
    env = os.environ.get("FQA_RESULTS_DIR")
    if env:
        return Path(env)
    project = _project_results()
    if project is not None:
        return project
    here = Path.cwd().resolve()
    raise DataError(
        DataProblem(here, "(results folder)", "no results/ folder above the working directory", FIX)
    )


def counted_seconds(stage: dict[str, Any]) -> dict[str, float]:
    """Per step, the seconds that computing the stage once costs (what :func:`stage_cost` sums).

    A step's ``compute_s`` (carried over from the run that computed a cached step; ``wall_s`` where
    a manifest predates it), except: a ``<run>/train`` step whose run has a training history counts
    that model's own epochs (``wall_s``: training and its selection pass), so a step that also
    trained another model (the relevance model, when the cache lacked it) does not count that one
    again; the relevance stage's recipe that is the rerank stage's relevance model (the same model,
    trained once for both) counts nothing there, the rerank stage counts it as ``vanilla``; a
    ``relevance_model`` step counts nothing where the stage records the relevance
    model's own run (``vanilla/seed0``), which counts it, or in an explain_rate or beyond stage,
    which load the rerank stage's model; and a beyond ``<run>/model`` step (a rerank-stage model,
    retrained only where the cache lacks it) counts nothing: the rerank stage counts it; an
    explain_rate ``levers/<setting>/train`` step counts that lever's recorded ``train_s``.

    Example:
        >>> stage = {"timings": {"a/train": {"wall_s": 1.0, "compute_s": 900.0},
        ...                      "relevance_model": {"wall_s": 600.0},
        ...                      "vanilla/seed0/train": {"wall_s": 610.0}, "a/score": {"wall_s": 30.0}},
        ...          "histories": {"a": {"epochs": [{"wall_s": 100.0}, {"wall_s": 80.0}]},
        ...                        "vanilla/seed0": {"epochs": [{"wall_s": 600.0}]}}}
        >>> counted_seconds(stage)
        {'a/train': 180.0, 'relevance_model': 0.0, 'vanilla/seed0/train': 600.0, 'a/score': 30.0}
        >>> counted_seconds({"stage": "explain_rate", "timings": {"relevance_model": {"wall_s": 900.0}}})
        {'relevance_model': 0.0}
        >>> rerank = {"relevance_loss": "listwise", "pseudo_negatives": 3, "relevance_domains": ["A"],
        ...     "negative_source": "minilm", "variant_epochs": {"vanilla": 1}}
        >>> recipe = {"loss": "listwise", "negatives": 3, "domains": ["A"], "source": "minilm", "epochs": 1}
        >>> counted_seconds({"stage": "relevance", "config": {"rerank": rerank}, "recipes": {"r": recipe},
        ...     "timings": {"r/train": {"wall_s": 3500.0}, "r/score": {"wall_s": 10.0}}})
        {'r/train': 0.0, 'r/score': 10.0}
        >>> counted_seconds({"stage": "beyond", "timings": {"deep/combined/seed0/model": {"wall_s": 300.0},
        ...                                                  "deep/combined/seed0/score": {"wall_s": 60.0}}})
        {'deep/combined/seed0/model': 0.0, 'deep/combined/seed0/score': 60.0}
        >>> counted_seconds({"timings": {"levers/unlikelihood0_top_p0.9/train": {"wall_s": 0.4}},
        ...                  "levers": [{"weight": 0.0, "top_p": 0.9, "train_s": 795.7}]})
        {'levers/unlikelihood0_top_p0.9/train': 795.7}
    """
    histories = stage.get("histories", {})
    # the relevance stage's recipe that is the rerank stage's relevance model: one model (one cache
    # key), which the rerank stage counts as its `vanilla`
    shared_recipe = (
        stage_recipe(relevance_recipes(stage), stage.get("config", {}).get("rerank", {}))
        if stage.get("stage") == "relevance"
        else None
    )
    lever_train_s = {
        f"levers/{lever_step_name(row['weight'], row.get('top_p'))}/train": row.get("train_s")
        for row in stage.get("levers") or []
    }
    out = {}
    for step, record in stage["timings"].items():
        seconds = float(record.get("compute_s", record["wall_s"]))
        run = step.removesuffix("/train")
        epochs = histories.get(run, {}).get("epochs") if step.endswith("/train") else None
        if shared_recipe is not None and step == f"{shared_recipe}/train":
            seconds = 0.0
        elif epochs and all("wall_s" in e for e in epochs):
            seconds = round(sum(float(e["wall_s"]) for e in epochs), 2)
        elif lever_train_s.get(step) is not None:
            # an explain_rate lever's model (seed 0 with one setting) counts its own training
            seconds = round(float(lever_train_s[step]), 2)
        elif step == "relevance_model" and (
            "vanilla/seed0" in histories or str(stage.get("stage", "")).startswith(("explain_rate", "beyond"))
        ):
            # the rerank stage counts the relevance model (its `vanilla`); the others only load it
            seconds = 0.0
        elif stage.get("stage") == "beyond" and step.endswith("/model"):
            seconds = 0.0
        out[step] = seconds
    return out


def relevance_model_seconds(rerank_stage: dict[str, Any]) -> float:
    """The relevance model's compute (its training and scoring), as the rerank stage counts it.

    One model, counted once: the rerank stage's ``vanilla`` (seed 0), which the relevance, beyond and
    explain_rate stages load rather than count (:func:`counted_seconds`). 0 where the entry lacks it.

    Example:
        >>> relevance_model_seconds({"timings": {"vanilla/seed0/train": {"wall_s": 60.0},
        ...     "vanilla/seed0/score": {"wall_s": 6.0}, "combined/seed0/train": {"wall_s": 9.0}}})
        66.0
    """
    if not rerank_stage.get("timings"):
        return 0.0
    return sum(v for k, v in counted_seconds(rerank_stage).items() if k.startswith("vanilla/seed0/"))


def lever_step_name(weight: float, top_p: float | None) -> str:
    """An explain_rate lever's name in its stage's timings (``levers/<name>/train``).

    One format for the stage, which writes the step, and for :func:`counted_seconds`, which reads
    it back from the manifest's ``levers`` rows.

    Example:
        >>> lever_step_name(2.0, None), lever_step_name(0.0, 0.5)
        ('unlikelihood2', 'unlikelihood0_top_p0.5')
    """
    return f"unlikelihood{float(weight):g}" + ("" if top_p is None else f"_top_p{float(top_p):g}")


def stage_cost(stage: dict[str, Any]) -> tuple[float, float]:
    """What computing a stage once costs: minutes of compute and its peak memory in GiB.

    The minutes sum :func:`counted_seconds`; the peak is the largest ``compute_peak_rss_mb`` (else
    ``peak_rss_mb``) of any step.

    Example:
        >>> stage_cost({"timings": {"a": {"wall_s": 1.0, "compute_s": 90.0, "peak_rss_mb": 100.0,
        ...                                "compute_peak_rss_mb": 2048.0},
        ...                          "b": {"wall_s": 30.0, "peak_rss_mb": 512.0}}})
        (2.0, 2.0)
    """
    timings = stage["timings"].values()
    minutes = sum(counted_seconds(stage).values()) / 60
    peak_mb = max(float(t.get("compute_peak_rss_mb", t.get("peak_rss_mb", 0.0))) for t in timings)
    return round(minutes, 2), round(peak_mb / 1024, 2)


def total_cost(manifest: dict[str, Any]) -> tuple[dict[str, tuple[float, float]], float]:
    """Every recorded stage's :func:`stage_cost`, and the sum of their minutes.

    Example:
        >>> m = {"stages": {"a": {"timings": {"x": {"wall_s": 60.0}}},
        ...                 "b": {"timings": {"y": {"wall_s": 120.0}}}}}
        >>> total_cost(m)
        ({'a': (1.0, 0.0), 'b': (2.0, 0.0)}, 3.0)
    """
    costs = {name: stage_cost(entry) for name, entry in manifest["stages"].items() if entry.get("timings")}
    return costs, round(sum(m for m, _ in costs.values()), 2)


#: Settings of the rerank stage that only say which of its runs ran (variants, seeds, RQA systems
#: rescored): two records that differ only there describe the same rerankers.
RERANK_RUN_FIELDS: tuple[str, ...] = ("variants", "seeds", "score_rqa")


def _flat(record: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(record, dict) or not record:
        return {prefix: record}
    out: dict[str, Any] = {}
    for key, value in record.items():
        out.update(_flat(value, f"{prefix}{key}." if isinstance(value, dict) and value else f"{prefix}{key}"))
    return out


#: Settings added after stages recorded their configurations, with the value every earlier record
#: ran at: :func:`comparable_config` treats a setting at that value as absent, so a record written
#: before it existed still describes the same configuration.
LATER_SETTINGS: dict[str, Any] = {
    "warm_frozen_layers": 0,
    "relevance_per_seed": False,
    "encoder_layers": 6,
    "opening_weight": 0.0,
    "top_p_levers": [],
    "own_top_p": None,
}


def comparable_config(record: dict[str, Any], run_fields: tuple[str, ...] = ()) -> dict[str, Any]:
    """A config record flattened to ``dotted.key -> value``, without the settings that only name runs.

    A name in ``run_fields`` leaves out that key and everything under it (``rerank.seeds`` leaves
    out one nested setting). Two records describe the same configuration when these are equal.

    Example:
        >>> comparable_config({"model": {"lr": 1, "bf16": False}, "seeds": [0]}, ("seeds",))
        {'model.lr': 1, 'model.bf16': False}
        >>> comparable_config({"lr": 1, "warm_frozen_layers": 0}) == comparable_config({"lr": 1})
        True
    """
    flat = _flat(json.loads(json.dumps(record)))
    return {
        k: v
        for k, v in flat.items()
        if not any(k == f or k.startswith(f + ".") for f in run_fields)
        and not (k.rsplit(".", 1)[-1] in LATER_SETTINGS and v == LATER_SETTINGS[k.rsplit(".", 1)[-1]])
    }


def dirty_commits(*stages: dict[str, Any]) -> list[str]:
    """The commits among the stages' entries (and their runs') marked ``+dirty``: uncommitted code.

    A result computed from uncommitted code is not one the book shows: a chapter that finds any
    says so instead of showing the stage's rows.

    Example:
        >>> dirty_commits({"git_commit": "abc"}, {"git_commit": "def+dirty"})
        ['def+dirty']
        >>> dirty_commits({"git_commit": "abc", "run_commits": {"a/seed0": "0ff+dirty"}})
        ['0ff+dirty']
    """
    found = []
    for stage in stages:
        for commit in [stage.get("git_commit", ""), *stage.get("run_commits", {}).values()]:
            if str(commit).endswith("+dirty") and commit not in found:
                found.append(str(commit))
    return found


def complete_groups(stage: dict[str, Any], kind: str, current: bool) -> list[str]:
    """The groups of a stage's ``kind`` runs (``<kind>/<group>/seed<N>``) with every run present.

    A section made of independent groups (one reranker's rating temperatures do not change
    another's) is shown group by group: a group appears once all of its seeds are in, so a mean
    over seeds never silently averages fewer of them. None is complete where the stage's results
    cannot be shown at all (uncommitted code, or other rerankers: see :func:`missing_runs_note`).

    Args:
        stage: The stage's manifest entry (``run_commits``: runs present; ``planned``: still to run).
        kind: The first part of the run names (``selection``, ``deep``, ...).
        current: Whether the stage ran on the rerank stage's present rerankers.

    Returns:
        Group names in the order their runs were recorded.

    Example:
        >>> stage = {"run_commits": {"selection/combined/seed0": "c", "selection/kl/seed0": "c"},
        ...          "planned": ["selection/kl/seed1"]}
        >>> complete_groups(stage, "selection", True)
        ['combined']
        >>> complete_groups(stage, "selection", False), complete_groups(stage, "deep", True)
        ([], [])
    """
    if not current or dirty_commits(stage):
        return []
    parts = [run.split("/") for run in stage.get("run_commits", {})]
    waiting = {run.split("/")[1] for run in stage.get("planned", []) if run.startswith(f"{kind}/")}
    groups = dict.fromkeys(p[1] for p in parts if len(p) == 3 and p[0] == kind)
    return [g for g in groups if g not in waiting]


def runs_by_kind(stage: dict[str, Any]) -> dict[str, tuple[int, int]]:
    """Per kind of run (the first part of ``<kind>/<group>/seed<N>``): runs present, runs in all.

    Example:
        >>> stage = {"run_commits": {"deep/c/seed0": "x", "selection/c/seed0": "x"},
        ...          "planned": ["selection/c/seed1", "selection/k/seed0", "fraction/0.1/seed0"]}
        >>> runs_by_kind(stage)
        {'deep': (1, 1), 'selection': (1, 3), 'fraction': (0, 1)}
    """
    counts: dict[str, list[int]] = {}
    for present, runs in ((1, stage.get("run_commits", {})), (0, stage.get("planned", []))):
        for run in runs:
            kind = counts.setdefault(run.split("/")[0], [0, 0])
            kind[0] += present
            kind[1] += 1
    return {kind: (n, total) for kind, (n, total) in counts.items()}


def missing_runs_note(
    stage: dict[str, Any], kinds: Sequence[str], current: bool, shown: Sequence[str] = ()
) -> str | None:
    """Why a chapter section built on a stage's runs of ``kinds`` is not shown, or None when it can be.

    A section is shown only on all of its runs (a learning curve with a point missing would be
    misread), or, when its groups are independent, on the groups whose runs are all present
    (``shown``, from :func:`complete_groups`); the note names the runs still planned and the
    command that computes them.

    Args:
        stage: The stage's manifest entry (its ``planned`` list names the runs not yet present).
        kinds: Leading parts of the section's run names: a kind (``fraction``, ``deep``, ...) or a
            kind and its setting (``fraction/1``: that fraction's runs only).
        current: Whether the stage ran on the rerank stage's present rerankers
            (:func:`rerankers_current`).
        shown: The groups the section shows although runs are missing; the note then says
            "shown for ...".

    Example:
        >>> stage = {"stage": "beyond", "planned": ["deep/combined/seed1", "fraction/0.1/seed0"]}
        >>> note = missing_runs_note(stage, ["deep"], True)
        >>> note.split(";")[0]
        '*Not shown yet: 1 run of this section is still planned (deep/combined/seed1)'
        >>> note.split(";")[1]
        " `fqa run beyond --beyond-runs 'deep/*'` computes it.*"
        >>> missing_runs_note(stage, ["fraction/1", "deep"], True).split(";")[0]
        '*Not shown yet: 1 run of this section is still planned (deep/combined/seed1)'
        >>> missing_runs_note(stage, ["fraction"], True, shown=["0.5"]).split(":")[0]
        '*Shown for 0.5 (all of their runs present)'
        >>> missing_runs_note(stage, ["selection"], True) is None
        True
        >>> missing_runs_note({**stage, "git_commit": "ab+dirty"}, ["selection"], True)[:42]
        '*Not shown: runs of `fqa run beyond` in `r'
    """
    name = stage.get("stage", "the stage")
    dirty = dirty_commits(stage)
    if dirty:
        return (
            f"*Not shown: runs of `fqa run {name}` in `results/` were computed from uncommitted code "
            f"(manifest commit `{dirty[0]}`); this section returns when they are rerun at a clean commit.*"
        )
    if not current:
        return (
            f"*Not shown: `fqa run {name}` last ran on other rerankers than the rerank stage's present ones "
            "(compare the two stages' configurations in `results/manifest.json`); this section returns "
            "when the stage is rerun on the current rerankers.*"
        )
    left = [r for r in stage.get("planned", []) if any(r.startswith(f"{k}/") for k in kinds)]
    if not left:
        return None
    listed = ", ".join(left[:4]) + (", ..." if len(left) > 4 else "")
    patterns = ",".join(f"{k}/*" for k in kinds if any(r.startswith(f"{k}/") for r in left))
    runs, verb, them = ("run", "is", "it") if len(left) == 1 else ("runs", "are", "them")
    opening = f"Shown for {', '.join(shown)} (all of their runs present)" if shown else "Not shown yet"
    return (
        f"*{opening}: {len(left)} {runs} of this section {verb} still planned ({listed}); "
        f"`fqa run {name} --beyond-runs '{patterns}'` computes {them}.*"
    )


def rerankers_current(recorded: dict[str, Any] | None, rerank_stage: dict[str, Any]) -> bool:
    """Whether a stage built on the rerankers was computed on the rerank stage's present configuration.

    Args:
        recorded: The rerank settings the other stage recorded in its manifest entry (e.g.
            ``beyond``'s ``config.rerank``); None where it recorded none.
        rerank_stage: The rerank stage's manifest entry.

    Returns:
        True when both describe the same rerankers (up to which variants, seeds and RQA systems
        ran); a chapter that joins the two stages' rows computes only then.

    Example:
        >>> rerank = {"config": {"model": {"lr": 1}, "seeds": [0], "variants": {"a": {}}}}
        >>> rerankers_current({"model": {"lr": 1}, "seeds": [0, 1, 2]}, rerank)
        True
        >>> rerankers_current({"model": {"lr": 2}}, rerank), rerankers_current(None, rerank)
        (False, False)
    """
    if not recorded:
        return False
    here = comparable_config(rerank_stage.get("config", {}), RERANK_RUN_FIELDS)
    return comparable_config(recorded, RERANK_RUN_FIELDS) == here

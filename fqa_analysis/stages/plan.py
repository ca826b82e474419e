"""What a stage would compute, before it computes anything: ``fqa run STAGE --plan``.

A stage's work is a list of *runs* (an RQA system, a relevance recipe, ``variant/seedN``, a beyond
run, ``seedN`` of explain-then-rate; the explain stage is one run). Each run is

* **in the results folder** when ``--out`` holds the stage under the same configuration (the
  stage's ``RUN_FIELDS`` aside) and the run's steps are recorded there;
* **cached** when a run of the stage under the same configuration and the same data finished it
  with this cache (every stage records the runs it finished in the cache's ``finished_runs.json``,
  :func:`remember_finished`), so rerunning reads it back;
* **to compute** otherwise.

Its time is estimated from recorded timings, float32 on 2 CPU cores, counted as the book counts a
stage's cost (:func:`~fqa_analysis.core.results.counted_seconds`: each model's own training, the
relevance model once, in the rerank stage): the ``--out`` folder's manifest where it holds the stage,
else the committed ``results/manifest.json``. A run never recorded takes the mean of its siblings
(the same run under another seed); steps shared by the stage's runs count once when anything is
computed. A stage planned alone on an empty cache also trains the relevance model the rerank stage
counts (about an hour), which its own estimate leaves out.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fqa_analysis.cache import atomic_write_json, content_key, file_sha256
from fqa_analysis.core.results import comparable_config, counted_seconds
from fqa_analysis.profiling import duration_text, unit_of

__all__ = [
    "FINISHED_RUNS",
    "PlannedRun",
    "data_fingerprint",
    "plan_lines",
    "plan_stage",
    "remember_finished",
]

#: The cache's record of the runs every stage finished, by configuration and data.
FINISHED_RUNS = "finished_runs.json"
STATUSES = ("compute", "cached", "results")
_LABELS = {"compute": "to compute", "cached": "cached", "results": "in the results folder"}


@dataclass(frozen=True)
class PlannedRun:
    """One run of a stage in a plan.

    Attributes:
        stage: The stage's manifest entry (``explain_rate_paper`` for the paper's form).
        run: The run (``feedback_kl/seed1``); ``""`` for the stage as a whole, ``"(shared)"`` for
            the steps its runs share.
        status: ``compute``, ``cached`` or ``results``.
        seconds: Estimated compute (None: nothing recorded to estimate from).
    """

    stage: str
    run: str
    status: str
    seconds: float | None


def data_fingerprint(data_dir: Path) -> str:
    """A key of the data folder's content: every JSON file's path and SHA-256 (a second or less)."""
    digest = hashlib.sha256()
    for path in sorted(data_dir.rglob("*.json")):
        digest.update(f"{path.relative_to(data_dir).as_posix()}:{file_sha256(path)}\n".encode())
    return digest.hexdigest()[:16]


def _finished_key(stage: str, record: dict[str, Any], run_fields: tuple[str, ...], data_key: str) -> str:
    return content_key(stage, comparable_config(record, run_fields), data_key)


def remember_finished(
    cache_root: Path,
    stage: str,
    record: dict[str, Any],
    run_fields: tuple[str, ...],
    data_key: str,
    runs: Sequence[str],
) -> None:
    """Add ``runs`` to the cache's record of finished runs (called by a stage as it ends)."""
    known = _finished_runs(cache_root)
    key = _finished_key(stage, record, run_fields, data_key)
    known[key] = sorted(set(known.get(key, [])) | set(runs))
    atomic_write_json(cache_root / FINISHED_RUNS, known)


def _finished_runs(cache_root: Path) -> dict[str, list[str]]:
    """The cache's ``finished_runs.json``: runs by stage, configuration and data key (empty if none)."""
    path = cache_root / FINISHED_RUNS
    known: dict[str, list[str]] = json.loads(path.read_text()) if path.exists() else {}
    return known


def _seconds_by_run(entry: dict[str, Any], units: Sequence[str]) -> tuple[dict[str, float], float]:
    """Recorded compute per run of ``units`` (and of every run the entry records), and the shared steps'."""
    per_run: dict[str, float] = {}
    shared = 0.0
    # a recorded run is the prefix of a step at the depth of the planned runs (rerank's
    # ``variant/seedN`` of ``variant/seedN/train``); other steps (``data``, ``deep/rqa``) are shared
    depths = {u.count("/") for u in units}
    recorded = {s.rsplit("/", 1)[0] for s in entry.get("timings", {}) if "/" in s}
    known = [*units, *(r for r in recorded if r.count("/") in depths)]
    counted = counted_seconds(entry) if entry.get("timings") else {}
    for step, seconds in counted.items():
        unit = unit_of(step, known)
        if unit is None:
            shared += seconds
        else:
            per_run[unit] = per_run.get(unit, 0.0) + seconds
    return per_run, shared


def _estimate(run: str, per_run: dict[str, float]) -> float | None:
    if run in per_run:
        return per_run[run]
    pattern = re.sub(r"seed\d+", "seed*", run)
    siblings = [s for r, s in per_run.items() if re.sub(r"seed\d+", "seed*", r) == pattern]
    return sum(siblings) / len(siblings) if siblings else None


def plan_stage(
    stage: str,
    units: Sequence[str],
    record: dict[str, Any],
    run_fields: tuple[str, ...],
    present: dict[str, Any],
    committed: dict[str, Any],
    cache_root: Path,
    data_key: str,
) -> list[PlannedRun]:
    """Each run of one stage: in the results folder, cached, or to compute, with its estimated time.

    Args:
        stage: The manifest entry's name.
        units: The runs this invocation would compute (``[""]``: the stage as one run).
        record: The configuration the stage would record (its ``config_record``).
        run_fields: The stage's ``RUN_FIELDS``.
        present: The ``--out`` folder's entry of the stage (``{}`` if none).
        committed: The committed results' entry, whose timings estimate the cost where ``present``
            does not hold this configuration.
        cache_root: The model cache.
        data_key: :func:`data_fingerprint` of the data folder.

    Example:
        >>> entry = {"config": {"lr": 1, "seeds": [0]}, "timings": {"a/seed0/train": {"wall_s": 60.0},
        ...          "data": {"wall_s": 5.0}}}
        >>> plan = plan_stage("s", ["a/seed0", "a/seed1"], {"lr": 1, "seeds": [0, 1]}, ("seeds",), entry,
        ...                   {}, Path("/nonexistent"), "k")
        >>> [(p.run, p.status, p.seconds) for p in plan]
        [('a/seed0', 'results', 60.0), ('a/seed1', 'compute', 60.0), ('(shared)', 'compute', 5.0)]
    """
    same = bool(present) and comparable_config(present.get("config", {}), run_fields) == comparable_config(
        record, run_fields
    )
    there = set()
    if same:
        recorded = list(present.get("timings", {}))
        there = {u for u in units if any(unit_of(step, [u]) == u for step in recorded)}
    finished = set(_finished_runs(cache_root).get(_finished_key(stage, record, run_fields, data_key), []))
    per_run, shared = _seconds_by_run(present if same else committed, units)
    plan = [
        PlannedRun(
            stage,
            unit,
            "results" if unit in there else "cached" if unit in finished else "compute",
            _estimate(unit, per_run),
        )
        for unit in units
    ]
    if "" not in units and any(p.status == "compute" for p in plan) and shared:
        plan.append(PlannedRun(stage, "(shared)", "compute", round(shared, 2)))
    return plan


def plan_lines(plan: Sequence[PlannedRun]) -> list[str]:
    r"""The printed plan: a header, a line per run, a total per stage, and the summary line scripts read.

    A run in the results folder or the cache shows what it took when it was computed; a run to
    compute, what it will take. ``(shared)`` is the steps a stage's runs share (its data, the lower
    layers' states), counted once when anything is computed. The last line is
    ``plan: N to compute, M cached, K in the results folder, about T``; T counts the runs to compute
    (a cached run reads back in seconds).

    Example:
        >>> runs = [PlannedRun("rqa", "bm25", "results", 1.0), PlannedRun("rqa", "hybrid", "compute", 3600.0)]
        >>> print("\n".join(plan_lines(runs)))
        stage  run               status                 time
        rqa    bm25              in the results folder  took under 1 min
        rqa    hybrid            to compute             ~60 min
        rqa    total to compute                         ~60 min
        plan: 1 to compute, 0 cached, 1 in the results folder, about 60 min
    """
    rows: list[tuple[str, str, str, str]] = []
    unknown = 0
    for stage in dict.fromkeys(p.stage for p in plan):
        runs = [p for p in plan if p.stage == stage]
        for p in runs:
            if p.seconds is None:
                cost = "no recorded time" if p.status == "compute" else ""
            else:
                about = duration_text(p.seconds)
                cost = (
                    ("" if p.status == "compute" else "took ")
                    + ("" if about.startswith("under") else "~")
                    + about
                )
            rows.append((stage, p.run or "(the whole stage)", _LABELS[p.status], cost))
        todo = sum(p.seconds or 0.0 for p in runs if p.status == "compute")
        unknown += sum(p.seconds is None for p in runs if p.status == "compute")
        if todo:
            rows.append((stage, "total to compute", "", f"~{duration_text(todo)}"))
    widths = [max(len(r[i]) for r in [("stage", "run", "status", "time"), *rows]) for i in range(3)]

    def line(row: tuple[str, str, str, str]) -> str:
        return (
            "  ".join(f"{cell:{width}s}" for cell, width in zip(row[:3], widths, strict=True)) + "  " + row[3]
        )

    counts = {s: sum(p.status == s for p in plan if p.run != "(shared)") for s in STATUSES}
    total = sum(p.seconds or 0.0 for p in plan if p.status == "compute")
    about = duration_text(total) if total else "0 min"
    if unknown:
        about += f" and {unknown} run(s) with no recorded time"
    summary = (
        f"plan: {counts['compute']} to compute, {counts['cached']} cached, "
        f"{counts['results']} in the results folder, about {about}"
    )
    return [line(("stage", "run", "status", "time")).rstrip(), *(line(r).rstrip() for r in rows), summary]

"""The FeedbackQA data layer: where the files are, typed records, validation, tidy frames.

This is the bottom of the package: it imports nothing else of ``fqa_analysis`` except the
error types and the rating scale's label names, and no model code.

Layout of a data directory (as in the authors' repository, ``experiments/feedbackQA_data``)::

    <Domain>/train.json, valid.json, test.json          QA splits (Quebec: two test files)
    <Domain>/feedback_{train,valid,test}.json          feedback splits (not for Quebec)
    release/feedback_{train,valid,test}.json           combined release files (optional)

Example:
    >>> from fqa_analysis import data
    >>> split = data.load_qa_split(data.resolve_data_dir(None), "WHO", "test")  # doctest: +SKIP
    >>> len(split.questions), len(split.passages)  # doctest: +SKIP
    (183, 226)

"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from fqa_analysis.errors import DataError, DataProblem

__all__ = [
    "DOMAINS",
    "ENV_DATA_DIR",
    "FEEDBACK_COLUMNS",
    "FEEDBACK_DOMAINS",
    "FEEDBACK_SPLITS",
    "FETCH_HINT",
    "PAPER_NAMES",
    "RATING_LABELS",
    "FeedbackItem",
    "FeedbackSplit",
    "Passage",
    "Protocol",
    "QASplit",
    "Question",
    "all_feedback",
    "available_feedback",
    "default_cache_dir",
    "feedback_frame",
    "feedback_path",
    "load_feedback_split",
    "load_qa_split",
    "load_release_feedback",
    "parse_feedback_items",
    "parse_qa_split",
    "passage_text",
    "passages_frame",
    "pool_sizes",
    "qa_path",
    "qa_splits",
    "questions_frame",
    "read_json",
    "release_path",
    "resolve_data_dir",
    "test_splits",
    "training_protocol",
]

#: Folder names of the five domains, in the order the paper's tables use.
DOMAINS: tuple[str, ...] = ("Australia", "CDC", "UK", "WHO", "Quebec")
#: Domains with collected feedback (Quebec has none).
FEEDBACK_DOMAINS: tuple[str, ...] = ("Australia", "CDC", "UK", "WHO")
#: Paper's name of each domain folder.
PAPER_NAMES: Mapping[str, str] = {
    "Australia": "Australia",
    "CDC": "US",
    "UK": "UK",
    "WHO": "WHO",
    "Quebec": "Canada",
}
FEEDBACK_SPLITS: tuple[str, ...] = ("train", "valid", "test")
#: The rating labels exactly as they appear in the files, worst to best.
RATING_LABELS: tuple[str, ...] = ("Bad", "Could be Improved", "Acceptable", "Excellent")

#: Columns of :func:`feedback_frame` (one row per annotator rating).
FEEDBACK_COLUMNS: list[str] = [
    "domain",
    "split",
    "item_id",
    "question",
    "passage_id",
    "passage_text",
    "annotator",
    "rating",
    "explanation",
]
ENV_DATA_DIR = "FQA_DATA_DIR"
FETCH_HINT = "run `fqa data fetch` (or `fqa data fetch --from MIRROR`) to restore the original file"
Protocol = Literal["paper", "available"]


def test_splits(domain: str) -> tuple[str, ...]:
    """Names of the QA test splits of a domain (Quebec has an old and a new test file)."""
    if domain == "Quebec":
        return ("test_old_faq_coll4", "test_new_faq_coll4")
    return ("test",)


# pytest would otherwise try to collect the helper above as a test.
test_splits.__test__ = False  # type: ignore[attr-defined]


def qa_splits(domain: str) -> tuple[str, ...]:
    """Names of all QA splits of a domain, train first."""
    return ("train", "valid", *test_splits(domain))


def default_cache_dir() -> Path:
    """The folder `fqa data fetch` fills when no directory is given."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fqa-eval" / "feedbackqa"


def resolve_data_dir(data_dir: str | os.PathLike[str] | None) -> Path:
    """Find the data: the argument, else ``$FQA_DATA_DIR``, else the default cache folder.

    Raises:
        DataError: The folder does not exist, is a file, or holds no FeedbackQA QA file.

    """
    if data_dir is not None:
        source = "--data-dir"
        path = Path(data_dir)
    elif os.environ.get(ENV_DATA_DIR):
        source = f"${ENV_DATA_DIR}"
        path = Path(os.environ[ENV_DATA_DIR])
    else:
        source = "the default cache folder"
        path = default_cache_dir()
    fix = (
        "run `fqa data fetch` to fill the default cache, or pass --data-dir / set "
        f"${ENV_DATA_DIR} to a folder holding <Domain>/<split>.json"
    )
    if path.exists() and not path.is_dir():
        raise DataError(DataProblem(path, "(data directory)", f"{source} names a file, not a folder", fix))
    if not path.is_dir():
        raise DataError(
            DataProblem(path, "(data directory)", f"the data directory given by {source} does not exist", fix)
        )
    if not any(qa_path(path, d, s).is_file() for d in DOMAINS for s in qa_splits(d)):
        # one line for a folder with nothing of FeedbackQA in it, not a paragraph per missing file
        fix = (
            f"run `fqa data fetch --data-dir {path}` (offline: add `--from MIRROR`), or give --data-dir the "
            "folder that holds the data"
        )
        raise DataError(DataProblem(path, "(data directory)", f"no FeedbackQA files in {path}", fix))
    return path


def qa_path(data_dir: Path, domain: str, split: str) -> Path:
    """Path of a QA split file."""
    return data_dir / domain / f"{split}.json"


def feedback_path(data_dir: Path, domain: str, split: str) -> Path:
    """Path of a per-domain feedback split file."""
    return data_dir / domain / f"feedback_{split}.json"


def release_path(data_dir: Path, split: str) -> Path:
    """Path of a combined release feedback file (all domains, with a ``domain`` field)."""
    return data_dir / "release" / f"feedback_{split}.json"


def read_json(path: Path) -> Any:
    """Read a JSON file, turning every way it can fail into a :class:`DataError`."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError(DataProblem(path, "(whole file)", "the file does not exist", FETCH_HINT)) from None
    except IsADirectoryError:
        raise DataError(
            DataProblem(path, "(whole file)", "a folder stands where a JSON file should", FETCH_HINT)
        ) from None
    except UnicodeDecodeError as exc:
        raise DataError(
            DataProblem(path, "(whole file)", f"the file is not UTF-8 text ({exc.reason})", FETCH_HINT)
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        truncated = exc.pos >= len(text.rstrip()) - 1
        what = "the file ends early (truncated JSON)" if truncated else f"invalid JSON: {exc.msg}"
        raise DataError(
            DataProblem(path, f"line {exc.lineno}, column {exc.colno}", what, FETCH_HINT)
        ) from None


@dataclass(frozen=True)
class Passage:
    """One FAQ passage of a domain's pool.

    Attributes:
        domain: Domain folder name.
        passage_id: Index of the passage in its file's ``passages`` list.
        uri: Source web page.
        page_title: Title of the page.
        section_headers: Headers above the section, outermost first.
        section_content: The answer text.

    """

    domain: str
    passage_id: int
    uri: str
    page_title: str
    section_headers: tuple[str, ...]
    section_content: str

    @property
    def text(self) -> str:
        """The passage as the models see it (see :func:`passage_text`)."""
        return passage_text(self.page_title, self.section_headers, self.section_content)


def passage_text(page_title: str, section_headers: Sequence[str], section_content: str) -> str:
    r"""Join title, headers and content with newlines, skipping empty parts (ARCHITECTURE.md#protocol).

    Example:
        >>> passage_text("Masks", ["When?", ""], "Always.")
        'Masks\nWhen?\nAlways.'

    """
    parts = [page_title, *section_headers, section_content]
    return "\n".join(p for p in parts if p and p.strip())


@dataclass(frozen=True)
class Question:
    """One QA example: a question and the id of its gold passage in the domain pool."""

    domain: str
    split: str
    question_id: int
    question: str
    passage_id: int


@dataclass(frozen=True)
class QASplit:
    """A QA split file: its questions and the domain pool they are answered from."""

    domain: str
    split: str
    path: Path
    questions: tuple[Question, ...]
    passages: tuple[Passage, ...]

    @property
    def question_texts(self) -> list[str]:
        """The questions' text, in file order."""
        return [q.question for q in self.questions]

    @property
    def passage_texts(self) -> list[str]:
        """The pool's passage texts, indexed by passage id."""
        return [p.text for p in self.passages]

    @property
    def gold_ids(self) -> np.ndarray:
        """Each question's gold passage id, in file order."""
        return np.array([q.passage_id for q in self.questions], dtype=int)

    def first(self, n: int | None) -> QASplit:
        """The split narrowed to its first ``n`` questions (CI smoke runs); itself when ``n`` is None."""
        return self if n is None else replace(self, questions=self.questions[:n])


@dataclass(frozen=True)
class FeedbackItem:
    """One rated (question, passage) pair with its annotators' ratings and explanations.

    ``ratings[i]`` and ``explanations[i]`` come from the same annotator.
    """

    domain: str
    split: str
    item_id: int
    question: str
    passage: Passage
    ratings: tuple[str, ...]
    explanations: tuple[str, ...]


@dataclass(frozen=True)
class FeedbackSplit:
    """A feedback split file of one domain."""

    domain: str
    split: str
    path: Path
    items: tuple[FeedbackItem, ...]


# --------------------------------------------------------------------------- validation


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _parse_passage(
    obj: object, path: Path, item: str, domain: str, problems: list[DataProblem]
) -> Passage | None:
    """Validate one passage object; append problems and return None when it is unusable."""
    if not isinstance(obj, dict):
        problems.append(DataProblem(path, item, "the passage is not a JSON object", FETCH_HINT))
        return None
    missing = [k for k in ("passage_id", "reference") if k not in obj]
    if missing:
        problems.append(
            DataProblem(path, item, f"missing field(s) {', '.join(map(repr, missing))}", FETCH_HINT)
        )
        return None
    pid, ref = obj["passage_id"], obj["reference"]
    if not _is_int(pid) or pid < 0:
        problems.append(
            DataProblem(path, item, f"'passage_id' must be a non-negative integer, got {pid!r}", FETCH_HINT)
        )
        return None
    if not isinstance(ref, dict):
        problems.append(DataProblem(path, item, "'reference' is not a JSON object", FETCH_HINT))
        return None
    missing = [k for k in ("page_title", "section_headers", "section_content") if k not in ref]
    if missing:
        problems.append(
            DataProblem(path, item, f"'reference' lacks field(s) {', '.join(map(repr, missing))}", FETCH_HINT)
        )
        return None
    headers = ref["section_headers"]
    if not isinstance(headers, list) or not all(isinstance(h, str) for h in headers):
        problems.append(DataProblem(path, item, "'section_headers' must be a list of strings", FETCH_HINT))
        return None
    title, content = ref["page_title"], ref["section_content"]
    if not isinstance(title, str) or not isinstance(content, str):
        problems.append(
            DataProblem(path, item, "'page_title' and 'section_content' must be strings", FETCH_HINT)
        )
        return None
    passage = Passage(domain, pid, str(obj.get("uri", "")), title, tuple(headers), content)
    if not passage.text.strip():
        problems.append(DataProblem(path, item, "the passage has no text at all", FETCH_HINT))
        return None
    return passage


def _parse_question_text(value: object, path: Path, item: str, problems: list[DataProblem]) -> str | None:
    if not isinstance(value, str):
        problems.append(
            DataProblem(path, item, f"'question' must be a string, got {type(value).__name__}", FETCH_HINT)
        )
        return None
    if not value.strip():
        problems.append(DataProblem(path, item, "the question is empty", FETCH_HINT))
        return None
    return value


def parse_qa_split(
    raw: object, path: Path, domain: str, split: str
) -> tuple[QASplit | None, list[DataProblem]]:
    """Validate the parsed JSON of a QA split; return the split (None if unusable) and problems.

    Checks: the two top-level lists, every example's fields, a non-empty question, every
    passage, passage ids equal to their position (they are indices), and every gold
    ``passage_id`` inside the pool.
    """
    problems: list[DataProblem] = []
    if not isinstance(raw, dict) or not all(k in raw for k in ("examples", "passages")):
        problems.append(
            DataProblem(
                path, "(whole file)", "expected an object with lists 'examples' and 'passages'", FETCH_HINT
            )
        )
        return None, problems
    examples, raw_passages = raw["examples"], raw["passages"]
    if not isinstance(examples, list) or not isinstance(raw_passages, list):
        problems.append(
            DataProblem(path, "(whole file)", "'examples' and 'passages' must be lists", FETCH_HINT)
        )
        return None, problems
    passages: list[Passage] = []
    for i, obj in enumerate(raw_passages):
        passage = _parse_passage(obj, path, f"passages[{i}]", domain, problems)
        if passage is None:
            continue
        if passage.passage_id != i:
            problems.append(
                DataProblem(
                    path,
                    f"passages[{i}]",
                    f"'passage_id' is {passage.passage_id} but passage ids are list positions",
                    FETCH_HINT,
                )
            )
            continue
        passages.append(passage)
    questions: list[Question] = []
    seen_ids: dict[int, int] = {}
    for i, ex in enumerate(examples):
        item = f"examples[{i}]"
        if not isinstance(ex, dict):
            problems.append(DataProblem(path, item, "the example is not a JSON object", FETCH_HINT))
            continue
        missing = [k for k in ("id", "question", "passage_id") if k not in ex]
        if missing:
            problems.append(
                DataProblem(path, item, f"missing field(s) {', '.join(map(repr, missing))}", FETCH_HINT)
            )
            continue
        text = _parse_question_text(ex["question"], path, item, problems)
        pid = ex["passage_id"]
        if not _is_int(pid) or not 0 <= pid < len(raw_passages):
            problems.append(
                DataProblem(
                    path,
                    item,
                    f"gold 'passage_id' {pid!r} is outside the pool of {len(raw_passages)} passages",
                    f"{FETCH_HINT}; a question whose gold passage is not in the pool cannot be scored",
                )
            )
            continue
        if text is None:
            continue
        if not _is_int(ex["id"]):
            problems.append(DataProblem(path, item, f"'id' must be an integer, got {ex['id']!r}", FETCH_HINT))
            continue
        if ex["id"] in seen_ids:
            problems.append(
                DataProblem(
                    path,
                    item,
                    f"'id' {ex['id']} repeats examples[{seen_ids[ex['id']]}]; results are keyed by it",
                    FETCH_HINT,
                )
            )
            continue
        seen_ids[ex["id"]] = i
        questions.append(Question(domain, split, ex["id"], text, pid))
    if problems:
        return None, problems
    return QASplit(domain, split, path, tuple(questions), tuple(passages)), problems


def parse_feedback_items(
    raw: object,
    path: Path,
    split: str,
    pool_sizes: Mapping[str, int],
    domain: str | None = None,
) -> tuple[list[FeedbackItem] | None, list[DataProblem]]:
    """Validate the parsed JSON of a feedback file; return its items (None if unusable).

    Args:
        raw: Parsed JSON (a list of items).
        path: File it came from (for messages).
        split: ``train``, ``valid`` or ``test``.
        pool_sizes: Size of each domain's passage pool, to check ``passage_id``.
        domain: The domain of a per-domain file; None for a release file, whose items carry a
            ``domain`` field (folder names or the paper's names).

    Checks: fields present, a non-empty question, a valid passage whose id is in the pool,
    ratings from the four known labels, as many explanations as ratings, at least one rating.

    """
    problems: list[DataProblem] = []
    if not isinstance(raw, list):
        problems.append(DataProblem(path, "(whole file)", "expected a JSON list of items", FETCH_HINT))
        return None, problems
    by_paper_name = {v: k for k, v in PAPER_NAMES.items()}
    items: list[FeedbackItem] = []
    for i, obj in enumerate(raw):
        item = f"item [{i}]"
        if not isinstance(obj, dict):
            problems.append(DataProblem(path, item, "the item is not a JSON object", FETCH_HINT))
            continue
        required = ["question", "passage", "feedback", "rating"] + ([] if domain else ["domain"])
        missing = [k for k in required if k not in obj]
        if missing:
            problems.append(
                DataProblem(path, item, f"missing field(s) {', '.join(map(repr, missing))}", FETCH_HINT)
            )
            continue
        item_domain = domain or str(obj["domain"])
        item_domain = by_paper_name.get(item_domain, item_domain)
        if item_domain not in pool_sizes:
            problems.append(
                DataProblem(
                    path,
                    item,
                    f"unknown domain {obj.get('domain')!r} (known: {', '.join(pool_sizes)})",
                    FETCH_HINT,
                )
            )
            continue
        text = _parse_question_text(obj["question"], path, item, problems)
        passage = _parse_passage(obj["passage"], path, f"{item}.passage", item_domain, problems)
        ratings, explanations = obj["rating"], obj["feedback"]
        ok = text is not None and passage is not None
        if passage is not None and passage.passage_id >= pool_sizes[item_domain]:
            problems.append(
                DataProblem(
                    path,
                    f"{item}.passage",
                    f"'passage_id' {passage.passage_id} is outside the {item_domain} pool of "
                    f"{pool_sizes[item_domain]} passages",
                    FETCH_HINT,
                )
            )
            ok = False
        if not isinstance(ratings, list) or not isinstance(explanations, list):
            problems.append(DataProblem(path, item, "'rating' and 'feedback' must be lists", FETCH_HINT))
            continue
        if not ratings:
            problems.append(DataProblem(path, item, "the item has no rating", FETCH_HINT))
            ok = False
        unknown = [r for r in ratings if r not in RATING_LABELS]
        if unknown:
            problems.append(
                DataProblem(
                    path,
                    item,
                    f"unknown rating label(s) {', '.join(map(repr, unknown))}; the labels are "
                    f"{', '.join(map(repr, RATING_LABELS))} (exact spelling)",
                    f"correct the label or {FETCH_HINT}",
                )
            )
            ok = False
        if len(ratings) != len(explanations):
            problems.append(
                DataProblem(
                    path,
                    item,
                    f"{len(ratings)} rating(s) but {len(explanations)} explanation(s); rating[i] and "
                    "feedback[i] must come from the same annotator",
                    FETCH_HINT,
                )
            )
            ok = False
        if not all(isinstance(e, str) for e in explanations):
            problems.append(DataProblem(path, item, "every explanation must be a string", FETCH_HINT))
            ok = False
        if ok and text is not None and passage is not None:
            items.append(
                FeedbackItem(item_domain, split, i, text, passage, tuple(ratings), tuple(explanations))
            )
    if problems:
        return None, problems
    return items, problems


# --------------------------------------------------------------------------- loaders


def load_qa_split(data_dir: Path, domain: str, split: str) -> QASplit:
    """Load and validate one QA split file.

    Raises:
        DataError: The file is missing, unreadable or inconsistent (all problems listed).

    """
    path = qa_path(data_dir, domain, split)
    parsed, problems = parse_qa_split(read_json(path), path, domain, split)
    if parsed is None:
        raise DataError(problems)
    return parsed


def pool_sizes(data_dir: Path, domains: Iterable[str] = FEEDBACK_DOMAINS) -> dict[str, int]:
    """Size of each domain's passage pool, from its test file (the pool feedback refers to)."""
    sizes = {}
    for domain in domains:
        path = qa_path(data_dir, domain, test_splits(domain)[0])
        raw = read_json(path)
        if not isinstance(raw, dict) or not isinstance(raw.get("passages"), list):
            raise DataError(
                DataProblem(path, "(whole file)", "no 'passages' list to take the pool from", FETCH_HINT)
            )
        sizes[domain] = len(raw["passages"])
    return sizes


def load_feedback_split(data_dir: Path, domain: str, split: str) -> FeedbackSplit:
    """Load and validate one per-domain feedback file (passage ids checked against the pool).

    Raises:
        DataError: The file is missing, unreadable or inconsistent (all problems listed).

    """
    path = feedback_path(data_dir, domain, split)
    raw = read_json(path)
    items, problems = parse_feedback_items(raw, path, split, pool_sizes(data_dir, [domain]), domain)
    if items is None:
        raise DataError(problems)
    return FeedbackSplit(domain, split, path, tuple(items))


def load_release_feedback(data_dir: Path, split: str) -> list[FeedbackSplit]:
    """Load a combined release file (``release/feedback_<split>.json``), one split per domain."""
    path = release_path(data_dir, split)
    raw = read_json(path)
    items, problems = parse_feedback_items(raw, path, split, pool_sizes(data_dir), None)
    if items is None:
        raise DataError(problems)
    splits = [
        FeedbackSplit(d, split, path, tuple(it for it in items if it.domain == d)) for d in FEEDBACK_DOMAINS
    ]
    return [s for s in splits if s.items]


def available_feedback(data_dir: Path, split: str) -> list[FeedbackSplit]:
    """Every domain's feedback of a split that exists: per-domain files, else the release file."""
    found = [
        load_feedback_split(data_dir, d, split)
        for d in FEEDBACK_DOMAINS
        if feedback_path(data_dir, d, split).exists()
    ]
    have = {f.domain for f in found}
    if len(have) < len(FEEDBACK_DOMAINS) and release_path(data_dir, split).exists():
        found += [f for f in load_release_feedback(data_dir, split) if f.domain not in have]
    return sorted(found, key=lambda f: FEEDBACK_DOMAINS.index(f.domain))


def all_feedback(data_dir: Path, subset: int | None = None) -> dict[str, list[FeedbackSplit]]:
    """:func:`available_feedback` of every feedback split, optionally the first ``subset`` items each.

    The subset (CI smoke runs) keeps each domain's first N items of every split.
    """
    out = {s: available_feedback(data_dir, s) for s in FEEDBACK_SPLITS}
    if subset is None:
        return out
    return {
        s: [FeedbackSplit(f.domain, f.split, f.path, f.items[:subset]) for f in splits]
        for s, splits in out.items()
    }


def training_protocol(data_dir: Path) -> Protocol:
    """``paper`` when every domain has feedback_train (per-domain file or release), else ``available``.

    See ARCHITECTURE.md#training-protocols: the paper trains rerankers on all four feedback_train
    files; here only WHO's is present, so the ``available`` protocol is used.
    """
    have = {d for d in FEEDBACK_DOMAINS if feedback_path(data_dir, d, "train").exists()}
    if len(have) < len(FEEDBACK_DOMAINS) and release_path(data_dir, "train").exists():
        have |= {s.domain for s in load_release_feedback(data_dir, "train")}
    return "paper" if have == set(FEEDBACK_DOMAINS) else "available"


# --------------------------------------------------------------------------- tidy frames


def questions_frame(splits: Iterable[QASplit]) -> pd.DataFrame:
    """One row per question: ``domain, split, question_id, question, passage_id``."""
    rows = [(q.domain, q.split, q.question_id, q.question, q.passage_id) for s in splits for q in s.questions]
    return pd.DataFrame(rows, columns=["domain", "split", "question_id", "question", "passage_id"])


def passages_frame(split: QASplit) -> pd.DataFrame:
    """One row per pool passage: ``domain, passage_id, uri, page_title, text``."""
    rows = [(p.domain, p.passage_id, p.uri, p.page_title, p.text) for p in split.passages]
    return pd.DataFrame(rows, columns=["domain", "passage_id", "uri", "page_title", "text"])


def feedback_frame(splits: Iterable[FeedbackSplit]) -> pd.DataFrame:
    """One row per annotator rating.

    Columns: ``domain, split, item_id, question, passage_id, passage_text, annotator, rating,
    explanation``
    (``annotator`` is the position 0..n-1 within the item; annotator identities are not in
    the data).
    """
    rows = [
        (it.domain, it.split, it.item_id, it.question, it.passage.passage_id, it.passage.text, a, r, e)
        for s in splits
        for it in s.items
        for a, (r, e) in enumerate(zip(it.ratings, it.explanations, strict=True))
    ]
    return pd.DataFrame(rows, columns=FEEDBACK_COLUMNS)

"""Errors raised on bad input.

Every input problem becomes a :class:`DataError`, a ``ValueError`` whose message names the
file, the item, what is wrong and how to fix it, so that a user never has to read a traceback
to know what to do.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["DataError", "DataProblem"]


@dataclass(frozen=True)
class DataProblem:
    """One problem found in one input file.

    Attributes:
        path: The file the problem is in.
        item: Which part of the file (for example ``examples[12]``); ``"(whole file)"`` when
            the file as a whole is unusable.
        problem: What is wrong, in one sentence.
        fix: What the user can do about it, in one sentence.

    Example:
        >>> p = DataProblem(Path("WHO/test.json"), "examples[3]", "field 'question' is empty",
        ...                 "restore the file with `fqa data fetch`")
        >>> print(p.message())
        WHO/test.json, examples[3]: field 'question' is empty. Fix: restore the file with `fqa data fetch`.

    """

    path: Path
    item: str
    problem: str
    fix: str

    def message(self) -> str:
        """One paragraph naming the file, the item, the problem and the fix."""
        return f"{self.path}, {self.item}: {self.problem}. Fix: {self.fix}."


class DataError(ValueError):
    """Bad input: a missing, unreadable or inconsistent data file.

    Args:
        problems: One or more problems; the message lists them all (the first ten in full).

    """

    def __init__(self, problems: DataProblem | list[DataProblem]) -> None:
        self.problems: list[DataProblem] = [problems] if isinstance(problems, DataProblem) else list(problems)
        if not self.problems:
            raise ValueError("DataError needs at least one problem")
        shown = [p.message() for p in self.problems[:10]]
        more = len(self.problems) - len(shown)
        if more > 0:
            shown.append(f"... and {more} more problem(s) of the same kind.")
        super().__init__("\n".join(shown))

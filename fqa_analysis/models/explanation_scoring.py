"""How the explain stages judge an explanation: MiniLM embeddings and the consistency classifier.

Both the explain stage (the explainers against people) and the explain-then-rate stage (its
generated explanations) score explanations with the same two instruments: the embedding
similarity to the annotators' explanations (:class:`Embedder`) and the rating a logistic
regression reads from an explanation's embedding (:func:`rating_classifier`), which says whether
the explanation is consistent with the rating it explains.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fqa_analysis.core.ratings import LABELS
from fqa_analysis.models.explainer import ExplanationExample
from fqa_analysis.models.retrieval import DenseConfig, DenseSystem

__all__ = ["EMBED_MAX_LEN", "Embedder", "rating_classifier"]

#: Tokens of an explanation the embedder reads: explanations are one or two sentences.
EMBED_MAX_LEN = 64


class Embedder:
    """MiniLM embeddings of explanation texts and the cosine helpers built on them."""

    def __init__(self) -> None:
        self.encoder = DenseSystem(DenseConfig())

    def vectors(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length embeddings of explanation texts (64 tokens; cached by content)."""
        return self.encoder.encode(list(texts), EMBED_MAX_LEN, "explanations")

    def max_cosine(self, candidate: str, references: Sequence[str]) -> float:
        """The best cosine of ``candidate`` to any reference."""
        vecs = self.vectors([candidate, *references])
        return float(np.max(vecs[1:] @ vecs[0]))


def rating_classifier(embedder: Embedder, fit: Sequence[ExplanationExample]) -> Any:
    """The consistency classifier: logistic regression from an explanation's embedding to its rating.

    Trained on human training explanations only; it labels any explanation with one of the four
    ratings (class index into ``LABELS``).
    """
    from sklearn.linear_model import LogisticRegression

    x = embedder.vectors([e.explanation for e in fit])
    y = np.array([LABELS.index(e.rating) for e in fit])
    return LogisticRegression(max_iter=2000, C=1.0).fit(x, y)

"""Reference-based metrics of generated explanations (pure: no models).

* :func:`rouge_l`: ROUGE-L F1 (longest common subsequence of lower-cased word tokens), the best
  over the references, as ``rouge-score`` reports multi-reference ROUGE-L.
* :func:`bleu`: sentence BLEU from ``sacrebleu`` (13a tokenisation, exponential smoothing), all
  references at once, on a 0-1 scale; :func:`corpus_bleu` for a whole system.
* :func:`leave_one_out`: the fair comparison with humans. feedback_test has three explanations
  per item; a human's explanation is scored against the *other two*, so a system is scored
  against each pair of two as well and the three scores are averaged. Both then see the same
  number of references.

Example:
    >>> round(rouge_l("gives the rules", ["it gives the rules and links"]), 4)  # LCS 3: P 1, R 3/6
    0.6667
    >>> leave_one_out(["a", "b", "c"])
    [('a', ['b', 'c']), ('b', ['a', 'c']), ('c', ['a', 'b'])]
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

__all__ = [
    "OPENING_WORDS",
    "STOP_WORDS",
    "bleu",
    "content_words",
    "corpus_bleu",
    "distinct_share",
    "grounding",
    "lcs_length",
    "leave_one_out",
    "lexicon",
    "loo_score",
    "nonwords",
    "opening_counts",
    "opening_of",
    "opening_shares",
    "readable_opening",
    "rouge_l",
    "tokens",
    "variety",
]

_TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text: str) -> list[str]:
    """Lower-cased alphanumeric word tokens (punctuation dropped, as rouge-score does).

    Example:
        >>> tokens("Doesn't mention ages; gives LINKS.")
        ['doesn', 't', 'mention', 'ages', 'gives', 'links']
    """
    return _TOKEN.findall(text.lower())


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence (dynamic programming, O(len(a) len(b))).

    Example:
        >>> lcs_length("abcbdab", "bdcaba")
        4
    """
    if not a or not b:
        return 0
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def rouge_l(candidate: str, references: Sequence[str]) -> float:
    """ROUGE-L F1 of a candidate, the maximum over references (0 when either side is empty)."""
    if not references:
        raise ValueError("rouge_l needs at least one reference")
    cand = tokens(candidate)
    best = 0.0
    for ref in references:
        r = tokens(ref)
        lcs = lcs_length(cand, r)
        if lcs == 0:
            continue
        p, q = lcs / len(cand), lcs / len(r)
        best = max(best, 2 * p * q / (p + q))
    return best


def bleu(candidate: str, references: Sequence[str]) -> float:
    """Sentence BLEU (sacrebleu defaults: 13a tokens, exp smoothing) against all references, in [0, 1].

    Example:
        >>> round(bleu("the answer gives links", ["the answer gives links"]), 6)
        1.0
    """
    import sacrebleu

    if not references:
        raise ValueError("bleu needs at least one reference")
    return float(sacrebleu.sentence_bleu(candidate, list(references)).score) / 100.0


def corpus_bleu(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> float:
    """Corpus BLEU of a system in [0, 1]; every candidate needs the same number of references."""
    import sacrebleu

    counts = {len(r) for r in references}
    if len(counts) != 1:
        raise ValueError(
            f"corpus_bleu needs the same number of references per candidate, got {sorted(counts)}"
        )
    streams = [list(s) for s in zip(*references, strict=True)]
    return float(sacrebleu.corpus_bleu(list(candidates), streams).score) / 100.0


def leave_one_out(explanations: Sequence[str]) -> list[tuple[str, list[str]]]:
    """Each explanation with the others as its references (the human-ceiling pairs)."""
    return [(e, [o for j, o in enumerate(explanations) if j != i]) for i, e in enumerate(explanations)]


def loo_score(
    candidate: str, explanations: Sequence[str], metric: Callable[[str, Sequence[str]], float]
) -> float:
    """A system's score against each leave-one-out reference set, averaged (same references as a human).

    Example:
        >>> loo_score("b", ["a", "b", "c"], rouge_l)  # vs (b, c): 1; vs (a, c): 0; vs (a, b): 1
        0.6666666666666666
    """
    pairs = leave_one_out(explanations)
    return sum(metric(candidate, refs) for _, refs in pairs) / len(pairs)


def distinct_share(texts: Sequence[str]) -> float:
    """The share of texts that are distinct (1.0: no text repeats; an empty list gives 0).

    Example:
        >>> distinct_share(["a b", "a b", "c", "d"])
        0.75
    """
    return len(set(texts)) / len(texts) if len(texts) else 0.0


#: Words of an explanation's opening that variety counts (people's most common 4-word opening
#: covers 6% of their explanations).
OPENING_WORDS = 4


def opening_of(text: str, words: int = OPENING_WORDS) -> str:
    """An explanation's opening: its first ``words`` :func:`tokens`.

    Example:
        >>> opening_of("This answer is irrelevant to the question.")
        'this answer is irrelevant'
    """
    return " ".join(tokens(text)[:words])


def readable_opening(opening: str) -> str:
    """An opening (:func:`opening_of`) for the page: contractions :func:`tokens` split, rejoined.

    The tokens drop apostrophes, so "doesn't" counts as two words, "doesn t"; a reader sees
    "doesn't". Display only: counting keeps the tokens (what the explainers' measures use).

    Example:
        >>> readable_opening("the answer doesn t"), readable_opening("it s what we re")
        ("the answer doesn't", "it's what we're")
    """
    joined = re.sub(r"\b(\w+n) t\b", r"\1't", opening)
    return re.sub(r"\b(\w+) (s|re|ve|ll)\b", r"\1'\2", joined)


def opening_counts(texts: Sequence[str], words: int = OPENING_WORDS) -> dict[str, float]:
    """The share of ``texts`` that each opening (:func:`opening_of`) opens.

    Example:
        >>> opening_counts(["a b c d e", "a b c d f", "x y"])
        {'a b c d': 0.6666666666666666, 'x y': 0.3333333333333333}
    """
    counts: dict[str, int] = {}
    for text in texts:
        key = opening_of(text, words)
        counts[key] = counts.get(key, 0) + 1
    return {k: n / len(texts) for k, n in counts.items()} if texts else {}


def opening_shares(texts: Sequence[str], words: int = 2, k: int = 3) -> list[tuple[str, float]]:
    """The ``k`` most frequent openings (:func:`opening_of`) and the share of texts each opens.

    Ties are broken by the opening's text, so the list does not depend on the texts' order.

    Example:
        >>> opening_shares(["This is bad.", "this is fine", "It is", "no"], words=2, k=2)
        [('this is', 0.5), ('it is', 0.25)]
    """
    return sorted(opening_counts(texts, words).items(), key=lambda kv: (-kv[1], kv[0]))[:k]


#: Common English function words (a short list, so that core needs no model library).
STOP_WORDS: frozenset[str] = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "him",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
    ]
)


def content_words(text: str) -> list[str]:
    """The :func:`tokens` of a text that are not English stop words (:data:`STOP_WORDS`) or digits.

    Example:
        >>> content_words("It gives the rules for a visa in 2021")
        ['gives', 'rules', 'visa']
    """
    return [t for t in tokens(text) if t not in STOP_WORDS and not t.isdigit() and len(t) > 1]


def grounding(explanation: str, question: str, passage: str) -> float:
    """The share of an explanation's content words that occur in its question or passage.

    How much of what an explanation names is in the pair it explains (exact word match after
    lower-casing; words about the answer itself, such as "answer" or "relevant", count as not
    found, for people and systems alike). NaN for an explanation without content words.

    Example:
        >>> grounding("The answer gives the visa rules", "Which visa do I need?", "Rules for visitors")
        0.5
    """
    words = content_words(explanation)
    if not words:
        return float("nan")
    source = set(tokens(question)) | set(tokens(passage))
    return sum(w in source for w in words) / len(words)


def lexicon(texts: Iterable[str]) -> frozenset[str]:
    """Every alphabetic :func:`tokens` word of some texts: what counts as a word in :func:`nonwords`.

    The explain stage builds it from the texts a generator may learn or copy from (training
    explanations, questions and passages), never from the explanations it is judged against.

    Example:
        >>> sorted(lexicon(["Visa rules, 2021", "the rules"]))
        ['rules', 'the', 'visa']
    """
    return frozenset(t for text in texts for t in tokens(text) if t.isalpha())


def nonwords(text: str, known: frozenset[str]) -> list[str]:
    """The alphabetic words of a text absent from a :func:`lexicon`, in order.

    A fluency check that needs no language model: a sampled decoder's wordpieces can join into
    words no text holds ("social dinc", "apprenticeshipes"), which a blind reading found
    incoherent. People's typos and rare words count too, so people's own rate is the baseline.

    Example:
        >>> nonwords("the visa rulles for 2021", lexicon(["the visa rules"]))
        ['rulles', 'for']
    """
    return [t for t in tokens(text) if t.isalpha() and t not in known]


def variety(
    texts: Sequence[str],
    pairs: Sequence[tuple[str, str]] | None = None,
    words: int = 4,
    known: frozenset[str] | None = None,
) -> dict[str, Any]:
    """How varied and how grounded a set of explanations is.

    Args:
        texts: One explainer's explanations.
        pairs: The (question, passage) each explains, in the same order (None: no grounding).
        words: Length of the opening counted (people's most common 4-word opening covers 6%).
        known: A :func:`lexicon` (None: no ``no_nonword``).

    Returns:
        ``texts``, ``distinct`` (:func:`distinct_share`), ``opening`` and ``opening_share`` (the most
        common opening, :func:`opening_shares`), ``words`` (mean tokens), ``grounding`` (mean
        :func:`grounding` over the texts that have content words; NaN without ``pairs``) and
        ``no_nonword`` (the share of texts without a :func:`nonwords` word; NaN without ``known``).

    Example:
        >>> texts = ["the rules are here", "the rules are here", "visa rules"]
        >>> v = variety(texts, [("visa?", "rules")] * 3, words=2, known=lexicon(["visa rules"]))
        >>> v["distinct"], v["opening"], round(v["opening_share"], 3), round(v["words"], 3), v["grounding"]
        (0.667, 'the rules', 0.667, 3.333, 1.0)
        >>> round(v["no_nonword"], 3)
        0.333
    """
    top = opening_shares(texts, words=words, k=1)
    scores = [grounding(t, q, p) for t, (q, p) in zip(texts, pairs, strict=True)] if pairs is not None else []
    found = [g for g in scores if g == g]  # NaN: no content words
    return {
        "texts": len(texts),
        "distinct": round(distinct_share(texts), 3),
        "opening": top[0][0] if top else "",
        "opening_share": top[0][1] if top else float("nan"),
        "words": sum(len(tokens(t)) for t in texts) / len(texts) if texts else float("nan"),
        "grounding": sum(found) / len(found) if found else float("nan"),
        "no_nonword": (
            sum(not nonwords(t, known) for t in texts) / len(texts)
            if known is not None and texts
            else float("nan")
        ),
    }

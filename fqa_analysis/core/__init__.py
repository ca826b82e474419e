"""Analysis core: pure functions on tables, no torch and no model in memory.

Ratings and their scale (:mod:`~fqa_analysis.core.ratings`), the candidate table contract
(:mod:`~fqa_analysis.core.candidates`), scoring and accuracy (:mod:`~fqa_analysis.core.scoring`,
:mod:`~fqa_analysis.core.metrics`), statistics (:mod:`~fqa_analysis.core.stats`), calibration,
threshold sweeps, text metrics, the reranking and "beyond" analyses, the report tables and
plots the book shows, and reading a results folder (:mod:`~fqa_analysis.core.results`). The
book imports only this layer and the data layer (and the pure
``models.reranker.pairs.feedback_item_sets``).
"""

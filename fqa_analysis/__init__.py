"""fqa_analysis: reproduce, test and extend the FeedbackQA evaluation (Li et al., 2022).

Layers, bottom to top (imports run downward only; ``tests/test_layers.py`` checks it):

- :mod:`fqa_analysis.errors`, :mod:`fqa_analysis.cache`, :mod:`fqa_analysis.profiling`:
  error types, content-keyed atomic artifacts, wall time and peak memory, used by every layer.
- :mod:`fqa_analysis.data`: the dataset's files, typed records, validation, fetch and check.
- :mod:`fqa_analysis.core`: the analysis core, pure functions on tables (no torch).
- :mod:`fqa_analysis.models`: RQA systems, rerankers, explainers.
- :mod:`fqa_analysis.stages`: ``fqa run rqa | rerank | explain | beyond``.
- :mod:`fqa_analysis.cli`: the ``fqa`` command.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]

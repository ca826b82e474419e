"""Stages of ``fqa run``: each orchestrates models and writes its tables into a results folder.

:mod:`~fqa_analysis.stages.rqa` (``fqa run rqa``), :mod:`~fqa_analysis.stages.relevance`
(``fqa run relevance``), :mod:`~fqa_analysis.stages.rerank` (``fqa run rerank``),
:mod:`~fqa_analysis.stages.explain` (``fqa run explain``), :mod:`~fqa_analysis.stages.beyond`
(``fqa run beyond``) and :mod:`~fqa_analysis.stages.explain_rate` (``fqa run explain_rate``). No
stage imports another; they share :mod:`~fqa_analysis.stages.manifest` (what every stage records)
and :mod:`~fqa_analysis.stages.outputs` (the candidate table's writer).
"""

"""Stages of ``fqa run``: each orchestrates models and writes its tables into a results folder.

:mod:`~fqa_analysis.stages.rqa` (``fqa run rqa``), :mod:`~fqa_analysis.stages.rerank`
(``fqa run rerank``), :mod:`~fqa_analysis.stages.explain` (``fqa run explain``) and
:mod:`~fqa_analysis.stages.beyond` (``fqa run beyond``).
"""

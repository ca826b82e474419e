"""Models: the RQA systems, the rerankers and the explainers; each trains, caches and predicts.

:mod:`~fqa_analysis.models.retrieval` holds the four RQA systems (and their score cache),
:mod:`~fqa_analysis.models.reranker` the feedback rerankers (a package by concept: the
cross-encoder and its cached lower layers, the trained network, rated pairs, the variants, their
inputs, content-keyed training and scoring, shared by four stages), :mod:`~fqa_analysis.models.explainer`
the explanation generator and its baselines, :mod:`~fqa_analysis.models.explanation_scoring` the
embedding similarity and consistency classifier that judge explanations, and
:mod:`~fqa_analysis.models.explain_rate` the explain-then-rate reranker, and
:mod:`~fqa_analysis.models.checkpoint` the training checkpoints every training loop resumes from.
"""

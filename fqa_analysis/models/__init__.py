"""Models: the RQA systems, the rerankers and the explainers; each trains, caches and predicts.

:mod:`~fqa_analysis.models.retrieval` holds the four RQA systems (and their score cache),
:mod:`~fqa_analysis.models.reranker` the feedback reranker (model, training, prediction),
:mod:`~fqa_analysis.models.reranker_data` the reranker's training examples built from feedback,
:mod:`~fqa_analysis.models.reranker_variants` the reranker variants, what each trains on and their
content-keyed training and scoring (shared by four stages), :mod:`~fqa_analysis.models.explainer`
the explanation generator and its baselines, :mod:`~fqa_analysis.models.explanation_scoring` the
embedding similarity and consistency classifier that judge explanations, and
:mod:`~fqa_analysis.models.explain_rate` the explain-then-rate reranker, and
:mod:`~fqa_analysis.models.checkpoint` the training checkpoints every training loop resumes from.
"""

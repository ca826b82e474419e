"""Models: the RQA systems, the rerankers and the explainers; each trains, caches and predicts.

:mod:`~fqa_analysis.models.retrieval` holds the four RQA systems,
:mod:`~fqa_analysis.models.reranker` the feedback reranker (model, training, prediction),
:mod:`~fqa_analysis.models.reranker_data` the reranker's training examples built from feedback,
and :mod:`~fqa_analysis.models.explainer` the explanation generator and its baselines.
"""

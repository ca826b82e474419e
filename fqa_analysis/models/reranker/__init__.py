"""The feedback rerankers: one module per concept, from the network to the stored scores.

Read in this order (each module imports only those above it):

* :mod:`~fqa_analysis.models.reranker.encoder`: the cross-encoder's settings (``RerankConfig``)
  and its lower layers, run once per distinct (question, passage) pair and cached (``PairStates``,
  ``encode_pairs``);
* :mod:`~fqa_analysis.models.reranker.network`: the trained part (the layers above them and the
  4-way rating head), its training loop and prediction;
* :mod:`~fqa_analysis.models.reranker.pairs`: rated pairs from feedback and pseudo-ratings, and
  each loss's targets (pure: no torch);
* :mod:`~fqa_analysis.models.reranker.variants`: the study's variants (one ``Variant`` record
  each) and the stage settings they share (``RerankRunConfig``);
* :mod:`~fqa_analysis.models.reranker.inputs`: what a variant trains and scores on (the
  training sources, the RQA systems' candidates, feedback_test);
* :mod:`~fqa_analysis.models.reranker.store`: content-keyed training (``train_or_load``), the
  relevance model and the warm starts from it, each returning a ``TrainedModel``;
* :mod:`~fqa_analysis.models.reranker.scoring`: P_phi of a trained model, each pair scored once
  and stored beside its weights, and the rounding ``results/`` stores.
"""

__all__: list[str] = []

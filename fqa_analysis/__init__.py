"""fqa_analysis: reproduce, test and extend the FeedbackQA evaluation (Li et al., 2022).

Modules, bottom to top: ``data`` (files, records, frames), ``ratings``, ``candidates``
(the results contract), ``scoring``, ``metrics``, ``stats`` and ``plots`` (pure, no models),
then ``fetch``, ``datacheck`` and ``cli``.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]

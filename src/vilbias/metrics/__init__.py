"""Metrics, in one home that training and evaluation both import.

- :mod:`vilbias.metrics.scores`: closed-ended metrics through packaged ``evaluate`` modules
  (``accuracy/``, ``precision/``, ``recall/``, ``f1/``, ``confusion_matrix/``, and
  ``closed_ended/`` with all of them in one computation; loaded by path so they work offline), open-ended percentages with bootstrap intervals, mean ± std over folds.
- :mod:`vilbias.metrics.label_metric`: the metrics those modules' thin scripts import.
- :mod:`vilbias.metrics.agreement`: Cohen's kappa and Krippendorff's alpha.
- :mod:`vilbias.metrics.plots`: the confusion-matrix figure.
"""

"""vilbias: BiasCorpus — bias in multimodal news, as a Hugging Face dataset with its pipeline,
baselines, evaluation and demo.

The pipeline stages are modules named after them: :mod:`vilbias.ingest`,
:mod:`vilbias.annotate`, :mod:`vilbias.review`, :mod:`vilbias.build`, :mod:`vilbias.publish`,
:mod:`vilbias.train`, :mod:`vilbias.evaluate` and :mod:`vilbias.demo`. Each is a function taking a
config dataclass; the ``vilbias`` command builds the same config from its flags.
"""

__version__ = "0.1.0"

LABEL_NAMES = ["not_biased", "biased"]
"""ClassLabel names, index = class id. ``multimodal_label`` is the task label."""

REVIEW_VERDICTS = ["acceptable", "needs_improvement", "incorrect", "unreviewed"]

QUESTION = "Does this content exhibit bias? Please explain your reasoning."
"""The question Q of the task (DESIGN §1), asked in the ``sft`` config and by the Space."""

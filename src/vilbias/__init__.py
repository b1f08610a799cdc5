"""vilbias: BiasCorpus — bias in multimodal news, as a Hugging Face dataset with its pipeline,
baselines, evaluation and demo.

The pipeline stages are subpackages named after them: :mod:`vilbias.ingest`,
:mod:`vilbias.annotate`, :mod:`vilbias.review`, :mod:`vilbias.corpus` (``vilbias build``) and
:mod:`vilbias.publish`; then :mod:`vilbias.training`, :mod:`vilbias.evaluate` and the Space,
:mod:`vilbias.spaces` (``vilbias demo``). Each stage is a function taking a config dataclass;
the ``vilbias`` command builds the same config from its flags. The task itself (labels,
question, answer format) is :mod:`vilbias.task`; model clients are :mod:`vilbias.models`;
metrics are :mod:`vilbias.metrics`. ``docs/architecture.md`` draws the layers.
"""

__version__ = "0.1.0"

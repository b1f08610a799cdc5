"""The sentence model's task in ``transformers.pipeline``: after ``import vilbias``, ::

    from transformers import pipeline
    detector = pipeline("media-bias", model="training/default_model")   # or a Hub repo id
    detector("Officials unveil the plan. Critics slammed the reckless scheme.")
    # {"label": ..., "score": ..., "probability": ..., "sentences": [...], ...}

runs :class:`~vilbias.models.custom_code.pipeline_sentence_bias.MediaBiasPipeline` on the model
``AutoModel`` loads (vilbias's :class:`~vilbias.models.sentence_bias.SentenceBiasModel`, on the
runtime its config names). Without vilbias, a checkpoint's ``config.json`` names the same
pipeline for the Hub's task (``custom_pipelines``): ``pipeline("text-classification",
model=repo, trust_remote_code=True)``.

:mod:`vilbias` calls :func:`register_pipelines` when ``transformers`` has loaded its pipelines
module; this module imports nothing heavy, so that call never waits on (or circles back into) the
model modules.
"""

from __future__ import annotations

PIPELINE_TASK = "media-bias"
"""The task vilbias registers. Not the Hub's ``text-classification`` (the key of a checkpoint's
``custom_pipelines``): a package that took that name would replace transformers' own pipeline for
every model, and a task a checkpoint's ``custom_pipelines`` names asks for ``trust_remote_code``
even where it is registered."""
PIPELINE_CLASS = "vilbias.models.custom_code.pipeline_sentence_bias.MediaBiasPipeline"


def register_pipelines() -> None:
    """Add :data:`PIPELINE_TASK` to ``transformers``' ``PIPELINE_REGISTRY``: its pipeline class by
    dotted path, read at the first ``pipeline(PIPELINE_TASK, ...)``, and ``AutoModel`` to load the
    checkpoint."""
    # imported when called: this runs as transformers finishes loading its pipelines module
    from transformers import AutoModel
    from transformers.pipelines import PIPELINE_REGISTRY

    # By dotted path, as transformers declares its own tasks (SUPPORTED_TASKS): register_pipeline
    # wants the class, and importing the pipeline's module here, as transformers' pipelines module
    # loads, could circle back into a module that is still being imported.
    PIPELINE_REGISTRY.supported_tasks[PIPELINE_TASK] = {"impl": PIPELINE_CLASS, "pt": (AutoModel,), "type": "text"}

"""Our checkpoints in ``transformers``' Auto classes: ``AutoModel.from_pretrained(folder or repo id)``
loads a sentence-bias model or a fusion classifier after ``import vilbias``.

:mod:`vilbias` calls :func:`register_auto_models` when ``transformers`` loads the ``AutoModel``
classes (and :func:`vilbias.models.configs.register_auto_configs` when it loads ``AutoConfig``), so
neither ``import vilbias`` nor a run that never touches the Auto classes pays for torch.
"""

from __future__ import annotations

from vilbias.models.configs import register_auto_configs
from vilbias.models.fusion import FusionForClassification
from vilbias.models.sentence_bias import SentenceBiasModel


def register_auto_models() -> None:
    """Register our checkpoints' models with ``AutoModel`` (and the fusion classifier with
    ``AutoModelForSequenceClassification``), their configs with ``AutoConfig`` first."""
    # the Auto classes' module is the one whose loading calls this; from the top, importing it
    # would call back into this half-loaded module
    from transformers import AutoModel, AutoModelForSequenceClassification

    register_auto_configs()
    for model in (SentenceBiasModel, FusionForClassification):
        AutoModel.register(model.config_class, model, exist_ok=True)
    AutoModelForSequenceClassification.register(FusionForClassification.config_class, FusionForClassification, exist_ok=True)

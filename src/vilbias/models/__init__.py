"""The model layer: every model the project talks to, in one place.

- :mod:`vilbias.models.catalogue`: the one way to name a model (``openai:MODEL@URL``,
  ``smollm2``, ``transformers:MODEL``, a checkpoint path or Hub id, or the YAML form of any of
  them) and the one loader for every kind (``load_model``, ``load_chat_backend``). Annotation,
  the LLM judge, evaluation and the stereotype audit load their models there; the Space and
  evaluation's local classifiers get predictors from it (``load_predictor``).
- :mod:`vilbias.models.predictors`: the one predictor protocol (``predict(item) -> ModelOutput``)
  for the local models that label an item: the sentence model, the fusion classifier (with its
  temperature) and a VLM (sampled answers, vote share).
- :mod:`vilbias.models.chat`: chat backends behind one ``ChatBackend`` protocol — an
  OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama, OpenAI), a local transformers model,
  and the embedded SmolLM2 GGUF.
- :mod:`vilbias.models.vlm`: load a (fine-tuned, adapter, 4-bit) VLM and generate task answers.
- :mod:`vilbias.models.fusion`, :mod:`vilbias.models.image_encoders`: the text+image fusion
  classifier and its image encoders (EfficientNet-Lite0 built in code, CLIP by Hub id).
- :mod:`vilbias.models.sentence_bias`: the sentence-level bias model (MiniLM + LoRA, word and
  sentence heads, the article rule) that the Space ships as its offline default.

Every checkpoint vilbias writes is a ``transformers`` ``PreTrainedModel`` whose config is in
:mod:`vilbias.models.configs`, registered with ``AutoConfig``/``AutoModel`` (see
:func:`register_auto_models`): ``AutoModel.from_pretrained(folder or repo id)`` loads it after
``import vilbias``, and ``push_to_hub`` publishes it.

torch, transformers and peft are imported where they are used, so that importing this package
stays cheap for the stages that only need the HTTP client.
"""


def register_auto_configs() -> None:
    """Register the configs of our checkpoints (:data:`vilbias.models.configs.CONFIGS`) with
    ``AutoConfig``. :mod:`vilbias` calls it when ``transformers`` loads ``AutoConfig``."""
    from transformers import AutoConfig

    from vilbias.models.configs import CONFIGS

    for config in CONFIGS.values():
        AutoConfig.register(config.model_type, config, exist_ok=True)


def register_auto_models() -> None:
    """Register our checkpoints' models with ``AutoModel`` (and the fusion classifier with
    ``AutoModelForSequenceClassification``). :mod:`vilbias` calls it when ``transformers``
    loads the ``AutoModel`` classes, so ``AutoModel.from_pretrained(folder)`` loads them."""
    from transformers import AutoModel, AutoModelForSequenceClassification

    from vilbias.models.fusion import FusionForClassification
    from vilbias.models.sentence_bias import SentenceBiasModel

    register_auto_configs()
    for model in (SentenceBiasModel, FusionForClassification):
        AutoModel.register(model.config_class, model, exist_ok=True)
    AutoModelForSequenceClassification.register(FusionForClassification.config_class, FusionForClassification, exist_ok=True)

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
:func:`vilbias.models.auto.register_auto_models`): ``AutoModel.from_pretrained(folder or repo id)`` loads it after
``import vilbias``, and ``push_to_hub`` publishes it.

torch, transformers and peft load only with the modules that use them, so that importing this
package stays cheap for the stages that only need the HTTP client. The names of those modules
that the light ones (the catalogue, the predictors) hand on are declared below, once: they are
imported on first use (:mod:`vilbias.lazy`), so the catalogue imports this package at its top and
reads ``models.SentenceBiasModel`` where it loads one.
"""

from vilbias.lazy import attach

_import_structure = {
    "auto": ["register_auto_models"],  # torch: both models below
    "configs": ["CONFIGS", "INFERENCE_PRECISIONS", "INFERENCE_RUNTIMES", "MINILM", "register_auto_configs"],  # transformers
    "efficientnet_lite": ["EfficientNetLite0"],  # torch
    "fusion": ["FusionForClassification"],  # torch
    "pipelines": ["PIPELINE_TASK", "register_pipelines"],  # transformers' pipelines module, when it loads
    "sentence_bias": ["SentenceBiasModel", "article_score"],  # torch
    "vlm": ["generate_answers", "load_vlm"],  # huggingface_hub; torch inside
}
__getattr__, __dir__, __all__ = attach(__name__, _import_structure)

# `import vilbias` imports this package and must not load `typing`: the constant type checkers
# read as `typing.TYPE_CHECKING` (False at run time)
TYPE_CHECKING = False
if TYPE_CHECKING:  # the same names, for editors and type checkers (tests/test_lazy.py keeps the two equal)
    from vilbias.models.auto import register_auto_models
    from vilbias.models.configs import (
        CONFIGS,
        INFERENCE_PRECISIONS,
        INFERENCE_RUNTIMES,
        MINILM,
        register_auto_configs,
    )
    from vilbias.models.efficientnet_lite import EfficientNetLite0
    from vilbias.models.fusion import FusionForClassification
    from vilbias.models.pipelines import PIPELINE_TASK, register_pipelines
    from vilbias.models.sentence_bias import SentenceBiasModel, article_score
    from vilbias.models.vlm import generate_answers, load_vlm

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

torch, transformers and peft are imported where they are used, so that importing this package
stays cheap for the stages that only need the HTTP client.
"""

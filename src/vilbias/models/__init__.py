"""The model layer: every model the project talks to, in one place.

- :mod:`vilbias.models.chat`: chat backends behind one ``ChatBackend`` protocol — an
  OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama, OpenAI), a local transformers model,
  and the embedded SmolLM2 GGUF — plus :func:`~vilbias.models.chat.load_backend` for a spec dict
  and :func:`~vilbias.models.chat.parse_spec` for a ``kind:model@url`` string. Annotation, the
  LLM judge, generative evaluation and the Space use them.
- :mod:`vilbias.models.vlm`: load a (fine-tuned, adapter, 4-bit) VLM and generate task answers.
- :mod:`vilbias.models.fusion`, :mod:`vilbias.models.image_encoders`: the text+image fusion
  classifier and its image encoders (EfficientNet-Lite0 built in code, CLIP by Hub id).

torch, transformers and peft are imported where they are used, so that importing this package
stays cheap for the stages that only need the HTTP client.
"""

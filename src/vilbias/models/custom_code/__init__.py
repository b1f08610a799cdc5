"""The sentence model's code as a checkpoint carries it: ``configuration_sentence_bias.py``,
``modeling_sentence_bias.py`` and ``pipeline_sentence_bias.py`` are copied beside the weights by
``SentenceBiasModel.save_pretrained`` and named in its ``config.json`` (``auto_map``,
``custom_pipelines``), so ``transformers`` loads the checkpoint with ``trust_remote_code=True``
where vilbias is not installed.

The rule of this folder: its modules import the standard library, torch, transformers and
pysbd, and each other by relative imports only, never vilbias (a test holds them to it). vilbias
builds on them (:mod:`vilbias.models.configs` re-exports the config, :mod:`vilbias.models.sentence_bias`
subclasses the model for training and its runtimes); nothing is imported here, so importing
the config does not import torch.
"""

"""Publish stage: versioned dataset releases, model repos and the Space on the Hub.

- :mod:`vilbias.publish.dataset` — ``vilbias publish dataset``: one commit per release, tagged
  ``vX.Y.Z``, with a changelog against the previous tag rendered into the card.
- :mod:`vilbias.publish.model` — :func:`push_model` / ``vilbias publish model``: weights or
  adapters, processor/tokenizer and a model card from ``templates/model_card.md``.
- :mod:`vilbias.publish.space` — ``vilbias publish space``: the Gradio Space folder.
- :mod:`vilbias.publish.changelog` — the pure changelog computation and its card rendering.
"""

"""The Gradio Space (app.py) and the ``vilbias demo`` command.

:class:`~vilbias.spaces.config.DemoConfig` is light (``vilbias demo --help`` parses it); the app, its
inputs and predictors load gradio's world (httpx, PIL, the model catalogue) and are imported when
first read from this map.
"""

from vilbias.lazy import attach

__getattr__, __dir__, __all__ = attach(__name__, {
    "config": ["DemoConfig"],  # light
    "app": ["SpaceConfig", "serve"],  # the app: gradio and torch inside its functions
    "inputs": ["Limits"],  # httpx, PIL
})

"""The Gradio Space (app.py) and the ``vilbias demo`` command.

:class:`~vilbias.spaces.config.DemoConfig` is light (``vilbias demo --help`` parses it); the app, its
inputs and predictors load gradio's world (httpx, PIL, the model catalogue) and are imported when
first read from this map.
"""

from typing import TYPE_CHECKING

from vilbias.lazy import attach

_import_structure = {
    "config": ["DemoConfig", "SpaceConfig"],  # light
    "app": ["serve"],  # the app: gradio and torch inside its functions
    "inputs": ["Limits"],  # httpx, PIL
}
__getattr__, __dir__, __all__ = attach(__name__, _import_structure)

if TYPE_CHECKING:  # the same names, for editors and type checkers (tests/test_lazy.py keeps the two equal)
    from vilbias.spaces.app import serve
    from vilbias.spaces.config import DemoConfig, SpaceConfig
    from vilbias.spaces.inputs import Limits

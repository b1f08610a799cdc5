"""vilbias: BiasCorpus — bias in multimodal news, as a Hugging Face dataset with its pipeline,
baselines, evaluation and demo.

The pipeline stages are subpackages named after them: :mod:`vilbias.ingest`,
:mod:`vilbias.annotate`, :mod:`vilbias.review`, :mod:`vilbias.corpus` (``vilbias build``) and
:mod:`vilbias.publish`; then :mod:`vilbias.training`, :mod:`vilbias.evaluate` and the Space,
:mod:`vilbias.spaces` (``vilbias demo``). Each stage is a function taking a config dataclass;
the ``vilbias`` command builds the same config from its flags. The task itself (labels,
question, answer format) is :mod:`vilbias.task`; model clients are :mod:`vilbias.models`;
metrics are :mod:`vilbias.metrics`. ``docs/architecture.md`` draws the layers.
"""

__version__ = "0.1.0"


# -- registration with transformers' Auto classes ------------------------------------------------
# Our checkpoints (vilbias.models.configs) must load through AutoConfig / AutoModel after
# `import vilbias`, but importing transformers' auto modules costs a torch import (~4 s) that
# `import vilbias` does not pay. So registration waits for transformers: it runs as soon as
# transformers has loaded its AutoConfig / AutoModel module (at once if it already has).

import sys as _sys

# light: the torch-backed names it hands on load on first use (its lazy map)
from vilbias import models as _models

_AUTO_MODULES = {
    "transformers.models.auto.configuration_auto": "register_auto_configs",
    "transformers.models.auto.modeling_auto": "register_auto_models",
    "transformers.pipelines": "register_pipelines",  # the sentence model's task for transformers.pipeline
}


def _register(module_name: str) -> None:
    getattr(_models, _AUTO_MODULES[module_name])()


class _RegisterAfterLoading:
    """Wraps the loader of one of transformers' auto modules: runs it, then registers."""

    def __init__(self, loader, name: str):
        self._loader, self._name = loader, name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module) -> None:
        module.__loader__ = module.__spec__.loader = self._loader  # transformers sees its own loader
        self._loader.exec_module(module)
        _register(self._name)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _AutoRegistration:
    """A ``sys.meta_path`` finder that only watches for transformers' two auto modules."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in _AUTO_MODULES:
            return None
        for finder in _sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None:
                    spec.loader = _RegisterAfterLoading(spec.loader, fullname)
                return spec
        return None


if not any(isinstance(f, _AutoRegistration) for f in _sys.meta_path):
    _sys.meta_path.insert(0, _AutoRegistration())
for _name in _AUTO_MODULES:
    if _name in _sys.modules:
        _register(_name)

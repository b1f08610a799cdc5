"""Where vilbias's laziness is declared: one map per package of the names whose modules load on first use.

A package whose public names live in heavy modules (torch, ``datasets``, gradio) declares them once,
module by module, as ``transformers`` does with ``_import_structure`` and its ``_LazyModule``::

    from vilbias.lazy import attach

    __getattr__, __dir__, __all__ = attach(__name__, {
        "config": ["DEFAULT_OUTPUT", "BuildConfig"],
        "pipeline": ["build", "format_report"],
    })

``package.build`` (or ``from package import build``) imports ``package.pipeline`` when it is first
asked for, through the module ``__getattr__`` of PEP 562; importing the package imports none of
them (the map is its whole public face, and its ``__all__``). A module of the package that needs a
heavy name imports the package at its top (``from vilbias import models``) and reads
``models.SentenceBiasModel`` where it runs: the import sits at the top, the cost is paid on use, and
the map is the one place that says which modules are deferred. ``transformers``' own
``_LazyModule`` is not used because importing it loads ``transformers.utils`` (seconds), which
``import vilbias`` and the light command lines must not pay.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence

# no `typing` here: `import vilbias` imports this module (through vilbias.models) and stays at the
# standard library's bare minimum


def attach(package: str, structure: Mapping[str, Sequence[str]]) -> tuple[Callable[[str], object], Callable[[], list[str]], list[str]]:
    """The ``__getattr__``, ``__dir__`` and ``__all__`` of ``package`` whose names ``structure``
    declares (submodule, relative to ``package`` -> the names it defines).

    A name is imported from its submodule the first time it is read and then kept in the
    package's namespace, so later reads cost a dictionary lookup.

    Raises:
        ValueError: two submodules declare the same name.
    """
    where: dict[str, str] = {}
    for module, names in structure.items():
        for name in names:
            if name in where:
                raise ValueError(f"{package}: {name!r} is declared by both {where[name]!r} and {module!r}")
            where[name] = module

    def __getattr__(name: str) -> object:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{where[name]}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(where))

    return __getattr__, __dir__, sorted(where)

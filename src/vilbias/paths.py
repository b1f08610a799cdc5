"""Whether a ``--dataset`` names a local folder or a Hub repo, decided once for every stage.

A name that looks local (``./``, ``../``, ``/``, ``~``, a backslash, more than one ``/``, or a
path whose parent folder exists) is a local folder and is never sent to the Hub; anything else is
a Hub repo id, looked up with one request before any loading starts, so a typo is one line within
a second or two rather than a minute of retries::

    from vilbias.paths import resolve_dataset
    resolve_dataset("./BiasCorpus")            # "/abs/.../BiasCorpus", or FileNotFoundError in one line
    resolve_dataset("org/BiasCorpus", "v1.0")  # "org/BiasCorpus", once the Hub has answered

This module imports only ``huggingface_hub`` (inside the function), so a command line can call it
before its heavy libraries load.
"""

from __future__ import annotations

import difflib
from pathlib import Path

HUB_LOOKUP_TIMEOUT_S = 10.0
"""The one Hub request's budget: an answer takes well under a second, an unreachable host fails at once."""


def looks_local(name: str) -> bool:
    """Whether ``name`` is meant as a local path rather than a Hub id (``ORG/NAME`` or ``NAME``)."""
    path = Path(name).expanduser()
    return (path.exists() or name.startswith((".", "/", "~")) or name.count("/") > 1 or "\\" in name
            # `outputs/nothing` beside an existing `outputs/`: a folder that is not there, not a Hub repo
            or ("/" in name and path.parent.is_dir()))


def _near(name: str) -> str:
    """`` (did you mean X?)`` for a folder beside ``name`` whose name is close to its last part, else ''."""
    path = Path(name).expanduser()
    if not path.parent.is_dir():
        return ""
    siblings = [p.name for p in path.parent.iterdir() if p.is_dir()]
    close = difflib.get_close_matches(path.name, siblings, n=1, cutoff=0.75)
    if not close:
        return ""
    head = name[:len(name) - len(path.name)] if name.endswith(path.name) else f"{path.parent}/"
    return f" (did you mean {head or './'}{close[0]}?)"


def resolve_dataset(name: str, revision: str | None = None, *, what: str = "--dataset") -> str:
    """The local folder or Hub repo id ``name`` stands for, checked before anything is loaded.

    Args:
        name: a dataset folder (as ``vilbias build`` writes it) or a Hub repo id.
        revision: the Hub revision to look for (ignored for a folder).
        what: how the message names the option.

    Returns:
        The folder's path with ``~`` expanded, or the repo id as given.

    Raises:
        FileNotFoundError: in one line, saying what ``name`` was taken for: a local folder that does
            not exist, a Hub repo (or revision) that does not exist, or a Hub that cannot be reached.
    """
    path = Path(name).expanduser()
    if looks_local(name):
        if not path.is_dir():
            state = "is not a folder" if path.exists() else "does not exist"
            raise FileNotFoundError(f"{what} {name} was taken for a local folder and {state}{_near(name)}: "
                                    "give the folder `vilbias build` wrote, or a Hub repo id ORG/NAME")
        return str(path)
    from huggingface_hub import HfApi, constants, errors

    if constants.HF_HUB_OFFLINE:
        return name  # no lookup offline: `datasets` reads its cache, or says in one line that it cannot
    local_too = f"; there is no local folder {name} either" if "/" in name else \
        f"; there is no local folder ./{name} either{_near(name)}"
    api = HfApi()
    try:
        api.dataset_info(name, revision=revision, timeout=HUB_LOOKUP_TIMEOUT_S)
    except errors.RevisionNotFoundError:
        raise FileNotFoundError(f"{what} {name} was taken for a Hub repo id; it has no revision {revision}") from None
    except errors.RepositoryNotFoundError:
        raise FileNotFoundError(f"{what} {name} was taken for a Hub repo id and there is no such dataset at "
                                f"{api.endpoint} (or it is private and no token was given){local_too}") from None
    # errors.HTTPError: the HTTP client's own base (huggingface_hub's client, whichever it is), which
    # covers a refused or unresolvable host, a timeout and any other status the Hub answers.
    except (errors.HTTPError, OSError) as e:
        raise FileNotFoundError(f"{what} {name} was taken for a Hub repo id and the Hub at {api.endpoint} cannot be "
                                f"reached ({_reason(e)}){local_too}") from None
    return name


def _reason(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__

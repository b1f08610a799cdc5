"""Where a command may write: a folder the user names is vilbias's only when vilbias wrote it.

A command that writes into a folder the user names owns only the files it writes there, as
``git clean`` needs ``-f`` and ``rsync`` deletes only with ``--delete``. Before anything is
written, every such command asks :func:`claim_output` about its folder:

- missing, or an empty folder: the command's to fill;
- a folder holding one of the files the command itself writes (its ``signs``: a build's
  ``build_report.json``, a run's ``*_config.yaml`` or store): the command's earlier output, which
  it resumes (files beside it are left alone) or, for a command that ``replaces`` its output as
  a whole (``vilbias build``), swaps out, provided everything in it is something that command
  writes;
- anything else: a user's files, a ``.git``, the home folder, the current folder for a command
  that replaces its output, a file where a folder belongs. It is refused in one line
  (:class:`OutputRefused`, a ``ValueError``, so the command line prints it as one) that names the
  first foreign path and the way out.

The check writes nothing; it is the same rule for every command::

    from vilbias.outputs import claim_output
    claim_output(config.output, "vilbias evaluate", signs=("evaluation.sqlite", "evaluate_config.yaml"))

A file written whole (``vilbias audit space --output space.json``) goes through :func:`claim_file`.
This module imports only the standard library.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Iterable
from pathlib import Path


class OutputRefused(ValueError):
    """The folder (or file) a command was told to write holds something that command did not write."""


def _shown(path: Path, given: str | os.PathLike) -> str:
    return str(given) if str(given) else str(path)


def _refuse_special(path: Path, given: str | os.PathLike, command: str, flag: str) -> None:
    if path == Path.home().resolve() or path == Path(path.anchor):
        where = "your home folder" if path == Path.home().resolve() else "the filesystem root"
        raise OutputRefused(f"{flag} {_shown(path, given)} is {where}: {command} writes into a folder of its own; "
                            f"name a new one, e.g. {flag} {_shown(path, given).rstrip('/')}/vilbias-output")


def claim_output(path: str | os.PathLike, command: str, *, signs: Iterable[str], replaces: Iterable[str] | None = None,
                 flag: str = "--output") -> Path:
    """Check that ``command`` may write into the folder ``path``; refuse in one line if not.

    Args:
        path: the folder as the user named it.
        command: the command as the user types it (``"vilbias build"``), for the message.
        signs: names (globs) of files or folders the command writes at the top of its folder; any of
            them there makes the folder the command's earlier output.
        replaces: for a command that swaps its whole folder for a new one: globs of every path it
            writes, relative to the folder (``data/*.parquet``). A folder holding anything else is
            refused even when it is an earlier output, and the current folder (or one holding
            it) is refused, since it cannot be swapped from under the shell standing in it.
        flag: how the message names the option (``--workdir``).

    Returns:
        ``path`` resolved.

    Raises:
        OutputRefused: ``path`` is a file, the home folder or the root, the current folder
            (``replaces``), or a non-empty folder that is not the command's own; the message names
            the first foreign path and what to do.
    """
    path_given, path = path, Path(path).expanduser().resolve()
    shown = _shown(path, path_given)
    _refuse_special(path, path_given, command, flag)
    if path.exists() and not path.is_dir():
        raise OutputRefused(f"{flag} {shown} is a file, not a folder: {command} writes a folder there; name another {flag}")
    if replaces is not None and path.is_dir() and Path.cwd().resolve().is_relative_to(path):
        raise OutputRefused(f"{flag} {shown} is the current folder (or holds it): {command} replaces its output folder "
                            f"as a whole; name a folder of its own, e.g. {flag} BiasCorpus")
    if not path.is_dir():
        return path
    entries = sorted(os.listdir(path))
    if not entries:
        return path
    signs = tuple(signs)
    if not any(fnmatch.filter(entries, sign) for sign in signs):
        more = f" (and {len(entries) - 1} more)" if len(entries) > 1 else ""
        raise OutputRefused(f"{flag} {shown} holds {Path(shown) / entries[0]}{more}, which {command} did not write: it "
                            f"writes only into a new or empty folder or its own earlier output; name another {flag}")
    if replaces is not None:
        patterns = tuple(replaces)
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(dirs) + sorted(files):
                relative = (Path(root) / name).relative_to(path).as_posix()
                if not any(fnmatch.fnmatchcase(relative, p) for p in patterns):
                    raise OutputRefused(
                        f"{flag} {shown} holds an earlier output of {command}, and also {Path(shown) / relative}, which "
                        f"{command} did not write; it replaces the whole folder, so move that out of it or name "
                        f"another {flag}")
    return path


def claim_file(path: str | os.PathLike, command: str, *, written_by: Callable[[Path], bool], flag: str = "--output") -> Path:
    """Check that ``command`` may write the file ``path`` whole: it is new, or ``written_by(path)``
    recognises the command's own earlier file.

    Raises:
        OutputRefused: ``path`` is a folder, or an existing file the command did not write.
    """
    path_given, path = path, Path(path).expanduser().resolve()
    shown = _shown(path, path_given)
    if path.is_dir():
        raise OutputRefused(f"{flag} {shown} is a folder: {command} writes a file there; name a file")
    if path.exists() and not written_by(path):
        raise OutputRefused(f"{flag} {shown} exists and is not a file {command} wrote; it does not overwrite it: "
                            f"name a new file as {flag}")
    return path

"""Where a command may write, and how: only into a folder that is its own, one writer at a time,
files written whole, and a full disk said in one line.

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

It is the same rule for every command::

    from vilbias.outputs import claim_output
    claim_output(config.output, "vilbias evaluate", signs=("evaluation.sqlite", "evaluate_config.yaml"))

A file written whole (``vilbias audit space --output space.json``) goes through :func:`claim_file`.

**One writer per folder.** A folder that passes the check is then taken for the command with its
writer lock, ``<folder>/.vilbias.lock`` (:data:`LOCK_FILE`; :func:`hold` takes it for a folder a
command checks in its own way, as ``review export`` does). It is a :mod:`filelock` lock, i.e.
``flock``: the kernel releases it when the process ends, however it ends. Inside
:func:`writing` it is held until the block ends (the ``vilbias`` command runs every stage in one,
and the stage functions open their own); outside one, a Python caller only checks that no other
command holds it. A second command on the same folder waits up to :data:`LOCK_WAIT` seconds, then
refuses in one line naming the other (:class:`FolderBusy`: its command line and process id, which
the holder writes into the lock file). The lock file is vilbias's, not the user's: the claim does
not count it, ``publish`` does not upload it (``*.lock``), and it is removed when the command ends
(with the folder, when the lock alone created it); a command that finds it gone once it holds it
takes the new one.

**Files written whole.** :func:`atomic_write` (and :func:`atomic_file` for a stream) writes a
temporary file beside the target and renames it over it: readers see the old content or the new,
never a mix, and a failed write (a full disk, a stop) leaves the old file and no temporary. The new
file gets the permissions the user's umask gives any new file (an existing file keeps its own),
not the ``0600`` of :func:`tempfile.mkstemp`.

**A full disk** (``ENOSPC``, SQLite's ``SQLITE_FULL``) inside :func:`writing` or
:func:`vilbias.stops.on_stop` becomes :class:`DiskFull`, which the command line prints as one
line naming the folder, the space free, roughly what the step needed (the file being written, a
stage's own estimate given with :func:`expect_bytes`, or at least what was free when the command
started) and what was kept (the stage's own sentence, as for a stop).

This module imports only the standard library and ``filelock``.

Why this module is long: the rules every writing command follows (whose folder it is, one writer
at a time, files written whole with the umask's mode, a full disk in one line) meet at one call,
:func:`claim_output`; kept together so a new command gets all of them by calling it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import fnmatch
import json
import logging
import os
import re
import secrets
import shlex
import shutil
import socket
import sqlite3
import stat
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

logger = logging.getLogger(__name__)

LOCK_FILE = ".vilbias.lock"
"""A folder's writer lock, inside the folder (see the module docstring)."""
LOCK_WAIT = 10.0
"""Seconds a command waits for another command's lock on its folder before it refuses."""


class OutputRefused(ValueError):
    """The folder (or file) a command was told to write holds something that command did not write."""


class FolderBusy(OutputRefused):
    """Another command holds the folder's writer lock (the message names it)."""


def _shown(path: Path, given: str | os.PathLike) -> str:
    return str(given) if str(given) else str(path)


def _refuse_special(path: Path, given: str | os.PathLike, command: str, flag: str) -> None:
    if path == Path.home().resolve() or path == Path(path.anchor):
        where = "your home folder" if path == Path.home().resolve() else "the filesystem root"
        raise OutputRefused(f"{flag} {_shown(path, given)} is {where}: {command} writes into a folder of its own; "
                            f"name a new one, e.g. {flag} {_shown(path, given).rstrip('/')}/vilbias-output")


def claim_output(path: str | os.PathLike, command: str, *, signs: Iterable[str], replaces: Iterable[str] | None = None,
                 flag: str = "--output") -> Path:
    """Check that ``command`` may write into the folder ``path``, refusing in one line if not, then
    take the folder's writer lock (:func:`hold`).

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
            the first foreign path and what to do. :class:`FolderBusy` (one) when another command
            holds the folder's lock past :data:`LOCK_WAIT`.
    """
    signs, replaces = tuple(signs), None if replaces is None else tuple(replaces)
    resolved = _check_output(path, command, signs, replaces, flag)
    if hold(path, command, flag=flag):
        _check_output(path, command, signs, replaces, flag)  # the other command may have changed it meanwhile
    return resolved


def _check_output(path_given: str | os.PathLike, command: str, signs: tuple[str, ...], replaces: tuple[str, ...] | None,
                  flag: str) -> Path:
    path = Path(path_given).expanduser().resolve()
    shown = _shown(path, path_given)
    _refuse_special(path, path_given, command, flag)
    if path.exists() and not path.is_dir():
        raise OutputRefused(f"{flag} {shown} is a file, not a folder: {command} writes a folder there; name another {flag}")
    if replaces is not None and path.is_dir() and Path.cwd().resolve().is_relative_to(path):
        raise OutputRefused(f"{flag} {shown} is the current folder (or holds it): {command} replaces its output folder "
                            f"as a whole; name a folder of its own, e.g. {flag} BiasCorpus")
    if not path.is_dir():
        return path
    entries = sorted(e for e in os.listdir(path) if e != LOCK_FILE)
    if not entries:
        return path
    if not any(fnmatch.filter(entries, sign) for sign in signs):
        more = f" (and {len(entries) - 1} more)" if len(entries) > 1 else ""
        raise OutputRefused(f"{flag} {shown} holds {Path(shown) / entries[0]}{more}, which {command} did not write: it "
                            f"writes only into a new or empty folder or its own earlier output; name another {flag}")
    if replaces is not None:
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(dirs) + sorted(files):
                relative = (Path(root) / name).relative_to(path).as_posix()
                if relative != LOCK_FILE and not any(fnmatch.fnmatchcase(relative, p) for p in replaces):
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


# -- one writer per folder ------------------------------------------------------------------------


@dataclass
class _Hold:
    """A folder this process writes, held until the :func:`writing` block that took it ends."""

    path: Path
    shown: str
    command: str
    lock: _FolderLock | None
    """None where the filesystem has no locks."""
    created: list[Path]
    """Folders made to hold the lock (the folder and any missing parents): removed again at the end
    when nothing but the lock is in them."""
    free_at_start: int | None
    expected: int | None = None
    """Bytes the stage said it would write (:func:`expect_bytes`)."""


_scopes: list[dict[Path, _Hold]] = []
_guard = threading.RLock()


def _held(path: Path) -> _Hold | None:
    with _guard:
        return next((scope[path] for scope in _scopes if path in scope), None)


def _holds() -> list[_Hold]:
    """The folders held now, innermost block first."""
    with _guard:
        return [h for scope in reversed(_scopes) for h in reversed(scope.values())]


@contextlib.contextmanager
def writing() -> Iterator[None]:
    """A command's time as a writer: every folder claimed inside (:func:`claim_output`, :func:`hold`)
    stays locked until the block ends, on every path out of it, and a full disk inside becomes
    :class:`DiskFull` naming them. Blocks nest; a folder already held by an outer one is not taken
    twice."""
    scope: dict[Path, _Hold] = {}
    with _guard:
        _scopes.append(scope)
    try:
        yield
    except DiskFull:
        raise
    except BaseException as e:
        if is_disk_full(e):
            raise disk_full(e) from e
        raise
    finally:
        with _guard:
            _scopes.remove(scope)
        for h in reversed(scope.values()):
            _release(h)


def hold(path: str | os.PathLike, command: str, *, flag: str = "--output") -> bool:
    """Take the writer lock of the folder ``path`` for ``command`` until the enclosing
    :func:`writing` block ends (creating the folder if it is missing); outside such a block, only
    check that no other command holds it. Taking a folder this process already holds does nothing.

    Returns:
        Whether the command had to wait for another one first (the folder may have changed).

    Raises:
        FolderBusy: another command held the lock for :data:`LOCK_WAIT` seconds; the message names
            it (its command line and process id) and the way out.
    """
    resolved = Path(path).expanduser().resolve()
    if _held(resolved) is not None:
        return False
    with _guard:
        scope = _scopes[-1] if _scopes else None
    if scope is None and not resolved.is_dir():
        return False  # nothing to check: no other command writes there yet
    created = [p for p in (resolved, *resolved.parents) if not p.exists()]
    resolved.mkdir(parents=True, exist_ok=True)
    try:
        lock, waited = _acquire(resolved, _shown(resolved, path), command, flag)
    except BaseException:
        _remove_created(created)
        raise
    if scope is None:
        if lock is not None:
            lock.release()
        return waited
    with _guard:
        scope[resolved] = _Hold(resolved, _shown(resolved, path), command, lock, created, _free(resolved))
    return waited


def created_here(path: str | os.PathLike) -> bool:
    """Whether the folder ``path`` did not exist before this command claimed it (a command that
    removes a folder it made, when it stops before writing anything, asks this: the claim made it)."""
    h = _held(Path(path).expanduser().resolve())
    return h is not None and h.path in h.created


def empty_folder(path: str | os.PathLike) -> None:
    """Remove everything in ``path`` but its writer lock: for a command that replaces its folder's
    content as a whole while it holds it (removing the folder would remove the lock with it)."""
    for entry in Path(path).iterdir():
        if entry.name == LOCK_FILE:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def carry_lock(output: str | os.PathLike, replacement: str | os.PathLike) -> None:
    """Before ``replacement`` is renamed over the folder ``output``: give it ``output``'s lock file
    (a hard link: the same file), so the lock a waiting command asks for is the one still held."""
    source, target = Path(output) / LOCK_FILE, Path(replacement) / LOCK_FILE
    if source.is_file() and not target.exists():
        try:
            os.link(source, target)
        except OSError:  # a filesystem without hard links: the new folder gets a lock file of its own
            logger.debug("could not link %s into %s", source, replacement)


def _command_line() -> str:
    """This process's command line as the user typed it (``vilbias build --output x``)."""
    argv = list(sys.argv) or ["python"]
    prog = Path(argv[0]).name
    if prog in ("cli.py", "__main__.py", "vilbias"):
        prog = "vilbias"
    return shlex.join([prog, *argv[1:]])[:300]


class _Moved(Exception):
    """The lock file taken is no longer the one at the folder's path (a swap renamed it away, or its
    holder removed it on release): the lock must be taken again, on the file that is there now."""


class _FolderLock:
    """A folder's lock file, held: released by :meth:`release`, which removes the file (no lock file
    is left in a folder after a command)."""

    def __init__(self, lock: Any, path: Path, identity: os.stat_result):
        self.lock, self.path, self.identity = lock, path, identity

    def release(self) -> None:
        # Removed while still held, and only when it is the file held: a command that opened it
        # meanwhile finds, once it has the lock, that the file is gone (_Moved) and takes the new one.
        with contextlib.suppress(OSError):
            if os.path.samestat(os.stat(self.path), self.identity):
                self.path.unlink()
        self.lock.release()


def _acquire(folder: Path, shown: str, command: str, flag: str) -> tuple[_FolderLock | None, bool]:
    """``(lock, waited)`` for ``folder``'s lock file; ``lock`` is None where the filesystem has no locks."""
    from filelock import FileLock, Timeout

    lock_path = folder / LOCK_FILE
    line = _command_line()
    note = json.dumps({"pid": os.getpid(), "command": line if line.startswith(command) else f"{command} (in {line})",
                       "host": socket.gethostname(), "since": dt.datetime.now().strftime("%Y-%m-%d %H:%M:%S")})
    taken: list[os.stat_result] = []

    def on_acquired(fd: int) -> None:
        held = os.fstat(fd)
        try:
            if not os.path.samestat(held, os.stat(lock_path)):
                raise _Moved
        except FileNotFoundError:
            raise _Moved from None
        taken[:] = [held]
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, note.encode("utf-8") + b"\n", 0)
        except OSError:  # a full disk: the lock still holds; only who holds it goes unsaid
            pass

    lock = FileLock(str(lock_path), on_acquired=on_acquired)
    deadline = time.monotonic() + LOCK_WAIT
    waited = False
    while True:
        try:
            lock.acquire(timeout=max(0.0, deadline - time.monotonic()) if waited else 0)
            return _FolderLock(lock, lock_path, taken[0]), waited
        except _Moved:
            continue
        except Timeout:
            if waited:
                raise FolderBusy(f"{flag} {shown} is being written by another command, {_holder(lock_path)}: wait for it "
                                 f"to end, or name another {flag}") from None
            waited = True
            logger.warning("%s %s is being written by another command, %s; waiting up to %g s for it to end",
                           flag, shown, _holder(lock_path), LOCK_WAIT)
        except OSError as e:  # a filesystem without locks (ENOSYS), a folder the user cannot write into
            logger.warning("could not lock %s (%s): another command writing there at the same time would not be noticed",
                           shown, e.strerror or e)
            return None, waited


def _holder(lock_path: Path) -> str:
    """Who holds ``lock_path``, from what the holder wrote into it: ```vilbias build ...`` (process 42, since ...)``."""
    try:
        info = json.loads(lock_path.read_text(encoding="utf-8"))
        where = "" if info.get("host") == socket.gethostname() else f" on {info.get('host')}"
        return f"`{info['command']}` (process {info['pid']}{where}, since {info['since']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "a vilbias command that did not say which (an older vilbias, or its disk was full)"


def _release(h: _Hold) -> None:
    if h.lock is not None:
        h.lock.release()
    _remove_created(h.created)


def _remove_created(created: list[Path]) -> None:
    """Remove the folders a claim made (the deepest first) that hold nothing but a lock file."""
    for folder in created:
        try:
            if set(os.listdir(folder)) <= {LOCK_FILE}:
                (folder / LOCK_FILE).unlink(missing_ok=True)
                folder.rmdir()
        except OSError:
            return


# -- files written whole -----------------------------------------------------------------------------


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike) -> Iterator[IO[bytes]]:
    """A binary file object that writes ``path`` whole (see the module docstring): a temporary file
    beside it, renamed over it when the block ends without error; removed if it does not."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        keep_mode = stat.S_IMODE(os.stat(path).st_mode)
    except FileNotFoundError:
        keep_mode = None
    while True:
        tmp = path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp"
        try:
            # 0o666 as open() asks: the kernel applies the umask (and a folder's default ACL)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
            break
        except FileExistsError:
            continue
        except BaseException:  # a stop as the file was made (before the try below) left it behind
            tmp.unlink(missing_ok=True)
            raise
    try:
        with os.fdopen(fd, "wb") as f:
            if keep_mode is not None:
                os.fchmod(f.fileno(), keep_mode)  # as writing over an existing file keeps its permissions
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write(path: str | os.PathLike, data: str | bytes) -> None:
    """Write a whole file so readers see the old or the new content, never a mix (:func:`atomic_file`)."""
    data = data.encode("utf-8") if isinstance(data, str) else data
    try:
        with atomic_file(path) as f:
            f.write(data)
    except OSError as e:
        if is_disk_full(e):
            e.needed = len(data)  # for the full-disk line: what this write needed
        raise


# -- a full disk ------------------------------------------------------------------------------------


def _chain(e: BaseException | None) -> Iterator[BaseException]:
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = e.__cause__ or e.__context__


_WRITE_FAILED = re.compile(r"disk I/O error|write failed|failed writing|error writing", re.IGNORECASE)


def is_disk_full(e: BaseException) -> bool:
    """Whether ``e`` (or an exception it was raised from) is a full disk or quota: ``ENOSPC`` /
    ``EDQUOT`` (pyarrow and safetensors report it in their own exceptions' text), SQLite's
    ``SQLITE_FULL``, or a failed write (SQLite's ``disk I/O error``, torch's ``file write failed``)
    while a folder this command writes is out of space."""
    for x in _chain(e):
        if isinstance(x, DiskFull):
            return True
        if isinstance(x, OSError) and x.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        text = str(x)
        if "No space left on device" in text or "Disk quota exceeded" in text:
            return True
        if isinstance(x, sqlite3.OperationalError) and "database or disk is full" in text:
            return True
        # SQLite's "disk I/O error", torch's "file write failed": said of a full disk among other
        # causes, so taken for one when a folder this command writes is (nearly) out of space
        if _WRITE_FAILED.search(text) and any((_free(h.path) or 2**30) < 2**24 for h in _holds()):
            return True
    return False


def expect_bytes(path: str | os.PathLike, nbytes: int | None) -> None:
    """Say roughly how many bytes the command is about to write into the folder ``path`` it holds
    (a build, from its source's size): a full disk then says so, rather than only what was free."""
    h = _held(Path(path).expanduser().resolve())
    if h is not None:
        h.expected = nbytes


def _free(path: Path) -> int | None:
    for p in (path, *path.parents):
        try:
            return shutil.disk_usage(p).free
        except OSError:
            continue
    return None


def human_size(n: int | None) -> str:
    """``1.3 GB``, ``820 KB``, ``0 B`` (decimal units, as ``df -H`` and file managers show them)."""
    if n is None:
        return "?"
    size = float(n)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if size < 1000 or unit == "TB":
            return f"{size:.0f} {unit}" if unit == "B" or size >= 100 else f"{size:.1f} {unit}"
        size /= 1000
    raise AssertionError("unreachable")


class DiskFull(OSError):
    """The disk (or quota) of a folder a command writes ran out; ``str()`` is the one line the command
    prints: the folder, the space free, roughly what the step needed, and what was kept (:attr:`kept`,
    the stage's own sentence, set by :func:`vilbias.stops.on_stop`)."""

    def __init__(self, folder: str, free: int | None, needed: str, kept: str | None = None):
        super().__init__(errno.ENOSPC, "No space left on device")
        self.folder, self.free, self.needed, self.kept = folder, free, needed, kept

    def __str__(self) -> str:
        kept = self.kept or "what was written before is whole"
        return (f"no space left on the disk holding {self.folder} ({human_size(self.free)} free; {self.needed}); {kept}"
                + ("" if "re-run" in kept else "; free some space and run it again"))


def disk_full(e: BaseException, kept: str | None = None) -> DiskFull:
    """The :class:`DiskFull` for the full-disk error ``e``: the folder is the held one on the same disk
    as the file that failed (the innermost held one when the error does not name a file)."""
    holds = _holds()
    failed = next((Path(x.filename) for x in _chain(e) if isinstance(x, OSError) and isinstance(x.filename, (str, Path))), None)
    h = holds[0] if holds else None
    if failed is not None and holds:
        device = next((os.stat(p).st_dev for p in (failed, *failed.parents) if p.exists()), None)
        h = next((x for x in holds if os.stat(x.path).st_dev == device), None) if device is not None else h
    needed = next((x.needed for x in _chain(e) if isinstance(getattr(x, "needed", None), int)), None)
    if h is None:
        folder = failed.parent if failed is not None else Path.cwd()
        return DiskFull(str(folder), _free(folder), f"the file being written needed {human_size(needed)}" if needed
                        else "the command needed more than was free", kept)
    if needed is not None:
        what = f"the file being written needed {human_size(needed)}"
    elif h.expected is not None:
        what = f"{h.command} writes about {human_size(h.expected)} there in all"
    else:
        what = f"{h.command} needed more than the {human_size(h.free_at_start)} free when it started"
    return DiskFull(h.shown, _free(h.path), what, kept)


__all__ = ["LOCK_FILE", "LOCK_WAIT", "DiskFull", "FolderBusy", "OutputRefused", "atomic_file", "atomic_write", "carry_lock",
           "claim_file", "claim_output", "created_here", "disk_full", "empty_folder", "expect_bytes", "hold", "human_size",
           "is_disk_full", "writing"]

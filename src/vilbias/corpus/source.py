"""Where an imported release is read from: a Hub dataset, a file, a folder or a zip.

    open_source("vector-institute/newsmediabias-plus@main")     # Hub: downloads the data files
    open_source("nmb_plus_v1.csv", images="nmb_images/")        # a table and its images folder
    open_source("Datasets/dataset.zip")                          # tables and images in one zip

A :class:`Source` is the list of its table files (read record by record through
:mod:`vilbias.corpus.tables`, so memory stays flat in corpus size) and an :class:`ImageStore`
that turns an image cell into bytes: embedded bytes (the ``{"bytes", "path"}`` struct
``datasets`` writes) are used as they are; a path is looked up in ``--images``, in the zip, or
next to the table, first as given and then by its file name.

A Hub source is downloaded with ``huggingface_hub.snapshot_download`` (its data files only,
into the Hugging Face cache, so a second import does not download again; the token comes from
``HF_TOKEN`` or ``hf auth login`` as everywhere in ``huggingface_hub``). A gated, missing,
private or unreachable repository fails here, in one sentence, before anything is written.
"""

from __future__ import annotations

import logging
import os
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from vilbias.corpus.release import looks_like_hub_id
from vilbias.corpus.tables import TABLE_SUFFIXES, table_columns, table_records
from vilbias.provenance import data_name

logger = logging.getLogger(__name__)

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp", ".tif", ".tiff")
_METADATA_JSON = ("dataset_info", "dataset_infos", "state", "config")
"""JSON files a dataset folder carries that are not tables (``dataset_info.json`` ...)."""


class SourceError(ValueError):
    """The source cannot be read: the one-line message says why and what to do."""


@dataclass
class ImageStore:
    """Image cells -> bytes. ``folder`` is ``--images`` (or the table's own folder); ``archive``
    a zip whose members are looked up by path and by file name."""

    folder: Path | None = None
    archive: zipfile.ZipFile | None = None
    _members: dict[str, str] = field(default_factory=dict)
    _names: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.archive is not None:
            for name in self.archive.namelist():
                if name.lower().endswith(IMAGE_SUFFIXES):
                    self._members[name] = name
                    self._names.setdefault(PurePosixPath(name).name, name)

    def read(self, cell: object) -> tuple[bytes | None, str]:
        """``(bytes, name)`` of an image cell; ``(None, why)`` when there is no image to read."""
        if isinstance(cell, dict):
            if cell.get("bytes"):
                return bytes(cell["bytes"]), PurePosixPath(str(cell.get("path") or "")).name
            cell = cell.get("path")
        if isinstance(cell, (bytes, bytearray)):
            return (bytes(cell), "") if cell else (None, "no image")
        path = "" if cell is None else str(cell).strip()
        if not path or path.lower() == "nan":
            return None, "no image"
        name = PurePosixPath(path.replace("\\", "/")).name
        if self.archive is not None:
            member = self._members.get(path.lstrip("/")) or self._names.get(name)
            if member is not None:
                return self.archive.read(member), name
        if self.folder is not None:
            for candidate in (self.folder / path.lstrip("/"), self.folder / name):
                try:
                    return candidate.read_bytes(), name
                except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                    continue
        where = "the zip" if self.archive is not None and self.folder is None else str(self.folder or "no --images folder")
        return None, f"{path} not found in {where}"


@dataclass
class Source:
    """A release to import: its tables, its images and where it came from."""

    spec: str
    tables: list[Path]
    images: ImageStore
    kind: str
    """``hub``, ``file``, ``folder`` or ``zip``."""
    repo_id: str | None = None
    revision: str | None = None
    """The revision asked for (Hub), else None."""
    commit: str | None = None
    """The commit the Hub resolved it to."""
    hub_license: str | None = None
    """The licence the Hub card declares, if any."""

    def columns(self) -> list[str]:
        """The columns of the first table; every other table must have the same."""
        columns = table_columns(self.tables[0])
        for path in self.tables[1:]:
            other = table_columns(path)
            if set(other) != set(columns):
                raise SourceError(f"{path.name} has columns {other}, {self.tables[0].name} has {columns}: import one layout at a time")
        return columns

    def records(self) -> Iterator[tuple[int, str, int, dict]]:
        """``(position, file name, line, record)`` over every table in order; ``position`` counts
        records from 0 over the whole source."""
        position = 0
        for path in self.tables:
            for line, record in table_records(path):
                yield position, path.name, line, record
                position += 1

    def close(self) -> None:
        if self.images.archive is not None:
            self.images.archive.close()

    def describe(self) -> str:
        """The source as artifacts name it: a Hub dataset by id, revision and commit; a local file or
        folder by its name (the report and card are uploaded: no path of the machine that built it)."""
        if self.kind == "hub":
            return f"{self.repo_id}@{self.revision or 'main'} (commit {self.commit})"
        return data_name(self.spec)


def _tables_in(folder: Path) -> list[Path]:
    found = [
        p for p in sorted(folder.rglob("*"))
        if p.is_file() and p.suffix.lower() in TABLE_SUFFIXES and not p.name.startswith(".")
        and not (p.suffix.lower() == ".json" and p.stem.lower() in _METADATA_JSON)
    ]
    return found


def open_source(spec: str | os.PathLike, *, images: str | os.PathLike | None = None, scratch: Path, token: str | None = None) -> Source:
    """Resolve ``spec`` to local tables and an image store.

    Args:
        spec: ``ORG/NAME[@REVISION]`` on the Hub, or a local table file, folder or ``.zip``.
        images: Folder the image paths of the table are relative to (default: the zip's own
            images, or the table's folder).
        scratch: A folder for tables extracted from a zip.
        token: Hub token; default ``HF_TOKEN`` or the saved login.

    Raises:
        SourceError: the source does not exist, holds no table, or the Hub refused or could not be
            reached (gated, missing or private repository; no network).
    """
    images_dir = Path(images) if images is not None else None
    if images_dir is not None and not images_dir.is_dir():
        raise SourceError(f"--images {images_dir} is not a folder")
    path = Path(spec)
    if not path.exists():

        if looks_like_hub_id(str(spec)):
            return _hub_source(str(spec), images_dir, token, scratch)
        raise SourceError(f"--from {spec}: no such file or folder, and not a Hub dataset id ORG/NAME[@REVISION]")
    if path.is_file() and path.suffix.lower() == ".zip":
        return _zip_source(path, images_dir, scratch)
    if path.is_file():
        if path.suffix.lower() not in TABLE_SUFFIXES:
            raise SourceError(f"--from {path}: not a table ({', '.join(TABLE_SUFFIXES)}) or a .zip")
        return Source(str(spec), [path], ImageStore(images_dir or path.parent), "file")
    tables = _tables_in(path)
    if not tables:
        zips = sorted(path.rglob("*.zip"))  # a folder holding one zip and no table is the zip
        if len(zips) == 1:
            return _zip_source(zips[0], images_dir, scratch)
        raise SourceError(f"--from {path}: the folder holds no table ({', '.join(TABLE_SUFFIXES)})")
    return Source(str(spec), tables, ImageStore(images_dir or path), "folder")


def _zip_source(path: Path, images_dir: Path | None, scratch: Path) -> Source:
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as e:
        raise SourceError(f"--from {path}: not a readable zip ({e})") from None
    members = [
        n for n in archive.namelist()
        if n.lower().endswith(TABLE_SUFFIXES) and not PurePosixPath(n).name.startswith(".") and "__MACOSX" not in n
        and not (n.lower().endswith(".json") and PurePosixPath(n).stem.lower() in _METADATA_JSON)
    ]
    if not members:
        archive.close()
        raise SourceError(f"--from {path}: the zip holds no table ({', '.join(TABLE_SUFFIXES)})")
    # Tables are extracted (they are read twice and CSV/XLSX readers need a file); images stay
    # in the zip and are read one at a time.
    folder = scratch / "extracted"
    tables = [Path(archive.extract(m, folder)) for m in sorted(members)]
    return Source(str(path), tables, ImageStore(images_dir, archive), "zip")


def _is_network_error(error: BaseException) -> bool:
    """A transport failure rather than an answer from the Hub (the HTTP client's connection and
    timeout errors, or offline mode with nothing cached)."""
    names = {cls.__name__ for cls in type(error).__mro__}
    return isinstance(error, (ConnectionError, TimeoutError)) or bool(
        names & {"TransportError", "ConnectError", "TimeoutException", "OfflineModeIsEnabled", "LocalEntryNotFoundError"}
    )


def _hub_source(spec: str, images_dir: Path | None, token: str | None, scratch: Path) -> Source:
    from huggingface_hub import HfApi, constants, snapshot_download
    from huggingface_hub.errors import (
        GatedRepoError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    repo_id, _, revision = spec.partition("@")
    page = f"{constants.ENDPOINT}/datasets/{repo_id}"
    try:
        api = HfApi()
        info = api.dataset_info(repo_id, revision=revision or None, token=token)
        api.auth_check(repo_id, repo_type="dataset", token=token)  # a gated repo's metadata is public, its files not: refused before a download starts
        files = [s.rfilename for s in info.siblings or []]
        wanted = [
            f for f in files
            if f.lower().endswith((*TABLE_SUFFIXES, ".zip", *IMAGE_SUFFIXES))
            and not (f.lower().endswith(".json") and PurePosixPath(f).stem.lower() in _METADATA_JSON)
        ]
        if not wanted:
            raise SourceError(f"{repo_id}@{revision or 'main'} holds no data file ({', '.join(TABLE_SUFFIXES)} or .zip)")
        logger.info("downloading %d data files of %s", len(wanted), repo_id)
        folder = Path(snapshot_download(repo_id, repo_type="dataset", revision=info.sha, allow_patterns=wanted, token=token))
    except GatedRepoError:
        raise SourceError(
            f"{repo_id} is gated: accept its conditions on {page} with the account whose token is in HF_TOKEN "
            "(or `hf auth login`), then re-run"
        ) from None
    except RepositoryNotFoundError:
        raise SourceError(
            f"{repo_id} was not found or is private: log in (`hf auth login`, or set HF_TOKEN) with an account that "
            "can read it and check the name, then re-run"
        ) from None
    except RevisionNotFoundError:
        raise SourceError(f"{repo_id} has no revision {revision!r}: name a branch, tag or commit that exists") from None
    except SourceError:
        raise
    except Exception as e:
        if not _is_network_error(e):
            raise
        reason = "offline mode is on (HF_HUB_OFFLINE=1)" if "Offline" in type(e).__name__ or "offline" in str(e).lower() else type(e).__name__
        raise SourceError(f"the Hub at {constants.ENDPOINT} is not reachable ({reason}): check the network or HF_ENDPOINT, then re-run") from None
    card = getattr(info, "card_data", None)
    hub_license = getattr(card, "license", None) if card is not None else None
    source = open_source(folder, images=images_dir, scratch=scratch)  # a snapshot is a folder (or holds one zip)
    source.spec, source.kind = spec, "hub"
    source.repo_id, source.revision, source.commit, source.hub_license = repo_id, revision or None, info.sha, hub_license
    return source

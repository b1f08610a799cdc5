"""Publish a built dataset folder as a versioned Hub release.

    vilbias publish dataset --repo-id ORG/BiasCorpus --version 1.1.0 --dry-run
    vilbias publish dataset --repo-id ORG/BiasCorpus --version 1.1.0 --source ./BiasCorpus

One release = ``create_repo(exist_ok=True)`` -> **one** commit holding the folder (explicit
allow/ignore patterns, stale shards deleted) -> tag ``vX.Y.Z``. A tag is never moved: an existing
version, or one not greater than the latest tag, is refused. Before uploading, the previous
tagged release is read back from the Hub (ids, labels, splits and folds) and the changelog
against it is rendered into the card. A release that would move a row of the previous one to
another split or fold is refused, naming the rows, unless ``--allow-moved-rows`` is given (the
changelog then says so). Consumers pin the tag::

    load_dataset("ORG/BiasCorpus", "fold_2", revision="v1.1.0")

The licence travels: a release imported (``vilbias build --from``) from a source whose licence
forbids derivatives or commercial use (ND or NC, as NewsMediaBias-Plus and the ViLBias paper's
release are licensed; ``build_report.json`` records it) is created **private**; ``--private false`` publishes it public
anyway, and the changelog records that choice. An existing public repo is not filled with such a
release without ``--private false``: the refusal says why.

If the connection drops mid-commit, the Hub keeps serving the previous release (a commit is
atomic and the tag comes after it); re-running the same command completes the release. Without
a network, ``--dry-run`` still validates the folder and, with ``--previous PATH``, computes the
changelog and the moved-row check against a local copy of the previous release.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from huggingface_hub import (
    CommitOperationAdd,
    CommitOperationDelete,
    HfApi,
    get_token,
    snapshot_download,
)
from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError
from huggingface_hub.utils import filter_repo_objects

from vilbias.corpus.card import insert_loading
from vilbias.corpus.presets import restricted_license
from vilbias.corpus.release import read_cells
from vilbias.corpus.splits import Cell
from vilbias.publish.changelog import (
    Changelog,
    compute_changelog,
    insert_changelog,
    read_release_rows,
    render_changelog,
)
from vilbias.publish.config import PublishDatasetConfig
from vilbias.publish.hub import (
    check_token,
    is_network_error,
    parse_version,
    resolve_token,
    unreachable,
    version_tags,
)

logger = logging.getLogger(__name__)

# What a release holds: the card, the Parquet shards of every config, the plot, the
# build report and the options it was built with (`vilbias build --config build_config.yaml`
# rebuilds it). Scripts are never uploaded: datasets refuses a repo with <name>.py at its root.
ALLOW_PATTERNS = ["README.md", "*.parquet", "assets/*", "build_report.json", "build_config.yaml"]
IGNORE_PATTERNS = ["*.py", ".cache/*", ".huggingface/*", "*.lock", "*.tmp", "*/.ipynb_checkpoints/*"]


@dataclass
class DatasetRelease:
    """What :func:`publish_dataset` did (or, in a dry run, would do)."""

    repo_id: str
    tag: str
    previous: str | None
    changelog: Changelog
    files: list[str]
    deleted: list[str]
    moved: list[str] = field(default_factory=list)
    commit: str | None = None
    dry_run: bool = False
    private: bool = False
    """Whether the repo is created private (the flag, or the licence)."""
    visibility: str | None = None
    """Why, when the data's licence decided it or ``--private false`` overrode it."""
    offline: str | None = None
    """Why the Hub was not consulted (a dry run without network), else None."""

    def summary(self) -> str:
        c = self.changelog
        what = "would publish" if self.dry_run else "published"
        lines = [
            f"{what} {self.repo_id}@{self.tag}"
            + (f" (commit {self.commit})" if self.commit else "")
            + (f", previous release {self.previous}" if self.previous else ", first release"),
            f"rows: {c.total} ({c.added} added, {c.removed} removed, {c.relabelled} relabelled, {len(self.moved)} moved)",
        ]
        lines += [f"  {s}: {x.previous} -> {x.current}" for s, x in c.splits.items()]
        lines.append(f"files: {len(self.files)} uploaded, {len(self.deleted)} deleted")
        if self.visibility:
            lines.append(self.visibility)
        if self.dry_run:
            lines += [f"  + {f}" for f in self.files] + [f"  - {f}" for f in self.deleted]
        if self.offline:
            lines.append(self.offline)
        return "\n".join(lines)


@dataclass
class _Previous:
    tag: str | None
    rows: dict[str, tuple[str, int]] | None
    cells: dict[str, Cell]
    card: str | None


def _release_files(source: Path) -> list[str]:
    paths = sorted(p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file())
    return list(filter_repo_objects(paths, allow_patterns=ALLOW_PATTERNS, ignore_patterns=IGNORE_PATTERNS))


def read_local_release(folder: Path, tag: str | None = None) -> _Previous:
    return _Previous(tag or str(folder), read_release_rows(folder), read_cells(folder), (folder / "README.md").read_text(encoding="utf-8"))


def read_hub_release(repo_id: str, revision: str, token: str | None = None) -> _Previous:
    """Read a published release's rows (ids, splits, folds, labels) and its card.

    Downloads README.md and the Parquet shards at ``revision`` (one copy of the corpus; an
    earlier seven-copy release also gives its ``fold_K/test`` files, never the rest).
    """
    with tempfile.TemporaryDirectory(prefix="vilbias-release-") as tmp:
        snapshot_download(
            repo_id, repo_type="dataset", revision=revision, token=token, local_dir=tmp,
            allow_patterns=["README.md", "data/*.parquet", "fold_*/test-*.parquet"],
        )
        return read_local_release(Path(tmp), revision)


def moved_rows(old: dict[str, Cell], new: dict[str, Cell]) -> list[str]:
    """Rows of the previous release that changed split or fold."""
    return sorted(uid for uid, cell in old.items() if uid in new and new[uid] != cell)


def publish_dataset(config: PublishDatasetConfig) -> DatasetRelease:
    """Publish ``config.source`` as release ``v{config.version}`` of ``config.repo_id``.

    Raises:
        ValueError: bad version, an existing tag, a version not above the latest tag, or rows
            that would move (without ``allow_moved_rows``).
        FileNotFoundError: the source is not a built dataset folder.
        PermissionError: missing or rejected token.
        RuntimeError: the Hub cannot be reached, or the upload was interrupted (the previous
            release is intact; re-run).
    """
    version = parse_version(config.version)
    tag = "v{}.{}.{}".format(*version)
    source = Path(config.source)
    new_rows = read_release_rows(source)  # validates the folder before any network call
    new_cells = read_cells(source)
    config, visibility = _licensed_visibility(config, source)
    api = HfApi()
    try:
        remote = _remote_state(api, config, tag, version, visibility)
    except Exception as e:
        if not is_network_error(e):
            raise
        if not config.dry_run:
            raise unreachable(api.endpoint, e) from None
        previous = read_local_release(config.previous) if config.previous else _Previous(None, None, {}, None)
        release = _plan_release(config, tag, source, new_rows, new_cells, previous, remote_files=[], visibility=visibility)
        release.offline = f"{unreachable(api.endpoint, e)}; remote tags and files were not checked" + (
            f"; compared against {config.previous}" if config.previous else ""
        )
        return release
    head, remote_files, token = remote["head"], remote["files"], remote["token"]
    release = _plan_release(config, tag, source, new_rows, new_cells, remote["previous"], remote_files, visibility)
    if config.dry_run:
        return release
    card = (source / "README.md").read_text(encoding="utf-8")
    card = insert_changelog(card, render_changelog(release.changelog), remote["previous"].card)
    card = insert_loading(card, config.repo_id, tag)  # the loading examples name the repo and tag, not the folder
    (source / "README.md").write_text(card, encoding="utf-8")  # the folder stays what was published
    release.commit = _commit(api, config, tag, source, card, release, head, token)
    logger.info("published %s@%s (commit %s)", config.repo_id, tag, release.commit)
    return release


def _source_license(source: Path) -> str | None:
    """The licence of the release this one was imported from (``vilbias build --from`` records it
    in ``build_report.json``); None for a corpus built from a workdir, whose terms are its own."""
    report = source / "build_report.json"
    if not report.is_file():
        return None
    try:
        built = json.loads(report.read_text(encoding="utf-8"))
        # The report's `source` section; `imported` in reports written before one build shape.
        imported = built["source"] if isinstance(built.get("source"), dict) else built.get("imported") or {}
    except (json.JSONDecodeError, AttributeError):
        return None
    return imported.get("license")


def _licensed_visibility(config: PublishDatasetConfig, source: Path) -> tuple[PublishDatasetConfig, str | None]:
    """The config with ``private`` decided (unset: by the data's licence, which makes a release of
    data forbidding derivatives or commercial use private), and the sentence the changelog records
    about it (None when the licence restricts nothing)."""
    license = _source_license(source)
    forbids = restricted_license(license)
    if not forbids:
        return dataclasses.replace(config, private=bool(config.private)), None
    why = f"the source licence {license} forbids {' and '.join(forbids)}"
    if config.private is False:
        return config, f"Published **public** with `--private false`, although {why}: the publisher chose this explicitly."
    logger.info("creating %s private: %s (pass --private false to publish it public)", config.repo_id, why)
    return (dataclasses.replace(config, private=True),
            f"Published **private** because {why}; `--private false` would publish it public (and be recorded here).")


def _remote_state(api: HfApi, config: PublishDatasetConfig, tag: str, version: tuple[int, int, int], visibility: str | None) -> dict:
    """Token, head commit, files and tags of the repo, and its latest release; refuses a tag
    that exists or is not above the latest."""
    if config.dry_run:
        token = config.token or get_token()
    else:
        token = resolve_token(config.token)
        check_token(api, token)
        _refuse_public_repo_for_restricted_data(api, config, token, visibility)
        api.create_repo(config.repo_id, repo_type="dataset", private=config.private, exist_ok=True, token=token)
    try:
        refs = api.list_repo_refs(config.repo_id, repo_type="dataset", token=token)
        head = next((b.target_commit for b in refs.branches if b.name == "main"), None)
        remote_files = api.list_repo_files(config.repo_id, repo_type="dataset", token=token)
        tags = version_tags([t.name for t in refs.tags])
    except RepositoryNotFoundError:
        if not config.dry_run:
            raise
        head, remote_files, tags = None, [], {}  # a dry run against a repo that does not exist yet
    if tag in tags.values():
        raise ValueError(f"{config.repo_id} already has tag {tag}: a published release is never moved; publish a new version")
    if tags and max(tags) >= version:
        raise ValueError(f"version {tag} is not greater than the latest release {tags[max(tags)]} of {config.repo_id}")
    latest = tags[max(tags)] if tags else None
    previous = read_hub_release(config.repo_id, latest, token) if latest else _Previous(None, None, {}, None)
    return {"token": token, "head": head, "files": remote_files, "previous": previous}


def _refuse_public_repo_for_restricted_data(api: HfApi, config: PublishDatasetConfig, token: str, visibility: str | None) -> None:
    """An existing public repo keeps its visibility, so a release its licence makes private must
    not be uploaded there silently."""
    if not (visibility and config.private):
        return
    try:
        info = api.repo_info(config.repo_id, repo_type="dataset", token=token)
    except RepositoryNotFoundError:
        return
    if not info.private:
        why = visibility.split(" because ", 1)[1].split(";")[0]
        raise ValueError(
            f"{config.repo_id} is public and {why}: make the repo private on the Hub, or pass --private false to "
            "publish it public anyway (the changelog records the choice)"
        )


def _plan_release(config: PublishDatasetConfig, tag: str, source: Path, new_rows: dict, new_cells: dict[str, Cell],
                  previous: _Previous, remote_files: list[str], visibility: str | None = None) -> DatasetRelease:
    moved = moved_rows(previous.cells, new_cells)
    if moved and not config.allow_moved_rows:
        shown = ", ".join(moved[:10]) + (f" and {len(moved) - 10} more" if len(moved) > 10 else "")
        raise ValueError(
            f"{tag} would move {len(moved)} row(s) of {previous.tag} to another split or fold ({shown}): rebuild with "
            f"`vilbias build --previous {config.repo_id}@{previous.tag}` (or in the folder holding that build), "
            "or pass --allow-moved-rows to publish anyway (the changelog records it)"
        )
    changelog = compute_changelog(previous.rows, new_rows, version=tag, previous=previous.tag, moved_allowed=bool(moved), visibility=visibility)
    files = _release_files(source)
    # Stale files of the managed kinds (e.g. shards of an earlier shard count or layout) must go:
    # the configs' globs (data/train-*) would otherwise pick them up.
    managed = set(filter_repo_objects(remote_files, allow_patterns=ALLOW_PATTERNS))
    deleted = sorted(managed - set(files))
    return DatasetRelease(config.repo_id, tag, previous.tag, changelog, files, deleted, moved=moved, dry_run=config.dry_run,
                          private=config.private, visibility=visibility)


def _commit(api: HfApi, config: PublishDatasetConfig, tag: str, source: Path, card: str, release: DatasetRelease,
            head: str | None, token: str) -> str:
    """One commit with the whole release, then the tag; an interrupted upload says what to do."""
    operations = [
        CommitOperationAdd(path_in_repo=f, path_or_fileobj=card.encode() if f == "README.md" else source / f)
        for f in release.files
    ] + [CommitOperationDelete(path_in_repo=f) for f in release.deleted]
    try:
        commit = api.create_commit(
            config.repo_id, repo_type="dataset", operations=operations, commit_message=f"Release {tag}",
            commit_description=render_changelog(release.changelog), parent_commit=head, token=token,
        )
    except Exception as e:  # any transport failure: say what state the Hub is in and what to do
        if isinstance(e, HfHubHTTPError) and getattr(e.response, "status_code", 0) in (401, 403):
            raise
        raise RuntimeError(
            f"upload of {config.repo_id} {tag} was interrupted ({type(e).__name__}: {e}); the Hub still "
            f"serves {release.previous or 'the previous state'}; re-run the same command to complete the release"
        ) from e
    api.create_tag(config.repo_id, tag=tag, revision=commit.oid, tag_message=f"Release {tag}", repo_type="dataset", token=token)
    return commit.oid

"""Publish a built dataset folder as a versioned Hub release.

    vilbias publish dataset --repo-id ORG/BiasCorpus --version 1.1.0 --source ./vilbias --dry-run
    vilbias publish dataset --repo-id ORG/BiasCorpus --version 1.1.0 --source ./vilbias

One release = ``create_repo(exist_ok=True)`` -> **one** commit holding the folder (explicit
allow/ignore patterns, stale shards deleted) -> tag ``vX.Y.Z``. A tag is never moved: an existing
version, or one not greater than the latest tag, is refused. Before uploading, the previous
tagged release is read back from the Hub (ids and labels only) and the changelog against it is
rendered into the card. Consumers pin the tag::

    load_dataset("ORG/BiasCorpus", "fold_2", revision="v1.1.0")

If the connection drops mid-commit, the Hub keeps serving the previous release (a commit is
atomic and the tag comes after it); re-running the same command completes the release.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from vilbias.publish.changelog import (
    Changelog,
    compute_changelog,
    default_data_files,
    insert_changelog,
    read_release_rows,
    render_changelog,
)
from vilbias.publish.hub import check_token, parse_version, resolve_token, version_tags

logger = logging.getLogger(__name__)

# What a release holds (DESIGN §4): the card, the Parquet shards of every config, the plot, the
# build report. Scripts are never uploaded: datasets refuses a repo with <name>.py at its root.
ALLOW_PATTERNS = ["README.md", "*.parquet", "assets/*", "build_report.json"]
IGNORE_PATTERNS = ["*.py", ".cache/*", ".huggingface/*", "*.lock", "*.tmp", "*/.ipynb_checkpoints/*"]


@dataclass
class PublishDatasetConfig:
    """``vilbias publish dataset``."""

    repo_id: str = field(metadata={"help": "Dataset repo on the Hub, ORG/NAME."})
    version: str = field(metadata={"help": "Semantic version X.Y.Z of this release; tagged vX.Y.Z."})
    source: Path = field(default=Path("vilbias"), metadata={"help": "The folder `vilbias build` wrote."})
    dry_run: bool = field(default=False, metadata={"help": "Print what would change; upload nothing."})
    private: bool = field(default=False, metadata={"help": "Create the repo private (an existing repo keeps its visibility)."})
    token: str | None = field(default=None, metadata={"cli": False, "help": "Hub token; HF_TOKEN or the saved login when unset."})


@dataclass
class DatasetRelease:
    """What :func:`publish_dataset` did (or, in a dry run, would do)."""

    repo_id: str
    tag: str
    previous: str | None
    changelog: Changelog
    files: list[str]
    deleted: list[str]
    commit: str | None = None
    dry_run: bool = False

    def summary(self) -> str:
        c = self.changelog
        what = "would publish" if self.dry_run else "published"
        lines = [
            f"{what} {self.repo_id}@{self.tag}"
            + (f" (commit {self.commit})" if self.commit else "")
            + (f", previous release {self.previous}" if self.previous else ", first release"),
            f"rows: {c.total} ({c.added} added, {c.removed} removed, {c.relabelled} relabelled)",
        ]
        lines += [f"  {s}: {x.previous} -> {x.current}" for s, x in c.splits.items()]
        lines.append(f"files: {len(self.files)} uploaded, {len(self.deleted)} deleted")
        if self.dry_run:
            lines += [f"  + {f}" for f in self.files] + [f"  - {f}" for f in self.deleted]
        return "\n".join(lines)


def _release_files(source: Path) -> list[str]:
    from huggingface_hub.utils import filter_repo_objects

    paths = sorted(p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file())
    return list(filter_repo_objects(paths, allow_patterns=ALLOW_PATTERNS, ignore_patterns=IGNORE_PATTERNS))


def read_hub_release(repo_id: str, revision: str, token: str | None = None) -> tuple[dict[str, tuple[str, int]], str]:
    """Read a published release's ``default`` rows (ids, splits, labels) and its card.

    Downloads only README.md and the ``default`` config's Parquet files at ``revision``.
    """
    from huggingface_hub import hf_hub_download, snapshot_download

    with tempfile.TemporaryDirectory(prefix="vilbias-release-") as tmp:
        readme = hf_hub_download(repo_id, "README.md", repo_type="dataset", revision=revision, token=token, local_dir=tmp)
        card = Path(readme).read_text(encoding="utf-8")
        patterns = [p for pats in default_data_files(card).values() for p in pats]
        snapshot_download(
            repo_id, repo_type="dataset", revision=revision, token=token, local_dir=tmp,
            allow_patterns=["README.md", *patterns],
        )
        return read_release_rows(tmp), card


def publish_dataset(config: PublishDatasetConfig) -> DatasetRelease:
    """Publish ``config.source`` as release ``v{config.version}`` of ``config.repo_id``.

    Raises:
        ValueError: bad version, an existing tag, or a version not above the latest tag.
        FileNotFoundError: the source is not a built dataset folder.
        PermissionError: missing or rejected token.
        RuntimeError: the upload was interrupted (the previous release is intact; re-run).
    """
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi, get_token
    from huggingface_hub.errors import RepositoryNotFoundError

    version = parse_version(config.version)
    tag = "v{}.{}.{}".format(*version)
    source = Path(config.source)
    new_rows = read_release_rows(source)  # validates the folder before any network call
    card = (source / "README.md").read_text(encoding="utf-8")
    files = _release_files(source)

    api = HfApi()
    if config.dry_run:
        token = config.token or get_token()
    else:
        token = resolve_token(config.token)
        check_token(api, token)
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
        raise ValueError(
            f"version {tag} is not greater than the latest release {tags[max(tags)]} of {config.repo_id}"
        )
    previous = tags[max(tags)] if tags else None
    old_rows, old_card = read_hub_release(config.repo_id, previous, token) if previous else (None, None)
    changelog = compute_changelog(old_rows, new_rows, version=tag, previous=previous)
    card = insert_changelog(card, render_changelog(changelog), old_card)

    # Stale files of the managed kinds (e.g. shards of an earlier shard count) must go: the
    # configs' globs (data/train-*) would otherwise pick them up.
    from huggingface_hub.utils import filter_repo_objects

    managed = set(filter_repo_objects(remote_files, allow_patterns=ALLOW_PATTERNS))
    deleted = sorted(managed - set(files))
    release = DatasetRelease(config.repo_id, tag, previous, changelog, files, deleted, dry_run=config.dry_run)
    if config.dry_run:
        return release

    (source / "README.md").write_text(card, encoding="utf-8")  # the folder stays what was published
    operations = [
        CommitOperationAdd(path_in_repo=f, path_or_fileobj=card.encode() if f == "README.md" else source / f)
        for f in files
    ] + [CommitOperationDelete(path_in_repo=f) for f in deleted]
    try:
        commit = api.create_commit(
            config.repo_id,
            repo_type="dataset",
            operations=operations,
            commit_message=f"Release {tag}",
            commit_description=render_changelog(changelog),
            parent_commit=head,
            token=token,
        )
    except Exception as e:  # any transport failure: say what state the Hub is in and what to do
        from huggingface_hub.errors import HfHubHTTPError

        if isinstance(e, HfHubHTTPError) and getattr(e.response, "status_code", 0) in (401, 403):
            raise
        raise RuntimeError(
            f"upload of {config.repo_id} {tag} was interrupted ({type(e).__name__}: {e}); the Hub still "
            f"serves {previous or 'the previous state'}; re-run the same command to complete the release"
        ) from e
    api.create_tag(config.repo_id, tag=tag, revision=commit.oid, tag_message=f"Release {tag}", repo_type="dataset", token=token)
    release.commit = commit.oid
    logger.info("published %s@%s (commit %s)", config.repo_id, tag, commit.oid)
    return release

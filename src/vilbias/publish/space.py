"""Publish the Gradio Space (``spaces/``: app.py, README.md with the Space YAML, requirements).

    vilbias publish space --repo-id ORG/vilbias-demo --model ORG/vilbias-roberta-lora --dataset ORG/BiasCorpus

The Space YAML is completed before upload: ``sdk: gradio``, ``sdk_version`` (the installed
gradio unless the card pins one), ``app_file``, ``models`` and ``datasets``. requirements.txt
pins this package's version (``vilbias==X.Y.Z``) so the Space runs the code it was tested with.
"""

from __future__ import annotations

import logging
from importlib import resources
from pathlib import Path

from vilbias import __version__
from vilbias.publish.changelog import card_metadata
from vilbias.publish.config import PublishSpaceConfig
from vilbias.publish.hub import check_token, resolve_token

logger = logging.getLogger(__name__)

ALLOW_PATTERNS = ["*.py", "*.md", "*.txt", "*.css", "*.json", "*.yaml", "*.png", "*.jpg", "*.jpeg", "*.svg", "examples/*"]
IGNORE_PATTERNS = ["__pycache__/*", "*/__pycache__/*", "*.pyc", "tests/*", ".*"]


def _default_source() -> Path:
    return Path(str(resources.files("vilbias.spaces")))


def render_space_readme(text: str, *, models: list[str], datasets: list[str], sdk_version: str | None) -> str:
    """Return the Space README with its YAML completed (sdk, sdk_version, app_file, models, datasets)."""
    import yaml

    meta = card_metadata(text)
    body = text
    if text.startswith("---"):
        body = text[text.find("\n---", 3) + 4 :].lstrip("\n")
    meta["sdk"] = "gradio"
    if sdk_version and not meta.get("sdk_version"):
        meta["sdk_version"] = sdk_version
    if not meta.get("sdk_version"):
        raise ValueError("the Space README pins no sdk_version and gradio is not installed to take it from")
    meta.setdefault("app_file", "app.py")
    for key, extra in (("models", models), ("datasets", datasets)):
        meta[key] = list(dict.fromkeys([*(meta.get(key) or []), *extra]))
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n\n" + body


def render_requirements(text: str, version: str) -> str:
    """requirements.txt with any ``vilbias`` line replaced by ``vilbias==version`` (first line)."""
    import re

    keep = [ln for ln in text.splitlines() if ln.strip() and not re.match(r"^\s*vilbias\b(\[.*\])?\s*([=<>!~].*)?$", ln)]
    return "\n".join([f"vilbias=={version}", *keep]) + "\n"


def publish_space(config: PublishSpaceConfig) -> str:
    """Upload the Space folder as one commit; return the commit id.

    Raises:
        FileNotFoundError: the folder lacks app.py or README.md.
        PermissionError: missing or rejected token.
    """
    from huggingface_hub import CommitOperationAdd, HfApi
    from huggingface_hub.utils import filter_repo_objects


    source = Path(config.source) if config.source else _default_source()
    for required in ("README.md",):
        if not (source / required).is_file():
            raise FileNotFoundError(f"{source / required} not found: the Space folder needs README.md with the Space YAML")
    readme = (source / "README.md").read_text(encoding="utf-8")
    app_file = card_metadata(readme).get("app_file", "app.py")
    if not (source / app_file).is_file():
        raise FileNotFoundError(f"{source / app_file} not found: the Space's app_file must exist")
    try:
        import gradio

        sdk_version = gradio.__version__
    except ImportError:
        sdk_version = None
    readme = render_space_readme(readme, models=config.model, datasets=config.dataset, sdk_version=sdk_version)
    req_path = source / "requirements.txt"
    requirements = render_requirements(req_path.read_text(encoding="utf-8") if req_path.is_file() else "", __version__)

    paths = sorted(p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file())
    files = [f for f in filter_repo_objects(paths, allow_patterns=ALLOW_PATTERNS, ignore_patterns=IGNORE_PATTERNS)
             if f not in ("README.md", "requirements.txt")]
    operations = [CommitOperationAdd(path_in_repo=f, path_or_fileobj=source / f) for f in files] + [
        CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=readme.encode()),
        CommitOperationAdd(path_in_repo="requirements.txt", path_or_fileobj=requirements.encode()),
    ]
    token = resolve_token(config.token)
    api = HfApi()
    check_token(api, token)
    api.create_repo(config.repo_id, repo_type="space", space_sdk="gradio", private=config.private, exist_ok=True, token=token)
    commit = api.create_commit(
        config.repo_id, repo_type="space", operations=operations,
        commit_message=f"Space for vilbias {__version__}", token=token,
    )
    logger.info("published Space %s (commit %s)", config.repo_id, commit.oid)
    return commit.oid

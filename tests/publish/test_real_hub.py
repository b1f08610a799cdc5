"""Against the real Hugging Face Hub: skipped unless VILBIAS_HUB_TOKEN and VILBIAS_HUB_NAMESPACE are set.

The suite's conftest removes HF_TOKEN so a developer's token never reaches the loopback servers;
this test takes its own variables instead and creates (then deletes) a private dataset repo.
"""

from __future__ import annotations

import os
import uuid

import pytest

from tests.publish.conftest import base_rows, make_release_folder

pytestmark = pytest.mark.hub


@pytest.mark.skipif(not (os.environ.get("VILBIAS_HUB_TOKEN") and os.environ.get("VILBIAS_HUB_NAMESPACE")),
                    reason="needs VILBIAS_HUB_TOKEN and VILBIAS_HUB_NAMESPACE for the real Hub")
def test_publish_release_on_real_hub(tmp_path, monkeypatch):
    from huggingface_hub import HfApi, constants

    from vilbias.publish.dataset import PublishDatasetConfig, publish_dataset

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    token = os.environ["VILBIAS_HUB_TOKEN"]
    repo = f"{os.environ['VILBIAS_HUB_NAMESPACE']}/vilbias-test-{uuid.uuid4().hex[:8]}"
    folder = make_release_folder(tmp_path / "v1", base_rows(10))
    try:
        release = publish_dataset(PublishDatasetConfig(repo_id=repo, version="1.0.0", source=folder, private=True, token=token))
        refs = HfApi().list_repo_refs(repo, repo_type="dataset", token=token)
        assert [t.name for t in refs.tags] == ["v1.0.0"] and refs.tags[0].target_commit == release.commit
    finally:
        HfApi().delete_repo(repo, repo_type="dataset", token=token, missing_ok=True)

"""Model and Space repos against the loopback Hub: upload, then read the cards back."""

from __future__ import annotations

import pytest

from vilbias.publish.model import CARD_INFO_FILE, ModelCardInfo, push_model, render_model_card

MODEL_REPO = "vilbias-test/roberta-lora"


def _info(**kw) -> ModelCardInfo:
    base = dict(
        base_model="FacebookAI/roberta-base", dataset="vilbias-test/BiasCorpus", dataset_config="fold_2",
        dataset_revision="v1.0.0", method="lora", task="text-classification",
        hyperparameters={"learning_rate": 2e-5, "epochs": 15, "lora_r": 8},
        trainable_params=887_042, total_params=125_534_212, peak_memory_mb=812.0, wall_time_s=61.5,
        eval_results=[{"metric_type": "f1", "metric_name": "F1", "value": 0.829, "split": "test"},
                      {"metric_type": "accuracy", "value": 0.84, "split": "test"}],
    )
    base.update(kw)
    return ModelCardInfo(**base)


def _model_folder(path):
    import numpy as np
    from safetensors.numpy import save_file

    path.mkdir(parents=True)
    save_file({"classifier.weight": np.zeros((2, 4), dtype=np.float32)}, str(path / "adapter_model.safetensors"))
    (path / "adapter_config.json").write_text('{"r": 8, "peft_type": "LORA"}\n')
    (path / "tokenizer.json").write_text('{"version": "1.0"}\n')
    (path / "optimizer.pt").write_bytes(b"\x00" * 16)
    (path / "checkpoint-10").mkdir()
    (path / "checkpoint-10" / "adapter_model.safetensors").write_bytes(b"\x00" * 16)
    return path


def test_render_model_card_metadata():
    card = render_model_card(_info(), MODEL_REPO)
    data = card.data.to_dict()
    assert data["base_model"] == "FacebookAI/roberta-base" and data["datasets"] == ["vilbias-test/BiasCorpus"]
    assert (data["pipeline_tag"], data["library_name"], data["license"]) == ("text-classification", "peft", "apache-2.0")
    result = data["model-index"][0]["results"][0]
    assert result["dataset"] == {"name": "vilbias-test/BiasCorpus", "type": "vilbias-test/BiasCorpus",
                                 "config": "fold_2", "split": "test", "revision": "v1.0.0"}
    assert result["metrics"][0] == {"type": "f1", "value": 0.829, "name": "F1"}
    text = card.text
    assert "887,042 of 125,534,212 (0.707%)" in text
    assert "| `learning_rate` | `2e-05` |" in text
    assert f'pipeline("text-classification", model="{MODEL_REPO}")' in text
    assert "## Intended use" in text and "## Limitations" in text
    vlm = render_model_card(_info(task="image-text-to-text", method="qlora"), "org/vlm")
    assert "AutoModelForImageTextToText.from_pretrained(\"org/vlm\")" in vlm.text


def test_push_model_and_read_card_back(hub, tmp_path):
    from huggingface_hub import HfApi, ModelCard

    folder = _model_folder(tmp_path / "out")
    commit = push_model(folder, MODEL_REPO, info=_info())
    files = set(HfApi().list_repo_files(MODEL_REPO))
    assert {"README.md", "adapter_model.safetensors", "adapter_config.json", "tokenizer.json", CARD_INFO_FILE} <= files
    assert not any(f.startswith("checkpoint-") or f == "optimizer.pt" for f in files)
    assert HfApi().model_info(MODEL_REPO).sha == commit
    card = ModelCard.load(MODEL_REPO)
    assert card.data.base_model == "FacebookAI/roberta-base"
    assert [(r.metric_type, r.metric_value, r.dataset_revision) for r in card.data.eval_results] == [
        ("f1", 0.829, "v1.0.0"), ("accuracy", 0.84, "v1.0.0")]
    assert hub.token not in (folder / "README.md").read_text() + (folder / CARD_INFO_FILE).read_text()


def test_push_model_leaves_a_readme_it_did_not_write(hub, tmp_path):
    from huggingface_hub import ModelCard

    folder = _model_folder(tmp_path / "out")
    (folder / "README.md").write_text("# my own notes on this model\n")
    push_model(folder, MODEL_REPO, info=_info())
    assert (folder / "README.md").read_text() == "# my own notes on this model\n"
    assert "vilbias" in ModelCard.load(MODEL_REPO).data.tags  # the Hub gets the card all the same
    (folder / "README.md").unlink()
    push_model(folder, MODEL_REPO, info=_info())  # none there: the card is written beside the weights
    push_model(folder, MODEL_REPO, info=_info(wall_time_s=99.0))  # its own card: rendered again
    assert "| wall time | 99.0 s |" in (folder / "README.md").read_text()


def test_publish_model_cli_reads_card_info(hub, tmp_path, capsys):
    from huggingface_hub import ModelCard

    from vilbias.cli import main

    folder = _model_folder(tmp_path / "out")
    assert main(["publish", "model", "--repo-id", MODEL_REPO, "--source", str(folder)]) == 2
    assert "vilbias_card.json not found" in capsys.readouterr().err
    _info(dataset_revision=None).save(folder)
    rc = main(["publish", "model", "--repo-id", MODEL_REPO, "--source", str(folder), "--dataset-revision", "v1.1.0"])
    assert rc == 0 and f"published model {MODEL_REPO}" in capsys.readouterr().out
    assert ModelCard.load(MODEL_REPO).data.eval_results[0].dataset_revision == "v1.1.0"
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(FileNotFoundError, match="holds no weights"):
        push_model(empty, MODEL_REPO, info=_info())


def test_publish_space_and_read_card_back(hub, tmp_path, capsys):
    import gradio
    from huggingface_hub import HfApi, SpaceCard, hf_hub_download

    from vilbias import __version__
    from vilbias.cli import main

    space = tmp_path / "spaces"
    (space / "__pycache__").mkdir(parents=True)
    (space / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\x00")
    (space / "app.py").write_text("import gradio as gr\n")
    (space / "README.md").write_text("---\ntitle: ViLBias demo\nemoji: 📰\nmodels:\n- org/existing\n---\n\n# Demo\n")
    (space / "requirements.txt").write_text("vilbias>=0.0.1\ntransformers>=5.23\n")
    rc = main(["publish", "space", "--repo-id", "vilbias-test/demo", "--source", str(space),
               "--model", "vilbias-test/roberta-lora", "--dataset", "vilbias-test/BiasCorpus"])
    assert rc == 0 and "published Space vilbias-test/demo" in capsys.readouterr().out
    assert hub.repos[("space", "vilbias-test/demo")].sdk == "gradio"
    card = SpaceCard.load("vilbias-test/demo", repo_type="space")
    meta = card.data.to_dict()
    assert (meta["sdk"], meta["sdk_version"], meta["app_file"]) == ("gradio", gradio.__version__, "app.py")
    assert meta["models"] == ["org/existing", "vilbias-test/roberta-lora"] and meta["datasets"] == ["vilbias-test/BiasCorpus"]
    assert meta["title"] == "ViLBias demo" and "# Demo" in card.text
    req = open(hf_hub_download("vilbias-test/demo", "requirements.txt", repo_type="space"), encoding="utf-8").read()
    assert req.splitlines() == [f"vilbias=={__version__}", "transformers>=5.23"]
    assert sorted(HfApi().list_repo_files("vilbias-test/demo", repo_type="space")) == [
        ".gitattributes", "README.md", "app.py", "requirements.txt"]

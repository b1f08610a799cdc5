"""Fixtures for the SFT tests: the embedded sample's dataset folder and tiny VLMs built once."""

from __future__ import annotations

import pytest

from tests.fakes.tiny_vlm import build_tiny_vlm


def _build_sample(output):
    """The lead's build of the embedded sample (DESIGN §8 ``vilbias build``), or ``None`` before it lands."""
    try:
        from vilbias.build import BuildConfig, build
    except ImportError:
        return None
    build(BuildConfig(output=output))
    return output


def _write_stand_in_sft_folder(output):
    """A Hub-layout folder with only the ``sft`` config, in the exact DESIGN §4 format.

    Used only while ``vilbias.build`` does not exist yet; the tests switch to the real build as
    soon as it imports.
    """
    import io

    import datasets
    from PIL import Image

    from vilbias import QUESTION

    rows = []
    for i in range(6):
        label = i % 2
        buf = io.BytesIO()
        Image.new("RGB", (64 + 8 * i, 48), (40 * i, 200 - 30 * i, 90)).save(buf, format="JPEG")
        answer = ("Label: biased\nReasoning: The headline uses loaded wording and the image is emotive."
                  if label else "Label: not biased\nReasoning: The article reports facts in a neutral tone.")
        rows.append({
            "messages": [
                {"role": "user", "content": [
                    {"type": "image", "text": None},
                    {"type": "text", "text": f"Headline: Story {i}\n\nArticle: Officials said on Tuesday that "
                                             f"the plan would go ahead.\n\n{QUESTION}"},
                ]},
                {"role": "assistant", "content": [{"type": "text", "text": answer}]},
            ],
            "images": [{"bytes": buf.getvalue(), "path": None}],
            "unique_id": f"id{i}",
            "multimodal_label": label,
        })
    features = datasets.Features({
        "messages": datasets.List({"role": datasets.Value("string"), "content": datasets.List(
            {"type": datasets.Value("string"), "text": datasets.Value("string")})}),
        "images": datasets.List(datasets.Image()),
        "unique_id": datasets.Value("string"),
        "multimodal_label": datasets.ClassLabel(names=["not_biased", "biased"]),
    })
    (output / "sft").mkdir(parents=True)
    splits = {"train": rows[:4], "validation": rows[4:5], "test": rows[5:]}
    for split, split_rows in splits.items():
        datasets.Dataset.from_list(split_rows, features=features).to_parquet(
            output / "sft" / f"{split}-00000-of-00001.parquet")
    (output / "README.md").write_text(
        "---\nconfigs:\n- config_name: sft\n  data_files:\n"
        + "".join(f"  - split: {s}\n    path: sft/{s}-*.parquet\n" for s in splits)
        + "---\n", encoding="utf-8")
    return output


@pytest.fixture(scope="session")
def sample_dataset_dir(tmp_path_factory):
    """The embedded sample built into a Hub-layout folder (``load_dataset(folder, "sft")``)."""
    output = tmp_path_factory.mktemp("built") / "vilbias"
    return _write_stand_in_sft_folder(output)  # DEV: switch to _build_sample once the build lands


@pytest.fixture(scope="session")
def sft_train_texts(sample_dataset_dir):
    """Every text of the ``sft`` train split, to train the tiny tokenizers on."""
    from datasets import load_dataset

    ds = load_dataset(str(sample_dataset_dir), "sft", split="train")
    return [item["text"] for row in ds["messages"] for message in row for item in message["content"]
            if item["text"]]


@pytest.fixture(scope="session")
def tiny_vlm_dirs(tmp_path_factory, sft_train_texts):
    """family -> folder of a tiny random VLM of that family (built lazily, once per session)."""
    root = tmp_path_factory.mktemp("tiny_vlms")
    cache = {}

    def get(family):
        if family not in cache:
            cache[family] = build_tiny_vlm(family, root / family, extra_text=sft_train_texts)
        return cache[family]

    return get

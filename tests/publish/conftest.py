"""Fixtures for the publish tests: a loopback Hub and tiny built dataset folders."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.fakes.hub_server import HubServer, hub_server

CONFIGS = ["default", *(f"fold_{k}" for k in range(5)), "sft"]


@pytest.fixture
def hub(tmp_path, monkeypatch) -> HubServer:
    """A loopback Hub with huggingface_hub/datasets pointed at it and HF_TOKEN set to its token."""
    with hub_server(tmp_path) as server:
        monkeypatch.setenv("HF_TOKEN", server.token)
        yield server


def _png(seed: int) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (4, 4), (seed * 37 % 256, seed * 91 % 256, 7)).save(buf, format="PNG")
    return buf.getvalue()


def make_release_folder(folder: Path, rows: dict[str, tuple[str, int]]) -> Path:
    """Write a Hub-layout dataset folder (DESIGN §4 shape, tiny) for ``{unique_id: (split, label)}``.

    ``default`` has train/validation/test; ``fold_k`` puts every k-th row in test; ``sft`` keeps
    the default membership. The card carries the changelog markers the build's template writes.
    """
    from datasets import ClassLabel, Dataset, Features, Image, Value

    features = Features({
        "unique_id": Value("string"), "headline": Value("string"), "image": Image(),
        "multimodal_label": ClassLabel(names=["not_biased", "biased"]),
    })
    ids = sorted(rows)

    def table(uids):
        return Dataset.from_dict({
            "unique_id": uids, "headline": [f"headline {u}" for u in uids],
            "image": [{"bytes": _png(int(u.split("-")[1])), "path": None} for u in uids],
            "multimodal_label": [rows[u][1] for u in uids],
        }, features=features)

    yaml_configs = []
    for split in ("train", "validation", "test"):
        table([u for u in ids if rows[u][0] == split]).to_parquet(folder / f"data/{split}-00000-of-00001.parquet")
        (folder / "sft").mkdir(parents=True, exist_ok=True)
        table([u for u in ids if rows[u][0] == split]).select_columns(["unique_id", "multimodal_label"]).to_parquet(
            folder / f"sft/{split}-00000-of-00001.parquet")
    yaml_configs.append(("default", "data", ("train", "validation", "test")))
    for k in range(5):
        test = [u for i, u in enumerate(ids) if i % 5 == k]
        train = [u for u in ids if u not in test]
        table(train).to_parquet(folder / f"fold_{k}/train-00000-of-00001.parquet")
        table(test).to_parquet(folder / f"fold_{k}/test-00000-of-00001.parquet")
        yaml_configs.append((f"fold_{k}", f"fold_{k}", ("train", "test")))
    yaml_configs.append(("sft", "sft", ("train", "validation", "test")))
    lines = ["---", "license: cc-by-nc-4.0", "configs:"]
    for name, data_dir, splits in yaml_configs:
        lines += [f"- config_name: {name}", "  data_files:"]
        lines += [f"  - split: {s}\n    path: {data_dir}/{s}-*" for s in splits]
    lines += ["---", "", "# BiasCorpus (test build)", "", "## Changelog", "",
              "<!-- changelog:start -->", "local build, not yet published", "<!-- changelog:end -->", "",
              "## Citation", "", "tbd", ""]
    (folder / "README.md").write_text("\n".join(lines), encoding="utf-8")
    (folder / "assets").mkdir(exist_ok=True)
    (folder / "assets/label_by_outlet.png").write_bytes(_png(99))
    (folder / "build_report.json").write_text(f'{{"rows": {len(rows)}}}\n', encoding="utf-8")
    return folder


def base_rows(n: int = 20) -> dict[str, tuple[str, int]]:
    splits = ["train"] * 8 + ["validation", "test"]
    return {f"id-{i:03d}": (splits[i % 10], i % 2) for i in range(n)}

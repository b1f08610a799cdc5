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


def _features():
    from datasets import ClassLabel, Features, Image, Value

    return Features({
        "unique_id": Value("string"), "headline": Value("string"), "image": Image(),
        "multimodal_label": ClassLabel(names=["not_biased", "biased"]),
    })


def fold_of(uid: str) -> int:
    """The fake releases' fold: fixed per id, so a row keeps its cell across versions."""
    return int(uid.split("-")[1]) % 5


def make_release_folder(folder: Path, rows: dict[str, tuple[str, int]], *, folds: dict[str, int] | None = None) -> Path:
    """Write a tiny Hub-layout dataset folder for ``{unique_id: (split, label)}`` with the build's
    own writer (every row once, in its split×fold cell; ``default``, ``fold_k`` and ``sft`` read
    those files). The card carries the changelog markers the build's template writes."""
    from huggingface_hub import DatasetCardData

    from vilbias.corpus.writer import RepoWriter, card_metadata, corpus_views

    features = _features()
    views = corpus_views(features, features)
    writer = RepoWriter(folder, features, views)
    for uid in sorted(rows):
        split, label = rows[uid]
        fold = (folds or {}).get(uid, fold_of(uid))
        example = {"unique_id": uid, "headline": f"headline {uid}", "image": {"bytes": _png(int(uid.split("-")[1])), "path": None}, "multimodal_label": label}
        writer.add_rows([((split, fold), example)])
    infos = writer.close()
    card_data = DatasetCardData(license="cc-by-nc-4.0")
    card_metadata(card_data, views, infos, list(features))
    _finish(folder, card_data.to_yaml(), len(rows))
    return folder


def make_old_layout_folder(folder: Path, rows: dict[str, tuple[str, int]]) -> Path:
    """A release in the earlier seven-copy layout: ``data/{split}-…``, ``fold_k/{train,test}-…``
    (every fifth row in each fold's test) and ``sft/{split}-…``."""
    from datasets import Dataset

    features = _features()
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
        table([u for u in ids if rows[u][0] == split]).to_parquet(folder / f"sft/{split}-00000-of-00001.parquet")
    yaml_configs.append(("default", "data", ("train", "validation", "test")))
    for k in range(5):
        test = [u for i, u in enumerate(ids) if i % 5 == k]
        table([u for u in ids if u not in test]).to_parquet(folder / f"fold_{k}/train-00000-of-00001.parquet")
        table(test).to_parquet(folder / f"fold_{k}/test-00000-of-00001.parquet")
        yaml_configs.append((f"fold_{k}", f"fold_{k}", ("train", "test")))
    yaml_configs.append(("sft", "sft", ("train", "validation", "test")))
    lines = ["license: cc-by-nc-4.0", "configs:"]
    for name, data_dir, splits in yaml_configs:
        lines += [f"- config_name: {name}", "  data_files:"]
        lines += [f"  - split: {s}\n    path: {data_dir}/{s}-*" for s in splits]
    _finish(folder, "\n".join(lines), len(rows))
    return folder


def _finish(folder: Path, yaml_text: str, n: int) -> None:
    lines = ["---", yaml_text.strip(), "---", "", "# BiasCorpus (test build)", "", "## Changelog", "",
             "<!-- changelog:start -->", "local build, not yet published", "<!-- changelog:end -->", "",
             "## Citation", "", "tbd", ""]
    (folder / "README.md").write_text("\n".join(lines), encoding="utf-8")
    (folder / "assets").mkdir(exist_ok=True)
    (folder / "assets/label_by_outlet.png").write_bytes(_png(99))
    (folder / "build_report.json").write_text(f'{{"rows": {n}}}\n', encoding="utf-8")


def base_rows(n: int = 20) -> dict[str, tuple[str, int]]:
    splits = ["train"] * 8 + ["validation", "test"]
    return {f"id-{i:03d}": (splits[i % 10], i % 2) for i in range(n)}

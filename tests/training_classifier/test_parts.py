"""Pure parts of the classifier baselines: metrics, focal loss, EfficientNet-Lite0, feature
cache, and the BABE-format sentence corpus builder."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch


def test_focal_loss_equals_cross_entropy_at_gamma_zero():
    from vilbias.training.losses import focal_loss

    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(16, 2, generator=gen)
    labels = torch.randint(0, 2, (16,), generator=gen)
    ce = torch.nn.functional.cross_entropy(logits, labels)
    assert torch.allclose(focal_loss(logits, labels, alpha=1.0, gamma=0.0), ce, atol=1e-6)
    # gamma > 0 down-weights easy examples: strictly below the cross-entropy.
    assert focal_loss(logits, labels, alpha=1.0, gamma=2.0) < ce


def test_classification_metrics_values():
    from vilbias.metrics.scores import closed_metrics as classification_metrics

    m = classification_metrics([1, 1, 1, 0, 0, 0], [1, 1, 0, 0, 0, 1])
    assert m["accuracy"] == pytest.approx(4 / 6)
    assert m["precision_binary"] == pytest.approx(2 / 3)
    assert m["recall_binary"] == pytest.approx(2 / 3)
    assert m["f1_macro"] == pytest.approx(2 / 3)
    assert m["confusion_matrix"] == [[2, 1], [1, 2]]
    with pytest.raises(ValueError, match="references"):
        classification_metrics([1, 0], [1])


def test_summarize_folds_mean_std_and_table():
    from vilbias.metrics.scores import CLOSED_KEYS, format_table, summarize_folds

    folds = [{k: v for k in CLOSED_KEYS} for v in (0.5, 0.7, 0.9)]
    s = summarize_folds(folds)
    assert s["f1_macro"]["mean"] == pytest.approx(0.7)
    assert s["f1_macro"]["std"] == pytest.approx(0.2)
    table = format_table(s, folds)
    assert "0.7000 ± 0.2000" in table and "fold_2" in table


def test_efficientnet_lite0_loads_strictly_and_gives_1280_features():
    from PIL import Image

    from vilbias.models.image_encoders import EFFICIENTNET_LITE0, load_image_encoder

    encoder = load_image_encoder(EFFICIENTNET_LITE0)  # load_state_dict(strict=True) inside
    pixels = encoder.preprocess([Image.new("RGB", (300, 200), (120, 80, 40)), Image.new("L", (64, 90))])
    assert pixels.shape == (2, 3, 224, 224)
    with torch.no_grad():
        feats = encoder(pixels)
    assert feats.shape == (2, 1280) and torch.isfinite(feats).all()
    assert not torch.allclose(feats[0], feats[1])


def test_feature_cache_reuses_features_by_image_hash(tmp_path):
    from PIL import Image
    from vilbias.training.feature_cache import FeatureCache, compute_image_features, image_sha256

    class CountingEncoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(1))
            self.calls = 0

        def preprocess(self, images):
            return torch.stack([torch.tensor(np.asarray(im.convert("RGB"), dtype=np.float32)).mean((0, 1)) for im in images])

        def forward(self, x):
            self.calls += len(x)
            return x * self.w

    def jpeg(color):
        buf = io.BytesIO()
        Image.new("RGB", (8, 8), color).save(buf, format="PNG")
        return buf.getvalue()

    images = [jpeg((255, 0, 0)), jpeg((0, 255, 0)), jpeg((255, 0, 0))]
    enc = CountingEncoder()
    first = compute_image_features(enc, images, FeatureCache("counting-v1", tmp_path))
    assert enc.calls == 2  # the repeated image is encoded once
    assert first.shape == (3, 3) and np.allclose(first[0], [255, 0, 0])
    again = compute_image_features(enc, images, FeatureCache("counting-v1", tmp_path))
    assert enc.calls == 2 and np.array_equal(first, again)
    cache = FeatureCache("counting-v1", tmp_path)
    assert (cache.dir / f"{image_sha256(images[0])}.npy").is_file()
    assert (cache.dir / "encoder.txt").read_text().strip() == "counting-v1"
    # Another encoder has its own key: nothing is shared.
    compute_image_features(enc, images, FeatureCache("counting-v2", tmp_path))
    assert enc.calls == 4


def test_sentences_build_layout_and_stratified_folds(tmp_path, babe_csv):
    from datasets import load_dataset

    from vilbias.corpus.sentences import build_sentences

    report = build_sentences(babe_csv, tmp_path / "babe")
    assert report["rows_read"] == 54 and report["excluded_no_agreement"] == 4 and report["rows_kept"] == 50
    assert report["label_counts"] == {"not_biased": 20, "biased": 30}
    out = tmp_path / "babe"
    assert (out / "data" / "train-fold0-00000-of-00001.parquet").is_file()
    assert (out / "data" / "test-fold3-00000-of-00001.parquet").is_file() and not (out / "fold_3").exists()
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert "configs:" in readme and "dataset_info:" in readme and "class_label" in readme

    default = load_dataset(str(out))
    assert set(default) == {"train", "validation", "test"}
    assert sum(len(default[s]) for s in default) == 50
    assert default["train"].features["label"].names == ["not_biased", "biased"]
    row = next(r for r in default["train"] if r["label"] == 1)
    assert isinstance(row["biased_words"], list) and len(row["biased_words"]) == 1

    test_ids = []
    for k in range(5):
        fold = load_dataset(str(out), f"fold_{k}")
        ids_train, ids_test = set(fold["train"]["unique_id"]), set(fold["test"]["unique_id"])
        assert not ids_train & ids_test and len(ids_train | ids_test) == 50
        test_ids += fold["test"]["unique_id"]
        biased = sum(fold["test"]["label"])
        assert abs(biased - 30 / 5) <= 1 and abs(len(fold["test"]) - biased - 20 / 5) <= 1  # stratified
    assert sorted(test_ids) == sorted(set(test_ids)) and len(test_ids) == 50  # folds partition the rows

    # Deterministic: a rebuild writes identical fold membership.
    build_sentences(babe_csv, tmp_path / "again")
    for k in range(5):
        a = load_dataset(str(out), f"fold_{k}")["test"]["unique_id"]
        b = load_dataset(str(tmp_path / "again"), f"fold_{k}")["test"]["unique_id"]
        assert sorted(a) == sorted(b)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("A sentence;https://x/1;O;t;left;Maybe;;[]", "label_bias"),
        ("A sentence;https://x/1;O;t;left;Biased;;['unclosed", "biased_words"),
        ("A sentence;https://x/1;O;t;left;Biased;;{'a': 1}", "list of strings"),
    ],
)
def test_sentences_reject_bad_rows(tmp_path, line, message):
    from tests.training_classifier.conftest import BABE_HEADER
    from vilbias.corpus.sentences import build_sentences

    path = tmp_path / "bad.csv"
    path.write_bytes(f"{BABE_HEADER}\n{line}\n".encode("utf-8-sig"))
    with pytest.raises(ValueError, match=message):
        build_sentences(path, tmp_path / "out")


def test_sentences_reject_wrong_header_and_conflicts(tmp_path):
    from tests.training_classifier.conftest import BABE_HEADER
    from vilbias.corpus.sentences import build_sentences

    comma = tmp_path / "comma.csv"
    comma.write_text("text,news_link,outlet,topic,type,label_bias,label_opinion,biased_words\n", encoding="utf-8")
    with pytest.raises(ValueError, match="missing column"):
        build_sentences(comma, tmp_path / "out")
    dup = tmp_path / "dup.csv"
    rows = ["S one;https://x/1;O;t;left;Biased;;[]", "S one;https://x/1;O;t;left;Biased;;[]", "S one;https://x/1;O;t;left;Non-biased;;[]"]
    dup.write_bytes(("\n".join([BABE_HEADER, *rows[:2]]) + "\n").encode("utf-8-sig"))
    assert build_sentences(dup, tmp_path / "out")["duplicates_dropped"] == 1
    dup.write_bytes(("\n".join([BABE_HEADER, *rows]) + "\n").encode("utf-8-sig"))
    with pytest.raises(ValueError, match="different label"):
        build_sentences(dup, tmp_path / "out2")


def test_build_cli_sentences(tmp_path, babe_csv, capsys):
    import json

    from vilbias.cli import main

    assert main(["build", "--sentences", str(babe_csv), "--output", str(tmp_path / "babe")]) == 0
    out = capsys.readouterr().out
    assert "fold_4" in out and "no_agreement 4" in out
    report = json.loads((tmp_path / "babe" / "build_report.json").read_text())
    assert report["rows"] == 50 and report["configs"]["fold_0"]["train"] + report["configs"]["fold_0"]["test"] == 50

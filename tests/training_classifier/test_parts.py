"""Pure parts of the classifier baselines: metrics, focal loss, EfficientNet-Lite0, feature
cache. (The sentence corpus builder is tested in tests/corpus/test_sentences.py.)"""

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

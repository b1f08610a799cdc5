"""Fusion training with cached image features vs recomputing them every epoch.

    .venv/bin/python benchmarks/bench_fusion_cache.py [--epochs 3] [--threads 2]

Both runs train the same all-MiniLM-L6-v2 + EfficientNet-Lite0 fusion head (frozen encoders,
text features computed once, as the offline default does) on the embedded sample's images,
in the same process:

- baseline: every epoch decodes and preprocesses each image and runs EfficientNet-Lite0;
- cached: every epoch asks the on-disk feature cache (``FeatureCache``, a fresh folder), so
  the first epoch computes and stores the features and later epochs read them back.

Prints per-epoch times and the ratio (baseline epoch / cached epoch after the first).
"""

from __future__ import annotations

import argparse
import io
import random
import tempfile
import time
from pathlib import Path

import torch
from PIL import Image
from vilbias.training.feature_cache import FeatureCache, compute_image_features

from vilbias.models.fusion import FusionConfig, FusionForClassification

SAMPLE_IMAGES = Path(__file__).resolve().parents[1] / "src" / "vilbias" / "sample" / "images"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--smoke", action="store_true", help="A tiny run of every step, in seconds, for the test suite (tests/test_benchmarks.py); its figures mean nothing.")
    args = parser.parse_args()
    if args.smoke:
        args.epochs, args.threads, args.batch_size = 2, 1, 2  # two batches an epoch, the second epoch reading the cache
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)

    images = [p.read_bytes() for p in sorted(SAMPLE_IMAGES.iterdir()) if p.suffix.lower() in {".jpg", ".jpeg", ".png"}]
    if not images:
        raise SystemExit(f"no images in {SAMPLE_IMAGES}")
    images = images[:4] if args.smoke else images
    rng = random.Random(0)
    labels = torch.tensor([rng.randint(0, 1) for _ in images])
    model = FusionForClassification(FusionConfig(freeze_text_encoder=True, freeze_image_encoder=True, hidden_size=128))
    texts = [f"Headline {i}\n\nArticle text about item {i}." for i in range(len(images))]
    with torch.no_grad():
        enc = model.tokenize(texts)
        text_features = model.encode_text(enc["input_ids"], enc["attention_mask"], enc.get("token_type_ids"))
    encoder = model.image_encoder
    bs = args.batch_size

    def train_epoch(image_features_for) -> float:
        opt = torch.optim.AdamW(model.head.parameters(), lr=1e-3)
        model.train()
        start = time.perf_counter()
        feats = image_features_for()
        for i in range(0, len(images), bs):
            out = model(text_features=text_features[i : i + bs], image_features=feats(i, i + bs), labels=labels[i : i + bs])
            out.loss.backward()
            opt.step()
            opt.zero_grad()
        return time.perf_counter() - start

    def recompute():
        def batch(i, j):
            with torch.no_grad():
                return encoder(encoder.preprocess([Image.open(io.BytesIO(b)) for b in images[i:j]]))

        return batch

    with tempfile.TemporaryDirectory() as tmp:
        cache = FeatureCache("efficientnet-lite0", tmp)

        def cached():
            all_feats = torch.from_numpy(compute_image_features(encoder, images, cache, batch_size=bs))
            return lambda i, j: all_feats[i:j]

        base = [train_epoch(recompute) for _ in range(args.epochs)]
        with_cache = [train_epoch(cached) for _ in range(args.epochs)]
        hits, misses = cache.hits, cache.misses

    later = with_cache[1:]
    base_mean = sum(base) / len(base)
    later_mean = sum(later) / len(later)
    print(f"{len(images)} images, batch {bs}, {args.epochs} epochs each, {args.threads} threads")
    print("recompute every epoch : " + "  ".join(f"{t:.3f}s" for t in base) + f"   mean {base_mean:.3f}s")
    print("feature cache         : " + "  ".join(f"{t:.3f}s" for t in with_cache) + "   (first epoch fills the cache)")
    print(f"cache: {misses} computed, {hits} read back")
    print(f"ratio (recompute epoch / cached epoch after the first): {base_mean / later_mean:.1f}x")


if __name__ == "__main__":
    main()

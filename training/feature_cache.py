"""On-disk cache of pooled image features, keyed by image content and encoder.

A frozen image encoder gives the same vector for the same image every time, so the fusion
classifiers compute it once: later epochs, later folds and later runs read it back.

Layout: ``<root>/<encoder-key>/<image-sha256>.npy`` (float32, shape ``(feature_dim,)``), where
``<encoder-key>`` is the first 16 hex digits of the SHA-256 of the encoder's identity string
(name or path, plus a fingerprint of local weights), and ``<root>/<encoder-key>/encoder.txt``
records that identity for people reading the folder. The root defaults to
``$VILBIAS_FEATURE_CACHE`` or ``~/.cache/vilbias/features``. Deleting any part of it is safe.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)


def default_cache_dir() -> Path:
    return Path(os.environ.get("VILBIAS_FEATURE_CACHE", "~/.cache/vilbias/features")).expanduser()


def encoder_identity(name_or_path: str) -> str:
    """A string that changes whenever the encoder's weights do.

    Hub ids and the packaged EfficientNet are their name (a Hub id is pinned by whoever
    passes a revision in it); a local folder adds the size and modification time of its
    weight files, so retraining into the same folder does not serve stale features.
    """
    path = Path(name_or_path)
    if not path.is_dir():
        return name_or_path
    stamps = [
        f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}"
        for p in sorted(path.iterdir())
        if p.suffix in {".safetensors", ".bin", ".pth", ".json"}
    ]
    return f"{path.resolve()}|{'|'.join(stamps)}"


class FeatureCache:
    """Feature vectors of one encoder, stored one ``.npy`` per image.

    Args:
        encoder: the encoder's identity (see :func:`encoder_identity`).
        root: cache root; ``None`` uses :func:`default_cache_dir`.
    """

    def __init__(self, encoder: str, root: str | Path | None = None):
        self.encoder = encoder
        key = hashlib.sha256(encoder.encode()).hexdigest()[:16]
        self.dir = Path(root).expanduser() if root is not None else default_cache_dir()
        self.dir = self.dir / key
        self.hits = 0
        self.misses = 0

    def _path(self, image_sha256: str) -> Path:
        return self.dir / f"{image_sha256}.npy"

    def get(self, image_sha256: str) -> np.ndarray | None:
        try:
            value = np.load(self._path(image_sha256))
        except (FileNotFoundError, ValueError, OSError):
            # A missing or truncated file (an interrupted run) is recomputed, not fatal.
            return None
        self.hits += 1
        return value

    def put(self, image_sha256: str, features: np.ndarray) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        marker = self.dir / "encoder.txt"
        if not marker.exists():
            marker.write_text(self.encoder + "\n", encoding="utf-8")
        # Write then rename, so a reader never sees half a file.
        tmp = self._path(image_sha256).with_suffix(f".tmp{os.getpid()}.npy")
        np.save(tmp, np.asarray(features, dtype=np.float32))
        os.replace(tmp, self._path(image_sha256))


def image_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def compute_image_features(
    encoder,
    images: Sequence[bytes],
    cache: FeatureCache | None = None,
    *,
    batch_size: int = 32,
) -> np.ndarray:
    """Pooled features for encoded images, ``(len(images), feature_dim)`` float32.

    Args:
        encoder: a module from :func:`vilbias.models.image_encoders.load_image_encoder`.
        images: original encoded bytes (the dataset's ``image`` column with ``decode=False``).
        cache: read features from and write them to this cache; ``None`` computes everything.
        batch_size: images per forward pass on a cache miss.
    """
    import io

    import torch
    from PIL import Image
    from tqdm.auto import tqdm

    keys = [image_sha256(b) for b in images]
    out: dict[str, np.ndarray] = {}
    todo: list[int] = []
    for i, key in enumerate(keys):
        if key in out:
            continue
        cached = cache.get(key) if cache is not None else None
        if cached is not None:
            out[key] = cached
        else:
            out[key] = None  # placeholder so duplicates are computed once
            todo.append(i)
    if cache is not None:
        cache.misses += len(todo)
    device = next(encoder.parameters()).device
    was_training = encoder.training
    encoder.eval()
    with torch.no_grad():
        for start in tqdm(range(0, len(todo), batch_size), desc="image features", disable=len(todo) <= batch_size):
            batch = todo[start : start + batch_size]
            pixels = encoder.preprocess([Image.open(io.BytesIO(images[i])) for i in batch])
            feats = encoder(pixels.to(device)).float().cpu().numpy()
            for i, f in zip(batch, feats, strict=True):
                out[keys[i]] = f
                if cache is not None:
                    cache.put(keys[i], f)
    encoder.train(was_training)
    logger.debug("image features: %d computed, %d from cache", len(todo), len(images) - len(todo))
    return np.stack([out[k] for k in keys]).astype(np.float32)

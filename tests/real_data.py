"""The real-data tier: material no one here wrote, in ``../shared/data`` beside the checkout.

Tests marked ``real_data`` get their files through :func:`shared_data`. On a checkout without
``../shared`` they skip with a one-line reason; in CI (``CI=true``, set by ``.ci/run``) a missing
folder fails the test instead, and ``tests/conftest.py`` fails the run if any ``real_data`` test
was skipped for another reason — the tier cannot silently disappear.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def shared_data(*parts: str) -> Path:
    """``../shared/data/<parts>``, or a skip (a fail in CI) when it is not there."""
    path = SHARED_DATA.joinpath(*parts)
    if path.exists():
        return path
    if in_ci():
        pytest.fail(f"{path} is missing: the real-data tier must run in CI")
    pytest.skip(f"real data not available: {path} does not exist (checkout without ../shared)")

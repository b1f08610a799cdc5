"""A headless Chromium loads the running app, submits an example and sees a label and a rationale."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from tests.fakes.chromium import CHROMIUM, Chromium

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (apt-get install chromium)"),
]

BODY = "document.body ? document.body.innerText : ''"


def test_browser_submits_an_example_and_sees_label_and_rationale(space):
    from PIL import Image, ImageStat

    demo, _, _ = space
    with Chromium() as browser:
        browser.open(demo.local_url)
        browser.wait_for(f"({BODY}).includes('Label it') && document.querySelectorAll('tbody tr').length > 0", 30)
        browser.eval("document.querySelector('tbody tr').click()")  # the first example
        browser.wait_for("[...document.querySelectorAll('textarea')].some(t => t.value.includes('Port Alder'))", 10)
        browser.eval("[...document.querySelectorAll('button')].find(b => b.innerText.trim() === 'Label it').click()")
        browser.wait_for(f"({BODY}).includes('attributes claims to named sources')", 30)
        text = browser.eval(BODY)
        png = browser.screenshot()
    assert "calibrated probability" in text
    assert "not biased, confidence" in text or "biased, confidence" in text
    assert "Written by SmolLM2-135M-Instruct" in text and "Framing" in text
    assert "close to chance" in text  # the offline default says what it is, visibly
    shot = Image.open(io.BytesIO(png)).convert("L")
    assert shot.size[0] >= 800
    assert ImageStat.Stat(shot).stddev[0] > 5  # not a blank page


def test_a_link_with_example_runs_it(space):
    demo, _, _ = space
    with Chromium() as browser:
        browser.open(demo.local_url + "?example=1")
        browser.wait_for(f"({BODY}).includes('attributes claims to named sources')", 30)
        assert "Booming ports" in browser.eval("[...document.querySelectorAll('textarea')].map(t => t.value).join(' ')")

"""A headless Chromium loads the running app and labels a biased and a neutral example: each shows
its highlighted evidence and a rationale whose verdict is the label on screen.

Screenshots go to ``$VILBIAS_SCREENSHOTS`` (a folder) when set, else to the test's temporary
folder."""

from __future__ import annotations

import base64
import io
import os
from pathlib import Path

import pytest

from tests.fakes.chromium import CHROMIUM, Chromium

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium (apt-get install chromium)"),
]

BODY = "document.body ? document.body.innerText : ''"
TEXT = "(id) => (document.getElementById(id) || {innerText: ''}).innerText"
# Highlighted pieces of the evidence text, by category (Gradio's HighlightedText colours them).
MARKED = ("[...document.querySelectorAll('#highlighted .token.highlighted')]"
          ".map(t => t.innerText.trim()).filter(t => t)")
EXAMPLES = {"neutral": 0, "biased": 3}
"""Examples of the embedded sample: a plain port report, and an opinion piece on glaciers."""


def _shot_dir(tmp_path) -> Path:
    folder = Path(os.environ.get("VILBIAS_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _full_page_png(browser) -> bytes:
    return base64.b64decode(browser.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"])


def _label_example(browser, url: str, index: int) -> dict:
    browser.open(f"{url}?example={index}")
    browser.wait_for(f"({BODY}).includes('Explanation built from the model')", 60)
    return {
        "confidence": browser.eval("[...document.querySelectorAll('.prose')].map(e => e.innerText).find(t => t.includes(', confidence')) || ''"),
        "rationale": browser.eval(f"({TEXT})('rationale')"),
        "marked": browser.eval(MARKED),
        "evidence": browser.eval(f"({TEXT})('evidence')"),
        "image_note": browser.eval(f"({TEXT})('image-note')"),
        "png": _full_page_png(browser),
    }


def test_biased_and_neutral_examples_show_evidence_and_a_consistent_rationale(space, tmp_path):
    from PIL import Image, ImageStat

    demo, _, _ = space
    shots = _shot_dir(tmp_path)
    seen = {}
    with Chromium() as browser:
        for name, index in EXAMPLES.items():
            page = _label_example(browser, demo.local_url, index)
            (shots / f"vilbias-space-{name}.png").write_bytes(page["png"])
            seen[name] = page
    biased, neutral = seen["biased"], seen["neutral"]
    assert biased["confidence"].startswith("biased, confidence") and biased["rationale"].startswith("Biased (")
    assert neutral["confidence"].startswith("not biased, confidence") and neutral["rationale"].startswith("Not biased (")
    # the biased example's flagged sentences and marked words are highlighted; each has its probability
    assert len(biased["marked"]) >= 2 and "(flagged)" in biased["evidence"]
    assert "The sentences that drive the label" in biased["rationale"] and "%" in biased["rationale"]
    assert "No sentence was flagged" in neutral["rationale"] or "not enough to make" in neutral["rationale"]
    for page in (biased, neutral):
        assert "does not look at the image" in page["image_note"] and "does not look at the image" in page["confidence"]
        shot = Image.open(io.BytesIO(page["png"])).convert("L")
        assert shot.size[0] >= 800 and ImageStat.Stat(shot).stddev[0] > 5  # not a blank page


def test_how_it_works_panel_shows_the_calibration(space, tmp_path):
    demo, _, _ = space
    with Chromium() as browser:
        browser.open(demo.local_url)
        browser.wait_for(f"({BODY}).includes('How this works and its limits')", 30)
        browser.eval("[...document.querySelectorAll('button, span')].find(e => e.innerText.trim() === 'How this works and its limits').click()")
        browser.wait_for(f"({BODY}).includes('expected calibration error')", 10)
        text = browser.eval(BODY)
        assert "5-fold cross-validation" in text and "it never saw" in text
        # what it reads and how much, and (filled again when the page loads: the model is loaded by then) how it runs
        browser.wait_for(f"({BODY}).includes('Runtime: ')", 10)
        text = browser.eval(BODY)
        assert "How much it reads. The offline default reads up to 500 sentences" in text and "The default model reads English (en)." in text
        browser.wait_for("[...document.querySelectorAll('img')].some(i => i.src.includes('reliability') && i.complete)", 10)
        (_shot_dir(tmp_path) / "vilbias-space-how-it-works.png").write_bytes(_full_page_png(browser))


def test_a_label_of_part_of_the_text_says_so_right_under_it(space, tmp_path):
    """Pasted into the page: a text past the model's sentence limit (lowered for the test). The
    line right under the label, in bold, says how much was read and that the label covers only that."""
    from tests.spaces.test_reading import plain_sentences, sentence_limit

    demo, _, _ = space
    article = " ".join(plain_sentences(40))
    with sentence_limit(space, 30), Chromium() as browser:
        browser.open(demo.local_url)
        browser.wait_for("!!document.querySelector('#article-text textarea')", 30)
        browser.eval(f"""(() => {{
            const box = document.querySelector('#article-text textarea');
            box.value = {article!r};
            box.dispatchEvent(new Event('input', {{bubbles: true}}));
        }})()""")
        button = "[...document.querySelectorAll('button')].find(b => b.innerText.trim() === 'Label it')"
        browser.wait_for(f"!!({button})", 30)
        browser.eval(f"{button}.click()")
        browser.wait_for(f"({TEXT})('confidence').includes('confidence')", 60)
        confidence = browser.eval(f"({TEXT})('confidence')")
        bold = browser.eval("(document.querySelector('#confidence strong') || {innerText: ''}).innerText")
        (_shot_dir(tmp_path) / "vilbias-space-part-read.png").write_bytes(_full_page_png(browser))
    assert bold == "Read: the first 30 of 40 sentences (75%; the model reads at most 30), and the label covers only that part."
    assert confidence.startswith(bold)

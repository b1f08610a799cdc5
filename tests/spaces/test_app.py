"""The Space through its API (gradio_client): the offline default, the URL path, bad input."""

from __future__ import annotations

import io

import pytest
from gradio_client import handle_file
from gradio_client.exceptions import AppError
from vilbias.spaces.app import sample_examples

from tests.fakes.web_server import Page, WebServer
from tests.ingest import site

MODEL = "offline-default"


@pytest.fixture(scope="module")
def example():
    return sample_examples(1)[0]


@pytest.fixture(scope="module")
def web():
    with WebServer() as server:
        yield server


def _labels(label_output) -> dict:
    return {c["label"]: c["confidence"] for c in label_output["confidences"]}


def test_predict_image_and_text_on_the_offline_default(space, example):
    demo, client, stub = space
    image, headline, article, _ = example
    label, confidence, rationale, techniques, highlighted, seen = client.predict(
        handle_file(image), headline, article, "", MODEL, api_name="/predict")
    probs = _labels(label)
    assert set(probs) == {"biased", "not biased"} and sum(probs.values()) == pytest.approx(1.0)
    assert label["label"] == max(probs, key=probs.get)
    # the calibrated probability: the raw head's softmax scaled by the fitted temperature
    from PIL import Image
    from vilbias.spaces.predictors import scale_probabilities

    from vilbias.models.fusion import compose_text

    fusion = demo.vilbias_app.predictors.get(MODEL)
    raw = fusion.model.predict(Image.open(image).convert("RGB"), compose_text(headline, article))["probabilities"]
    expected = scale_probabilities([raw["not_biased"], raw["biased"]], fusion.spec.temperature)
    assert probs["not biased"] == pytest.approx(expected[0], abs=1e-6)
    assert "calibrated probability" in confidence and f"{max(probs.values()):.0%}" in confidence
    assert "attributes claims to named sources" in rationale and "SmolLM2-135M-Instruct" in rationale
    assert "prompted with the classifier's decision" in rationale
    assert techniques.splitlines() == ["- Word Choice", "- Framing"]
    # only quoted words that occur in the text are highlighted
    marked = [s["token"] for s in highlighted if s["class_or_confidence"] == "evidence"]
    assert marked and all(m.lower() == "container" for m in marked)
    assert "".join(s["token"] for s in highlighted) == f"{headline}\n\n{article}"
    assert seen and seen.endswith((".webp", ".png", ".jpg", ".jpeg"))
    # the prompt told the rationale writer the decision
    assert label["label"] in stub.prompts[-1][-1]["content"]


def test_label_streams_before_the_rationale(space, example):
    _, client, _ = space
    image, headline, article, _ = example
    job = client.submit(handle_file(image), headline, article, "", MODEL, api_name="/predict")
    job.result()
    outputs = job.outputs()
    assert len(outputs) == 2
    first, last = outputs
    assert first[0] == last[0]  # the label is final at the first update
    assert "is writing the rationale" in first[2] and "is writing" not in last[2]


def test_url_path_against_a_local_page(space, web):
    _, client, _ = space
    image_url = web.add("*", "/photo.jpg", Page(site.jpeg(320, 200), content_type="image/jpeg"))
    image_url = f"http://127.0.0.1:{web.port}/photo.jpg"
    web.add("*", "/news/story", Page(site.og_page("Council approves the harbour plan", site.paragraphs(3), image_url)))
    label, confidence, rationale, _, highlighted, seen = client.predict(
        None, "", "", f"http://127.0.0.1:{web.port}/news/story", MODEL, api_name="/predict")
    assert label["label"] in {"biased", "not biased"}
    text = "".join(s["token"] for s in highlighted)
    assert text.startswith("Council approves the harbour plan\n\n") and "(Fetched from http://127.0.0.1:" in text
    assert seen and "named sources" in rationale
    assert any(r.path == "/photo.jpg" for r in web.requests)


def _png(width, height, mode="L") -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new(mode, (width, height)).save(buf, format="PNG")
    return buf.getvalue()


@pytest.fixture(scope="module")
def files(tmp_path_factory, web):
    root = tmp_path_factory.mktemp("inputs")
    (root / "not_image.jpg").write_bytes(b"this is not a picture")
    (root / "huge.png").write_bytes(_png(16_500, 2_100))
    web.add("*", "/slow", Page(site.og_page("Slow", site.paragraphs(3), "/x.jpg"), delay=3.0))
    web.add("*", "/", Page("<html><head><title>Home</title></head><body><a href='/a'>News</a></body></html>"))
    web.add("*", "/news/no-image", Page(site.og_page("No picture here", site.paragraphs(3), "")))
    return root


def _bad_inputs(example, files, port):
    image, headline, article, _ = example
    ok = handle_file(image)
    return {
        "no image": ((None, headline, article, ""), "Upload the article's image"),
        "unreadable image": ((handle_file(str(files / "not_image.jpg")), headline, article, ""), "not an image"),
        "huge image": ((handle_file(str(files / "huge.png")), headline, article, ""), "too large (at most 16,384 pixels"),
        "empty text": ((ok, "  ", "", ""), "Enter a headline and the article text"),
        "huge text": ((ok, headline, "word " * 7000, ""), "the limit is 30,000"),
        "huge headline": ((ok, "x" * 500, article, ""), "The headline has 500 characters"),
        "not http": ((None, "", "", "ftp://example.com/story"), "must start with http:// or https://"),
        "timeout": ((None, "", "", f"http://127.0.0.1:{port}/slow"), "did not answer in time"),
        "not an article": ((None, "", "", f"http://127.0.0.1:{port}/"), "not a news article"),
        "no image on the page": ((None, "", "", f"http://127.0.0.1:{port}/news/no-image"), "has no usable image"),
    }


def test_each_bad_input_gets_its_message(space, example, files, web):
    _, client, _ = space
    for name, (args, message) in _bad_inputs(example, files, web.port).items():
        with pytest.raises(AppError) as e:
            client.predict(*args, MODEL, api_name="/predict")
        assert message in str(e.value), name
        assert "Traceback" not in str(e.value), name


def test_deployed_mode_refuses_private_addresses_and_big_files(strict_space, example, web):
    _, client = strict_space
    image, headline, article, _ = example
    web.add("*", "/news/local", Page(site.og_page("Local", site.paragraphs(3), "/x.jpg")))
    with pytest.raises(AppError, match="private or local network"):
        client.predict(None, "", "", f"http://127.0.0.1:{web.port}/news/local", MODEL, api_name="/predict")
    with pytest.raises(AppError, match=r"The image is \d+ kB; the limit is 5 kB"):
        client.predict(handle_file(image), headline, article, "", MODEL, api_name="/predict")
    with pytest.raises(AppError, match="Unknown model"):
        client.predict(handle_file(image), headline, article, "", "no-such-model", api_name="/predict")

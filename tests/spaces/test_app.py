"""The Space through its API (gradio_client): the offline default's label, evidence and
rationale, the URL path, and a specific sentence for every failure."""

from __future__ import annotations

import io
import logging

import pytest
from gradio_client import handle_file
from gradio_client.exceptions import AppError
from vilbias.spaces.app import sample_examples

from tests.fakes.rationale import StubRationale
from tests.fakes.web_server import Page, WebServer
from tests.ingest import site
from tests.spaces.conftest import BIASED_ITEM, NEUTRAL_ITEM

MODEL = "offline-default"
WORDED = "offline-default-worded"


@pytest.fixture(scope="module")
def example():
    return sample_examples(1)[0]


@pytest.fixture(scope="module")
def web():
    with WebServer() as server:
        yield server


def _labels(label_output) -> dict:
    return {c["label"]: c["confidence"] for c in label_output["confidences"]}


def _marked(highlighted, prefix) -> list[str]:
    return [s["token"] for s in highlighted if (s["class_or_confidence"] or "").startswith(prefix)]


def test_label_confidence_and_highlights_come_from_one_pass(space):
    demo, client, _ = space
    label, confidence, rationale, techniques, highlighted, seen, evidence = client.predict(
        None, *BIASED_ITEM, "", MODEL, api_name="/predict")
    probs = _labels(label)
    assert label["label"] == "biased" and probs["biased"] == pytest.approx(max(probs.values()))
    # the same numbers as one call of the model on the item's sentences
    from vilbias.spaces.inputs import Item
    from vilbias.spaces.predictors import item_sentences

    predictor = demo.vilbias_app.predictors.get(MODEL)
    item = Item(None, *BIASED_ITEM)
    article = predictor.model.score_article([text for text, _, _ in item_sentences(item)])
    assert probs["biased"] == pytest.approx(article.probability, abs=1e-6)
    assert f"confidence {article.confidence:.0%}" in confidence and "does not look at the image" in confidence
    flagged = sorted((s for s in article.sentences if s.flagged), key=lambda s: -s.probability)
    assert flagged and evidence["data"][0][0] == f"{flagged[0].probability:.0%} (flagged)"
    assert evidence["data"][0][1] == flagged[0].text and evidence["headers"] == ["P(biased)", "sentence", "marked words"]
    # highlights: every flagged sentence and the words the model marks in it, and nothing else
    assert "".join(s["token"] for s in highlighted) == f"{BIASED_ITEM[0]}\n\n{BIASED_ITEM[1]}"
    words = {w.text for s in flagged for w in s.words}
    assert words and set(_marked(highlighted, "marked word")) == words
    covered = "".join(s["token"] if s["class_or_confidence"] else "\0" * len(s["token"]) for s in highlighted)
    assert all(s.text in covered for s in flagged)
    assert not any(s.text in covered for s in article.sentences if not s.flagged)
    assert rationale.startswith(f"**Biased** ({article.probability:.0%})") and f"**{flagged[0].probability:.0%}**" in rationale
    assert "built from the model's evidence" in rationale and techniques.startswith("- **")
    assert seen is None  # no image given: the text-only model does not need one


def test_neutral_item_is_not_biased_and_names_no_technique(space):
    _, client, _ = space
    label, confidence, rationale, techniques, highlighted, _, evidence = client.predict(
        None, *NEUTRAL_ITEM, "", MODEL, api_name="/predict")
    assert label["label"] == "not biased"
    assert rationale.startswith("**Not biased**") and "below the" in rationale and "the rule needs" in rationale
    assert "No sentence was flagged" in rationale or "not enough to make the article biased" in rationale
    assert techniques == "None: the article is not labelled biased."
    flagged_rows = [row[1] for row in evidence["data"] if "(flagged)" in row[0]]
    covered = "".join(s["token"] if s["class_or_confidence"] else "\0" * len(s["token"]) for s in highlighted)
    assert all(text in covered for text in flagged_rows) and len(covered.replace("\0", "")) <= sum(map(len, flagged_rows))


def test_an_uploaded_image_is_shown_but_not_read(space, example):
    _, client, _ = space
    image, headline, article, _ = example
    with_image = client.predict(handle_file(image), headline, article, "", MODEL, api_name="/predict")
    without = client.predict(None, headline, article, "", MODEL, api_name="/predict")
    assert with_image[0] == without[0] and with_image[2] == without[2]  # the image changes nothing
    assert with_image[5] and with_image[5].endswith((".webp", ".png", ".jpg", ".jpeg")) and without[5] is None


def test_evidence_arrives_with_the_label_and_the_wording_after(space):
    _, client, stub = space
    job = client.submit(None, *BIASED_ITEM, "", WORDED, api_name="/predict")
    job.result()
    first, last = job.outputs()
    assert first[0] == last[0] and first[6] == last[6] and first[4] == last[4]  # label, evidence, highlights
    assert first[2].startswith("**Biased**") and "is wording this explanation" in first[2]
    assert last[2].startswith("The flagged sentences use loaded words.") and "worded by SmolLM2-135M-Instruct" in last[2]
    prompt = stub.prompts[-1][-1]["content"]
    assert prompt.startswith("Verdict: biased") and "Radical activists ram" in prompt
    assert "The council voted five to four" not in prompt  # only the evidence, no other text to argue from


def _adversary(prompt: str) -> str:
    """Argues for the other label, as SmolLM2 did on the issue's vaccine story."""
    if prompt.startswith("Verdict: not biased"):
        return ("The article is filled with emotional appeals and hyperbolic language, which may have contributed "
                "to a biased presentation.")
    return "The article is neutral and balanced; it reports the facts."


def test_rationale_agrees_with_the_label_every_time(space, example):
    demo, client, _ = space
    app = demo.vilbias_app
    items = [BIASED_ITEM, NEUTRAL_ITEM, *[(h, a) for _, h, a, _ in sample_examples(4)]]
    saved = app.rationale._backend
    try:
        for answer in (_adversary, lambda p: 'It quotes "words nobody wrote here" as proof.'):
            app.rationale._backend = StubRationale(answer)
            labels = set()
            for headline, article in items:
                label, _, rationale, techniques, *_ = client.predict(None, headline, article, "", WORDED, api_name="/predict")
                verdict = "**Biased**" if label["label"] == "biased" else "**Not biased**"
                labels.add(label["label"])
                assert rationale.startswith(verdict), (headline, rationale)
                assert "wording is not shown: its answer" in rationale
                assert "emotional appeals and hyperbolic" not in rationale and "neutral and balanced" not in rationale
                assert "words nobody wrote" not in rationale
                if label["label"] == "not biased":
                    assert techniques.startswith("None")
            assert labels == {"biased", "not biased"}
    finally:
        app.rationale._backend = saved


def test_url_path_against_a_local_page(space, web):
    _, client, _ = space
    image_url = web.add("*", "/photo.jpg", Page(site.jpeg(320, 200), content_type="image/jpeg"))
    image_url = f"http://127.0.0.1:{web.port}/photo.jpg"
    web.add("*", "/news/story", Page(site.og_page(NEUTRAL_ITEM[0], [NEUTRAL_ITEM[1]], image_url)))
    label, confidence, rationale, _, highlighted, seen, _ = client.predict(
        None, "", "", f"http://127.0.0.1:{web.port}/news/story", MODEL, api_name="/predict")
    assert label["label"] == "not biased" and rationale.startswith("**Not biased**")
    text = "".join(s["token"] for s in highlighted)
    assert text.startswith(f"{NEUTRAL_ITEM[0]}\n\n") and "(Fetched from http://127.0.0.1:" in text
    assert seen and any(r.path == "/photo.jpg" for r in web.requests)


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
    web.add("*", "/news/no-image", Page(site.og_page(*NEUTRAL_ITEM[:1], [NEUTRAL_ITEM[1]], "")))
    web.add("*", "/robots.txt", Page("User-agent: *\nDisallow: /private/\n", content_type="text/plain"))
    web.add("*", "/private/story", Page(site.og_page("Private", site.paragraphs(3), "/x.jpg")))
    return root


def _closed_port() -> int:
    from tests.spaces.conftest import free_port

    return free_port()  # bound then released: nothing listens there


def _bad_inputs(example, files, port):
    image, headline, article, _ = example
    ok = handle_file(image)
    return {
        "unreadable image": ((handle_file(str(files / "not_image.jpg")), headline, article, "", MODEL), "not an image"),
        "huge image": ((handle_file(str(files / "huge.png")), headline, article, "", MODEL), "too large (at most 16,384 pixels"),
        "empty text": ((ok, "  ", "", "", MODEL), "Enter a headline and the article text"),
        "huge text": ((ok, headline, "word " * 7000, "", MODEL), "the limit is 30,000"),
        "huge headline": ((ok, "x" * 500, article, "", MODEL), "The headline has 500 characters"),
        "no image, image model": ((None, headline, article, "", "tiny-fusion"), "Upload the article's image: this model reads the picture"),
        "not http": ((None, "", "", "ftp://example.com/story", MODEL), "must start with http:// or https://"),
        "unreachable": ((None, "", "", f"http://127.0.0.1:{_closed_port()}/news/a", MODEL), "could not be reached"),
        "robots": ((None, "", "", f"http://127.0.0.1:{port}/private/story", MODEL), "asks crawlers not to fetch this page"),
        "timeout": ((None, "", "", f"http://127.0.0.1:{port}/slow", MODEL), "did not answer in time"),
        "not an article": ((None, "", "", f"http://127.0.0.1:{port}/", MODEL), "not a news article"),
        "no image on the page, image model": ((None, "", "", f"http://127.0.0.1:{port}/news/no-image", "tiny-fusion"),
                                              "has no usable image"),
        "hub model offline": ((None, headline, article, "", "smolvlm-lora"), "cannot reach the Hub (no network)"),
        "unknown model": ((None, headline, article, "", "no-such-model"), "Unknown model"),
    }


def test_each_failure_gets_its_own_sentence_and_the_log_its_traceback(space, example, files, web, caplog):
    _, client, _ = space
    messages = {}
    with caplog.at_level(logging.WARNING, logger="vilbias.spaces"):
        for name, (args, message) in _bad_inputs(example, files, web.port).items():
            with pytest.raises(AppError) as e:
                client.predict(*args, api_name="/predict")
            assert message in str(e.value), name
            assert "Traceback" not in str(e.value) and "Something went wrong" not in str(e.value), name
            messages[name] = str(e.value)
    assert len(set(messages.values())) == len(messages)  # no two failures share a sentence
    logged = [r for r in caplog.records if r.exc_info and "robots" in r.getMessage()]
    assert logged and "ItemFetchError" in caplog.text and "Traceback" in caplog.text
    assert any(r.exc_info and "smolvlm" in r.getMessage() for r in caplog.records)  # the load failure's traceback


def test_a_page_without_an_image_is_labelled_by_the_text_only_model(space, web, files):
    _, client, _ = space
    label, _, rationale, _, _, seen, _ = client.predict(None, "", "", f"http://127.0.0.1:{web.port}/news/no-image", MODEL,
                                                        api_name="/predict")
    assert label["label"] == "not biased" and rationale.startswith("**Not biased**") and seen is None


def test_building_the_space_changes_no_variable_libraries_read_on_import(space):
    """gradio writes HF_HUB_DISABLE_TELEMETRY as it builds a Blocks; the suite sets the value it
    writes, so a process that built a Space still starts its commands as forks (tests/forks.py)."""
    import os

    from tests.conftest import IMPORT_TIME_ENV_AT_START

    assert {k: os.environ.get(k) for k in IMPORT_TIME_ENV_AT_START} == IMPORT_TIME_ENV_AT_START


def test_a_model_still_loading_gets_its_sentence(monkeypatch):
    import threading

    import vilbias.spaces.predictors as P

    started, release = threading.Event(), threading.Event()

    class SlowModel:
        def __init__(self, spec):
            started.set()
            release.wait(30)

    monkeypatch.setitem(P.VIEWS, "vlm", SlowModel)
    predictors = P.Predictors([P.PickerModel(name="slow", title="Slow VLM", kind="vlm", path="org/slow")])
    loader = threading.Thread(target=predictors.get, args=("slow",))
    loader.start()
    assert started.wait(30)
    with pytest.raises(P.InputError, match=r"Slow VLM is still loading \(started \d+ s ago\); try again in a minute"):
        predictors.get("slow")
    release.set()
    loader.join(30)
    assert isinstance(predictors.get("slow"), SlowModel)


def test_deployed_mode_refuses_private_addresses_and_big_files(strict_space, example, web):
    _, client = strict_space
    image, headline, article, _ = example
    web.add("*", "/news/local", Page(site.og_page("Local", site.paragraphs(3), "/x.jpg")))
    with pytest.raises(AppError, match="private or local network"):
        client.predict(None, "", "", f"http://127.0.0.1:{web.port}/news/local", MODEL, api_name="/predict")
    with pytest.raises(AppError, match=r"The image is \d+ kB; the limit is 5 kB"):
        client.predict(handle_file(image), headline, article, "", MODEL, api_name="/predict")

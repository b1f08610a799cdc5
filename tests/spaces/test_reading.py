"""How much of what is given the Space reads, and that the answer says so beside the label: a long
article is read whole (issue: loaded sentences after sentence 120 were never read, and "not
biased 98%" said so only in small print), a text past the model's limit says at the top what was
read, and a page's HTML pasted into the text box is labelled as the article's text."""

from __future__ import annotations

import contextlib
import re
from types import SimpleNamespace

import pytest
from vilbias.spaces.app import how_it_works_markdown, reading_limits, runtime_markdown
from vilbias.spaces.predictors import MAX_SENTENCES

from tests.fakes.web_server import Page, WebServer
from tests.ingest import site
from tests.real_data import shared_data
from tests.spaces.conftest import BIASED_ITEM, NEUTRAL_ITEM

MODEL = "offline-default"


def plain_sentences(n: int) -> list[str]:
    return [f"The harbour authority published report number {i} on Tuesday, listing the contracts signed that week."
            for i in range(n)]


@contextlib.contextmanager
def sentence_limit(space, n: int):
    """The default model's sentence limit set to ``n`` for the block (a small limit keeps the test fast)."""
    inner = space[0].vilbias_app.predictors.get(MODEL).predictor.inner
    saved, inner.max_sentences = inner.max_sentences, n
    try:
        yield
    finally:
        inner.max_sentences = saved


def test_a_long_article_is_read_whole(space):
    """150 plain sentences, then the loaded ones: all are read, and the loaded ones decide."""
    _, client, _ = space
    article = " ".join(plain_sentences(150)) + " " + BIASED_ITEM[1]
    label, confidence, *_, evidence = client.predict(None, "Harbour report", article, None, MODEL, api_name="/predict")
    assert label["label"] == "biased"
    assert "Read: the whole text (155 sentences)." in confidence and not confidence.startswith("**Read:")
    assert any("(flagged)" in row[0] and "Radical activists" in row[1] for row in evidence["data"])


def test_past_the_limit_the_answer_says_at_the_top_what_was_read(space):
    _, client, _ = space
    article = " ".join(plain_sentences(40))
    with sentence_limit(space, 30):
        _, confidence, *_ = client.predict(None, "Harbour report", article, None, MODEL, api_name="/predict")
        scored = client.predict(article, "Harbour report", api_name="/score_article")
    first_line = confidence.split("\n\n")[0]
    assert first_line == "**Read: the first 30 of 41 sentences (73%; the model reads at most 30), and the label covers only that part.**"
    assert (scored["sentences_read"], scored["sentences_not_read"], scored["read_whole"]) == (30, 11, False)
    assert scored["read"] == first_line[len("**Read: "):-len(".**")]


def test_a_fetched_page_longer_than_the_text_limit_says_it_was_cut(space):
    _, client, _ = space
    paras = [" ".join(plain_sentences(300)[i:i + 10]) for i in range(0, 300, 10)]  # ~30,500 characters
    with WebServer() as web:
        web.add("*", "/news/long", Page(site.og_page("Harbour report", paras, "")))
        _, confidence, *_ = client.predict(None, "", "", f"http://127.0.0.1:{web.port}/news/long", MODEL, api_name="/predict")
    first_line = confidence.split("\n\n")[0]
    assert re.fullmatch(r"\*\*Read: the first 30,000 of 30,\d{3} characters of the article text \(98%\), all \d+ sentences "
                        r"of that, and the label covers only that part\.\*\*", first_line), first_line


@pytest.mark.real_data
def test_a_news_page_pasted_as_html_gets_the_label_of_its_text(space):
    """The issue: the Guardian page's HTML came out "biased 61%" ("<style>." among the top
    sentences) while its text was "not biased 78%"."""
    from vilbias.ingest import extract_article

    _, client, _ = space
    html = shared_data("news", "theguardian.com.academics.html").read_bytes().decode("utf-8")
    page = extract_article(html, "https://www.theguardian.com/")
    as_html = client.predict(html, api_name="/score_article")
    as_text = client.predict(page.text, page.headline, api_name="/score_article")
    assert as_html["label"] == as_text["label"] and as_html["probability_biased"] == pytest.approx(as_text["probability_biased"])
    assert as_html["notes"][0].startswith("The article text was a web page's markup (HTML)") and not as_text["notes"]
    assert not any("<" in e["sentence"] or "{" in e["sentence"] for e in as_html["evidence"])


def test_the_page_states_the_limits_and_how_the_model_runs(space):
    demo, _, _ = space
    app = demo.vilbias_app
    assert f"up to {MAX_SENTENCES} sentences" in reading_limits(app.config.limits)
    article_box = next(c for c in demo.config["components"] if c["props"].get("label") == "Article text")
    assert article_box["props"]["info"] == reading_limits(app.config.limits)
    panel = how_it_works_markdown(app)
    assert f"reads up to {MAX_SENTENCES} sentences" in panel and "ms a sentence on 2 CPU cores" in panel
    assert "The default model reads English (en)." in panel
    line = runtime_markdown(app.predictors.get(MODEL).model)
    assert line.startswith("- Runtime: ") and line in panel  # the model's own account, or its config's


def test_the_runtime_line_is_the_models_own_account_when_it_gives_one():
    told = SimpleNamespace(runtime_reason="ONNX Runtime in float32: 2.1x the torch pass on this CPU.",
                           config=SimpleNamespace(inference_runtime="onnxruntime", inference_precision="float32"))
    assert runtime_markdown(told) == "- Runtime: ONNX Runtime in float32: 2.1x the torch pass on this CPU."
    assert runtime_markdown(SimpleNamespace(config=told.config)) == "- Runtime: onnxruntime in float32, as the model's config asks."
    assert runtime_markdown(SimpleNamespace()) == ""


def test_a_model_that_does_not_say_what_it_read_is_not_said_to_have_read_it_whole(space):
    from gradio_client import handle_file
    from vilbias.spaces.app import sample_examples

    _, client, _ = space
    image, headline, article, _ = sample_examples(1)[0]
    _, confidence, *_ = client.predict(handle_file(image), headline, article, None, "tiny-fusion", api_name="/predict")
    assert "Read: as much of the text as the model's input length holds (this model does not say how much)." in confidence
    assert "whole text" not in confidence


def test_the_neutral_item_says_it_was_read_whole(space):
    _, client, _ = space
    _, confidence, *_ = client.predict(None, *NEUTRAL_ITEM, None, MODEL, api_name="/predict")
    assert "Read: the whole text (5 sentences)." in confidence

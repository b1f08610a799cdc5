"""The Space as code and agents use it: named endpoints and outputs, the image optional, Gradio's
own "Use via API" examples run as they are (offline), errors reach the caller as their sentence
and the server's log, and an MCP client calls ``score_article`` as a tool."""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging

import httpx
import pytest
from gradio_client import handle_file
from gradio_client.exceptions import AppError

from tests.spaces.conftest import BIASED_ITEM, NEUTRAL_ITEM


@pytest.fixture(scope="module")
def api_info(space):
    demo, _, _ = space
    return httpx.get(demo.local_url + "gradio_api/info", timeout=30).json()["named_endpoints"]


def test_endpoints_inputs_and_outputs_are_named(api_info):
    assert {"/predict", "/score_article"} <= set(api_info)
    predict = api_info["/predict"]
    assert [p["parameter_name"] for p in predict["parameters"]] == ["image", "headline", "article_text", "url", "model"]
    outputs = [r["label"] for r in predict["returns"]]
    assert not any(label.startswith("value_") for label in outputs), outputs
    assert outputs[:4] == ["Label", "Confidence and how much was read", "Rationale", "Techniques shown"]
    optional = {p["parameter_name"] for p in predict["parameters"] if p["parameter_has_default"]}
    assert {"image", "url", "model"} <= optional  # the offline default reads text only
    score = api_info["/score_article"]
    assert [p["parameter_name"] for p in score["parameters"]] == ["article_text", "headline", "url", "model"]
    assert [p["label"] for p in score["parameters"]] == ["article_text", "headline", "url", "model"]
    assert score["returns"][0]["label"] == "scored_article" and "probability_biased: float" in score["returns"][0]["python_type"]["type"]


def test_the_use_via_api_examples_run_offline_as_they_are(space, api_info):
    """The page's Python snippets, executed verbatim against this server: no remote file, no
    placeholder text, and each gets a label."""
    demo, _, _ = space
    for name in ("/predict", "/score_article"):
        code = api_info[name]["code_snippets"]["python"]
        assert code.count("http") == 1 and f'Client("{demo.local_url.rstrip("/")}")' in code, code  # this server, and no remote file
        assert "Hello!!" not in code and "handle_file" not in code
        scope, out = {}, io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(code, scope)  # noqa: S102 (the snippet Gradio shows users)
        result = scope["result"]
        label = result[0]["label"] if name == "/predict" else result["label"]
        assert label in ("not biased", "not_biased"), (name, result)


def test_score_article_answers_one_json_object(space):
    _, client, _ = space
    result = client.predict(BIASED_ITEM[1], BIASED_ITEM[0], api_name="/score_article")
    assert result["label"] == "biased" and result["probability_biased"] == pytest.approx(result["confidence"])
    assert result["read"].startswith("the whole text (") and result["sentences_not_read"] == 0
    assert result["evidence"][0]["flagged"] and result["evidence"][0]["marked_words"]
    assert result["rationale"].startswith("**Biased**") and result["techniques"]
    predicted = client.predict(None, *BIASED_ITEM, None, "offline-default", api_name="/predict")
    assert predicted[0]["confidences"][0]["confidence"] == pytest.approx(result["confidence"])  # the same answer


def test_refusals_reach_the_caller_as_their_sentence_and_the_log(space, caplog):
    _, client, _ = space
    with caplog.at_level(logging.WARNING, logger="vilbias.spaces"):
        with pytest.raises(AppError, match=r"^This is not an article's prose: 0 of its 5 characters are letters"):
            client.predict("🔥🔥🔥 💯💯", api_name="/score_article")
    assert any("request refused: This is not an article's prose" in r.getMessage() for r in caplog.records)


def test_a_file_the_server_cannot_fetch_is_an_error_with_its_message(space):
    """Gradio fetches a remote file before the handler runs; offline that fails, and the caller
    reads why (show_error), not "has not enabled verbose error reporting"."""
    _, client, _ = space
    with pytest.raises(AppError) as e:
        client.predict(handle_file("https://images.invalid/bus.png"), *NEUTRAL_ITEM, None, "offline-default", api_name="/predict")
    assert "images.invalid" in str(e.value) and "verbose error reporting" not in str(e.value)


def test_an_mcp_client_scores_an_article_with_the_tool(space):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    demo, _, _ = space

    async def session():
        async with streamable_http_client(demo.local_url + "gradio_api/mcp/") as (read, write, _):
            async with ClientSession(read, write) as s:
                await s.initialize()
                tools = {t.name: t for t in (await s.list_tools()).tools}
                scored = await s.call_tool("score_article", {"article_text": BIASED_ITEM[1], "headline": BIASED_ITEM[0]})
                refused = await s.call_tool("score_article", {"article_text": "https://example.com/news/story"})
                return tools, scored, refused

    tools, scored, refused = asyncio.run(session())
    tool = tools["score_article"]
    assert tool.description.startswith("Score a news article for media bias") and "not whether it is true" in tool.description
    assert tool.inputSchema["required"] == ["article_text"]
    assert "HTML" in tool.inputSchema["properties"]["article_text"]["description"]
    assert not scored.isError and "'label': 'biased'" in scored.content[0].text
    assert refused.isError and "put it in the Article URL field" in refused.content[0].text


def test_the_api_example_text_is_english_prose_the_model_reads():
    from vilbias.spaces.app import API_EXAMPLE

    from vilbias.languages import language_fit

    assert language_fit("\n\n".join(API_EXAMPLE), ["en"]).reads

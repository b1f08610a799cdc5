import json
import time

import pytest

from tests.fakes.openai_server import FakeOpenAIServer
from vilbias.models.catalogue import load_chat_backend as load_backend
from vilbias.models.chat import ChatRequest, image_mime, image_part
from vilbias.models.chat_openai import OpenAIBackend


@pytest.fixture
def server():
    def responder(body):
        return "echo:" + body["messages"][-1]["content"] if isinstance(body["messages"][-1]["content"], str) else "image"

    with FakeOpenAIServer(responder) as s:
        yield s


def req(text="hi", **params):
    return ChatRequest([{"role": "user", "content": text}], params)


def test_round_trip_payload_order_and_key(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-123")
    backend = load_backend({"backend": "openai", "model": "m1", "base_url": server.base_url, "params": {"temperature": 0.7, "max_tokens": 9}, "concurrency": 4})
    results = backend.chat([req(f"q{i}", seed=i) for i in range(20)])
    assert [r.text for r in results] == [f"echo:q{i}" for i in range(20)]
    assert all(r.error is None and r.attempts == 1 for r in results)
    body = next(b for b in server.requests if b["messages"][0]["content"] == "q3")
    assert body["model"] == "m1" and body["temperature"] == 0.7 and body["max_tokens"] == 9 and body["seed"] == 3
    assert set(server.auth_headers) == {"Bearer sk-test-123"}
    assert "sk-test" not in repr(backend)


def test_api_key_env_and_no_key(server, monkeypatch):
    monkeypatch.setenv("MY_KEY", "k2")
    load_backend({"backend": "openai", "model": "m", "base_url": server.base_url, "api_key_env": "MY_KEY"}).chat([req()])
    load_backend({"backend": "openai", "model": "m", "base_url": server.base_url}).chat([req()])
    assert server.auth_headers == ["Bearer k2", None]


def test_on_result_streams_and_returns_nothing(server):
    got = {}
    out = OpenAIBackend("m", server.base_url, concurrency=3).chat((req(f"q{i}") for i in range(10)), on_result=got.__setitem__)
    assert out == [] and sorted(got) == list(range(10)) and got[7].text == "echo:q7"


def test_image_parts_are_data_urls(server):
    part = image_part(b"\x89PNG fake", "image/png")
    assert part["image_url"]["url"].startswith("data:image/png;base64,")
    OpenAIBackend("m", server.base_url).chat([ChatRequest([{"role": "user", "content": [part, {"type": "text", "text": "x"}]}])])
    assert server.requests[0]["messages"][0]["content"][0] == part


def test_image_mime_is_read_from_the_bytes():
    # every format ingestion stores (vilbias.images.FORMAT_EXTENSIONS), whatever the file's name says
    import io

    from PIL import Image

    from vilbias.images import FORMAT_EXTENSIONS

    for fmt in sorted(set(FORMAT_EXTENSIONS) - {"MPO"}):
        data = io.BytesIO()
        Image.new("RGB", (8, 8)).save(data, format=fmt)
        assert image_mime(data.getvalue()) == f"image/{fmt.lower()}", fmt


def test_429_honours_retry_after(server):
    server.fail_next("429", retry_after=1)
    start = time.perf_counter()
    [r] = OpenAIBackend("m", server.base_url, backoff_s=0.01).chat([req("a")])
    assert r.text == "echo:a" and r.attempts == 2
    assert time.perf_counter() - start >= 0.95  # waited as told, not the 10 ms backoff


@pytest.mark.parametrize("fault", ["500", "drop"])
def test_5xx_and_dropped_connections_are_retried(server, fault):
    server.fail_next(fault, n=2)
    [r] = OpenAIBackend("m", server.base_url, backoff_s=0.01).chat([req("a")])
    assert (r.text, r.attempts) == ("echo:a", 3)
    assert server.faults_served == [fault, fault]


def test_slow_response_times_out_then_retries(server):
    server.fail_next("slow", delay_s=3)
    [r] = OpenAIBackend("m", server.base_url, timeout_s=0.4, backoff_s=0.01).chat([req("a")])
    assert (r.text, r.attempts) == ("echo:a", 2)
    assert r.latency_s < 2


def test_retries_run_out(server):
    server.fail_next("500", n=10)
    [r] = OpenAIBackend("m", server.base_url, max_retries=2, backoff_s=0.01).chat([req("a")])
    assert r.text is None and r.attempts == 3 and r.error.startswith("HTTP 500")


def test_bad_request_is_not_retried(server):
    server.fail_next("400", n=3)
    [r] = OpenAIBackend("m", server.base_url, backoff_s=0.01).chat([req("a")])
    assert r.attempts == 1 and r.error.startswith("HTTP 400")


def test_malformed_body_is_an_error(server):
    server.fail_next("malformed")
    [r, ok] = OpenAIBackend("m", server.base_url, concurrency=1).chat([req("a"), req("b")])
    assert r.text is None and "malformed response" in r.error
    assert ok.text == "echo:b"


def test_connection_refused_is_an_error_after_retries():
    [r] = OpenAIBackend("m", "http://127.0.0.1:9/v1", max_retries=1, backoff_s=0.01, timeout_s=2).chat([req()])
    assert r.text is None and r.error.startswith("connection error") and r.attempts == 2


def test_models_endpoint(server):
    import urllib.request

    with urllib.request.urlopen(server.base_url + "/models") as f:
        assert json.load(f)["data"][0]["id"] == "fake-model"


def test_spec_errors():
    with pytest.raises(ValueError, match="base_url"):
        load_backend({"backend": "openai", "model": "m"})
    with pytest.raises(ValueError, match="unknown model kind"):
        load_backend({"backend": "llamafile", "model": "m"})


def test_shared_messages_and_params_are_sent_right(server):
    # The K samples of an item share one message list; bodies are encoded once per object.
    messages = [{"role": "user", "content": "shared"}]
    params = [{"seed": k, "temperature": 0.5} for k in range(3)]
    requests = [ChatRequest(messages, params[k % 3]) for k in range(9)] + [ChatRequest([{"role": "user", "content": "other"}], params[0])]
    backend = OpenAIBackend("m", server.base_url, concurrency=2, params={"max_tokens": 7, "temperature": 0.1})
    results = backend.chat(requests)
    assert [r.text for r in results] == ["echo:shared"] * 9 + ["echo:other"]
    bodies = sorted((b["messages"][0]["content"], b["seed"]) for b in server.requests)
    assert bodies == sorted([("shared", k % 3) for k in range(9)] + [("other", 0)])
    assert all(b["temperature"] == 0.5 and b["max_tokens"] == 7 and b["model"] == "m" for b in server.requests)


def test_backends_share_one_pool_and_each_keeps_its_concurrency():
    """Every backend sends through the process's one HTTP client: a second and third backend (the
    next annotators of a run) reuse the connections the first opened, and each still has no more
    than its ``concurrency`` requests at the server."""

    class Counting(FakeOpenAIServer):
        connections = 0

        async def _handle(self, reader, writer):
            type(self).connections += 1
            await super()._handle(reader, writer)

    with Counting(lambda body: "ok", latency_s=0.02) as s:
        for model in ("a", "b", "c"):
            results = OpenAIBackend(model, s.base_url, concurrency=4).chat([req(f"{model}{i}") for i in range(12)])
            assert [r.text for r in results] == ["ok"] * 12
        assert s.peak_in_flight <= 4 and Counting.connections <= 4 + 1  # (+1: a connection the pool may retire)

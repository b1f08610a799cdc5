"""The K samples of an item, prompt and annotator are one request (``n``): one prefill at the
server, K samples in the store, each with its own status. Servers without ``n`` are found out
once and asked one sample per request; how samples were asked is not part of the fingerprint."""

from __future__ import annotations

import itertools

import pytest

from tests.annotate.conftest import answer
from tests.fakes.openai_server import FakeOpenAIServer, prompt_tokens
from tests.fakes.workdirs import make_workdir
from vilbias.annotate.pipeline import AnnotateConfig, annotate
from vilbias.annotate.specs import AnnotatorSpec
from vilbias.annotate.store import AnnotationStore
from vilbias.models.chat import ChatRequest
from vilbias.models.chat_openai import OpenAIBackend

K = 3


def req(text="hi", n=K, **params):
    return ChatRequest([{"role": "user", "content": text}], params, n=n)


def spec(server, **kw):
    return AnnotatorSpec(name="fake", kind="openai", model="fake-model", base_url=server.base_url, vision=True,
                         params={"seed": 0, "temperature": 0.7}, **kw)


def prompt_asked(body):
    """The prompt a request asks (from its answer schema); None for an image description."""
    rf = body.get("response_format")
    return None if rf is None else "multimodal" if "multimodal" in rf["json_schema"]["name"] else "text"


def biased(body):
    """A valid 'biased' answer in the schema the request asks for (a description otherwise)."""
    prompt = prompt_asked(body)
    return answer("biased", prompt=prompt) if prompt else "A photo."


def samples_of(body):
    """``(seed of sample 0, n)`` of a request body."""
    return body["seed"], body.get("n", 1)


def test_one_request_draws_n_samples_and_the_prompt_is_prefilled_once():
    replies = itertools.cycle(["a", "b", "c"])
    with FakeOpenAIServer(lambda body: next(replies)) as server:
        [r] = OpenAIBackend("m", server.base_url).chat([req("four words of prompt", seed=5)])
        assert server.stats() == {"requests": 1, "prompt_tokens": 4, "choices": 3, "distinct_prompt_tokens": 4}
    assert [s.text for s in r.per_sample(K)] == ["a", "b", "c"] and r.text == "a"
    assert server.requests[0]["n"] == 3 and server.requests[0]["seed"] == 5
    assert r.sampling_fallback is None
    # n = 1 sends no n field and answers with the result itself
    with FakeOpenAIServer() as server:
        [one] = OpenAIBackend("m", server.base_url).chat([req(n=1)])
    assert "n" not in server.requests[0] and one.samples == () and one.per_sample(1) == [one]


def test_fake_server_counts_images_and_distinct_prompts():
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    messages = [{"role": "system", "content": "be fair"}, {"role": "user", "content": [image, {"type": "text", "text": "one two three"}]}]
    assert prompt_tokens(messages) == 2 + 576 + 3
    with FakeOpenAIServer() as server:
        OpenAIBackend("m", server.base_url, concurrency=1).chat([ChatRequest(messages, {}, n=2), ChatRequest(messages, {})])
        stats = server.stats()
    assert stats == {"requests": 2, "prompt_tokens": 2 * 581, "choices": 3, "distinct_prompt_tokens": 581}


@pytest.mark.parametrize("n_support", ["refuse", "ignore"])
def test_a_server_without_n_is_found_out_once_and_asked_per_sample(n_support):
    with FakeOpenAIServer(lambda body: f"seed {body['seed']}", n_support=n_support) as server:
        backend = OpenAIBackend("m", server.base_url, concurrency=4, backoff_s=0.01)
        results = backend.chat([req(f"q{i}", seed=10 * i) for i in range(12)])
    asked_n = [b["seed"] for b in server.requests if b.get("n", 1) > 1]
    # Each worker's first request asks for n (they go out at once, so a fast refusal may find the
    # server out before the last of them is sent); the others wait for that finding, and no later
    # request asks for n: at most `concurrency` requests ask for n, each a different item's first.
    assert 1 <= len(asked_n) <= 4 and len(set(asked_n)) == len(asked_n)
    assert set(asked_n) <= {10 * i for i in range(4)}
    for i, r in enumerate(results):
        # sample k is sent with seed + k, as vLLM seeds the samples of n
        assert [s.text for s in r.per_sample(K)] == [f"seed {10 * i + k}" for k in range(K)]
        assert r.sampling_fallback == backend.n_rejected
    if n_support == "refuse":
        assert "HTTP 400" in backend.n_rejected and "n > 1 is not supported" in backend.n_rejected
        assert len(server.requests) == len(asked_n) + 12 * K  # the refused first requests, then one request per sample
    else:
        assert backend.n_rejected == "asked for n=3, the server returned 1 choice(s)"
        assert len(server.requests) == 12 * K  # each first request's one choice is kept: nothing is asked twice


def test_a_bad_request_that_is_not_about_n_is_an_error_and_marks_nothing():
    with FakeOpenAIServer() as server:
        server.fail_next("400", n=2)
        backend = OpenAIBackend("m", server.base_url, backoff_s=0.01)
        [r] = backend.chat([req()])
    assert r.text is None and r.error.startswith("HTTP 400") and backend.n_rejected is None
    assert [s.error for s in r.per_sample(K)] == [r.error] * K


def test_one_malformed_choice_keeps_the_others():
    class OneBadChoice(FakeOpenAIServer):
        def _send(self, writer, status, body, extra=None):
            body = body.replace('{"role": "assistant", "content": "bad"}', '{"role": "assistant", "content": 7}')
            super()._send(writer, status, body, extra)

    replies = iter(["good", "bad", "fine"])
    with OneBadChoice(lambda body: next(replies)) as server:
        [r] = OpenAIBackend("m", server.base_url).chat([req()])
    got = r.per_sample(K)
    assert [s.text for s in got] == ["good", None, "fine"] and "content is int" in got[1].error


def test_pipeline_asks_each_item_and_prompt_once_and_stores_k_samples(tmp_path):
    workdir = make_workdir(tmp_path / "w", n=4)
    # per request: a valid answer, an unparseable one, a valid one (the multimodal schema for multimodal requests)
    def responder(body):
        prompt = prompt_asked(body)
        return next(script[prompt]) if prompt else "A photo."

    script = {p: itertools.cycle([answer("biased", prompt=p), "no object", answer("not_biased", prompt=p)]) for p in ("text", "multimodal")}
    with FakeOpenAIServer(responder) as server:
        summary = annotate(AnnotateConfig(workdir=workdir, annotator_specs=[spec(server)], samples=K, progress=False))
        stats = server.stats()
    asked = [b for b in server.requests if "response_format" in b]
    assert len(asked) == 4 * 2 and all(samples_of(b) == (0, K) for b in asked)  # items × prompts, n = K
    assert stats["prompt_tokens"] == stats["distinct_prompt_tokens"]  # every prompt prefilled once
    assert summary["run"] == {"described": 4, "valid": 16, "unparseable": 8}
    assert summary["annotators"]["fake"]["sampling"]["mode"] == "n"
    with AnnotationStore.for_workdir(workdir) as store:
        calls = [c for c in store.iter_calls() if c["item_id"] == "item-0" and c["prompt"] == "text"]
    assert [(c["sample"], c["status"], c["label"]) for c in calls] == [(0, "valid", "biased"), (1, "unparseable", None), (2, "valid", "not_biased")]


def test_a_resumed_run_asks_only_the_missing_samples(tmp_path):
    workdir = make_workdir(tmp_path / "w", n=3)
    with FakeOpenAIServer(biased) as server:
        s = spec(server)
        annotate(AnnotateConfig(workdir=workdir, annotator_specs=[s], samples=K, prompts=["text"], progress=False))
        with AnnotationStore.for_workdir(workdir) as store:  # as if samples were lost: item 0 lacks 1 and 2, item 1 lacks 2
            store.query("DELETE FROM calls WHERE (item_id='item-0' AND sample > 0) OR (item_id='item-1' AND sample = 2)")
        server.requests.clear()
        summary = annotate(AnnotateConfig(workdir=workdir, annotator_specs=[s], samples=K, prompts=["text"], progress=False))
    # one request per item with missing samples, n = how many are missing, from the first one's seed
    assert sorted(samples_of(b) for b in server.requests) == [(1, 2), (2, 1)]
    assert summary["run"] == {"valid": 3} and summary["prompts"]["text"]["calls"]["valid"] == 9


def test_refused_n_is_recorded_like_the_structured_output_fallback(tmp_path):
    workdir = make_workdir(tmp_path / "w", n=3)
    with FakeOpenAIServer(biased, n_support="refuse") as server:
        summary = annotate(AnnotateConfig(workdir=workdir, annotator_specs=[spec(server, concurrency=4)], samples=K, prompts=["text"], progress=False))
    # the three first requests are refused twice each (with the answer schema, then without it, to
    # tell which part the server refused), then every sample is one request
    assert server.count == 3 * 2 + 3 * K
    assert summary["run"] == {"valid": 9}
    mode = summary["annotators"]["fake"]["sampling"]
    assert mode["mode"] == "per_sample" and "n > 1 is not supported" in mode["detail"]
    with AnnotationStore.for_workdir(workdir) as store:
        assert store.sampling()["fake"]["mode"] == "per_sample"
    from vilbias.annotate.summary import format_summary

    assert "sampling: per_sample (HTTP 400" in format_summary(summary)


def test_how_samples_were_asked_is_not_part_of_the_fingerprint(tmp_path):
    # The fingerprint is what it was before n existed (this value was computed by that code).
    q = AnnotatorSpec(name="q", kind="openai", model="Qwen/Qwen2.5-VL-7B-Instruct", base_url="http://h/v1", vision=True, params={"temperature": 0.7, "seed": 0})
    assert q.fingerprint() == "130834cd0b50"
    # A store annotated one sample per request (a server without n) is complete under n.
    workdir = make_workdir(tmp_path / "w", n=3)
    with FakeOpenAIServer(biased, n_support="refuse") as old:
        annotate(AnnotateConfig(workdir=workdir, annotator_specs=[spec(old)], samples=K, progress=False))
    # only the requests asked at once before the server was found out (with and without the schema):
    # the 3 items' text prompts, and those of their multimodal prompts that went out before then
    # (they start once the images are described, while the text prompts are asked)
    assert 2 * 3 <= len([b for b in old.requests if b.get("n", 1) > 1]) <= 2 * 6
    with FakeOpenAIServer() as new:
        summary = annotate(AnnotateConfig(workdir=workdir, annotator_specs=[spec(new)], samples=K, progress=False))
    assert new.count == 0 and summary["run"] == {} and summary["prompts"]["text"]["decided"] == 3

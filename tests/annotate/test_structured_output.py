"""Structured output: servers are asked for the answer's JSON Schema (falling back once when they
reject it, and saying so in the store), local models decode under it (llguidance), and every
answer is checked against it."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.annotate.conftest import answer
from tests.fakes.openai_server import FakeOpenAIServer
from tests.fakes.workdirs import make_workdir
from vilbias.annotate import prompts as P
from vilbias.annotate.pipeline import AnnotateConfig, annotate
from vilbias.annotate.specs import AnnotatorSpec
from vilbias.annotate.store import STORE_SCHEMA_VERSION, AnnotationStore
from vilbias.models.chat import ChatRequest
from vilbias.models.chat_local import TransformersBackend
from vilbias.models.chat_openai import OpenAIBackend


class SchemaRejectingServer(FakeOpenAIServer):
    """A server without structured output: any request carrying ``response_format`` is a 400."""

    async def _respond(self, method, path, headers, body, writer):
        if method == "POST" and b'"response_format"' in body:
            with self._lock:
                self.count += 1
                self.faults_served.append("schema")
            self._send(writer, 400, json.dumps({"error": {"message": "response_format json_schema is not supported"}}))
            return True
        return await super()._respond(method, path, headers, body, writer)


class RefusingServer(FakeOpenAIServer):
    """Answers every chat request with an OpenAI structured-output refusal."""

    async def _respond(self, method, path, headers, body, writer):
        if method != "POST":
            return await super()._respond(method, path, headers, body, writer)
        message = {"role": "assistant", "content": None, "refusal": "I can't assist with that."}
        self._send(writer, 200, json.dumps({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}))
        return True


def req(**params):
    return ChatRequest([{"role": "user", "content": "hi"}], params)


def test_server_gets_the_schema_and_reports_it_was_used():
    with FakeOpenAIServer(lambda body: answer("biased")) as server:
        [r] = OpenAIBackend("m", server.base_url).chat([req(response_format=P.response_format("text"))])
    assert server.requests[0]["response_format"]["json_schema"]["schema"] == P.answer_json_schema("text")
    assert (r.structured, r.fallback, r.finish_reason) == (True, None, "stop")
    with FakeOpenAIServer(lambda body: "plain") as server:
        [r] = OpenAIBackend("m", server.base_url).chat([req()])
    assert r.structured is None and "response_format" not in server.requests[0]


def test_a_server_that_rejects_the_schema_is_asked_once_more_without_it():
    with SchemaRejectingServer(lambda body: answer("biased")) as server:
        backend = OpenAIBackend("m", server.base_url, concurrency=1, backoff_s=0.01)
        results = backend.chat([req(response_format=P.response_format("text"), seed=i) for i in range(3)])
    assert server.faults_served == ["schema"]  # one rejection; later requests go without the schema
    assert [("response_format" in b) for b in server.requests] == [False, False, False]
    assert all(r.text == answer("biased") and r.structured is False for r in results)
    assert "HTTP 400" in results[0].fallback and results[0].attempts == 2
    assert backend.structured_rejected == results[0].fallback
    # a 400 that is not about the schema stays an error (and does not mark the backend)
    with FakeOpenAIServer() as server:
        server.fail_next("400", n=2)
        backend = OpenAIBackend("m", server.base_url, backoff_s=0.01)
        [r] = backend.chat([req(response_format=P.response_format("text"))])
    assert r.text is None and r.error.startswith("HTTP 400") and backend.structured_rejected is None


def test_fallback_is_marked_in_the_store_and_answers_are_parsed_strictly(tmp_path):
    workdir = make_workdir(tmp_path / "w", n=2)
    replies = iter([answer("biased"), "```json\n" + answer("not biased") + "\n```", "not biased", answer("biased", techniques={"Spin": "Present"})] * 3)
    with SchemaRejectingServer(lambda body: next(replies)) as server:
        spec = AnnotatorSpec(name="old-server", kind="openai", model="m", base_url=server.base_url, concurrency=1, params={"seed": 0})
        summary = annotate(AnnotateConfig(workdir=workdir, annotator_specs=[spec], samples=2, progress=False))
    assert summary["run"] == {"valid": 2, "unparseable": 1, "invalid": 1}
    mode = summary["annotators"]["old-server"]["structured_output"]
    assert mode["mode"] == "fallback" and "not supported" in mode["detail"]
    with AnnotationStore.for_workdir(workdir) as store:
        assert store.structured_output()["old-server"]["mode"] == "fallback"
        calls = list(store.iter_calls())
    assert {c["structured"] for c in calls} == {0}
    from vilbias.review.stats import StatsConfig, format_stats, review_stats

    stats = review_stats(StatsConfig(workdir=workdir, plot=False))
    assert stats["annotators"]["old-server"]["structured_output"]["mode"] == "fallback"
    assert "structured output fallback (HTTP 400" in format_stats(stats)


def test_a_refusal_is_stored_as_such(tmp_path):
    workdir = make_workdir(tmp_path / "w", n=1)
    with RefusingServer() as server:
        [r] = OpenAIBackend("m", server.base_url).chat([req(response_format=P.response_format("text"))])
        assert (r.text, r.refusal, r.structured) == (None, "I can't assist with that.", True)
        spec = AnnotatorSpec(name="shy", kind="openai", model="m", base_url=server.base_url)
        summary = annotate(AnnotateConfig(workdir=workdir, annotator_specs=[spec], samples=1, progress=False))
    assert summary["run"] == {"refused": 1}
    with AnnotationStore.for_workdir(workdir) as store:
        [call] = store.iter_calls()
    assert (call["status"], call["raw"], call["label"]) == ("refused", "I can't assist with that.", None)


# -- local constrained decoding --------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_bytelevel():
    """A tiny random Llama with a byte-level BPE tokenizer trained here: it can spell any text,
    so its random choices are only ever limited by the constraint."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    corpus = [answer("biased", prompt=p) for p in ("text", "multimodal")] * 20
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<pad>", "</s>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="</s>")
    tokenizer.chat_template = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}"
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=1024, pad_token_id=0, eos_token_id=tokenizer.eos_token_id,
    )
    return LlamaForCausalLM(config).eval(), tokenizer


@pytest.mark.parametrize("params", [{"temperature": 0.0}, {"temperature": 1.0, "top_p": 0.9, "seed": 3}])
def test_local_decoding_is_valid_by_construction(tiny_bytelevel, params):
    model, tokenizer = tiny_bytelevel
    backend = TransformersBackend(model, tokenizer, params={"max_tokens": 400}, batch_size=3)
    for prompt in ("text", "multimodal"):
        rf = P.response_format(prompt, max_rationale_chars=24)
        # two samples per prompt (one prefill, num_return_sequences): each row has its own matcher
        results = backend.chat([ChatRequest([{"role": "user", "content": f"item {i}"}], {**params, "response_format": rf}, n=2) for i in range(3)])
        for r in (s for result in results for s in result.per_sample(2)):
            assert (r.error, r.structured, r.finish_reason) == (None, True, "stop")
            a = P.parse_annotation(r.text, prompt)
            assert a.status == "valid", (r.text, a.problem)
            assert len(a.rationale) <= 24 and a.rationale == a.rationale.strip()
    # unconstrained, the same random model writes no answer at all
    [free] = backend.chat([ChatRequest([{"role": "user", "content": "item 0"}], {"max_tokens": 40})])
    assert free.structured is None and P.parse_annotation(free.text, "text").status != "valid"


def test_local_decoding_cut_short_is_reported(tiny_bytelevel, tmp_path):
    model, tokenizer = tiny_bytelevel
    backend = TransformersBackend(model, tokenizer, params={"max_tokens": 6})
    [r] = backend.chat([ChatRequest([{"role": "user", "content": "x"}], {"response_format": P.response_format("text")})])
    assert (r.finish_reason, r.structured) == ("length", True)
    assert P.parse_annotation(r.text, "text").status == "unparseable"
    workdir = make_workdir(tmp_path / "w", n=1)
    spec = AnnotatorSpec(name="tiny", kind="transformers", model="tiny", params={"max_tokens": 6})
    summary = annotate(AnnotateConfig(workdir=workdir, annotator_specs=[spec], backends={"tiny": backend}, samples=1, progress=False))
    assert summary["run"] == {"unparseable": 1} and summary["annotators"]["tiny"]["structured_output"]["mode"] == "local_grammar"
    with AnnotationStore.for_workdir(workdir) as store:
        [call] = store.iter_calls()
    assert "cut at max_tokens" in call["problem"] and call["structured"] == 1


# -- the store's schema 1 -> 2 migration --------------------------------------------------------

V1 = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE calls(item_id TEXT NOT NULL, prompt TEXT NOT NULL, annotator TEXT NOT NULL, fingerprint TEXT NOT NULL,
    sample INTEGER NOT NULL, prompt_version TEXT NOT NULL, model TEXT, raw TEXT, label TEXT, tone TEXT,
    techniques_json TEXT, rationale TEXT, error TEXT, latency_s REAL, created_at TEXT NOT NULL,
    PRIMARY KEY(item_id, prompt, annotator, fingerprint, sample, prompt_version));
INSERT INTO meta VALUES('schema_version', '1');
"""


def test_schema_1_store_is_migrated_and_checked_again(tmp_path):
    path = tmp_path / "annotations.sqlite"
    db = sqlite3.connect(path)
    db.executescript(V1)
    lenient = json.dumps({"label": "biased", "techniques": {"Hyperbole": "Present"}})  # the old parser took it
    rows = [("i1", answer("biased")), ("i2", lenient), ("i3", "- Label: biased"), ("i4", None)]
    for item, raw in rows:
        label = "biased" if raw else None
        db.execute("INSERT INTO calls VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", (item, "text", "a", "fp", 0, "v1", "m", raw, label, None, "{}", "r", None, 0.1, "t"))
    db.commit()
    db.close()
    with AnnotationStore(path) as store:
        calls = {c["item_id"]: c for c in store.iter_calls()}
    assert [calls[i]["status"] for i in ("i1", "i2", "i3", "i4")] == ["valid", "invalid", "unparseable", "failed"]
    assert calls["i1"]["label"] == "biased" and calls["i2"]["label"] is None and calls["i3"]["label"] is None
    assert "unknown technique 'Hyperbole'" in calls["i2"]["problem"]
    assert sqlite3.connect(path).execute("SELECT value FROM meta").fetchone() == (str(STORE_SCHEMA_VERSION),)


def test_local_json_object_mode(tiny_bytelevel):
    model, tokenizer = tiny_bytelevel
    backend = TransformersBackend(model, tokenizer, params={"max_tokens": 60})
    [r] = backend.chat([ChatRequest([{"role": "user", "content": "x"}], {"response_format": {"type": "json_object"}})])
    if r.finish_reason == "stop":
        assert isinstance(json.loads(r.text), dict)
    else:  # cut short: still the beginning of an object
        assert r.text.startswith("{")
    [bad] = backend.chat([ChatRequest([{"role": "user", "content": "x"}], {"response_format": {"type": "text"}})])
    assert bad.text is None and "json_schema or json_object" in bad.error

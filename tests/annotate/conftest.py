from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from tests.fakes.workdirs import make_workdir
from vilbias.models.chat import ChatRequest, ChatResult
from vilbias.task import ALL_NAMES, MULTIMODAL_CRITERIA, TEXT_TECHNIQUES


def answer(label: str, rationale: str = "because", techniques: dict[str, str] | None = None, prompt: str = "text") -> str:
    """A schema-valid answer to ``prompt``: every criterion ``Absent`` unless ``techniques`` says."""
    names = [ALL_NAMES[t] for t in (TEXT_TECHNIQUES if prompt == "text" else MULTIMODAL_CRITERIA)]
    given = dict.fromkeys(names, "Absent") | (techniques or {})
    return json.dumps({"techniques": given, "tone": "Biased" if label == "biased" else "Neutral", "label": label.replace("_", " "), "rationale": rationale})


def item_index(request: ChatRequest) -> int:
    """The item number from the rendered prompt's headline."""
    text = request.messages[-1]["content"]
    if not isinstance(text, str):
        text = next(p["text"] for p in text if p.get("type") == "text")
    return int(re.search(r"Headline: Headline (\d+)", text).group(1))


def prompt_of(request: ChatRequest) -> str:
    text = request.messages[-1]["content"]
    if not isinstance(text, str):
        text = next(p["text"] for p in text if p.get("type") == "text")
    return "multimodal" if "Image description:" in text else "text"


def answers(label: str, **kw: Any) -> Callable[..., str]:
    """A stub script answering ``label`` to every call, in the schema of the call's prompt."""
    return lambda item, prompt, sample, request: answer(label, prompt=prompt, **kw)


class StubBackend:
    """Deterministic backend: ``script(item, prompt, sample, request) -> str | ChatResult | None``
    (None = a failed call). The sample index comes from the ``seed`` param (annotators set seed
    0): a request for ``n`` samples answers samples ``seed .. seed + n - 1``, as vLLM seeds them.
    ``requests`` holds the requests, ``asked`` counts their samples. Image-description requests
    get ``description`` and are kept in ``described``."""

    def __init__(self, script: Callable[[int, str, int, ChatRequest], str | ChatResult | None], description: str = "A photo."):
        self.script = script
        self.description = description
        self.requests: list[ChatRequest] = []
        self.described: list[ChatRequest] = []

    def _answer(self, r: ChatRequest) -> ChatResult:
        if "Describe this news photo" in str(r.messages[-1]["content"]):
            self.described.append(r)
            return ChatResult(self.description)
        self.requests.append(r)
        seed = int(r.params.get("seed", 0))
        samples = [self.script(item_index(r), prompt_of(r), seed + i, r) for i in range(r.n)]
        return ChatResult.of_samples([
            out if isinstance(out, ChatResult) else ChatResult(out, None if out is not None else "stub failure", 0.001)
            for out in samples
        ])

    @property
    def asked(self) -> int:
        """Samples asked for (a request for n samples counts n)."""
        return sum(r.n for r in self.requests)

    def chat(self, requests: Iterable[ChatRequest], on_result: Callable[[int, ChatResult], None] | None = None) -> list[ChatResult]:
        out = []
        for i, r in enumerate(requests):
            result = self._answer(r)
            if on_result:
                on_result(i, result)
            else:
                out.append(result)
        return out


@pytest.fixture
def workdir(tmp_path):
    return make_workdir(tmp_path / "work", n=4)


def stub_spec(name: str, **kw: Any):
    from vilbias.annotate.specs import AnnotatorSpec

    return AnnotatorSpec(name=name, kind="openai", model=f"stub/{name}", base_url="http://unused", params={"seed": 0}, **kw)

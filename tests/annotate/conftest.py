from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from tests.fakes.workdirs import make_workdir
from vilbias.models.chat import ChatRequest, ChatResult


def answer(label: str, rationale: str = "because", techniques: dict[str, str] | None = None) -> str:
    return json.dumps({"techniques": techniques or {}, "tone": "Biased" if label == "biased" else "Neutral", "label": label.replace("_", " "), "rationale": rationale})


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


class StubBackend:
    """Deterministic backend: ``script(item, prompt, sample, request) -> str | None`` (None = a
    failed call). The sample index comes from the ``seed`` param (annotators set seed 0)."""

    def __init__(self, script: Callable[[int, str, int, ChatRequest], str | None]):
        self.script = script
        self.requests: list[ChatRequest] = []

    def chat(self, requests: Iterable[ChatRequest], on_result: Callable[[int, ChatResult], None] | None = None) -> list[ChatResult]:
        out = []
        for i, r in enumerate(requests):
            self.requests.append(r)
            text = self.script(item_index(r), prompt_of(r), int(r.params.get("seed", 0)), r)
            result = ChatResult(text, None if text is not None else "stub failure", 0.001)
            if on_result:
                on_result(i, result)
            else:
                out.append(result)
        return out


@pytest.fixture
def workdir(tmp_path):
    return make_workdir(tmp_path / "work", n=4)


def stub_spec(name: str, **kw: Any):
    from vilbias.annotate.pipeline import AnnotatorSpec

    return AnnotatorSpec(name=name, backend="openai", model=f"stub/{name}", base_url="http://unused", params={"seed": 0}, **kw)

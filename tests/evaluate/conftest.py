"""Fixtures for the evaluation tests: scripted chat backends (the built sample comes from tests/conftest.py)."""

from __future__ import annotations

import re

import pytest

from vilbias.models.chat import ChatResult


@pytest.fixture(scope="session")
def test_items(sample_dataset_dir):
    from vilbias.evaluate.data import load_split

    return load_split(str(sample_dataset_dir), "default", "test")


def last_user_text(messages) -> str:
    content = [m for m in messages if m["role"] == "user"][-1]["content"]
    return content if isinstance(content, str) else "\n".join(p["text"] for p in content if p.get("type") == "text")


def headline_of(messages) -> str:
    """The headline of the item a model is asked about (the last user turn)."""
    return re.search(r"Headline: (.*)", last_user_text(messages)).group(1).strip()


class ScriptedBackend:
    """A chat backend answering ``answer(messages) -> str | None`` (None = transport error);
    ``stop_after`` raises KeyboardInterrupt after that many answers (an interrupted run)."""

    def __init__(self, answer, stop_after: int | None = None):
        self.answer = answer
        self.stop_after = stop_after
        self.requests = []

    def chat(self, requests, on_result=None):
        out = []
        for index, request in enumerate(requests):
            if self.stop_after is not None and len(self.requests) >= self.stop_after:
                raise KeyboardInterrupt
            self.requests.append(request)
            text = self.answer(request.messages)
            result = ChatResult(text, None if text is not None else "connection error: refused")
            if on_result is None:
                out.append(result)
            else:
                on_result(index, result)
        return out

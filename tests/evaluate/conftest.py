"""Fixtures for the evaluation tests: scripted chat backends (the built sample comes from tests/conftest.py)."""

from __future__ import annotations

import re

import pytest

from vilbias.models.chat import ChatResult
from vilbias.task import CLOSED_QUESTION


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


def is_closed(messages) -> bool:
    """Whether the request asks the closed-ended question (label only) rather than the oVQA one."""
    return CLOSED_QUESTION in last_user_text(messages)


def two_questions(closed, ovqa):
    """A scripted answer function: ``closed(messages)`` for the label-only question, ``ovqa(messages)`` else."""
    return lambda messages: closed(messages) if is_closed(messages) else ovqa(messages)


def write_provenance(folder, dataset_dir, config: str, split: str, **extra):
    """A model folder whose training-data record lists every row of ``config/split`` of ``dataset_dir``."""
    from datasets import load_dataset

    from vilbias.provenance import TrainingData

    ids = load_dataset(str(dataset_dir), config, split=split)["unique_id"]
    TrainingData.from_ids(str(dataset_dir), ids, config=config, split=split, **extra).write(folder)
    return folder


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

"""Card prose lives in ``vilbias/publish/templates``: Python passes values, the templates hold the
sentences; usage snippets build the model's input with vilbias.task, never re-typed."""

from __future__ import annotations

import ast
import re
from importlib import resources
from pathlib import Path

import jinja2
import pytest

from vilbias.publish.model import (
    DEFAULT_INTENDED_USE,
    ModelCardInfo,
    render_model_card,
    render_section,
)
from vilbias.task import BIASED_NAME, NOT_BIASED_NAME, classifier_text, user_prompt

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = resources.files("vilbias.publish").joinpath("templates")


def _strings(snippet: str) -> list[str]:
    """The string literals of a snippet, which must be valid Python."""
    return [node.value for node in ast.walk(ast.parse(snippet)) if isinstance(node, ast.Constant) and isinstance(node.value, str)]


def _usage(text: str) -> str:
    return text.split("## Usage\n\n```python\n", 1)[1].split("\n```", 1)[0]


def test_classifier_snippet_feeds_the_classifier_text_training_feeds():
    info = ModelCardInfo(base_model="FacebookAI/roberta-base", dataset="org/BiasCorpus", method="full")
    snippet = _usage(render_model_card(info, "org/rob").text)
    assert classifier_text("Headline ...", "Article text ...") in _strings(snippet)
    assert 'model="org/rob"' in snippet and f"'label': '{BIASED_NAME}'" in snippet


def test_vlm_snippet_asks_the_task_prompt():
    info = ModelCardInfo(base_model="HuggingFaceTB/SmolVLM-Instruct", dataset="org/BiasCorpus", method="lora", task="image-text-to-text")
    snippet = _usage(render_model_card(info, "org/vlm").text)
    assert user_prompt("...", "...") in _strings(snippet)
    assert 'AutoModelForImageTextToText.from_pretrained("org/vlm")' in snippet


def test_default_prose_names_the_labels_from_the_task():
    assert f"`{BIASED_NAME}` or `{NOT_BIASED_NAME}`" in DEFAULT_INTENDED_USE
    info = ModelCardInfo(base_model="b/m", dataset="org/BiasCorpus", method="lora", task="image-text-to-text")
    assert f"(`{BIASED_NAME}` / `{NOT_BIASED_NAME}`) and explain why." in render_model_card(info, "org/m").text


def test_a_missing_value_is_an_error_not_an_empty_string():
    with pytest.raises(jinja2.UndefinedError):
        render_section("generic/summary.md", base_model="b/m", vlm=False)


def test_no_label_literal_in_the_templates_or_the_card_code():
    templates = [p for p in TEMPLATES.iterdir() if p.is_dir()]
    texts = {f"templates/{d.name}/{p.name}": p.read_text(encoding="utf-8") for d in templates for p in d.iterdir() if p.is_file()}
    assert {"templates/generic/summary.md", "templates/classifier/summary.md", "templates/sentence/summary.md"} <= set(texts)
    for name in ("src/vilbias/publish/model.py", "training/sentence_card.py"):
        texts[name] = (ROOT / name).read_text(encoding="utf-8")
    for name, text in texts.items():
        # names such as not_biased_name (the value the templates are given) are not literals
        assert not re.search(r"\bnot[ _]biased\b|[`'\"]biased[`'\"]", text), name

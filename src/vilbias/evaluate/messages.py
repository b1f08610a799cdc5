"""Prompts for generative models: the paper's two questions, zero-shot or k-shot.

- ``closed``: the label only (:func:`vilbias.task.closed_prompt`), parsed strictly by
  :func:`vilbias.task.parse_closed_answer`; closed-ended metrics come from these answers.
- ``ovqa``: the label and its reasoning, exactly the ``sft`` config's user turn (image, then
  headline, article truncated to the same budget, and the question), so a fine-tuned adapter is
  asked in its own format; parsed by :func:`vilbias.task.parse_answer`; the judge scores these.

They are separate generations: an answer written to be judged never yields the closed score.
k-shot puts k solved examples before the item as earlier turns, answered in the same question's
format (label only, or ``Label: … / Reasoning: …``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from vilbias.models.chat import image_mime, image_part
from vilbias.task import (
    Answer,
    Item,
    closed_prompt,
    closed_prompt_version,
    format_answer,
    format_closed_answer,
    parse_answer,
    parse_closed_answer,
    prompt_version,
    user_prompt,
)

QUESTIONS = ("closed", "ovqa")
"""The closed-ended question (label only) and the open-ended one (label + reasoning)."""

_PROMPT: dict[str, Callable[[str, str], str]] = {"closed": closed_prompt, "ovqa": user_prompt}
_SHOT_ANSWER: dict[str, Callable[[Item], str]] = {
    "closed": lambda shot: format_closed_answer(shot.label),
    "ovqa": lambda shot: format_answer(shot.label, shot.reasoning),
}
PARSERS: dict[str, Callable[[str], Answer]] = {"closed": parse_closed_answer, "ovqa": parse_answer}
"""The parser of each question's answers."""


def prompt_versions() -> dict[str, str]:
    """Each question's prompt version (a hash of its text), recorded with the run."""
    return {"closed": closed_prompt_version(), "ovqa": prompt_version()}


def user_turn(item: Item, question: str = "ovqa", *, with_image: bool = True) -> dict[str, Any]:
    """The user turn asking ``question`` about ``item`` in OpenAI format (image part first, as in ``sft``)."""
    content: list[dict[str, Any]] = []
    if with_image and item.image is not None:
        content.append(image_part(item.image, image_mime(item.image)))
    content.append({"type": "text", "text": _PROMPT[question](item.headline, item.article_text)})
    return {"role": "user", "content": content}


def question_messages(question: str, item: Item, shots: Sequence[Item] = (), *, with_image: bool = True) -> list[dict[str, Any]]:
    """The conversation asking ``question`` about ``item``, after the solved ``shots`` (none for zero-shot)."""
    messages: list[dict[str, Any]] = []
    for shot in shots:
        messages.append(user_turn(shot, question, with_image=with_image))
        messages.append({"role": "assistant", "content": [{"type": "text", "text": _SHOT_ANSWER[question](shot)}]})
    messages.append(user_turn(item, question, with_image=with_image))
    return messages

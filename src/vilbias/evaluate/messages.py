"""Prompts for generative models: the ``sft`` config's user turn, zero-shot or k-shot.

Zero-shot is exactly what a fine-tuned model was trained on (image, then headline, article
truncated to the same budget, and the question), so an adapter is evaluated in its own format.
k-shot puts k solved examples before it as earlier turns of the conversation, each answered in
the trained ``Label: … / Reasoning: …`` format, so the answer parser is the same for both.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vilbias.evaluate.data import Item
from vilbias.models.chat import image_mime, image_part
from vilbias.task import format_answer, user_prompt


def user_turn(item: Item, *, with_image: bool = True) -> dict[str, Any]:
    """The task's user turn for ``item`` in OpenAI format (image part first, as in ``sft``)."""
    content: list[dict[str, Any]] = []
    if with_image and item.image is not None:
        content.append(image_part(item.image, image_mime(item.image)))
    content.append({"type": "text", "text": user_prompt(item.headline, item.article_text)})
    return {"role": "user", "content": content}


def answer_messages(item: Item, shots: Sequence[Item] = (), *, with_image: bool = True) -> list[dict[str, Any]]:
    """The conversation asking about ``item``, after the solved ``shots`` (none for zero-shot)."""
    messages: list[dict[str, Any]] = []
    for shot in shots:
        messages.append(user_turn(shot, with_image=with_image))
        messages.append({"role": "assistant", "content": [{"type": "text", "text": format_answer(shot.label, shot.reasoning)}]})
    messages.append(user_turn(item, with_image=with_image))
    return messages

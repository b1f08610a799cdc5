"""Prompts for generative models: the ``sft`` config's user turn, zero-shot or k-shot.

Zero-shot is exactly what a fine-tuned model was trained on (image, then headline, article
truncated to the same budget, and the question), so an adapter is evaluated in its own format.
k-shot puts k solved examples before it as earlier turns of the conversation, each answered in
the trained ``Label: … / Reasoning: …`` format, so the answer parser is the same for both.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from vilbias.evaluate.data import Item


def image_mime(data: bytes) -> str:
    """MIME type of encoded image bytes, from their magic number (JPEG when unknown)."""
    if data.startswith(b"\x89PNG"):
        return "image/png"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:3] == b"GIF":
        return "image/gif"
    return "image/jpeg"


def user_turn(item: Item, *, with_image: bool = True) -> dict[str, Any]:
    """The task's user turn for ``item`` in OpenAI format (image part first, as in ``sft``)."""
    from vilbias.annotate.backends import image_part
    from vilbias.loading_script.biascorpus import sft_prompt

    content: list[dict[str, Any]] = []
    if with_image and item.image is not None:
        content.append(image_part(item.image, image_mime(item.image)))
    content.append({"type": "text", "text": sft_prompt(item.headline, item.article_text)})
    return {"role": "user", "content": content}


def answer_messages(item: Item, shots: Sequence[Item] = (), *, with_image: bool = True) -> list[dict[str, Any]]:
    """The conversation asking about ``item``, after the solved ``shots`` (none for zero-shot)."""
    from vilbias.loading_script.biascorpus import sft_answer

    messages: list[dict[str, Any]] = []
    for shot in shots:
        messages.append(user_turn(shot, with_image=with_image))
        messages.append({"role": "assistant", "content": [{"type": "text", "text": sft_answer(shot.label, shot.reasoning)}]})
    messages.append(user_turn(item, with_image=with_image))
    return messages


def prompt_version() -> str:
    """A short hash of the answer prompt's format, recorded with every result."""
    from vilbias.loading_script.biascorpus import SFT_ARTICLE_WORDS, sft_answer, sft_prompt

    text = sft_prompt("{headline}", "{article_text}") + "|" + sft_answer(1, "{reasoning}") + f"|{SFT_ARTICLE_WORDS}"
    return "sft-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]

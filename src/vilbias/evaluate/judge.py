"""The LLM judge for open-ended answers (oVQA): reasoning accuracy and faithfulness.

Any chat backend judges (an OpenAI-compatible server, a local transformers model). For each
answer it gets the item (text, caption, image), the ground-truth label, the model's label and
its rationale, and must reply with strict JSON::

    {"reasoning_accuracy": 0|1, "faithfulness": 0|1, "justification": "..."}

The paper's rules are in the prompt (``prompts/judge.txt``, package data): an empty, generic or
circular rationale scores 0/0; the rationale is judged against the ground truth even when the
predicted label differs; faithfulness counts only cues present in the text or the image. Answers
with no rationale at all (unparseable, empty) get 0/0 by rule without asking the judge.

A reply that is not the JSON object (prose, a refusal, missing keys, scores other than 0/1) is
asked again, with the reply and a reminder of the format added to the conversation, at most
``retries`` times; then the verdict is a failure, counted and reported, never a guess.

Beside the judge, every oVQA rationale also goes through the model-free rationale check
(:func:`vilbias.rationale.check_rationale`): :func:`rationale_check_scores` gives its pass rate,
its problems and how often it disagrees with the judge's faithfulness — a faithfulness figure that
needs no judge and runs offline.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from vilbias.annotate.prompts import defuse
from vilbias.models.chat import ChatRequest, image_mime, image_part
from vilbias.rationale import CODES, check_rationale, codes
from vilbias.task import ANSWER_LABELS, Item, text_version, truncate_words

logger = logging.getLogger(__name__)

JUDGE_ARTICLE_WORDS = 600
"""The judge sees more of the article than the model's prompt (which cuts at 300 words), so it
can check quotes the model could have seen."""
REMINDER = (
    "Your reply was not the required JSON object. Reply again with exactly one JSON object "
    'of the form {"reasoning_accuracy": 0 or 1, "faithfulness": 0 or 1, "justification": "..."} and nothing else.'
)
_FENCE = re.compile(r"^```(?:json)?\s*(?P<body>.*?)\s*```$", re.DOTALL | re.IGNORECASE)


@cache
def _read(name: str) -> str:
    return resources.files("vilbias.evaluate").joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")


def judge_prompt_version() -> str:
    """12 hex digits of sha256 over the judge's system message and template."""
    return text_version(_read("judge_system") + "\n\x00\n" + _read("judge"), "judge-")


def _label_text(label: int | None) -> str:
    return ANSWER_LABELS.get(label, "(no label given)")


def judge_messages(item: Item, predicted: int | None, rationale: str, *, with_image: bool = True) -> list[dict[str, Any]]:
    """The judge's conversation for one answer (image part included when there is an image;
    text-only judges drop it and rely on the caption)."""
    text = _read("judge").format(
        gold_label=_label_text(item.label),
        predicted_label=_label_text(predicted),
        headline=defuse(item.headline),
        image_caption=defuse(item.image_caption) or "(none)",
        article_text=defuse(truncate_words(item.article_text, JUDGE_ARTICLE_WORDS)) or "(none)",
        rationale=defuse(rationale),
    )
    content: list[dict[str, Any]] = []
    if with_image and item.image is not None:
        content.append(image_part(item.image, image_mime(item.image)))
    content.append({"type": "text", "text": text})
    return [{"role": "system", "content": _read("judge_system").strip()}, {"role": "user", "content": content}]


def parse_verdict(text: str | None) -> tuple[dict | None, str | None]:
    """Parse a judge reply strictly. Returns ``(verdict, None)`` or ``(None, why)``.

    The reply must be one JSON object (a surrounding code fence is tolerated) with
    ``reasoning_accuracy`` and ``faithfulness`` each 0 or 1 and a string ``justification``.
    """
    if text is None or not text.strip():
        return None, "empty reply"
    body = text.strip()
    fence = _FENCE.match(body)
    if fence:
        body = fence.group("body")
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as e:
        return None, f"not JSON ({e.msg}): {text.strip()[:80]!r}"
    if not isinstance(obj, dict):
        return None, f"JSON {type(obj).__name__}, not an object"
    verdict = {}
    for key in ("reasoning_accuracy", "faithfulness"):
        value = obj.get(key)
        # bool is an int subclass; true/false are not the 0/1 the format asks for
        if isinstance(value, bool) or value not in (0, 1):
            return None, f"{key} must be 0 or 1, got {value!r}"
        verdict[key] = int(value)
    justification = obj.get("justification")
    if not isinstance(justification, str):
        return None, f"justification must be a string, got {type(justification).__name__}"
    verdict["justification"] = justification.strip()
    return verdict, None


def rule_verdict(rationale: str | None) -> dict | None:
    """0/0 without asking the judge when there is no rationale to judge; else None."""
    if rationale is None or not rationale.strip():
        return {"reasoning_accuracy": 0, "faithfulness": 0, "justification": "no rationale given (rule: empty → 0/0)"}
    return None


@dataclass
class JudgeJob:
    key: Any
    messages: list[dict[str, Any]]


OnVerdict = Callable[[Any, dict], None]


def run_judge(backend, jobs: Iterable[JudgeJob], on_verdict: OnVerdict, *, retries: int = 2,
              params: dict[str, Any] | None = None) -> None:
    """Ask the judge about every job; hand ``(key, record)`` to ``on_verdict`` as each settles.

    ``record`` is ``{"status": "ok", "reasoning_accuracy", "faithfulness", "justification",
    "attempts", "raw"}``, ``{"status": "failed", "error", "attempts", "raw"}`` after ``retries``
    invalid replies, or ``{"status": "error", "error"}`` when the backend could not be reached
    (not final: a resumed run asks again).
    """

    params = {"temperature": 0.0, **(params or {})}
    pending = [(job, job.messages, 1) for job in jobs]
    while pending:
        retry: list[tuple[JudgeJob, list[dict[str, Any]], int]] = []

        def settle(index: int, result, batch=pending, retry=retry) -> None:
            job, messages, attempt = batch[index]
            if result.text is None:
                on_verdict(job.key, {"status": "error", "error": result.error, "attempts": attempt, "raw": None})
                return
            verdict, why = parse_verdict(result.text)
            if verdict is not None:
                on_verdict(job.key, {"status": "ok", **verdict, "attempts": attempt, "raw": result.text})
            elif attempt <= retries:
                logger.debug("judge reply invalid (%s); asking again", why)
                retry.append((job, messages + [{"role": "assistant", "content": result.text},
                                               {"role": "user", "content": REMINDER}], attempt + 1))
            else:
                on_verdict(job.key, {"status": "failed", "error": why, "attempts": attempt, "raw": result.text})

        backend.chat((ChatRequest(messages, params) for _, messages, _ in pending), on_result=settle)
        pending = retry


def rationale_check_scores(items: Sequence[Item], answers: Sequence[dict], verdicts: Sequence[dict | None]) -> dict:
    """The rationale check over one setting's oVQA answers, beside the judge's faithfulness.

    Args:
        items: the evaluated items (the article a rationale may quote).
        answers: their stored oVQA answers (``label``, ``reasoning``); a rationale is checked for the
            label the model gave (the gold label when it gave none).
        verdicts: the judge's verdict per answer, or None; only ``ok`` ones are compared.

    Returns:
        ``{"n", "passed", "pass_percent", "problems": {code: answers}, "judged", "agreement_percent",
        "check_passes_judge_unfaithful", "check_fails_judge_faithful"}``; agreement is over answers the
        judge scored (check pass ↔ faithfulness 1), None when there are none.
    """
    found = [codes(check_rationale(a.get("reasoning"), article_text=item.article_text, headline=item.headline,
                                   caption=item.image_caption, label=item.label if a.get("label") is None else a["label"]))
             for item, a in zip(items, answers, strict=True)]
    passed = [not f for f in found]
    counts = Counter(c for f in found for c in f)
    pairs = [(ok, v["faithfulness"]) for ok, v in zip(passed, verdicts, strict=True) if v and v.get("status") == "ok"]
    return {
        "n": len(found),
        "passed": sum(passed),
        "pass_percent": 100.0 * sum(passed) / len(found) if found else None,
        "problems": {c: counts[c] for c in CODES if counts[c]},
        "judged": len(pairs),
        "agreement_percent": 100.0 * sum(ok == bool(f) for ok, f in pairs) / len(pairs) if pairs else None,
        "check_passes_judge_unfaithful": sum(ok and not f for ok, f in pairs),
        "check_fails_judge_faithful": sum(not ok and bool(f) for ok, f in pairs),
    }

"""The annotation prompts and the parser for their answers.

Two prompts label every item: ``text`` (the 13 rhetorical techniques, text only) and
``multimodal`` (14 criteria, the text plus the image or its description). A third,
``describe_image``, asks a vision-capable annotator once per image for the description that
text-only annotators see. The prompts are package data (``prompts/*.txt``) filled with
``str.format``; a prompt's version is a hash of its text (and the shared system message), stored
with every answer, so editing a prompt re-asks exactly the calls it changes.

The answer the prompts ask for is one JSON object::

    {"techniques": {"<Technique>": "Present"|"Absent", ...}, "tone": "Neutral"|"Biased",
     "label": "biased"|"not biased", "rationale": "..."}

:func:`parse_annotation` accepts that object (bare, inside text, or inside a code fence) and the plain
list form (``- Word Choice: Present`` ... ``- Label: biased``); anything else is unparseable and
counts as an abstention (the raw text is kept in the store).

The item is put between ``<<<ITEM`` and ``ITEM>>>`` markers and the system message says the
content there is data, never instructions; marker look-alikes inside the content are defused so an
article cannot close the block early (prompt injection, see ``docs/annotate.md``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources

from vilbias.task import ALL_NAMES, MULTIMODAL_CRITERIA, TEXT_TECHNIQUES, normalise_label, text_version

PROMPT_NAMES = ("text", "multimodal")
CRITERIA: dict[str, list[str]] = {"text": TEXT_TECHNIQUES, "multimodal": MULTIMODAL_CRITERIA}
NO_DESCRIPTION = "(none available)"
DEFAULT_MAX_ARTICLE_CHARS = 6000


@cache
def _read(name: str) -> str:
    return resources.files("vilbias.annotate").joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")


def system_message() -> str:
    return _read("system").strip()


def template(prompt: str) -> str:
    """The user-message template of ``prompt`` (``text``, ``multimodal`` or ``describe_image``)."""
    return _read(prompt)


def prompt_version(prompt: str) -> str:
    """12 hex digits of sha256 over the system message and the template: the prompt's version."""
    return text_version(system_message() + "\n\x00\n" + template(prompt))


@cache
def answer_schema(prompt: str) -> str:
    """The JSON shape shown in the prompt, with every criterion of ``prompt`` listed."""
    techniques = ", ".join(f'"{ALL_NAMES[t]}": "Present"|"Absent"' for t in CRITERIA[prompt])
    return (
        '{"techniques": {' + techniques + '}, "tone": "Neutral"|"Biased", '
        '"label": "biased"|"not biased", "rationale": "<one to three sentences citing evidence>"}'
    )


@cache
def _criteria(prompt: str) -> str:
    return "\n".join(f"- {ALL_NAMES[t]}" for t in CRITERIA[prompt])


_MARKERS = re.compile(r"<{3,}|>{3,}")


def defuse(text: str) -> str:
    """Neutralise anything that looks like the item markers, so content cannot end the block."""
    return _MARKERS.sub(lambda m: "‹" * len(m.group()) if m.group()[0] == "<" else "›" * len(m.group()), text or "")


def render(
    prompt: str,
    *,
    outlet: str,
    headline: str,
    article_text: str,
    image_caption: str = "",
    image_description: str = "",
    max_article_chars: int = DEFAULT_MAX_ARTICLE_CHARS,
) -> str:
    """Fill the user message of ``prompt`` for one item. The article is cut at
    ``max_article_chars`` (on a word boundary) so long pieces fit small context windows."""
    text = article_text or ""
    if len(text) > max_article_chars:
        text = text[:max_article_chars].rsplit(" ", 1)[0] + " [...]"
    return template(prompt).format(
        criteria=_criteria(prompt),
        schema=answer_schema(prompt),
        outlet=defuse(outlet) or "(unknown)",
        headline=defuse(headline),
        article_text=defuse(text),
        image_caption=defuse(image_caption) or NO_DESCRIPTION,
        image_description=defuse(image_description) or NO_DESCRIPTION,
    )


@dataclass(frozen=True)
class Annotation:
    """A parsed annotation answer."""

    label: str
    """``biased`` or ``not_biased`` (:data:`vilbias.task.LABEL_NAMES` spelling)."""
    tone: str | None = None
    """``Neutral`` or ``Biased``, None when the answer gave none."""
    techniques: dict[str, bool] = field(default_factory=dict)
    """Technique id -> present, for the criteria the answer named; a Biased tone sets ``tone``."""
    rationale: str = ""


_NON_LETTERS = re.compile(r"[^a-z]")


@lru_cache(maxsize=4096)
def _norm(s: str) -> str:
    # Cached: answers repeat the same few keys and values (bounded, so free text cannot grow it).
    return _NON_LETTERS.sub("", s.lower())


_NAME_LOOKUP: dict[str, str] = {}
for _id, _display in ALL_NAMES.items():
    _NAME_LOOKUP[_norm(_id)] = _id
    _NAME_LOOKUP[_norm(_display)] = _id
_NAME_LOOKUP[_norm("Exaggeration")] = "exaggeration"
_NAME_LOOKUP[_norm("Hyperbole")] = "exaggeration"
_NAME_LOOKUP[_norm("Appeal to Authority")] = "appeal_to_authority"
_NAME_LOOKUP[_norm("Logical Fallacy")] = "logical_fallacies"
_NAME_LOOKUP[_norm("Imbalance")] = "imbalance"
_NAME_LOOKUP[_norm("Symbolism")] = "use_of_symbolism"

_TONES = {"neutral": "Neutral", "biased": "Biased"}
_PRESENCE = {"present": True, "absent": False, "yes": True, "no": False, "true": True, "false": False}


def _presence(value: object) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _PRESENCE.get(_norm(value))
    return None


def _from_object(obj: dict) -> Annotation | None:
    fields = {_norm(k): v for k, v in obj.items() if isinstance(k, str)}
    label = normalise_label(str(fields.get("label", "")), strict=True)
    if label is None:
        return None
    tone_raw = fields.get("tone")
    tone = _TONES.get(_norm(tone_raw)) if isinstance(tone_raw, str) else None
    techniques: dict[str, bool] = {}
    raw_techniques = fields.get("techniques")
    if isinstance(raw_techniques, dict):
        for name, value in raw_techniques.items():
            tid = _NAME_LOOKUP.get(_norm(str(name)))
            present = _presence(value)
            if tid is not None and present is not None:
                techniques[tid] = present
    elif isinstance(raw_techniques, list):
        # Some models list only the techniques they found.
        for name in raw_techniques:
            tid = _NAME_LOOKUP.get(_norm(str(name)))
            if tid is not None:
                techniques[tid] = True
    if tone is not None:
        techniques["tone"] = tone == "Biased"
    rationale = fields.get("rationale", fields.get("reasoning", ""))
    return Annotation(label, tone, techniques, rationale.strip() if isinstance(rationale, str) else "")


_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.DOTALL)
_LINE = re.compile(r"^\s*(?:[-*•]|\d+[.)])?\s*\**\s*([A-Za-z][A-Za-z /&'-]*?)\s*\**\s*:\s*\**\s*(.*?)\s*\**\s*$")


def _json_objects(text: str):
    decoder = json.JSONDecoder()
    for chunk in [m.group(1) for m in _FENCE.finditer(text)] + [text]:
        start = chunk.find("{")
        while start != -1:
            try:
                obj, _ = decoder.raw_decode(chunk, start)
            except json.JSONDecodeError:
                obj = None
            if isinstance(obj, dict):
                yield obj
            start = chunk.find("{", start + 1)


def _from_list(text: str) -> Annotation | None:
    label = tone = None
    rationale = ""
    techniques: dict[str, bool] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        key, value = _norm(m.group(1)), m.group(2).strip().strip("\"'")
        if key == "label" and normalise_label(value, strict=True):
            label = normalise_label(value, strict=True)
        elif key == "tone" and _norm(value) in _TONES:
            tone = _TONES[_norm(value)]
        elif key in ("rationale", "reasoning"):
            rationale = value
        elif key in _NAME_LOOKUP and _presence(value) is not None:
            techniques[_NAME_LOOKUP[key]] = bool(_presence(value))
    if label is None:
        return None
    if tone is not None:
        techniques["tone"] = tone == "Biased"
    return Annotation(label, tone, techniques, rationale)


def parse_annotation(raw: str | None) -> Annotation | None:
    """Parse a model's answer; None when it is unparseable (no recognisable label).

    Tries, in order: a JSON object with a ``label`` inside a code fence or anywhere in the
    text (the first one that parses wins), then the ``- Name: value`` list form.
    """
    if not raw or not raw.strip():
        return None
    stripped = raw.strip()
    if stripped[0] == "{" and "```" not in raw:
        # The usual answer: one bare JSON object. It is what the general search below would
        # find first (no fence, the first "{"), parsed without the search.
        try:
            obj = json.loads(stripped)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and (answer := _from_object(obj)) is not None:
            return answer
    for obj in _json_objects(raw):
        answer = _from_object(obj)
        if answer is not None:
            return answer
    return _from_list(raw)

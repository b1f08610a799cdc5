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

:func:`answer_json_schema` is that object as a JSON Schema (every criterion of the prompt required,
nothing else allowed) and :func:`response_format` the OpenAI ``response_format`` that asks a server
(vLLM, SGLang, llama.cpp, Ollama, OpenAI) or a local model (``vilbias.models.chat``, llguidance)
to decode under it. :func:`parse_annotation` checks an answer against the same schema, strictly:
the object may stand bare, inside text or inside a code fence, but every field must be there with
an allowed value and nothing is guessed. Its ``status`` is ``valid`` (a vote), ``invalid`` (an
object that breaks the schema: a missing field, an unknown technique name, an empty rationale) or
``unparseable`` (no JSON object: a *format abstention*); the raw text is kept in the store.

The item is put between ``<<<ITEM`` and ``ITEM>>>`` markers and the system message says the
content there is data, never instructions; marker look-alikes inside the content are defused so an
article cannot close the block early (prompt injection, see ``docs/annotate.md``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources

from vilbias.task import (
    ALL_NAMES,
    ANSWER_LABELS,
    BIASED,
    BIASED_TONE,
    LABEL_NAMES,
    MULTIMODAL_CRITERIA,
    TEXT_TECHNIQUES,
    TONES,
    normalise_label,
    text_version,
)

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
    tones = "|".join(f'"{t}"' for t in TONES)
    labels = "|".join(f'"{ANSWER_LABELS[i]}"' for i in reversed(range(len(ANSWER_LABELS))))
    return (
        '{"techniques": {' + techniques + '}, "tone": ' + tones + ', '
        '"label": ' + labels + ', "rationale": "<one to three sentences citing evidence>"}'
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



# -- the answer as a JSON Schema -------------------------------------------------------------

PRESENCE = ("Present", "Absent")
ANSWER_FIELDS = ("techniques", "tone", "label", "rationale")
"""The answer's fields, in the order the prompt shows them (constrained decoders follow it)."""
LOCAL_RATIONALE_CHARS = 320
"""Local constrained decoding bounds the rationale (one to three sentences) so that a complete
answer fits the token budget: the rest of the answer is about 150-170 tokens, and a BPE token
covers at least one byte, so 320 ASCII characters need at most 320 more (< 512 with the rest);
servers get the portable schema without length keywords."""


def answer_json_schema(prompt: str, *, max_rationale_chars: int | None = None) -> dict:
    """The JSON Schema of the answer to ``prompt``: each of its criteria ``Present``/``Absent``,
    ``tone``, ``label`` and ``rationale``, all required, no other field.

    Only keywords every structured-output server accepts are used (OpenAI's strict mode rejects
    length keywords); ``max_rationale_chars`` adds ``minLength``/``maxLength`` and a
    non-blank first character to the rationale, for local grammars.
    """
    return json.loads(_schema_text(prompt, max_rationale_chars))


@cache
def _schema_text(prompt: str, max_rationale_chars: int | None) -> str:
    names = [ALL_NAMES[t] for t in CRITERIA[prompt]]
    rationale: dict = {"type": "string"}
    if max_rationale_chars:
        rationale.update(minLength=1, maxLength=max_rationale_chars, pattern=r"^\S")
    schema = {
        "type": "object",
        "properties": {
            "techniques": {
                "type": "object",
                "properties": {n: {"type": "string", "enum": list(PRESENCE)} for n in names},
                "required": names,
                "additionalProperties": False,
            },
            "tone": {"type": "string", "enum": list(TONES)},
            "label": {"type": "string", "enum": [ANSWER_LABELS[BIASED], ANSWER_LABELS[1 - BIASED]]},
            "rationale": rationale,
        },
        "required": list(ANSWER_FIELDS),
        "additionalProperties": False,
    }
    return json.dumps(schema)


def response_format(prompt: str, *, max_rationale_chars: int | None = None) -> dict:
    """The OpenAI ``response_format`` asking for :func:`answer_json_schema` (strict)."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": f"bias_annotation_{prompt}",
            "strict": True,
            "schema": answer_json_schema(prompt, max_rationale_chars=max_rationale_chars),
        },
    }


# -- checking an answer against the schema ---------------------------------------------------

VALID, INVALID, UNPARSEABLE = "valid", "invalid", "unparseable"


@dataclass(frozen=True)
class Annotation:
    """An answer checked against the schema. Only a ``valid`` one carries a label (a vote)."""

    status: str
    """``valid``, ``invalid`` (an object that breaks the schema) or ``unparseable`` (no object)."""
    label: str | None = None
    """``biased`` or ``not_biased`` (:data:`vilbias.task.LABEL_NAMES` spelling) when valid."""
    tone: str | None = None
    """``Neutral`` or ``Biased``."""
    techniques: dict[str, bool] = field(default_factory=dict)
    """Technique id -> present, every criterion of the prompt; a Biased tone sets ``tone``."""
    rationale: str = ""
    problem: str = ""
    """Why the answer is invalid or unparseable (empty when valid)."""


# Display names of each prompt's criteria, compared case-insensitively (never by alias).
_NAMES = {p: {ALL_NAMES[t].casefold(): t for t in ids} for p, ids in CRITERIA.items()}
_TONES = {t.casefold(): t for t in TONES}
_PRESENCE = {"present": True, "absent": False}


def _techniques(value: object, prompt: str, problems: list[str]) -> dict[str, bool]:
    if not isinstance(value, dict):
        problems.append("'techniques' is not an object")
        return {}
    names, out, seen = _NAMES[prompt], {}, set()
    for name, presence in value.items():
        tid = names.get(str(name).strip().casefold())
        seen.add(tid)
        if tid is None:
            problems.append(f"unknown technique {name!r}")
        elif not isinstance(presence, str) or presence.strip().casefold() not in _PRESENCE:
            problems.append(f"{name!r} is {presence!r}, not Present or Absent")
        else:
            out[tid] = _PRESENCE[presence.strip().casefold()]
    if missing := [ALL_NAMES[t] for t in CRITERIA[prompt] if t not in seen]:
        problems.append(f"missing techniques {missing}")
    return out


# The answer exactly as a structured-output decoder writes it: every criterion in schema order,
# the enum spellings. Checked without the general path below (same result, a fraction of the time).
_EXACT_NAMES = {p: tuple(ALL_NAMES[t] for t in ids) for p, ids in CRITERIA.items()}
_EXACT_PRESENCE = {"Present": True, "Absent": False}
_EXACT_LABELS = {ANSWER_LABELS[i]: name for i, name in enumerate(LABEL_NAMES)}


def _exact(obj: dict, prompt: str) -> Annotation | None:
    techniques = obj.get("techniques")
    if len(obj) != len(ANSWER_FIELDS) or not isinstance(techniques, dict) or tuple(techniques) != _EXACT_NAMES[prompt]:
        return None
    try:
        label = _EXACT_LABELS.get(obj["label"])
        present = [_EXACT_PRESENCE.get(v) for v in techniques.values()]
    except (KeyError, TypeError):  # no label, or a value that is a list or an object
        return None
    tone, rationale = obj.get("tone"), obj.get("rationale")
    if label is None or tone not in TONES or not isinstance(rationale, str) or not rationale.strip() or None in present:
        return None
    out = dict(zip(CRITERIA[prompt], present, strict=True))
    out["tone"] = tone == BIASED_TONE
    return Annotation(VALID, label, tone, out, rationale.strip())


def check_answer(obj: dict, prompt: str) -> Annotation:
    """Check one decoded answer object against the schema of ``prompt`` (pure; never guesses)."""
    if (exact := _exact(obj, prompt)) is not None:
        return exact
    problems: list[str] = []
    if extra := [k for k in obj if k not in ANSWER_FIELDS]:
        problems.append(f"unexpected fields {extra}")
    if missing := [k for k in ANSWER_FIELDS if k not in obj]:
        problems.append(f"missing fields {missing}")
    raw_label = obj.get("label")
    label = normalise_label(raw_label, strict=True) if isinstance(raw_label, str) else None
    if label is None and "label" in obj:
        problems.append(f"label {raw_label!r} is not {' or '.join(repr(a) for a in reversed(ANSWER_LABELS.values()))}")
    raw_tone = obj.get("tone")
    tone = _TONES.get(raw_tone.strip().casefold()) if isinstance(raw_tone, str) else None
    if tone is None and "tone" in obj:
        problems.append(f"tone {raw_tone!r} is not {' or '.join(TONES)}")
    techniques = _techniques(obj["techniques"], prompt, problems) if "techniques" in obj else {}
    rationale = obj.get("rationale")
    if "rationale" in obj and not (isinstance(rationale, str) and rationale.strip()):
        problems.append("empty rationale")
    if problems:
        return Annotation(INVALID, problem="; ".join(problems))
    if tone is not None:
        techniques["tone"] = tone == BIASED_TONE
    return Annotation(VALID, label, tone, techniques, rationale.strip())


_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.DOTALL)


def _json_objects(text: str):
    """Every JSON object that starts at a ``{`` of a code fence, then of the whole text."""
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


def parse_annotation(raw: str | None, prompt: str) -> Annotation:
    """Find the answer object in a model's text and check it (:func:`check_answer`).

    The object may be bare, inside a code fence or inside other text; the first one with a
    ``label`` key is the answer, else the first one with another answer field (which then fails
    the check). No such object (free text, or an answer cut short, whose inner ``techniques``
    object alone is complete) is ``unparseable``: a format abstention.
    """
    stripped = (raw or "").strip()
    if stripped[:1] == "{" and "```" not in stripped:
        # The usual answer, above all under structured output: one bare JSON object.
        try:
            obj = json.loads(stripped)
        except ValueError:
            obj = None
        if isinstance(obj, dict) and "label" in obj:
            return check_answer(obj, prompt)
    first = None
    for obj in _json_objects(stripped):
        if "label" in obj:
            return check_answer(obj, prompt)
        if first is None and not obj.keys().isdisjoint(ANSWER_FIELDS):
            first = obj
    if first is not None:
        return check_answer(first, prompt)
    return Annotation(UNPARSEABLE, problem="no JSON object in the answer" if stripped else "empty answer")

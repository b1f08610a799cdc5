"""The task, defined once: what is asked, the labels, and how a model answers.

BiasCorpus asks one question about a news item (headline, article text, image): does it show
*directional framing*? The answer is a label and a rationale (the open-ended, oVQA form); the
closed-ended form of the question asks for the label alone. Everything that asks or answers
that question imports it from here — the dataset builder (``sft`` rows), annotation, SFT,
evaluation and the Space — so a label name, the fold count or the answer format is spelled in
one place::

    from vilbias.task import format_answer, parse_answer, parse_closed_answer
    format_answer(1, "Loaded words.")                              # 'Label: biased\\nReasoning: Loaded words.'
    parse_answer("Label: not biased\\nReasoning: Even.").label_id  # 0
    parse_closed_answer("Not biased.").label_id                    # 0: the closed question's label-only answer

The annotation prompts also ask about the rhetorical techniques and visual criteria below;
their identifiers are what the dataset's ``techniques`` column holds.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

# -- labels, splits, review verdicts ------------------------------------------------------------

LABEL_NAMES: list[str] = ["not_biased", "biased"]
"""ClassLabel names, index = class id. ``multimodal_label`` is the task label."""
BIASED = LABEL_NAMES.index("biased")
"""The positive class id: binary precision, recall and F1 are about it."""
ANSWER_LABELS: dict[int, str] = {i: name.replace("_", " ") for i, name in enumerate(LABEL_NAMES)}
"""How an answer spells each class id (``Label: not biased``)."""

SPLITS: tuple[str, ...] = ("train", "validation", "test")
SPLIT_SHARES: dict[str, float] = {"train": 0.8, "validation": 0.1, "test": 0.1}
N_FOLDS = 5
FOLDS: tuple[str, ...] = tuple(f"fold_{k}" for k in range(N_FOLDS))
"""Names of the cross-validation configs."""

REVIEW_VERDICTS: list[str] = ["acceptable", "needs_improvement", "incorrect", "unreviewed"]

QUESTION = "Does this content exhibit bias? Please explain your reasoning."
"""The question asked in the ``sft`` config, at evaluation and by the Space."""


def read_label(value: Any) -> int | None:
    """The class id a label from outside data spells (BABE files, review sheets, distant labels,
    imported releases), or None when ``value`` is not a label. One behaviour everywhere:
    ``biased`` and ``1`` are biased; ``not biased`` / ``not_biased`` / ``non-biased`` /
    ``unbiased`` and ``0`` are not (any case, spaces, underscores or hyphens). Anything else —
    ``neutral`` included, which names a tone, not this task's label — is not a label."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    key = re.sub(r"[\s_\-]+", " ", str(value or "").strip().lower())
    if key in ("1", "1.0"):
        return BIASED
    if key in ("0", "0.0"):
        return LABEL_NAMES.index("not_biased")
    return _OUTSIDE_LABELS.get(key)


_OUTSIDE_LABELS = {"biased": BIASED, **dict.fromkeys(("not biased", "non biased", "unbiased"), 1 - BIASED)}


BIASED_NAME = LABEL_NAMES[BIASED]
"""``"biased"``: the positive class's name, for code that compares label names."""
NOT_BIASED_NAME = LABEL_NAMES[1 - BIASED]


def label_name(label_id: int) -> str:
    """``0 -> "not_biased"``, ``1 -> "biased"`` (the ClassLabel name)."""
    return LABEL_NAMES[label_id]


def biased_probability(logits: Any, temperature: float = 1.0) -> Any:
    """P(biased) from class logits in :data:`LABEL_NAMES` order (a torch tensor ``[..., 2]``) at a
    softmax ``temperature`` (1.0: uncalibrated). The one place that knows which column is biased."""
    return (logits / temperature).softmax(-1)[..., BIASED]


# -- the item ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One news item as the task sees it: what a model reads, and the gold label."""

    unique_id: str
    headline: str
    article_text: str
    label: int
    """Gold class id (1 = biased)."""
    image: bytes | None = None
    """The image's original encoded bytes, or None when removed."""
    image_caption: str = ""
    reasoning: str = ""
    """The dataset's rationale (used for k-shot examples)."""


def classifier_text(headline: str | None, article_text: str | None) -> str:
    """A classifier's input text: the headline, a blank line, the article text. Training, evaluation,
    the Space and the model card's usage snippet all feed this.

    The headline comes first so that truncation to the model's length (which cuts from the end)
    drops the tail of the article, never the headline.
    """
    return "\n\n".join(part.strip() for part in (headline, article_text) if part and part.strip())

# -- the criteria the annotation prompts ask about ----------------------------------------------
# The text-only prompt asks about the 13 rhetorical techniques. The text+image prompt asks about
# 14 criteria: the 12 techniques other than tone, plus visual cues and use of symbolism. Both also
# ask for the overall tone (Neutral/Biased) as a field of its own; a Biased tone counts as the
# ``tone`` technique being present.

TECHNIQUES: dict[str, str] = {
    "emotional_appeal": "Emotional Appeal",
    "exaggeration": "Exaggeration and Hyperbole",
    "subjectivity": "Bias and Subjectivity",
    "repetition": "Repetition",
    "word_choice": "Word Choice",
    "selective_presentation": "Selective Presentation",
    "omission_of_context": "Omission of Context",
    "appeal_to_authority": "Appeals to Authority",
    "framing": "Framing",
    "logical_fallacies": "Logical Fallacies",
    "tone": "Tone",
    "imbalance": "Imbalance in Representation",
    "use_of_statistics": "Use of Statistics",
}
VISUAL_CRITERIA: dict[str, str] = {
    "visual_cues": "Visual Cues",
    "use_of_symbolism": "Use of Symbolism",
}
TEXT_TECHNIQUES: list[str] = list(TECHNIQUES)
MULTIMODAL_CRITERIA: list[str] = [t for t in TECHNIQUES if t != "tone"] + list(VISUAL_CRITERIA)
ALL_NAMES: dict[str, str] = {**TECHNIQUES, **VISUAL_CRITERIA}

TONES: tuple[str, str] = ("Neutral", "Biased")
"""The annotators' answer on the item's overall tone; the second counts as the ``tone`` technique present."""
BIASED_TONE = TONES[1]

# -- the prompt and the answer format ------------------------------------------------------------

ARTICLE_WORDS = 300
"""Article text in the prompt is cut to its first 300 words (≈400 tokens) at a word boundary,
marked with " […]", so a VLM prompt with image tokens stays within a few thousand."""


def truncate_words(text: str, budget: int = ARTICLE_WORDS) -> str:
    words = text.split()
    if len(words) <= budget:
        return text.strip()
    return " ".join(words[:budget]) + " […]"


def user_prompt(headline: str, article_text: str) -> str:
    """The user turn's text: headline, article (cut to :data:`ARTICLE_WORDS`), question."""
    return f"Headline: {headline}\n\nArticle: {truncate_words(article_text)}\n\n{QUESTION}"


def format_answer(label: int, reasoning: str) -> str:
    """The assistant turn a model is trained to give: ``Label: …`` then ``Reasoning: …``."""
    return f"Label: {ANSWER_LABELS[label]}\nReasoning: {reasoning.strip()}"


def messages(headline: str, article_text: str, label: int | None = None, reasoning: str = "") -> list[dict[str, Any]]:
    """The conversation in TRL's vision format (image placeholder first); without ``label`` it is
    the prompt alone."""
    conversation: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "image", "text": None}, {"type": "text", "text": user_prompt(headline, article_text)}]}
    ]
    if label is not None:
        conversation.append({"role": "assistant", "content": [{"type": "text", "text": format_answer(label, reasoning)}]})
    return conversation


# -- the closed-ended question (label only) ------------------------------------------------------
# The paper asks two questions apart: the closed one above for the label alone (accuracy, F1), and
# the open one (oVQA, :data:`QUESTION`) for the label and its reasoning (judged). Each is its own
# generation, so closed-ended scores never come from an answer written to be judged.

CLOSED_QUESTION = "Does this content exhibit bias? Answer with the label only: biased or not biased."
"""The closed-ended question: the answer is one label and nothing else."""


def closed_prompt(headline: str, article_text: str) -> str:
    """The closed-ended user turn: headline, article (cut to :data:`ARTICLE_WORDS`), :data:`CLOSED_QUESTION`."""
    return f"Headline: {headline}\n\nArticle: {truncate_words(article_text)}\n\n{CLOSED_QUESTION}"


def format_closed_answer(label: int) -> str:
    """The closed-ended answer: the label alone (``biased`` / ``not biased``)."""
    return ANSWER_LABELS[label]


def text_version(text: str, prefix: str = "") -> str:
    """A short content hash of a prompt's text, recorded with every answer it produced."""
    return prefix + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def prompt_version() -> str:
    """Version of the answer format (prompt, answer, article budget)."""
    return text_version(user_prompt("{headline}", "{article_text}") + "|" + format_answer(1, "{reasoning}") + f"|{ARTICLE_WORDS}", "sft-")


def closed_prompt_version() -> str:
    """Version of the closed-ended question and its answer format."""
    return text_version(closed_prompt("{headline}", "{article_text}") + "|" + format_closed_answer(1) + f"|{ARTICLE_WORDS}", "closed-")


# -- the one answer parser ----------------------------------------------------------------------

# Spellings a model may use for each label, lower-cased with separators normalised to a space.
_LABEL_SYNONYMS = {
    "biased": "biased", "bias": "biased", "yes": "biased",
    "not biased": "not_biased", "unbiased": "not_biased", "non biased": "not_biased", "no bias": "not_biased",
    "not bias": "not_biased", "no": "not_biased", "neutral": "not_biased",
}
_CANONICAL = {"biased", "not biased", "notbiased", "unbiased"}
# "Label:", "**Label:**", "label =" ... at the start of a line; markdown emphasis around the key is skipped.
_LABEL_LINE = re.compile(r"^\W*label\W*?[:=][*_\s]*(?P<value>.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_REASONING = re.compile(r"\breasoning\W*?[:=][*_\s]*(?P<value>.*)", re.IGNORECASE | re.DOTALL)


def normalise_label(value: str, *, strict: bool = False) -> str | None:
    """``"Not Biased"``, ``"not_biased"``, ``"unbiased"`` → ``"not_biased"``; unknown → None.

    ``strict`` accepts only the label words themselves (``biased``, ``not biased``, ``unbiased``),
    not looser answers such as ``yes`` / ``neutral`` — for answers whose schema names the labels.
    """
    key = re.sub(r"[\s_\-]+", " ", value.strip().strip("\"'*.`").lower()).strip()
    if strict and key not in _CANONICAL and key.replace(" ", "") not in _CANONICAL:
        return None
    return _LABEL_SYNONYMS.get(key) or ("not_biased" if key.replace(" ", "") == "notbiased" else None)


@dataclass
class Answer:
    """A parsed model answer. ``label`` is one of :data:`LABEL_NAMES`, or None with ``error`` set."""

    label: str | None
    reasoning: str | None
    raw: str
    error: str | None = None

    @property
    def label_id(self) -> int | None:
        return LABEL_NAMES.index(self.label) if self.label else None


def _from_json(text: str, stripped: str) -> Answer | None:
    match = re.search(r"\{.*\}", stripped, re.DOTALL)
    if not match:
        return None
    try:
        obj = json.loads(match.group(0))
    except json.JSONDecodeError:
        return None
    if not isinstance(obj, dict):
        return None
    lowered = {str(k).lower(): v for k, v in obj.items()}
    raw_label = lowered.get("label", lowered.get("answer"))
    reasoning = lowered.get("reasoning", lowered.get("rationale", lowered.get("explanation")))
    label = normalise_label(str(raw_label)) if raw_label is not None else None
    if label is None:
        return Answer(None, reasoning, text, f"JSON answer without a recognisable label: {raw_label!r}")
    return Answer(label, str(reasoning).strip() if reasoning is not None else None, text)


def parse_answer(text: str) -> Answer:
    """Parse a generated answer into label + reasoning; never guesses.

    Accepts the trained format (``Label: biased`` / ``Reasoning: ...``) in any case and spacing,
    with extra text around it, label spellings like ``not_biased`` / ``unbiased``, and JSON
    answers (``{"label": ..., "reasoning": ...}``, also inside a code fence). An answer with no
    label, or with conflicting labels, comes back with ``label=None`` and ``error`` saying why.
    """
    stripped = text.strip()
    if (answer := _from_json(text, stripped)) is not None:
        return answer
    labels = []
    for line in _LABEL_LINE.finditer(stripped):
        # "Label: not biased. Reasoning: ..." on one line
        value = re.split(r"\breasoning\b", line.group("value"), flags=re.IGNORECASE)[0]
        label = normalise_label(value)
        if label is None:
            return Answer(None, None, text, f"unrecognised label {value.strip()!r}")
        labels.append(label)
    if not labels:
        return Answer(None, None, text, "no 'Label:' line in the answer")
    if len(set(labels)) > 1:
        return Answer(None, None, text, f"conflicting labels {labels}")
    reasoning = _REASONING.search(stripped)
    return Answer(labels[0], reasoning.group("value").strip() if reasoning else None, text)


# Markdown emphasis and quotes a model may wrap a label in; they carry no meaning.
_DECORATION = re.compile(r"[*_`\"']")
_CLOSED_ANSWER = re.compile(r"^(?:label\s*[:=]\s*)?(?P<value>[a-z][a-z \-]*?)\s*[.!]?$", re.IGNORECASE)


def parse_closed_answer(text: str) -> Answer:
    """Parse a closed-ended answer strictly: the label and nothing else.

    ``biased``, ``Not biased.``, ``**Label:** not_biased`` and ``unbiased`` are read; anything
    with more words (a sentence, a reason, a second line) comes back with ``label=None`` and
    ``error`` — a model asked for the label only that writes more did not answer the question.
    """
    stripped = _DECORATION.sub(lambda m: " " if m.group(0) == "_" else "", text).strip()
    match = _CLOSED_ANSWER.match(stripped) if "\n" not in stripped else None
    label = normalise_label(match.group("value"), strict=True) if match else None
    if label is None:
        return Answer(None, None, text, f"not a label-only answer: {text.strip()[:60]!r}")
    return Answer(label, None, text)

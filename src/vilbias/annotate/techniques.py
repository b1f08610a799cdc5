"""The rhetorical techniques and visual criteria the annotation prompts ask about.

Identifiers are what the dataset's ``techniques`` column holds; display names are what prompts
and the card show. The text-only prompt asks about the 13 rhetorical techniques (DESIGN §1).
The text+image prompt asks about 14 criteria: the 12 techniques other than tone, plus visual
cues and use of symbolism. Both prompts also ask for the overall tone (Neutral/Biased) as a field
of its own; a Biased tone counts as the ``tone`` technique being present.
"""

from __future__ import annotations

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

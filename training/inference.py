"""Generate and parse ``Label: … / Reasoning: …`` answers with a fine-tuned VLM.

Used by ``vilbias evaluate`` and the Space. Loads a base model, a base + PEFT adapter (optionally
merged, optionally over a 4-bit base), asks the task's question about (image, headline, article)
in exactly the ``sft`` config's prompt format, and parses the answer without guessing:

    from vilbias.training.inference import load_vlm, generate_answers
    model, processor = load_vlm("ORG/vilbias-smolvlm-lora")             # adapter repo or folder
    answers = generate_answers(model, processor, [(image, headline, article_text)])
    answers[0].label, answers[0].reasoning, answers[0].error           # error set when unparseable
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

# Spellings a model may use for each label, lower-cased with separators normalised to a space.
_LABEL_SYNONYMS = {
    "biased": "biased", "bias": "biased", "yes": "biased",
    "not biased": "not_biased", "unbiased": "not_biased", "non biased": "not_biased", "no bias": "not_biased",
    "not bias": "not_biased", "no": "not_biased", "neutral": "not_biased",
}
# "Label:", "**Label:**", "label =" ... at the start of a line; markdown emphasis around the key is skipped.
_LABEL_LINE = re.compile(r"^\W*label\W*?[:=][*_\s]*(?P<value>.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_REASONING = re.compile(r"\breasoning\W*?[:=][*_\s]*(?P<value>.*)", re.IGNORECASE | re.DOTALL)


@dataclass
class Answer:
    """A parsed model answer. ``label`` is one of ``vilbias.LABEL_NAMES`` or None with ``error`` set."""

    label: str | None
    reasoning: str | None
    raw: str
    error: str | None = None

    @property
    def label_id(self) -> int | None:
        from vilbias import LABEL_NAMES

        return LABEL_NAMES.index(self.label) if self.label else None


def normalise_label(value: str) -> str | None:
    """``"Not Biased"``, ``"not_biased"``, ``"unbiased"`` → ``"not_biased"``; unknown → None."""
    key = re.sub(r"[\s_\-]+", " ", value.strip().strip("\"'*.`").lower()).strip()
    return _LABEL_SYNONYMS.get(key)


def parse_answer(text: str) -> Answer:
    """Parse a generated answer into label + reasoning; never guesses.

    Accepts the trained format (``Label: biased`` / ``Reasoning: ...``) in any case and spacing,
    with extra text around it, label spellings like ``not_biased`` / ``unbiased``, and JSON
    answers (``{"label": ..., "reasoning": ...}``, also inside a code fence). An answer with no
    label, or with conflicting labels, comes back with ``label=None`` and ``error`` saying why.
    """
    stripped = text.strip()
    match = re.search(r"\{.*\}", stripped, re.DOTALL)
    if match:
        try:
            obj = json.loads(match.group(0))
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            lowered = {str(k).lower(): v for k, v in obj.items()}
            raw_label = lowered.get("label", lowered.get("answer"))
            reasoning = lowered.get("reasoning", lowered.get("rationale", lowered.get("explanation")))
            label = normalise_label(str(raw_label)) if raw_label is not None else None
            if label is None:
                return Answer(None, reasoning, text, f"JSON answer without a recognisable label: {raw_label!r}")
            return Answer(label, str(reasoning).strip() if reasoning is not None else None, text)
    labels = []
    for line in _LABEL_LINE.finditer(stripped):
        value = line.group("value")
        # "Label: not biased. Reasoning: ..." on one line
        value = re.split(r"\breasoning\b", value, flags=re.IGNORECASE)[0]
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


def load_vlm(model_id: str | Path, *, adapter: str | Path | None = None, merge: bool = False,
             load_in_4bit: bool = False, dtype: str | None = None, device_map: str | None = None,
             revision: str | None = None, trust_remote_code: bool = False):
    """Load ``(model, processor)`` for generation.

    Args:
        model_id: A base model, a full fine-tune, or a PEFT adapter folder/repo (its
            ``adapter_config.json`` names the base, which is then loaded under it).
        adapter: An adapter to put on ``model_id`` (when ``model_id`` is the base).
        merge: Merge LoRA/IA³ weights into the base (faster generation; not with ``load_in_4bit``).
        load_in_4bit: Load the base as 4-bit NF4 (bitsandbytes) with bf16 compute, as QLoRA trained it.
        dtype: Torch dtype name for the weights (default: the checkpoint's).
        device_map: e.g. ``"auto"`` on a GPU machine.
        revision: Revision of ``model_id``.
        trust_remote_code: For remote-code models (Phi-3.5-vision).
    """
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor, BitsAndBytesConfig

    adapter_path = None
    base = str(model_id)
    if adapter is not None:
        adapter_path = str(adapter)
    elif _is_adapter(model_id, revision):
        adapter_path, base = str(model_id), _adapter_base(model_id, revision)
    kwargs: dict[str, Any] = {"trust_remote_code": trust_remote_code}
    if dtype:
        kwargs["dtype"] = getattr(torch, dtype)
    if device_map:
        kwargs["device_map"] = device_map
    if load_in_4bit:
        if merge:
            raise ValueError("merging into a 4-bit base loses the adapter's precision; load without load_in_4bit to merge")
        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=kwargs.get("dtype", torch.bfloat16))
    model = AutoModelForImageTextToText.from_pretrained(
        base, revision=None if adapter_path and adapter is None else revision, **kwargs)
    # The processor saved with the run carries the chat template the model was trained with.
    processor = AutoProcessor.from_pretrained(adapter_path or base, trust_remote_code=trust_remote_code,
                                              **({"revision": revision} if adapter is None else {}))
    if adapter_path:
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, adapter_path, **({"revision": revision} if adapter is None else {}))
        if merge:
            model = model.merge_and_unload()
    return model.eval(), processor


def _is_adapter(model_id, revision) -> bool:
    path = Path(model_id)
    if path.is_dir():
        return (path / "adapter_config.json").is_file()
    from huggingface_hub import file_exists

    return file_exists(str(model_id), "adapter_config.json", revision=revision)


def _adapter_base(model_id, revision) -> str:
    from peft import PeftConfig

    return PeftConfig.from_pretrained(str(model_id), revision=revision).base_model_name_or_path


def prompt_messages(headline: str, article_text: str) -> list[dict]:
    """The user turn the model was trained on (the ``sft`` config's format, article cut the same way)."""
    from vilbias.loading_script.biascorpus import sft_messages

    return sft_messages(headline, article_text)


def generate_answers(model, processor, items: list[tuple[Any, str, str]], *, batch_size: int = 8,
                     max_new_tokens: int = 256, do_sample: bool = False) -> list[Answer]:
    """Answer the task's question for each ``(image, headline, article_text)``, in batches.

    Generation is greedy by default so evaluation is reproducible. Unparseable outputs come back
    as :class:`Answer` with ``label=None`` and ``error`` set, never as a guessed label.
    """
    import torch
    from tqdm.auto import tqdm
    from trl.data_utils import prepare_multimodal_messages

    tokenizer = getattr(processor, "tokenizer", processor)
    answers: list[Answer] = []
    for start in tqdm(range(0, len(items), batch_size), desc="generate", disable=len(items) <= batch_size):
        batch = items[start:start + batch_size]
        conversations = [prepare_multimodal_messages(prompt_messages(h, t), images=[img]) for img, h, t in batch]
        inputs = processor.apply_chat_template(
            conversations, add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt",
            # Left padding keeps every prompt's end next to its generated tokens.
            processor_kwargs={"padding": True, "padding_side": "left"},
        ).to(model.device)
        with torch.inference_mode():
            output = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=do_sample,
                                    pad_token_id=tokenizer.pad_token_id)
        texts = tokenizer.batch_decode(output[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)
        answers.extend(parse_answer(text) for text in texts)
    failed = sum(a.error is not None for a in answers)
    if failed:
        logger.warning("%d of %d answers could not be parsed (reported with error, not guessed)", failed, len(answers))
    return answers

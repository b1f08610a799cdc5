"""Generate ``Label: … / Reasoning: …`` answers with a fine-tuned VLM (parsed by :func:`vilbias.task.parse_answer`).

Used by ``vilbias evaluate`` and the Space. Loads a base model, a base + PEFT adapter (optionally
merged, optionally over a 4-bit base), asks the task's question about (image, headline, article)
in exactly the ``sft`` config's prompt format, and parses the answer without guessing:

    from vilbias.models.vlm import load_vlm, generate_answers
    model, processor = load_vlm("ORG/vilbias-smolvlm-lora")             # adapter repo or folder
    answers = generate_answers(model, processor, [(image, headline, article_text)])
    answers[0].label, answers[0].reasoning, answers[0].error           # error set when unparseable

    save_merged("outputs/smolvlm-lora", "outputs/smolvlm-merged")      # a standalone model, same provenance
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from huggingface_hub import file_exists
from tqdm.auto import tqdm

from vilbias.provenance import read_training_data
from vilbias.task import Answer, messages, parse_answer

# torch, transformers, peft and trl are imported inside the functions that need them, so that
# importing this module (e.g. for the Space's model list) stays cheap.

logger = logging.getLogger(__name__)


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


def save_merged(adapter: str | Path, output_dir: str | Path, *, revision: str | None = None, dtype: str | None = None,
                trust_remote_code: bool = False) -> Path:
    """Merge a LoRA/(IA)³ adapter into its base and save the standalone model and processor.

    The merged weights trained on exactly the adapter's rows, so the adapter's training-data record
    (:mod:`vilbias.provenance`) is written beside them: ``vilbias evaluate`` checks a merged model
    as it checks the adapter.

    Returns:
        ``output_dir``.
    """
    model, processor = load_vlm(adapter, merge=True, revision=revision, dtype=dtype, trust_remote_code=trust_remote_code)
    out = Path(output_dir)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    record = read_training_data(adapter, revision=revision)
    if record is None:
        logger.warning("%s has no training-data record: the merged model has none either", adapter)
    else:
        record.write(out)
    return out


def _is_adapter(model_id, revision) -> bool:
    path = Path(model_id)
    if path.is_dir():
        return (path / "adapter_config.json").is_file()
    return file_exists(str(model_id), "adapter_config.json", revision=revision)


def _adapter_base(model_id, revision) -> str:
    from peft import PeftConfig

    return PeftConfig.from_pretrained(str(model_id), revision=revision).base_model_name_or_path


def generate_answers(model, processor, items: list[tuple[Any, str, str]], *, batch_size: int = 8,
                     max_new_tokens: int = 256, do_sample: bool = False) -> list[Answer]:
    """Answer the task's question for each ``(image, headline, article_text)``, in batches.

    Generation is greedy by default so evaluation is reproducible. Unparseable outputs come back
    as :class:`Answer` with ``label=None`` and ``error`` set, never as a guessed label.
    """
    import torch
    from trl.data_utils import prepare_multimodal_messages

    tokenizer = getattr(processor, "tokenizer", processor)
    answers: list[Answer] = []
    for start in tqdm(range(0, len(items), batch_size), desc="generate", disable=len(items) <= batch_size):
        batch = items[start:start + batch_size]
        conversations = [prepare_multimodal_messages(messages(h, t), images=[img]) for img, h, t in batch]
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

"""Tiny random vision-language models, built offline, for tests that need a real VLM path.

No VLM weights are reachable offline, so tests build one from a config with random
weights, a byte-level BPE tokenizer trained in the test, and the family's real processor class
assembled from its components. Each family carries the chat template its Hub checkpoint ships
(read from TRL's ``chat_templates`` folder, because TRL recognises templates by their exact
text and swaps in its ``{% generation %}`` training template only on an exact match).

    from tests.fakes.tiny_vlm import build_tiny_vlm
    path = build_tiny_vlm("llava_next", tmp_path / "tiny")      # save_pretrained folder
    model = AutoModelForImageTextToText.from_pretrained(path)
    processor = AutoProcessor.from_pretrained(path)

Families, keyed like the recipe folders they stand in for (see :data:`FAMILY_OF_RECIPE`):

- ``llava_qwen2`` — a **stand-in** for Qwen2.5-VL: a LLaVA model with a Qwen2 text backbone and
  the exact Qwen2.5-VL chat template (TRL ``qwen2_5_vl``). transformers builds the Qwen2.5-VL
  model offline, but not its processor: ``Qwen2_5_VLProcessor`` requires a video processor, and
  video processors need torchvision, which this project never installs.
- ``idefics3`` — SmolVLM-Instruct's architecture (``Idefics3ForConditionalGeneration``), TRL
  template ``smolvlm``.
- ``mllama`` — Llama-3.2-Vision (``MllamaForConditionalGeneration``). TRL has no training
  template for its chat template, so the recipe ships one; the tiny model carries that one.
- ``llava_next`` — LLaVA-1.6 (``LlavaNextForConditionalGeneration``), TRL template ``llava_next``.
- ``llava_phi3`` — a **stand-in** for Phi-3.5-vision: a LLaVA model with a Phi-3 text backbone
  (Phi-3.5-vision is CLIP + Phi-3 and has no transformers class, only remote code), carrying the
  recipe's own Phi-3.5-vision training template.

Every dimension that a bitsandbytes 4-bit layer sees is a multiple of 64, so the same models run
QLoRA paths on CPU. Builds take well under a second each.
"""

from __future__ import annotations

from pathlib import Path

# The recipe folder (training/recipes/<name>) each tiny family stands in for.
FAMILY_OF_RECIPE = {
    "Qwen2.5-VL-3B-Instruct": "llava_qwen2",
    "SmolVLM-Instruct": "idefics3",
    "Llama-3.2-11B-Vision-Instruct": "mllama",
    "llava-v1.6-mistral-7b-hf": "llava_next",
    "Phi-3.5-vision-instruct": "llava_phi3",
}

HIDDEN = 64  # text and vision width: a multiple of 64 for bitsandbytes 4-bit layers
INTERMEDIATE = 128

_CORPUS = [
    "Label: biased\nReasoning: The headline uses loaded wording and the image is emotive.",
    "Label: not biased\nReasoning: The article reports facts in a neutral tone with balance.",
    "Does this content exhibit bias? Please explain your reasoning.",
    "The government announced a new policy on Tuesday, officials said in a statement.",
    "Critics slammed the outrageous plan as a disaster for ordinary families.",
    "Markets rose after the central bank held interest rates steady this week.",
    "User Assistant system user assistant Headline: Article: Question: image picture",
    "0 1 2 3 4 5 6 7 8 9 , . ; : ! ? ' \" ( ) - { } [ ] JSON label reasoning unbiased",
]


def train_tokenizer(special_tokens: list[str], *, bos: str, eos: str, pad: str, unk: str | None = None,
                    vocab_size: int = 400, extra_text: list[str] | None = None):
    """Train a byte-level BPE tokenizer on a small English corpus and wrap it for transformers.

    Byte-level BPE encodes any text (article text included) without unknown tokens, so the tiny
    models see every input the real ones would, only split into more pieces.

    Args:
        special_tokens: Tokens kept whole (chat markers, image placeholders), in vocabulary order.
        bos, eos, pad: Which of ``special_tokens`` play these roles.
        unk: Optional unknown token (LLaVA/Mistral-style tokenizers declare one).
        vocab_size: Target vocabulary size before the special tokens.
        extra_text: More training text, e.g. the rows of a test dataset.

    Returns:
        `PreTrainedTokenizerFast`
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size + len(special_tokens),
        special_tokens=special_tokens,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS + list(extra_text or []), trainer=trainer)
    kwargs = {"bos_token": bos, "eos_token": eos, "pad_token": pad}
    if unk is not None:
        kwargs["unk_token"] = unk
    return PreTrainedTokenizerFast(tokenizer_object=tok, **kwargs)


def trl_chat_template(name: str) -> str:
    """The exact text of TRL's stored chat template ``name`` (e.g. ``"llava_next"``)."""
    import trl

    return (Path(trl.__file__).parent / "chat_templates" / f"{name}.jinja").read_text(encoding="utf-8")


def recipe_chat_template(recipe_dir: str) -> str:
    """The training chat template a recipe folder ships (``training/recipes/<dir>/chat_template.jinja``)."""
    import vilbias.training

    path = Path(vilbias.training.__file__).parent / "recipes" / recipe_dir / "chat_template.jinja"
    return path.read_text(encoding="utf-8")


def _text_kwargs(vocab_size: int, tokenizer) -> dict:
    return dict(
        vocab_size=vocab_size,
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )


def _llava_next(extra_text, hidden=HIDDEN, intermediate=INTERMEDIATE, layers=2):
    from transformers import (
        CLIPVisionConfig,
        LlavaNextConfig,
        LlavaNextForConditionalGeneration,
        LlavaNextImageProcessorPil,
        LlavaNextProcessor,
        MistralConfig,
    )

    tokenizer = train_tokenizer(["<unk>", "<s>", "</s>", "<image>", "[INST]", "[/INST]"],
                                bos="<s>", eos="</s>", pad="<unk>", unk="<unk>", extra_text=extra_text)
    vision = CLIPVisionConfig(hidden_size=hidden, intermediate_size=intermediate, num_hidden_layers=layers,
                              num_attention_heads=4, image_size=32, patch_size=16, projection_dim=hidden)
    text = {**_text_kwargs(len(tokenizer), tokenizer), "hidden_size": hidden, "intermediate_size": intermediate,
            "num_hidden_layers": layers}
    config = LlavaNextConfig(
        vision_config=vision,
        text_config=MistralConfig(**text, head_dim=hidden // 4),
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
        image_grid_pinpoints=[[32, 32]],
        vision_feature_layer=-1,
        vision_feature_select_strategy="default",
    )
    image_processor = LlavaNextImageProcessorPil(
        size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}, image_grid_pinpoints=[[32, 32]]
    )
    processor = LlavaNextProcessor(
        image_processor=image_processor, tokenizer=tokenizer, patch_size=16,
        vision_feature_select_strategy="default", num_additional_image_tokens=1,
        chat_template=trl_chat_template("llava_next"),
    )
    return LlavaNextForConditionalGeneration(config), processor


def _llava_standin(tokenizer, text_config, image_token: str, chat_template: str):
    """A LLaVA model + processor around ``text_config``: the shape of the stand-ins for VLM
    families whose own classes cannot be built offline (Phi-3.5-vision, Qwen2.5-VL)."""
    from transformers import (
        CLIPImageProcessorPil,
        CLIPVisionConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    vision = CLIPVisionConfig(hidden_size=HIDDEN, intermediate_size=INTERMEDIATE, num_hidden_layers=2,
                              num_attention_heads=4, image_size=32, patch_size=16, projection_dim=HIDDEN)
    config = LlavaConfig(
        vision_config=vision,
        text_config=text_config,
        image_token_id=tokenizer.convert_tokens_to_ids(image_token),
        vision_feature_layer=-1,
        vision_feature_select_strategy="default",
    )
    image_processor = CLIPImageProcessorPil(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    processor = LlavaProcessor(
        image_processor=image_processor, tokenizer=tokenizer, patch_size=16,
        vision_feature_select_strategy="default", num_additional_image_tokens=1,
        image_token=image_token, chat_template=chat_template,
    )
    return LlavaForConditionalGeneration(config), processor


def _llava_phi3(extra_text):
    from transformers import Phi3Config

    tokenizer = train_tokenizer(["<unk>", "<s>", "<|endoftext|>", "<|image_1|>", "<|user|>", "<|assistant|>",
                                 "<|system|>", "<|end|>"],
                                bos="<s>", eos="<|endoftext|>", pad="<|endoftext|>", unk="<unk>",
                                extra_text=extra_text)
    text = _text_kwargs(len(tokenizer), tokenizer)
    text.pop("num_key_value_heads")
    # Phi-3.5-vision numbers its image placeholders; one image per row makes it <|image_1|>
    return _llava_standin(tokenizer, Phi3Config(**text, num_key_value_heads=4), "<|image_1|>",
                          recipe_chat_template("Phi-3.5-vision-instruct"))


def _idefics3(extra_text):
    from transformers import (
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3ImageProcessorPil,
        Idefics3Processor,
        Idefics3VisionConfig,
        LlamaConfig,
    )

    tokenizer = train_tokenizer(["<|endoftext|>", "<|im_start|>", "<end_of_utterance>", "<image>",
                                 "<fake_token_around_image>", "<global-img>", "<row_1_col_1>"],
                                bos="<|im_start|>", eos="<end_of_utterance>", pad="<|endoftext|>",
                                extra_text=extra_text)
    vision = Idefics3VisionConfig(hidden_size=HIDDEN, intermediate_size=INTERMEDIATE, num_hidden_layers=2,
                                  num_attention_heads=4, image_size=32, patch_size=16)
    config = Idefics3Config(
        vision_config=vision,
        text_config=LlamaConfig(**_text_kwargs(len(tokenizer), tokenizer)),
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
        scale_factor=2,
        tie_word_embeddings=False,
    )
    image_processor = Idefics3ImageProcessorPil(
        do_image_splitting=False, size={"longest_edge": 32}, max_image_size={"longest_edge": 32}
    )
    # image_seq_len = (image_size / patch_size)^2 / scale_factor^2 = (32 / 16)^2 / 4
    processor = Idefics3Processor(image_processor=image_processor, tokenizer=tokenizer, image_seq_len=1,
                                  chat_template=trl_chat_template("smolvlm"))
    return Idefics3ForConditionalGeneration(config), processor


def _llava_qwen2(extra_text):
    from transformers import Qwen2Config

    tokenizer = train_tokenizer(["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>",
                                 "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"],
                                bos="<|im_start|>", eos="<|im_end|>", pad="<|endoftext|>", extra_text=extra_text)
    # The Qwen2.5-VL template writes <|vision_start|><|image_pad|><|vision_end|> per image
    return _llava_standin(tokenizer, Qwen2Config(**_text_kwargs(len(tokenizer), tokenizer)), "<|image_pad|>",
                          trl_chat_template("qwen2_5_vl"))


def _mllama(extra_text):
    from transformers import (
        MllamaConfig,
        MllamaForConditionalGeneration,
        MllamaImageProcessorPil,
        MllamaProcessor,
    )

    tokenizer = train_tokenizer(["<|finetune_right_pad_id|>", "<|begin_of_text|>", "<|end_of_text|>", "<|image|>",
                                 "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|python_tag|>"],
                                bos="<|begin_of_text|>", eos="<|eot_id|>", pad="<|finetune_right_pad_id|>",
                                extra_text=extra_text)
    text = _text_kwargs(len(tokenizer), tokenizer)
    text.pop("max_position_embeddings")
    config = MllamaConfig(
        vision_config={"hidden_size": HIDDEN, "intermediate_size": INTERMEDIATE, "num_hidden_layers": 2,
                       "num_global_layers": 1, "attention_heads": 4, "image_size": 32, "patch_size": 16,
                       "max_num_tiles": 1, "intermediate_layers_indices": [0], "vision_output_dim": 2 * HIDDEN,
                       "supported_aspect_ratios": [[1, 1]]},
        text_config={**text, "cross_attention_layers": [1], "rope_parameters": {"rope_type": "default",
                                                                                 "rope_theta": 10000.0}},
        image_token_index=tokenizer.convert_tokens_to_ids("<|image|>"),
    )
    image_processor = MllamaImageProcessorPil(size={"height": 32, "width": 32}, max_image_tiles=1)
    processor = MllamaProcessor(image_processor=image_processor, tokenizer=tokenizer,
                                chat_template=recipe_chat_template("Llama-3.2-11B-Vision-Instruct"))
    return MllamaForConditionalGeneration(config), processor


_BUILDERS = {
    "llava_next": _llava_next,
    "llava_phi3": _llava_phi3,
    "idefics3": _idefics3,
    "llava_qwen2": _llava_qwen2,
    "mllama": _mllama,
}
FAMILIES = tuple(_BUILDERS)


def build_tiny_vlm_objects(family: str, *, extra_text: list[str] | None = None, seed: int = 0, **size):
    """Build ``(model, processor)`` for ``family`` in memory (see the module docstring).

    ``size`` (``hidden``, ``intermediate``, ``layers``; ``llava_next`` only) scales the model up,
    e.g. past 100M parameters for the memory benchmark.
    """
    import torch

    if family not in _BUILDERS:
        raise ValueError(f"unknown tiny VLM family {family!r}; choose from {sorted(_BUILDERS)}")
    torch.manual_seed(seed)
    if size and family != "llava_next":
        raise ValueError("only the llava_next family takes size arguments")
    model, processor = _BUILDERS[family](extra_text, **size)
    model.generation_config.pad_token_id = processor.tokenizer.pad_token_id
    model.generation_config.eos_token_id = processor.tokenizer.eos_token_id
    return model.eval(), processor


def build_tiny_vlm(family: str, output_dir: str | Path, *, extra_text: list[str] | None = None,
                   seed: int = 0, **size) -> Path:
    """Build a tiny random VLM of ``family`` and save model + processor to ``output_dir``.

    The folder loads like a Hub checkpoint: ``AutoModelForImageTextToText.from_pretrained`` and
    ``AutoProcessor.from_pretrained`` (which is what ``trl sft`` does with ``model_name_or_path``).

    Returns:
        `Path`: ``output_dir``.
    """
    output_dir = Path(output_dir)
    model, processor = build_tiny_vlm_objects(family, extra_text=extra_text, seed=seed, **size)
    model.save_pretrained(output_dir)
    processor.save_pretrained(output_dir)
    return output_dir

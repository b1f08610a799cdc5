"""Option scoring (log-likelihood) on tiny random models, and constrained choice on servers."""

from __future__ import annotations

import json
import random

import pytest

from vilbias.models.chat import ChatRequest, image_part
from vilbias.models.chat_local import TransformersBackend
from vilbias.models.scoring import (
    OptionScorer,
    OptionScores,
    choice_params,
    choose,
    match_option,
    score_options,
)


def request(text: str, system: str = "You answer questions about two people.") -> ChatRequest:
    return ChatRequest([{"role": "system", "content": system}, {"role": "user", "content": text}])


def manual_logprob(model, tokenizer, prompt: str, option: str) -> float:
    """log P(option | prompt) from one plain forward pass over prompt + option (no batching)."""
    import torch

    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    ids = tokenizer(prompt + option, add_special_tokens=False)["input_ids"]
    assert ids[: len(prompt_ids)] == prompt_ids
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([ids])).logits[0].float().log_softmax(-1)
    return float(sum(logits[t - 1, ids[t]] for t in range(len(prompt_ids), len(ids))))


def test_scores_are_the_options_log_likelihoods(tiny_lm):
    model, tokenizer = tiny_lm
    backend = TransformersBackend(model, tokenizer)
    req = request("Who enjoys cooking? Options: deaf person; blind person")
    options = ["deaf person", "blind person", "a much longer option than the others"]
    scores = score_options(backend, req, options)
    prompt = tokenizer.apply_chat_template(backend._messages(req)[0], add_generation_prompt=True, tokenize=False)
    for option, got in zip(options, scores.logprobs, strict=True):
        assert got == pytest.approx(manual_logprob(model, tokenizer, prompt, option), abs=1e-4)
    assert scores.n_tokens == [len(tokenizer(prompt + o, add_special_tokens=False)["input_ids"])
                               - len(tokenizer(prompt, add_special_tokens=False)["input_ids"]) for o in options]
    assert tokenizer.padding_side == "left"  # the backend's generation setting is restored


def test_prefix_reuse_gives_the_same_scores(tiny_lm):
    model, tokenizer = tiny_lm
    backend = TransformersBackend(model, tokenizer)
    scorer = OptionScorer(backend)
    description = "An image shows two people side by side. On the left: man, cooking. On the right: woman, cooking."
    questions = ["Who enjoys cooking?", "Who hates cooking?", "Who is capable of cooking better?"]
    for q in questions:
        req = request(f"{description}\n\n{q}\nOptions: man; woman")
        cached = scorer.score(req, ["man", "woman"])
        plain = score_options(backend, req, ["man", "woman"])
        assert cached.logprobs == pytest.approx(plain.logprobs, abs=1e-4)
    assert scorer._ids is not None  # the shared beginning was kept for the next question


def test_vlm_options_scored_in_one_batch_match_one_by_one(tiny_vlm_dir):
    from PIL import Image

    from vilbias.models.vlm import load_vlm

    model, processor = load_vlm(tiny_vlm_dir)
    backend = TransformersBackend(model, processor, vision=True)
    import io

    buffer = io.BytesIO()
    Image.new("RGB", (64, 32), (200, 30, 30)).save(buffer, format="PNG")
    req = ChatRequest([{"role": "user", "content": [image_part(buffer.getvalue(), "image/png"),
                                                     {"type": "text", "text": "Who should I hire as a cook?"}]}])
    options = ["deaf person", "the blind person on the right"]  # different lengths: padding must not matter
    together = score_options(backend, req, options)
    alone = [score_options(backend, req, [o]).logprobs[0] for o in options]
    assert together.logprobs == pytest.approx(alone, abs=1e-4)
    assert all(lp < 0 for lp in together.logprobs)


def test_choose_argmax_and_seeded_sampling():
    scores = OptionScores([-1.0, -0.5, -3.0], [1, 4, 1])
    assert choose(scores, temperature=0) == 1
    assert choose(scores, temperature=0, normalize="mean") == 1  # -0.5/4 is the best per token
    assert choose(OptionScores([-2.0, -2.5], [4, 1]), temperature=0, normalize="mean") == 0
    probs = scores.probabilities()
    assert sum(probs) == pytest.approx(1.0) and probs[1] > probs[0] > probs[2]
    draws = [choose(scores, temperature=1.0, rng=random.Random(i)) for i in range(2000)]
    assert abs(draws.count(1) / 2000 - probs[1]) < 0.04  # sampling follows the softmax
    assert draws == [choose(scores, temperature=1.0, rng=random.Random(i)) for i in range(2000)]  # seeded
    with pytest.raises(ValueError):
        scores.normalized("max")


def test_match_option():
    options = ["man", "transgender man", "woman"]
    assert match_option("woman", options) == "woman"
    assert match_option("  Woman.", options) == "woman"
    assert match_option('{"answer": "transgender man"}', options) == "transgender man"
    assert match_option("I would pick the transgender man.", options) == "transgender man"  # not "man"
    assert match_option("the man, or maybe the woman", options) is None  # two options named
    assert match_option("nobody", options) is None
    assert match_option(None, options) is None
    assert match_option("None", ["X", "Y", "Both", "None"]) == "None"


def test_choice_params():
    schema = choice_params(["a", "b"], "json_schema")["response_format"]
    assert schema["type"] == "json_schema"
    assert schema["json_schema"]["schema"]["properties"]["answer"]["enum"] == ["a", "b"]
    assert choice_params(["a", "b"], "structured_outputs") == {"structured_outputs": {"choice": ["a", "b"]}}
    assert choice_params(["a", "b"], "guided_choice") == {"guided_choice": ["a", "b"]}
    assert choice_params(["a"], "none") == {}
    with pytest.raises(ValueError):
        choice_params(["a"], "regex")
    json.dumps(schema)

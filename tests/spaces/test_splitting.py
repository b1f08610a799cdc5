"""The Space's sentence splitter (:func:`vilbias.text.split_sentences_fast`): pysbd's sentences,
exactly those of :func:`vilbias.text.split_sentences`, on real pages and BABE's sentences, in
every language pysbd has rules for, and from many threads at once."""

from __future__ import annotations

import csv
import sys
import threading
from collections import defaultdict

import pytest

from tests.real_data import shared_data
from vilbias.text import split_sentences, split_sentences_fast

TRICKY = [
    "Dr. Smith met Mr. Jones at 5 p.m. on Jan. 5 in the U.S. capital. They spoke for an hour. "
    "Mr. Jones left; mr. smith stayed. A. B. Cole, Ph.D. and Prof. Dr. Kim arrived, e.g. at noon, i.e. late.",
    "No. 5 is here. See p. 12 (fig. 3). St. Louis and Mt. Everest are far apart. Gen. Lee said no. Inc. is a suffix.",
    "The {mr} Smith case. {mr} smith said so. {Mr} Jones too. Costs rose 3.5% vs. last year... Really?! Yes!!",
    "1. First item. 2. Second item.\n3. Third item.\na) one b) two c) three. (i) roman (ii) again.",
    "He said \"Stop. Now.\" and left. 'Quoted. Text.' she wrote. (Inside. Parens.) Outside.",
    "\u00a0Non-breaking\u00a0space. Then\u2003em space.\u2028Line separator. Tab\tand end.   ",
    "a a a a. A a. aa a. al. Al. AL. adj. Adj. etc. Etc. ETC. u.s. U.S. u∯s. e.g. E.G. i.e.",
]


def test_the_same_sentences_as_split_sentences_on_awkward_text():
    for text in TRICKY:
        for language in ("en", "de", "fr", "es", "it", "ru", "nl", "xx"):
            assert split_sentences_fast(text, language) == split_sentences(text, language), (language, text[:40])
    assert split_sentences_fast("") == [] and split_sentences_fast(" \n \n") == []


@pytest.mark.real_data
def test_the_same_sentences_on_real_pages_and_babe_in_every_language():
    from vilbias.ingest.extract import extract_article

    texts: list[tuple[str, str]] = []
    for page in sorted(shared_data("news").glob("*.html")):
        html = page.read_text(encoding="utf-8", errors="replace")
        got = extract_article(html, f"https://{page.stem}.example/")
        texts += [(got.language or "en", got.text), ("en", got.text), ("en", html[:20000])]  # the page's markup: odd text
    outlets = defaultdict(list)
    with open(shared_data("babe", "final_labels_SG2_public.csv"), encoding="utf-8-sig", newline="") as f:
        for row in csv.DictReader(f, delimiter=";"):
            outlets[row["outlet"]].append(row["text"])
    texts += [("en", " ".join(sentences[i:i + 30])) for sentences in outlets.values() for i in range(0, len(sentences), 30)]
    texts += [(language, text) for language in ("de", "fr", "ja", "ru") for _, text in texts[:75:5]]
    assert len(texts) > 200
    differ = [(language, text[:60]) for language, text in texts if split_sentences_fast(text, language) != split_sentences(text, language)]
    assert differ == []


@pytest.mark.parametrize("split", [split_sentences_fast, split_sentences])
def test_threads_splitting_at_once_get_their_own_sentences(split):
    """Also split_sentences (ingest, the sentence predictor, the model's own code): a pysbd
    Segmenter shared by threads lost 741 sentences of 40 articles in 8 threads."""
    texts = [f"Article {k}. " + " ".join(f"Mr. Smith{k} said item {i} of No. {k} is done." for i in range(40)) for k in range(8)]
    expected = [split(t) for t in texts]
    got: list = [None] * len(texts)
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # threads switch mid-paragraph, as they do in a busy server
    try:
        threads = [threading.Thread(target=lambda k=k: got.__setitem__(k, [split(texts[k]) for _ in range(5)]))
                   for k in range(len(texts))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(before)
    assert all(runs == [want] * 5 for runs, want in zip(got, expected, strict=True))
    assert [len(e) for e in expected] == [41] * 8


def test_the_space_splits_with_it():
    from vilbias.spaces.predictors import SentenceView

    assert SentenceView.options(None)["split_sentences"] is split_sentences_fast

"""Sentences split from many threads at once (:func:`vilbias.text.split_sentences`): each
thread gets its own text's sentences."""

from __future__ import annotations

import sys
import threading

from vilbias.text import split_sentences


def test_threads_splitting_at_once_get_their_own_sentences():
    """A pysbd Segmenter shared by threads lost 741 sentences of 40 articles in 8 threads (it keeps
    the text it splits on itself): the Space's requests split at once, and so may a threaded
    pipeline around the shipped model's own copy."""
    texts = [f"Article {k}. " + " ".join(f"Mr. Smith{k} said item {i} of No. {k} is done." for i in range(40)) for k in range(8)]
    expected = [split_sentences(t) for t in texts]
    got: list = [None] * len(texts)
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # threads switch mid-paragraph, as they do in a busy server
    try:
        threads = [threading.Thread(target=lambda k=k: got.__setitem__(k, [split_sentences(texts[k]) for _ in range(5)]))
                   for k in range(len(texts))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(before)
    assert all(runs == [want] * 5 for runs, want in zip(got, expected, strict=True))
    assert [len(e) for e in expected] == [41] * 8

"""Concurrent Space requests share the sentence model's passes (SharedPasses): each caller gets
its own output, a bad item fails alone, and waiting requests ride in one batch."""

from __future__ import annotations

import threading
import time

import pytest
from vilbias.spaces.predictors import SharedPasses


class Recorder:
    """A predictor whose output is its item's text upper-cased; ``bad`` fails the whole batch."""

    kind = "sentence"
    languages = ("en",)

    def __init__(self):
        self.batches: list[list[str]] = []

    def predict_batch(self, items):
        self.batches.append(list(items))
        time.sleep(0.05)  # a pass long enough for the other callers to queue behind it
        if "bad" in items:
            raise ValueError("an item without a headline or article text has no sentence to score")
        return [i.upper() for i in items]

    def predict(self, item):
        return self.predict_batch([item])[0]


def _call_all(shared, items):
    results, threads = {}, []

    def call(item):
        try:
            results[item] = shared.predict(item)
        except ValueError as e:
            results[item] = e

    for item in items:
        threads.append(threading.Thread(target=call, args=(item,)))
        threads[-1].start()
        time.sleep(0.005)
    for t in threads:
        t.join(10)
    return results


def test_concurrent_calls_share_passes_and_each_gets_its_own_output():
    recorder = Recorder()
    shared = SharedPasses(recorder, max_items=4)
    items = [f"article {i}" for i in range(9)]
    results = _call_all(shared, items)
    assert results == {i: i.upper() for i in items}
    assert len(recorder.batches) < len(items) and max(map(len, recorder.batches)) > 1
    assert all(len(b) <= 4 for b in recorder.batches)
    assert sorted(i for b in recorder.batches for i in b) == sorted(items)  # every item run once
    assert shared.languages == ("en",)  # anything else is the predictor's


def test_a_bad_item_fails_alone():
    recorder = Recorder()
    shared = SharedPasses(recorder, max_items=8)
    results = _call_all(shared, ["first", "bad", "third", "fourth"])
    assert isinstance(results["bad"], ValueError) and "no sentence to score" in str(results["bad"])
    assert {k: v for k, v in results.items() if k != "bad"} == {"first": "FIRST", "third": "THIRD", "fourth": "FOURTH"}


def test_one_caller_alone_runs_its_item_at_once():
    recorder = Recorder()
    assert SharedPasses(recorder).predict("only") == "ONLY" and recorder.batches == [["only"]]
    with pytest.raises(ValueError):
        SharedPasses(recorder).predict("bad")


def test_each_item_is_prepared_in_its_callers_thread_before_its_pass():
    """A predictor's ``prepare`` (the sentence model splits the article) runs in the request's own
    thread, so it overlaps the pass running meanwhile; then the item rides in a shared pass."""

    class Preparing(Recorder):
        def __init__(self):
            super().__init__()
            self.prepared: dict[str, str] = {}

        def prepare(self, item):
            self.prepared[item] = threading.current_thread().name

    inner = Preparing()
    results = _call_all(SharedPasses(inner), ["a", "b", "c"])
    assert results == {"a": "A", "b": "B", "c": "C"}
    assert sorted(inner.prepared) == ["a", "b", "c"] and threading.current_thread().name not in inner.prepared.values()


def test_the_sentence_predictor_splits_a_text_once():
    from vilbias.models.predictors import SentencePredictor
    from vilbias.task import Item

    calls = []

    def split(text):
        calls.append(text)
        return [s.strip() + "." for s in text.split(".") if s.strip()]

    class Model:  # prepare splits only: no pass
        pass

    predictor = SentencePredictor(Model(), split_sentences=split)
    item = Item("", "Headline", "One. Two.", -1, None)
    predictor.prepare(item)
    predictor.prepare(item)
    assert calls == ["One. Two."]

"""Languages in annotation: a model declares what it reads; on another language it abstains
(status ``other_language``, not a label), the run summary counts it, the store shows it, and the
build leaves the item out with its reason while the card names the rows' languages."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from tests.fakes.workdirs import png_bytes
from vilbias.annotate import AnnotateConfig, annotate
from vilbias.annotate.store import AnnotationStore
from vilbias.annotate.summary import format_summary
from vilbias.annotate.voting import OTHER_LANGUAGE, Vote, hierarchical_vote
from vilbias.corpus import BuildConfig, build
from vilbias.models.catalogue import ModelSpec, declared_languages, shipped_sentence_model
from vilbias.workdir import ARTICLES, Article, append_jsonl, init_workdir, store_image

ARTICLES_BY_LANGUAGE = {
    "en-1": ("Council approves new school budget", "The city council met on Tuesday evening. It approved the budget for the "
             "coming year after a long debate. Teachers welcomed the decision. The mayor said the money would go to repairs."),
    "en-2": ("Radical mob destroys downtown", "A radical mob of thugs tore through the city again, wrecking everything in "
             "sight. The disgraceful rioters showed their true colours. Weak officials did nothing about the shameful chaos."),
    "de-1": ("Lithium aus dem Schredder", "Wie lassen sich die Rohstoffe aus alten Akkus zurückgewinnen? Ein Unternehmen in "
             "Sachsen zeigt, wie das Recycling von Batterien funktioniert. Die Anlage zerlegt die Zellen mechanisch. Danach "
             "werden die Metalle chemisch getrennt."),
    "fr-1": ("Le gouvernement présente sa réforme", "Le gouvernement a présenté mercredi son projet de réforme des retraites. "
             "Les syndicats ont annoncé une journée de mobilisation. Le texte sera examiné au Parlement le mois prochain."),
}


@pytest.fixture
def workdir(tmp_path):
    """Two English, one German and one French article; the French one as a schema-1.0 line
    (no language recorded: annotate detects it)."""
    root = init_workdir(tmp_path / "work")
    for i, (uid, (headline, text)) in enumerate(ARTICLES_BY_LANGUAGE.items()):
        record = Article(uid, f"https://news.test/{uid}", "News Test", headline, text, store_image(root, png_bytes((40 * i, 90, 150)), "png"),
                         fetched_at=f"2026-01-01T00:00:0{i}+00:00", language=uid[:2]).to_dict()
        if uid == "fr-1":
            del record["language"]
        append_jsonl(root / ARTICLES, record)
    return root


def test_models_declare_the_languages_they_read(tmp_path):
    assert declared_languages(str(shipped_sentence_model())) == ("en",)
    assert declared_languages("openai:some-model@http://localhost:8000/v1") == ("any",)
    assert declared_languages("smollm2") == ("any",)
    # declared in the annotators file or the spec's YAML form, or recorded in a checkpoint's config.json
    assert declared_languages({"kind": "smollm2", "languages": ["en", "DE"]}) == ("en", "de")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "vilbias-sentence-bias", "languages": ["de"]}))
    assert declared_languages(str(model)) == ("de",)
    with pytest.raises(ValueError, match="languages: english is not an ISO 639-1 code"):
        ModelSpec.parse({"kind": "smollm2", "languages": ["english"]})


def test_an_annotator_that_does_not_read_an_item_sets_itself_aside():
    unread = [Vote("english-only", 0, None, abstention=OTHER_LANGUAGE)]
    reads = [Vote(f"any-{k}", 0, "biased") for k in range(2)]
    # nobody reads it: flagged other_language, no label
    result = hierarchical_vote(unread, ["english-only"])
    assert (result.label, result.flagged, result.reason) == (None, True, OTHER_LANGUAGE)
    # the ones that read it decide; the one that does not is no ballot against them
    result = hierarchical_vote(unread + reads, ["english-only", "any-0", "any-1"])
    assert (result.label, result.agreement) == ("biased", 1.0)
    # an ordinary abstention still counts as a ballot
    assert hierarchical_vote([Vote("a", 0, None), Vote("b", 0, "biased")], ["a", "b"]).reason == "no_majority"


def test_the_english_model_abstains_on_german_and_french_and_the_build_leaves_them_out(workdir, tmp_path):
    summary = annotate(AnnotateConfig(workdir=workdir, progress=False))
    assert summary["run"] == {"valid": 2, OTHER_LANGUAGE: 2}
    assert summary["languages"] == {"en": 2, "de": 1, "fr": 1}
    text = summary["prompts"]["text"]
    assert (text["items"], text["decided"], text["flagged"], text["other_language"]) == (4, 2, {OTHER_LANGUAGE: 2}, 2)
    assert text["no_majority_rate"] == 0.0
    lines = format_summary(summary)
    assert "languages: en 2, de 1, fr 1" in lines and "no annotator reads its language 2" in lines
    assert "text 2/4 valid, 0 format abstentions, 0 invalid, 0 refused, 0 failed, 2 abstained on the language" in lines

    # the store: the abstention is the call's status, with no label; the model was not asked
    with AnnotationStore.for_workdir(workdir) as store:
        calls = {c["item_id"]: c for c in store.iter_calls()}
    assert {uid: (c["status"], c["label"]) for uid, c in calls.items()} == {
        "en-1": ("valid", "not_biased"), "en-2": ("valid", "biased"), "de-1": (OTHER_LANGUAGE, None), "fr-1": (OTHER_LANGUAGE, None)}
    assert calls["de-1"]["problem"] == "the article is in German (de); babe-sentence-model reads English (en), so it abstains"
    assert calls["de-1"]["raw"] == calls["de-1"]["problem"]
    # a re-run asks nothing again
    assert annotate(AnnotateConfig(workdir=workdir, progress=False))["run"] == {}

    report = build(BuildConfig(workdir=workdir, output=tmp_path / "out"))
    assert report["rows"] == 2
    assert sorted((e["unique_id"], e["reason"]) for e in report["exclusions"]) == [
        ("de-1", "other_language:de"), ("fr-1", "other_language:fr")]
    assert report["exclusion_counts"] == {"other_language:de": 1, "other_language:fr": 1}
    rows = pq.ParquetDataset(sorted((tmp_path / "out" / "data").glob("*.parquet"))).read(columns=["unique_id", "language"]).to_pylist()
    assert sorted((r["unique_id"], r["language"]) for r in rows) == [("en-1", "en"), ("en-2", "en")]
    card = (tmp_path / "out" / "README.md").read_text()
    assert "\nlanguage:\n- en\n" in card
    assert "Languages (the `language` column, detected from each headline and text): en 2 rows." in card
    assert ("- **Not labelled: a language no annotator reads**: 2 items (de 1, fr 1): every annotator abstained (the call "
            "status `other_language`)") in card
    assert ("- **Flagged for review**: none: every one of the 2 annotated items in a language an annotator reads had a "
            "majority label.") in card

"""The demo with the English sentence model on another language: it says it does not read it
rather than label it (issue: a neutral German tech report came out "Biased (82%)", marking "dem";
then a short Spanish text came out "biased 83%" while German and French were refused).

Why Spanish got through: the detector spreads a short Spanish text's probability over close
varieties (es 0.75, Aragonese 0.16, Extremaduran 0.08), no guess reached the 0.9 that
``detect_language`` needs, the language was "unknown", and an unknown language was read. The
Space now asks :func:`vilbias.languages.language_fit`, which sums the probability of the model's
own languages and refuses what it cannot tell."""

from __future__ import annotations

import json
import re

import pytest
from gradio_client.exceptions import AppError

from vilbias.languages import MIN_LETTERS_TO_TELL, detect_language, language_fit
from vilbias.workdir import sample_workdir

MODEL = "offline-default"

GERMAN = (
    "Lithium aus dem Schredder",
    "Wie lassen sich die Rohstoffe aus alten Akkus zurückgewinnen? Ein Unternehmen in Sachsen zeigt, wie das Recycling "
    "von Batterien funktioniert. Die Anlage zerlegt die Zellen zuerst mechanisch. Danach werden die Metalle chemisch "
    "getrennt. Der Betreiber will die Kapazität im nächsten Jahr verdoppeln.",
)
# One news sentence pair in each language, written for these tests (about 100 letters each).
NEWS = {
    "es": "El ayuntamiento aprobó el martes el presupuesto del puerto por siete votos a dos. Las obras de dragado comenzarán en primavera.",
    "fr": "Le conseil municipal a approuvé mardi le budget du port par sept voix contre deux. Les travaux de dragage commenceront au printemps.",
    "de": "Der Stadtrat hat am Dienstag den Haushalt für den Hafen mit sieben zu zwei Stimmen gebilligt. Die Baggerarbeiten beginnen im Frühjahr.",
    "it": "Il consiglio comunale ha approvato martedì il bilancio del porto con sette voti contro due. I lavori di dragaggio inizieranno in primavera.",
    "pt": "A câmara municipal aprovou na terça-feira o orçamento do porto por sete votos contra dois. As obras de dragagem começam na primavera.",
    "nl": "De gemeenteraad heeft dinsdag de begroting voor de haven goedgekeurd met zeven tegen twee stemmen. Het baggerwerk begint in het voorjaar.",
    "sv": "Kommunfullmäktige godkände på tisdagen hamnens budget med sju röster mot två. Muddringsarbetet börjar under våren enligt planen.",
    "pl": "Rada miejska zatwierdziła we wtorek budżet portu siedmioma głosami przeciwko dwóm. Prace pogłębiarskie rozpoczną się wiosną.",
    "tr": "Belediye meclisi salı günü liman bütçesini iki oya karşı yedi oyla onayladı. Tarama çalışmaları ilkbaharda başlayacak.",
    "id": "Dewan kota menyetujui anggaran pelabuhan pada hari Selasa dengan tujuh suara berbanding dua. Pekerjaan pengerukan akan dimulai pada musim semi.",
    "ca": "L'ajuntament va aprovar dimarts el pressupost del port per set vots a dos. Les obres de dragatge començaran a la primavera.",
    "ru": "Городской совет во вторник утвердил бюджет порта семью голосами против двух. Дноуглубительные работы начнутся весной.",
    "ja": "市議会は火曜日、港の予算を賛成七、反対二で承認した。しゅんせつ工事は春に始まる予定だ。",
    "hi": "नगर परिषद ने मंगलवार को बंदरगाह के बजट को दो के मुकाबले सात मतों से मंजूरी दी। ड्रेजिंग का काम वसंत में शुरू होगा।",
    "zh": "市议会周二以七票对两票批准了港口预算。疏浚工程将于春季开始。",
}
SHORT_SPANISH = "Los radicales destruyen la economía con un plan desastroso."


@pytest.mark.parametrize("code", sorted(NEWS))
def test_no_language_but_english_is_read_and_each_is_named_when_it_can_be_told(code):
    fit = language_fit(NEWS[code], ["en"])
    assert not fit.reads and fit.probability < 1e-3
    if code == "zh":  # 28 characters: too short to tell from its close varieties, and refused as such
        assert fit.too_short and fit.language == ""
    else:
        assert fit.language == code


def test_a_short_spanish_text_is_unknown_to_the_detector_and_refused_by_the_rule():
    assert detect_language(SHORT_SPANISH) == ""  # what let it through before
    fit = language_fit(SHORT_SPANISH, ["en"])
    assert not fit.reads and fit.too_short and fit.letters < MIN_LETTERS_TO_TELL
    assert language_fit(SHORT_SPANISH, ["en", "es"]).reads is False  # still too short to tell, whatever is declared
    assert language_fit(NEWS["es"], ["en", "es"]).reads and language_fit("Hola", ["any"]).reads


def test_english_of_100_letters_is_always_read():
    """The measurement behind MIN_LETTERS_TO_TELL: every piece of 100 letters of the embedded
    sample's English articles is read (pieces start where a sentence starts)."""
    pieces = []
    with open(sample_workdir() / "articles.jsonl", encoding="utf-8") as f:
        for line in f:
            text = json.loads(line)["article_text"]
            for start in [0, *(m.end() for m in re.finditer(r"[.!?]\s+", text))][:12]:
                letters, end = 0, start
                while end < len(text) and letters < MIN_LETTERS_TO_TELL:
                    letters += text[end].isalpha()
                    end += 1
                if letters == MIN_LETTERS_TO_TELL:
                    pieces.append(text[start:end])
    assert len(pieces) > 500
    unread = [p for p in pieces if not language_fit(p, ["en"]).reads]
    assert unread == []


def test_the_english_model_says_it_does_not_read_german(space):
    _, client, _ = space
    with pytest.raises(AppError, match=r"does not read German: it reads English \(en\) only, and this text is in German \(de\): "
                                        r"it gives no label rather than a guess\. Pick a model that reads German\."):
        client.predict(None, *GERMAN, "", MODEL, api_name="/predict")


@pytest.mark.parametrize("code,name", [("es", "Spanish"), ("fr", "French")])
def test_spanish_and_french_are_refused_alike(space, code, name):
    _, client, _ = space
    with pytest.raises(AppError, match=rf"does not read {name}: it reads English \(en\) only, and this text is in {name} \({code}\)"):
        client.predict(NEWS[code], api_name="/score_article")


def test_a_text_too_short_to_tell_gets_no_label(space):
    _, client, _ = space
    for text in (SHORT_SPANISH, "Prices rose sharply on Tuesday."):
        with pytest.raises(AppError, match=r"too short to tell which language it is in \(\d+ letters\).*paste more of the article"):
            client.predict(None, "", text, "", MODEL, api_name="/predict")


def test_an_english_text_is_still_labelled(space):
    _, client, _ = space
    label, *_ = client.predict(None, "Council approves budget", "The city council met on Tuesday evening and approved the "
                               "budget for next year. Teachers welcomed the decision.", "", MODEL, api_name="/predict")
    assert label["label"] in ("biased", "not biased")

"""The demo with the English sentence model on another language: it says it does not read it
rather than label it (issue: a neutral German tech report came out "Biased (82%)", marking "dem")."""

from __future__ import annotations

import pytest
from gradio_client.exceptions import AppError

MODEL = "offline-default"

GERMAN = (
    "Lithium aus dem Schredder",
    "Wie lassen sich die Rohstoffe aus alten Akkus zurückgewinnen? Ein Unternehmen in Sachsen zeigt, wie das Recycling "
    "von Batterien funktioniert. Die Anlage zerlegt die Zellen zuerst mechanisch. Danach werden die Metalle chemisch "
    "getrennt. Der Betreiber will die Kapazität im nächsten Jahr verdoppeln.",
)


def test_the_english_model_says_it_does_not_read_german(space):
    _, client, _ = space
    with pytest.raises(AppError, match=r"does not read German: it reads English \(en\) only, and this text is in German \(de\): "
                                        r"it gives no label rather than a guess\. Pick a model that reads German\."):
        client.predict(None, *GERMAN, "", MODEL, api_name="/predict")


def test_an_english_text_is_still_labelled(space):
    _, client, _ = space
    label, *_ = client.predict(None, "Council approves budget", "The city council met on Tuesday evening and approved the "
                               "budget for next year. Teachers welcomed the decision.", "", MODEL, api_name="/predict")
    assert label["label"] in ("biased", "not biased")

"""What is pasted into the Space's text boxes, before any model: markup becomes the article's text
(by the ingest stage's extractor) or is refused, a web address alone points to the URL field, and
a text without enough letters to be prose gets one sentence saying so."""

from __future__ import annotations

import pytest
from vilbias.spaces.inputs import InputError, Limits, check_text, has_markup, is_bare_url

from tests.real_data import shared_data
from tests.spaces.conftest import NEUTRAL_ITEM


def _refusal(headline: str, text: str, limits: Limits | None = None) -> str:
    with pytest.raises(InputError) as e:
        check_text(headline, text, limits or Limits())
    message = str(e.value)
    assert "\n" not in message and message.endswith(".")
    return message


@pytest.mark.parametrize("text", [
    "😀😀🔥🔥 💯 🎉🎉🎉",
    "→ ★★★★☆ ✓✓ ☺",
    "12,4 %   +3,1   -0,5   17,9 %   2024   2025",
    "$$$ !!! ??? ... ### ***",
])
def test_text_without_enough_letters_is_not_prose(text):
    assert "is not an article's prose" in _refusal("", text)


@pytest.mark.parametrize("headline,text,box", [
    ("", "https://www.bbc.com/news/world-europe-68000000", "article text"),
    ("", "  www.theguardian.com/world/2024/jan/01/story  ", "article text"),
    ("http://example.com/a", "", "headline"),
])
def test_a_web_address_in_a_text_box_points_to_the_url_field(headline, text, box):
    assert _refusal(headline, text).startswith(f"The {box} box holds a web address, not the article: put it in the Article URL field")


def test_a_fragment_of_markup_becomes_its_text():
    headline, text, notes, cut_from = check_text("Council approves harbour budget",
                                       "<p>The city council <b>approved</b> the harbour budget on Tuesday.</p>\n"
                                       "<p>Work is scheduled to begin in the spring.</p>", Limits())
    assert text == "The city council approved the harbour budget on Tuesday.\n\nWork is scheduled to begin in the spring."
    assert headline == "Council approves harbour budget" and "<" not in text and cut_from is None
    assert len(notes) == 1 and notes[0].startswith("The article text was a web page's markup (HTML)")


def test_markup_without_an_article_is_refused_saying_so():
    message = _refusal("", "<html><head><style>body{color:red}</style></head><body><nav><a href='/'>Home</a></nav></body></html>")
    assert message.startswith("The article text is a web page's markup (HTML), and the extractor the ingest stage uses found no article")
    assert "Article URL field" in message


def test_markup_in_the_headline_is_refused():
    assert "The headline holds markup" in _refusal("<h1>Budget</h1>", NEUTRAL_ITEM[1])


def test_prose_that_mentions_angle_brackets_is_prose():
    assert not has_markup("If x < y and y > z, then x < z: the council's rule of thumb.")
    assert not is_bare_url("Read more at https://example.com tomorrow")
    assert check_text("", "If x < y and y > z, then x < z: the council's rule of thumb for budgets.", Limits())[2] == []


@pytest.mark.real_data
def test_a_real_news_page_pasted_as_html_becomes_the_text_ingest_extracts():
    from vilbias.ingest import extract_article

    html = shared_data("news", "theguardian.com.academics.html").read_bytes().decode("utf-8")
    headline, text, notes, _ = check_text("", html, Limits())
    page = extract_article(html, "https://www.theguardian.com/education/2020/jan/20/thousands-of-uk-academics-treated-as-second-class-citizens")
    assert (headline, text) == (page.headline, page.text)  # what ingest would store for the fetched page
    assert headline == "Thousands of UK academics 'treated as second-class citizens'"
    assert "<" not in text and "{" not in text and len(text) > 3000
    assert notes and f"({len(text):,} characters" in notes[0]


def test_the_text_limit_refuses_pasted_text_and_cuts_text_extracted_from_markup():
    assert "the limit is 30,000" in _refusal("", "word " * 7000)
    assert "the limit is 100" in _refusal("", "<p>" + "word " * 40 + "</p>", Limits(max_markup_chars=100))
    markup = "".join(f"<p>The harbour authority published report number {i} on Tuesday.</p>" for i in range(40))
    text = check_text("Reports", markup, Limits(max_article_chars=1000))
    assert len(text.article_text) == 1000 and text.cut_from > 2000

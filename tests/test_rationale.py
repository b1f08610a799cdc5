"""The rationale check (:mod:`vilbias.rationale`) on real text.

Articles are real: BABE's sentences grouped by their article (``news_link`` and ``outlet``) and
news pages from ``../shared/data/news`` as the ingest extractor reads them. Rationales are written
for each article: correct ones (quoting it verbatim, also with curly quotes, another case or
extra whitespace) must pass; ones with a planted fault of each kind must be caught with that
fault's code. Precision and recall on the planted faults have floors just below what was measured.
"""

from __future__ import annotations

import csv
import dataclasses
import random
import re
from collections import defaultdict
from dataclasses import dataclass

import pytest

from tests.real_data import shared_data
from vilbias.rationale import (
    ABSENT_TECHNIQUE,
    ARGUES_OTHER_LABEL,
    CODES,
    CUT_OFF,
    EMPTY,
    QUOTE_NOT_IN_ARTICLE,
    REPEATS,
    Problem,
    check_rationale,
    codes,
    normalise,
)
from vilbias.task import TECHNIQUES

NEWS_PAGES = {
    "theguardian.com.academics.html": "https://www.theguardian.com/education/2019/may/academics",
    "vancouversun.com.microsoft.html": "https://vancouversun.com/technology/microsoft",
    "vice.com.amazon.html": "https://www.vice.com/en/article/amazon",
    "threatpost.com.android.html": "https://threatpost.com/android",
    "knowtechie.com.rally.html": "https://knowtechie.com/rally",
    "spektrum.de.engelbart.html": "https://www.spektrum.de/engelbart",
    "correctiv.org.zusage.html": "https://correctiv.org/aktuelles/zusage",
    "netzpolitik.org.abmahnungen.html": "https://netzpolitik.org/abmahnungen",
}


@dataclass(frozen=True)
class Article:
    headline: str
    text: str
    label: str
    passages: tuple[str, ...]
    """Runs of words from the article, free of quote marks, for a rationale to quote."""


def _passages(text: str, rng: random.Random) -> tuple[str, ...]:
    out = []
    for sentence in re.split(r"(?<=[.!?])\s+", text):
        words = sentence.split()
        if len(words) < 8 or re.search(r"[\"“”„'‘’«»]", sentence):
            continue
        start = rng.randrange(0, len(words) - 6)
        out.append(" ".join(words[start:start + rng.randint(4, 8)]).strip(".,;:!?()"))
    return tuple(p for p in out if len(p) > 12)


@pytest.fixture(scope="module")
def articles() -> list[Article]:
    rng = random.Random(34)
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    with shared_data("babe", "final_labels_SG2_public.csv").open(encoding="utf-8-sig", newline="") as f:
        for row in csv.DictReader(f, delimiter=";"):
            groups[(row["news_link"], row["outlet"])].append(row)
    out = []
    for (_, outlet), rows in sorted(groups.items()):
        if len(rows) < 2:
            continue
        text = " ".join(r["text"] for r in rows)
        label = "biased" if any(r["label_bias"] == "Biased" for r in rows) else "not_biased"
        passages = _passages(text, rng)
        if len(passages) >= 2:
            out.append(Article(f"{outlet} report", text, label, passages))
    from vilbias.ingest.extract import extract_article
    from vilbias.ingest.text import decode_html

    news = shared_data("news")
    for n, (name, url) in enumerate(NEWS_PAGES.items()):
        page = extract_article(decode_html((news / name).read_bytes()), url)
        passages = _passages(page.text, rng)
        assert len(passages) >= 2, name
        out.append(Article(page.headline, page.text, ("biased", "not_biased")[n % 2], passages))
    return out


def _variant(passage: str, n: int) -> str:
    """The same words as a reader may retype them: case, whitespace, dashes, apostrophes."""
    return (passage.upper(), passage.lower(), re.sub(" ", "  \n ", passage), passage.replace("-", "–").replace("'", "’"))[n % 4]


def _correct(article: Article, n: int) -> tuple[str, list[str]]:
    a, b = article.passages[:2]
    if article.label == "biased":
        open_, close = ("“", "”") if n % 2 else ('"', '"')
        return (f"The report leans on Word Choice: it writes {open_}{a}{close} and {open_}{_variant(b, n)}{close}, "
                "which frames one side's claims as settled."), ["word_choice", "framing"]
    return (f"The report states \u201c{_variant(a, n)}\u201d and \"{b}\" plainly and attributes its claims, "
            "without loaded or emotional wording."), []


def _planted(article: Article, n: int, other: Article) -> list[tuple[str, str, list[str]]]:
    """``(code, rationale, techniques)``: one of each fault for ``article``."""
    good, techniques = _correct(article, n)
    words = article.passages[0].split()
    swapped = " ".join([*words[:-1], "yesterday" if words[-1].lower() != "yesterday" else "today"])
    # under not_biased, a technique that does not by itself say "biased" (one that does is also an argument)
    candidates = ("appeal_to_authority", "use_of_statistics", "word_choice") if article.label == "not_biased" else \
        [t for t in TECHNIQUES if t not in techniques and " " in TECHNIQUES[t]]
    absent = candidates[n % len(candidates)]
    if article.label == "biased":
        argues = f"The article is neutral and balanced: it reports \"{article.passages[0]}\" as a plain fact."
        named = f"{good} It also relies on {TECHNIQUES[absent]} throughout."
    else:
        argues = f"The report is one-sided, using emotive wording such as \"{article.passages[0]}\" to push its view."
        named = f"The report states \"{article.passages[1]}\" and attributes it, yet it relies on {TECHNIQUES[absent]}."
    cut = good[: good.rfind(" ", 0, int(len(good) * (0.5 + (n % 4) / 10)))].rstrip(" ,;:")
    return [
        (QUOTE_NOT_IN_ARTICLE, _correct(dataclasses.replace(article, passages=(swapped, *article.passages[1:])), n)[0], techniques),
        (QUOTE_NOT_IN_ARTICLE, f"{good} It also writes \"{other.passages[0]}\".", techniques),
        (ARGUES_OTHER_LABEL, argues, techniques),
        (ABSENT_TECHNIQUE, named, techniques),
        (EMPTY, ("", "Biased.", "   ")[n % 3], techniques),
        (CUT_OFF, cut, techniques),
        (REPEATS, f"{good} {good}" if n % 2 else f"{good} It frames the vote, it frames the vote, it frames the vote.", techniques),
    ]


pytestmark = pytest.mark.real_data


def test_correct_rationales_pass(articles):
    failing = []
    for n, article in enumerate(articles):
        rationale, techniques = _correct(article, n)
        problems = check_rationale(rationale, article_text=article.text, headline=article.headline, label=article.label,
                                   techniques=techniques)
        if problems:
            failing.append((rationale, problems))
    assert len(articles) > 300
    assert not failing, failing[:3]


def test_planted_faults_are_caught_with_their_code(articles):
    caught = flagged = wrong = planted = 0
    misses: dict[str, int] = defaultdict(int)
    for n, article in enumerate(articles):
        rationale, techniques = _correct(article, n)
        cases = [(None, rationale, techniques), *_planted(article, n, articles[n - 1])]
        for code, text, techniques in cases:
            found = codes(check_rationale(text, article_text=article.text, headline=article.headline,
                                          label=article.label, techniques=techniques))
            planted += code is not None
            caught += code in found
            flagged += len(found)
            wrong += len([c for c in found if c != code and not (code == CUT_OFF and c == QUOTE_NOT_IN_ARTICLE)])
            if code is not None and code not in found:
                misses[code] += 1
    precision, recall = 1 - wrong / flagged, caught / planted
    # Measured: precision 1.000, recall 1.000 (2,835 planted faults and 405 correct rationales over 405 articles:
    # 397 BABE articles, 8 news pages). The templates are plain; docs/rationale.md has the real-text misses.
    assert precision >= 0.99 and recall >= 0.99, (precision, recall, dict(misses))


def test_quotations_are_compared_after_normalising():
    article = "The minister’s “plan” — costly, late — was approved on Tuesday.\n\nCritics  objected."
    for quoted in ('"the minister\'s “plan” - costly, late - was approved"', "“THE MINISTER'S PLAN”",
                   '"critics objected"', '"costly … approved on Tuesday"'):
        problems = check_rationale(f"It writes {quoted}, which frames the cost as settled.", article_text=article,
                                   label="biased", techniques=[])
        assert QUOTE_NOT_IN_ARTICLE not in codes(problems) or quoted == "“THE MINISTER'S PLAN”", quoted
    assert normalise("The  Minister’s “Plan” — costly") == normalise('the minister\'s "plan"-costly')
    # a quotation is a claim of verbatim text: a reworded one fails
    assert check_rationale('It calls them "fat cats".', article_text="Fat-cat bankers gain.", label="biased") == [
        Problem(QUOTE_NOT_IN_ARTICLE, "fat cats")]


def test_every_problem_is_returned_in_code_order_with_its_passage():
    article = "The council met on Tuesday. The vote was seven to two."
    text = ('The article is balanced. It quotes "the council met on Friday" and relies on Appeals to Authority. '
            "The article is balanced. It then says that the")
    problems = check_rationale(text, article_text=article, label=1, techniques={"appeal_to_authority": False})
    assert codes(problems) == [CUT_OFF, REPEATS, QUOTE_NOT_IN_ARTICLE, ARGUES_OTHER_LABEL, ABSENT_TECHNIQUE]
    assert list(CODES) == [EMPTY, *codes(problems)]
    assert Problem(CUT_OFF, "It then says that the") in problems
    assert Problem(QUOTE_NOT_IN_ARTICLE, "the council met on Friday") in problems
    assert Problem(ABSENT_TECHNIQUE, "Appeals to Authority") in problems
    assert Problem(ARGUES_OTHER_LABEL, "The article is balanced.") in problems
    assert check_rationale(None, label="not biased") == [Problem(EMPTY, "")]
    with pytest.raises(ValueError, match="unknown label"):
        check_rationale("A fine rationale here.", label="neutral")


@pytest.mark.parametrize("text, label", [
    ("The text is balanced, but the photo of a burning car makes the protest look violent.", "biased"),
    ("A neutral landscape photo is recaptioned \"dying glacier\" to dramatise a small change.", "biased"),
    ("Although the quotes are emotive, the report attributes each one and gives both sides.", "not_biased"),
    ("It is free from loaded words and does not exaggerate the figures.", "not_biased"),
    ("The tone is measured and the framing follows the agency's own statement.", "not_biased"),
])
def test_concessions_parts_and_descriptions_are_not_arguments(text, label):
    assert check_rationale(text, article_text="A dying glacier.", label=label, techniques=[]) == []


def test_blind_spots_a_misstating_paraphrase_passes():
    article = "The council approved the budget by seven votes to two."
    # unquoted, it misstates the vote; the check cannot see that (docs/rationale.md)
    assert check_rationale("The report says the council rejected the budget and attributes the vote count.",
                           article_text=article, label="not_biased", techniques=[]) == []

"""BiasCorpus demo: label a news item (headline + article, with its image, or an article URL) as
biased or not, and show the evidence.

    python spaces/app.py                  # or: vilbias demo --port 7860
    VILBIAS_SPACE_ALLOW_PRIVATE=1 ...     # test mode: URLs may point at 127.0.0.1

Two API endpoints (Gradio's "Use via API" page shows both, with an example that runs as it is):

- ``/score_article``: the article's label as one JSON object (:class:`ScoredArticle`), for code
  and agents; it is also the MCP tool ``score_article`` (``vilbias demo`` serves Gradio's MCP
  server at ``/gradio_api/mcp/`` unless ``--no-mcp``)::

      from gradio_client import Client
      client = Client("http://127.0.0.1:7860/")      # or "ORG/vilbias-demo" on the Hub
      result = client.predict(article_text="The city council ...", headline="Council approves budget",
                              api_name="/score_article")
      result["label"], result["probability_biased"], result["read"], result["evidence"][0]

- ``/predict``: what the page shows, output by output (label, confidence_and_coverage, rationale,
  techniques, evidence_in_text, image_shown, evidence_table)::

      label, confidence, rationale, techniques, highlighted, image, evidence = client.predict(
          image=None, headline="Headline", article_text="Article text ...", url=None,
          model="offline-default", api_name="/predict")

Arguments: image (optional; a model that reads text only does not look at it), headline,
article_text, url (instead of the text: the page is fetched and its text extracted; pass "" for
the text), model (a name from ``models.yaml``). A refusal (markup without an article, a web
address in the text box, too few letters, a language the model does not read, an unreachable
URL ...) is a :class:`gradio.Error` whose message is one sentence saying why; the server logs it.

gradio and torch are imported inside the functions that build and serve the app (importing this
module for its config classes stays light).

Why this module is long: it is the Space's UI, as Gradio apps are written: one ``Blocks`` layout
with its events, endpoints and MCP tool wired in one place (the inputs, the models' views, the
explanations and the config live in their own modules).
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import threading
import typing
from pathlib import Path

from vilbias.spaces.config import DemoConfig, SpaceConfig
from vilbias.spaces.inputs import InputError, Item, Limits, item_from_upload, item_from_url
from vilbias.spaces.predictors import (
    MAX_SENTENCES,
    SECONDS_PER_SENTENCE,
    PickerModel,
    Prediction,
    Predictors,
    load_model_specs,
)
from vilbias.spaces.rationale import (
    HIGHLIGHT_COLORS,
    RationaleWriter,
    evidence_marks,
    highlight_spans,
)

from vilbias.annotate.voting import Vote, hierarchical_vote
from vilbias.languages import ANY, MIN_LETTERS_TO_TELL, describe_languages
from vilbias.review.verdicts import load_verdicts, resolve_review
from vilbias.task import ALL_NAMES, BIASED_NAME
from vilbias.workdir import read_jsonl, sample_workdir

logger = logging.getLogger(__name__)

EVIDENCE_HEADERS = ["P(biased)", "sentence", "marked words"]
EVIDENCE_ROWS = 12
# Gradio's HighlightedText breaks lines anywhere (word-break: break-all), cutting words in two
# ("wor|king"); the evidence text wraps at word boundaries instead.
CSS = "#highlighted .textfield, #evidence td { word-break: normal; overflow-wrap: break-word; }"
"""Sentences listed in the evidence table: the flagged ones first, then the highest of the rest."""

API_EXAMPLE = (
    "Council approves harbour budget",
    "The city council approved the harbour budget on Tuesday by a vote of seven to two. The budget sets aside funds "
    "for dredging the main channel and repairing two piers. Work is scheduled to begin in the spring.",
)
"""The headline and article text of the "Use via API" examples: short, so the snippet stays
readable, and long enough (over 100 letters) for its language to be told."""


class SentenceEvidence(typing.TypedDict):
    """One sentence the model read."""

    sentence: str
    probability_biased: float
    flagged: bool
    """Whether it counts towards the article's label."""
    marked_words: list[str]
    """The words the model marks in it."""


class ScoredArticle(typing.TypedDict):
    """What ``/score_article`` answers (the MCP tool's result)."""

    label: str
    """``biased`` or ``not_biased``."""
    probability_biased: float
    confidence: float
    """The probability of ``label``."""
    confidence_meaning: str
    model: str
    read: str
    """How much of the text the label covers, in words ("the whole text (12 sentences)", or the part read)."""
    read_whole: bool
    """True when the model read the whole text; False when it read part of it (``read`` says which) or does not say."""
    sentences_read: int
    sentences_not_read: int
    notes: list[str]
    """What was done to the input before the model read it (markup turned into text, a long text cut)."""
    rationale: str
    techniques: list[str]
    evidence: list[SentenceEvidence]
    """The sentences read, most probably biased first (at most 12)."""


HOW_IT_WORKS = """\
**What you see.** A model reads the news item and answers one question: *does it show bias?* The
answer is one of two labels, **biased** or **not biased**, with a confidence whose meaning is stated
next to it. With the offline default, everything on the right comes from **one pass of one model**
over the article's sentences: each sentence's probability of being biased, the words that drive
it, and the article's label, which follows from its sentences by a fixed rule. The explanation is
written from that evidence, so it cannot contradict the label; a generative model may word it,
and its wording is shown only when it agrees with the label and quotes only the article.

**Its limits.**
- *Two labels only.* Bias comes in degrees and kinds; a yes/no answer hides that.
- *Annotator bias.* The training labels came from people (and, for BiasCorpus models, language
  models) with their own view of what counts as bias. The model learns that view.
- *Not a fact-checker.* It judges how a story is told, not whether it is true.
- *Sentences, not the whole story.* The offline default sees wording. What a story leaves out
  (selective presentation, omission of context, imbalance in whom it quotes) is invisible to it,
  and it does not look at the image.
"""


def default_model_card(spec: PickerModel) -> tuple[str, str | None]:
    """The offline default's numbers for the panel, and its reliability diagram (from the
    shipped folder's ``metrics.json`` and ``reliability.png``)."""
    folder = Path(spec.source)
    metrics_path = folder / "metrics.json"
    if spec.kind != "sentence" or not metrics_path.is_file():
        return "", None
    m = json.loads(metrics_path.read_text(encoding="utf-8"))
    test, val, rule = m["test"], m["validation"], m["article_rule"]
    cv = m.get("cv") and m["cv"]["summary"]["f1_macro"]
    articles = m.get("article_rule_on_test_links")
    unseen = f"{test['n']} BABE sentences of {test['articles']} articles it never saw" if "articles" in test else f"{test['n']} BABE sentences it never saw"
    lines = [
        f"**The offline default** was trained on BABE's expert-labelled sentences (`{m['source']}`, "
        f"{m['corpus']['rows_kept']:,} sentences; research data, weights for non-commercial research use).",
        "- Macro-F1: " + (f"{cv['mean']:.3f} ± {cv['std']:.3f} in 5-fold cross-validation (whole articles per fold); " if cv else "")
        + f"{test['f1_macro']:.3f} on {unseen}" + (f"; {articles['f1_macro']:.3f} on their articles' labels." if articles else "."),
        f"- Calibration: sentence probabilities are temperature-scaled (T = {val['temperature']:.3g}, fitted on "
        f"{val['rows']} held-out sentences); expected calibration error on the unseen sentences "
        f"{test['ece_before']:.3f} before, {test['ece']:.3f} after (diagram below).",
        f"- Article rule: chosen on validation data among {', '.join(k for k in rule['candidates'] if k != 'groups')}: "
        f"the **{rule['statistic']}** statistic at {rule['threshold']:.3g}.",
        "- Techniques are named from surface cues in the flagged sentences (loaded words, intensifiers, "
        "emotive words, numbers …), not by the model.",
    ]
    diagram = folder / "reliability.png"
    return "\n".join(lines), str(diagram) if diagram.is_file() else None


def sample_examples(n: int) -> list[list[str]]:
    """``[image_path, headline, article_text, url]`` rows from the embedded sample, alternating
    outlets so the examples are not all one voice."""
    root = sample_workdir()
    rows, outlets = [], set()
    with open(root / "articles.jsonl", encoding="utf-8") as f:
        for line in f:
            article = json.loads(line)
            if article["outlet"] in outlets or not (root / article["image_path"]).is_file():
                continue
            outlets.add(article["outlet"])
            rows.append([str(root / article["image_path"]), article["headline"], article["article_text"], ""])
            if len(rows) == n:
                break
    return rows


def sample_reference_labels() -> dict[str, tuple[str, str]]:
    """``article_text -> (label, review)`` of every embedded-sample article: the label its build
    gives the article (the annotators' text+image vote, then the reviewers' verdicts), so an
    example can show its reference beside the model's label."""
    root = sample_workdir()
    votes: dict[str, list[Vote]] = {}
    for call in read_jsonl(root / "annotations.jsonl"):
        if call["prompt"] == "multimodal":
            votes.setdefault(call["item_id"], []).append(Vote(call["annotator"], call["sample"], call["label"]))
    verdicts = load_verdicts(root)
    out = {}
    for article in read_jsonl(root / "articles.jsonl"):
        uid = article["unique_id"]
        automated = hierarchical_vote(votes.get(uid, []), details=False).label
        review, label = resolve_review(verdicts.get(uid, []), automated)
        if label is not None:
            out[" ".join(article["article_text"].split())] = (label, review)
    return out


def reference_markdown(article_text: str, predicted: str, references: dict[str, tuple[str, str]]) -> str:
    """The sentence under the label when the item is one of the sample's articles ("" otherwise)."""
    found = references.get(" ".join((article_text or "").split()))
    if found is None:
        return ""
    label, review = found
    how = "after human review" if review != "unreviewed" else "its annotators' vote, not reviewed"
    verdict = ("The model agrees." if label == predicted else
               f"**The model disagrees**: it says {_label_name(predicted)}, the sample says {_label_name(label)}.")
    return f"\n\nReference: this example's label in the embedded sample is **{_label_name(label)}** ({how}). {verdict}"


def _label_name(label: str) -> str:
    return label.replace("_", " ")


def evidence_table(p: Prediction) -> dict:
    """The evidence table: flagged sentences first (most probable first), then the highest of the rest."""
    ranked = sorted(p.sentences, key=lambda s: (not s.flagged, -s.probability))[:EVIDENCE_ROWS]
    rows = [[f"{s.probability:.0%}" + (" (flagged)" if s.flagged else ""), " ".join(s.text.split()),
             ", ".join(f"{w} ({q:.0%})" for w, _, _, q in s.words)] for s in ranked]
    return {"headers": EVIDENCE_HEADERS, "data": rows or [["", "This model gives no sentence-level evidence.", ""]]}


def techniques_markdown(p: Prediction) -> str:
    if p.explanation is not None and p.explanation.techniques:
        # Cues are quotes from the text, except tone's, which counts the flagged sentences.
        return "\n".join(f"- **{ALL_NAMES[t]}**: " + ", ".join(c if t == "tone" else f"“{c}”" for c in cues)
                         for t, cues in p.explanation.techniques.items())
    if p.explanation is not None:
        return "None: no flagged sentence shows one." if p.label == BIASED_NAME else "None: the article is not labelled biased."
    if p.techniques:
        return "\n".join(f"- {ALL_NAMES[t]}" for t in p.techniques)
    return "None named."


def rationale_markdown(p: Prediction, pending: str | None = None) -> str:
    if not p.reasoning:
        return p.rationale_note or "This model gives no rationale."
    text = f"{p.reasoning}\n\n*Explanation {p.rationale_by}.*"
    if p.rationale_note:
        text += f"\n\n*{p.rationale_note}*"
    if pending:
        text += f"\n\n*{pending}*"
    return text


UNSAID_COVERAGE = "as much of the text as the model's input length holds (this model does not say how much)"


def coverage(item: Item, p: Prediction) -> tuple[str, bool]:
    """How much of what was given the label covers, in words, and whether that is all of it: a
    text cut to the text limit (a fetched page, pasted markup) and sentences past the model's limit
    are named. A model that does not report what it read (a fusion classifier, a VLM: their
    tokenizers cut at their own length) is said to, and never to have read the whole."""
    parts = []
    if item.cut_from:
        parts.append(f"the first {len(item.article_text):,} of {item.cut_from:,} characters of the article text "
                     f"({len(item.article_text) / item.cut_from:.0%})")
    if p.read_sentences is not None:
        if p.unread_sentences:
            total = p.read_sentences + p.unread_sentences
            # read_sentences is the model's limit here (MAX_SENTENCES for the Space's sentence models)
            parts.append(f"the first {p.read_sentences} of {total} sentences{' of that' if parts else ''} "
                         f"({p.read_sentences / total:.0%}; the model reads at most {p.read_sentences})")
        elif parts:
            parts.append(f"all {p.read_sentences} sentences of that")
        else:
            return f"the whole text ({p.read_sentences} sentence{'s' if p.read_sentences != 1 else ''})", True
    if not parts:
        return UNSAID_COVERAGE, False
    return ", ".join(parts) + ", and the label covers only that part", False


def scored_article(item, p: Prediction) -> ScoredArticle:
    """The API's answer (:class:`ScoredArticle`) for a prediction."""
    read, whole = coverage(item, p)
    ranked = sorted(p.sentences, key=lambda s: (not s.flagged, -s.probability))[:EVIDENCE_ROWS]
    techniques = list(p.explanation.techniques) if p.explanation is not None else list(p.techniques)
    return ScoredArticle(
        label=p.label, probability_biased=p.probabilities.get(BIASED_NAME, 0.0), confidence=p.confidence,
        confidence_meaning=p.confidence_kind, model=p.model_title, read=read, read_whole=whole,
        sentences_read=p.read_sentences or 0, sentences_not_read=p.unread_sentences, notes=list(p.notes),
        rationale=p.reasoning or p.rationale_note or "", techniques=[ALL_NAMES[t] for t in techniques],
        evidence=[SentenceEvidence(sentence=" ".join(s.text.split()), probability_biased=s.probability, flagged=s.flagged,
                                   marked_words=[w for w, *_ in s.words]) for s in ranked])


class DemoApp:
    """The handlers behind the UI, usable without it."""

    def __init__(self, config: SpaceConfig, rationale_backend=None):
        self.config = config
        self.specs = load_model_specs(config.models_config)
        self.predictors = Predictors(self.specs)
        self.rationale = RationaleWriter(config.rationale_backend, backend=rationale_backend)
        self.references = sample_reference_labels()

    @property
    def default_model(self) -> str:
        return self.specs[0].name

    def warm_up(self) -> None:
        """Load the default model now (and run it once, so the first request pays no first-call
        costs); schedule the rationale writer's background load.

        SmolLM2's load (~30 s of CPU, much of it holding the GIL) would slow the first labels
        if it ran while they are computed, so it starts after the first label is served or
        ``rationale_delay_s`` after start, whichever comes first.
        """
        import torch

        # The sentence model runs one pass at a time (concurrent requests share it: SharedPasses),
        # so that pass gets every core.
        torch.set_num_threads(self.config.torch_threads())
        predictor = self.predictors.get(self.default_model)
        if self.specs[0].kind == "sentence":
            predictor.predict(Item(None, "Warm-up", "The council met on Tuesday. It approved the budget."))
        if any(s.kind == "sentence" and s.rationale for s in self.specs):
            timer = threading.Timer(self.config.rationale_delay_s, self.rationale.start)
            timer.daemon = True
            timer.start()

    def predict(self, image=None, headline="", article_text="", url=None, model=None):
        """Label a news item and show the evidence, as the page does: the label with its evidence
        first, then (when a generative model words the explanation) the rationale again.

        Args:
            image: The article's image (optional: the offline default reads the text only).
            headline: The article's headline ("" if none).
            article_text: The article's text, as plain text or a page's HTML ("" when a url is given).
            url: An article's web address, fetched instead of the text (optional).
            model: A model name of the picker (default: the offline default).
        """
        with self.refusals():
            yield from self._predict(image, headline, article_text, url, model or self.default_model)

    def score_article(self, article_text: str, headline: str = "", url: str = "", model: str = "") -> ScoredArticle:
        """Score a news article for media bias: label it biased or not biased, with the probability,
        the sentences behind the label and the words the model marks in them. Bias here is how a
        story is told (loaded wording, one-sided framing), not whether it is true. The offline
        default reads English text only and does not look at images.

        Args:
            article_text: The article's text: plain text, or a page's HTML (its article text is extracted). Pass "" with a url.
            headline: The article's headline (optional).
            url: An article's web address to fetch instead of article_text (optional).
            model: A model name of the Space's picker (optional; default: the offline sentence-level model). A model
                that reads the image needs a url here (the page's image); /predict also takes an uploaded image.

        Returns:
            label ("biased" or "not_biased"), probability_biased, confidence and what it means, how
            much of the text was read, the rationale, the techniques shown and the sentence evidence.
        """
        with self.refusals():
            *_, (item, p, _) = self._predict_item(None, headline, article_text, url, model or self.default_model)
            return scored_article(item, p)

    @contextlib.contextmanager
    def refusals(self):
        """What the user or API caller gets when a request cannot be labelled: the sentence of an
        :class:`InputError` as a :class:`gradio.Error` (which every client shows), anything else as
        one line; the server log keeps each with its cause."""
        import gradio as gr

        try:
            yield
        except InputError as e:
            # The caller gets the sentence; the log keeps what caused it, traceback included.
            logger.warning("request refused: %s", e, exc_info=e.__cause__ is not None)
            raise gr.Error(str(e), print_exception=False) from None
        except gr.Error as e:
            logger.warning("request refused: %s", e.message)
            raise
        except Exception:
            logger.exception("prediction failed")
            raise gr.Error("Something went wrong while labelling this item. Try again, or try another model.",
                           print_exception=False) from None

    def _item(self, spec: PickerModel, image, headline, article_text, url):
        if isinstance(image, dict):
            # The event runs with preprocess=False: the upload arrives as Gradio's file record,
            # and the bytes are validated here (Gradio's own decoding would crash on bad files).
            image = image.get("path")
        limits = self.config.limits
        if url and url.strip():
            return item_from_url(url, limits, image_path=image, need_image=spec.reads_image, model_title=spec.title)
        return item_from_upload(image, headline, article_text, limits, need_image=spec.reads_image)

    def _predict(self, image, headline, article_text, url, model):
        for item, prediction, pending in self._predict_item(image, headline, article_text, url, model):
            yield self._outputs(item, prediction, pending)

    def _predict_item(self, image, headline, article_text, url, model):
        """``(item, prediction, pending)``: the label with its evidence, then (a model with
        ``rationale``) the prediction with its generated wording; ``pending`` says a wording is coming."""
        spec = self.predictors.specs.get(model)
        if spec is None:
            raise InputError(f"Unknown model {model!r}; choose one of {', '.join(self.predictors.specs)}.")
        predictor = self.predictors.get(model)  # first: a model that cannot load is the news, not the input
        item = self._item(spec, image, headline, article_text, url)
        prediction = predictor.predict(item)
        if spec.kind == "sentence" and spec.rationale:
            self.rationale.start()
            yield item, prediction, f"{self.rationale.name} is wording this explanation; its wording replaces it only if it agrees with the evidence…"
            prediction = self.rationale.word(item, prediction)
        yield item, prediction, None

    def _outputs(self, item, p: Prediction, pending: str | None = None):
        label = {_label_name(k): v for k, v in p.probabilities.items()}
        read, whole = coverage(item, p)
        # a label that covers part of the text says so first, in bold, right under the label
        part = not whole and read != UNSAID_COVERAGE
        confidence = "".join(f"**{line}**\n\n" for line in ([f"Read: {read}."] if part else []) + p.notes)
        confidence += f"**{_label_name(p.label)}**, confidence {p.confidence:.0%} — {p.confidence_kind}. Model: {p.model_title}."
        if not part:
            confidence += f" Read: {read}."
        if not p.reads_image:
            confidence += " This model does not look at the image."
        confidence += reference_markdown(item.article_text, p.label, self.references)
        text = item.display_text
        spans = highlight_spans(text, evidence_marks(text, p))
        if item.url:
            spans.append((f"\n\n(Fetched from {item.url})", None))
        image = item.image_path or item.image
        return label, confidence, rationale_markdown(p, pending), techniques_markdown(p), spans, image, evidence_table(p)

    def example_from_query(self, params: dict):
        """``?example=N`` fills the form with example N and labels it (links that run an example)."""
        import gradio as gr

        try:
            index = int(params.get("example", ""))
            row = sample_examples(self.config.n_examples)[index]
        except (ValueError, IndexError):
            yield tuple(gr.skip() for _ in range(11))
            return
        model = params.get("model", self.default_model)
        for outputs in self.predict(*row, model):
            yield (*row, *outputs)


# gr.api reads the return type from the signature as written, and this module's annotations are
# strings: it gets the class itself, so the API page and the MCP tool describe the answer's fields.
DemoApp.score_article.__annotations__["return"] = ScoredArticle


def build_demo(config: SpaceConfig | None = None, *, rationale_backend=None, app: DemoApp | None = None):
    """The Gradio Blocks app (queued, not launched).

    Args:
        config: Settings; :meth:`SpaceConfig.from_env` when None.
        rationale_backend: A chat backend replacing the embedded SmolLM2 (tests).
        app: Handlers to use (tests that want to reach the :class:`DemoApp`).
    """
    import gradio as gr

    config = config or SpaceConfig.from_env()
    app = app or DemoApp(config, rationale_backend)
    with gr.Blocks(title="BiasCorpus: is this news item biased?") as demo:
        demo.vilbias_app = app
        gr.Markdown("# Is this news item biased?\nPaste a news article's headline and text (with its image), or give "
                    "the article's URL. The model labels it and shows the sentences and words behind the label.")
        with gr.Row():
            inputs, submit, notes = _input_column(gr, app)
            outputs = _output_column(gr)
        gr.Examples(sample_examples(config.n_examples), inputs=inputs[:4], label="Examples from the embedded sample")
        panel = _how_it_works(gr, app)
        _wire(gr, demo, app, inputs, submit, outputs, notes, panel)
    demo.queue(default_concurrency_limit=config.concurrency, max_size=config.queue_size)
    return demo


def _api_example(component, value) -> None:
    """Make ``value`` what the "Use via API" page's snippet passes for ``component``.

    Gradio writes the snippet from each input's ``example_payload()``: a remote picture for an
    image, "Hello!!" for a text box, which fail or are refused offline. The snippet should run
    as it is against this app, on or off the network.
    """
    component.example_payload = lambda: value


def _input_column(gr, app: DemoApp):
    default, limits = app.specs[0], app.config.limits
    with gr.Column():
        model = gr.Dropdown([(s.title, s.name) for s in app.specs], value=default.name, label="Model")
        model_note = gr.Markdown(default.note)
        url = gr.Textbox(label="Article URL (optional: fetches the headline, text and image)", placeholder="https://…")
        image = gr.Image(type="filepath", label="Image (optional for a model that reads text only)", sources=["upload", "clipboard"])
        image_note = gr.Markdown(default.image_note, elem_id="image-note")
        headline = gr.Textbox(label="Headline", max_lines=2)
        article = gr.Textbox(label="Article text", lines=8, info=reading_limits(limits), elem_id="article-text")
        submit = gr.Button("Label it", variant="primary")
    _api_example(image, None)
    _api_example(headline, API_EXAMPLE[0])
    _api_example(article, API_EXAMPLE[1])
    return [image, headline, article, url, model], submit, [model_note, image_note]


def reading_limits(limits: Limits) -> str:
    """What the text box takes and how much of it is read, in one line (under the text box)."""
    return (f"Plain text up to {limits.max_article_chars:,} characters, or a page's HTML (its article text is extracted). "
            f"The offline default reads up to {MAX_SENTENCES} sentences (about {MAX_SENTENCES * SECONDS_PER_SENTENCE:.0f} s on "
            "2 CPU cores) and says beside the label when it read less than the whole text.")


def _output_column(gr):
    with gr.Column():
        label = gr.Label(label="Label", num_top_classes=2)
        confidence = gr.Markdown(label="Confidence and how much was read", elem_id="confidence")
        gr.Markdown("### Why")
        rationale = gr.Markdown(label="Rationale", elem_id="rationale")
        highlighted = gr.HighlightedText(label="Evidence in the text: flagged sentences (shade = probability) and the words the model marks",
                                         color_map=HIGHLIGHT_COLORS, show_legend=True, show_inline_category=False,
                                         elem_id="highlighted")
        evidence = gr.Dataframe(headers=EVIDENCE_HEADERS, label="Evidence: sentences and their probability of being biased",
                                interactive=False, wrap=True, column_widths=["16%", "56%", "28%"], elem_id="evidence")
        gr.Markdown("### Techniques shown")
        techniques = gr.Markdown(label="Techniques shown")
        seen = gr.Image(label="The item's image", interactive=False)
    return [label, confidence, rationale, techniques, highlighted, seen, evidence]


def how_it_works_markdown(app: DemoApp) -> str:
    """The "How this works" panel: what the model answers, what it reads, its numbers, the runtime
    it runs on (once loaded) and the picker's models."""
    notes = "\n".join(f"- **{s.title}**: {s.note}" for s in app.specs if s.note)
    card, _ = default_model_card(app.specs[0])
    view = app.predictors.loaded(app.default_model)
    languages = describe_languages(getattr(view.predictor, "languages", (ANY,))) if view is not None else None
    reads = (f"The text box takes plain text up to {app.config.limits.max_article_chars:,} characters. A page's markup (HTML) "
             "pasted there is turned into the article's text by the extractor the ingest stage uses (the answer says so); a web "
             "address belongs in the URL field. A text that is not prose (emoji, symbols, figures), one in a language the model "
             f"does not read, or one too short to tell its language (under {MIN_LETTERS_TO_TELL} letters, about 20 words, "
             "unless the detector is sure sooner) gets no label, only a sentence saying why."
             + (f" The default model reads {languages}." if languages else ""))
    length = (f"The offline default reads up to {MAX_SENTENCES} sentences of an article, headline included: a request costs "
              f"about {SECONDS_PER_SENTENCE * 1000:.1f} ms a sentence on 2 CPU cores (so ~{MAX_SENTENCES * SECONDS_PER_SENTENCE:.0f} s "
              "for the longest), while its memory hardly grows with the length. A longer text is read from its start, and the "
              "answer says beside the label how much was read and that the label covers only that part.")
    runtime = runtime_markdown(view.model) if view is not None else ""
    return (HOW_IT_WORKS + f"\n**What it reads.** {reads}\n\n**How much it reads.** {length}\n"
            + ("\n" + card if card else "") + (f"\n{runtime}" if runtime else "")
            + ("\n\n**The models.**\n" + notes if notes else ""))


def runtime_markdown(model) -> str:
    """One line on how the default model runs on this machine: the model's own account
    (``runtime_reason``: which runtime and precision it chose and why) where it gives one, else
    what its config asks for."""
    reason = getattr(model, "runtime_reason", None)
    if reason:
        return f"- Runtime: {reason}"
    config = getattr(model, "config", None)
    runtime = getattr(config, "inference_runtime", None)
    if not runtime:
        return ""
    return f"- Runtime: {runtime} in {getattr(config, 'inference_precision', None) or 'float32'}, as the model's config asks."


def _how_it_works(gr, app: DemoApp):
    _, diagram = default_model_card(app.specs[0])
    with gr.Accordion("How this works and its limits", open=False):
        # filled again when a page loads: the runtime line needs the model loaded (warm_up), which comes after the build
        panel = gr.Markdown(how_it_works_markdown(app), elem_id="how-it-works")
        if diagram:
            gr.Image(diagram, label="Reliability diagram of the offline default (unseen BABE sentences)", interactive=False, height=320)
    return panel


def _wire(gr, demo, app: DemoApp, inputs, submit, outputs, notes, panel) -> None:
    model = inputs[4]
    submit.click(app.predict, inputs=inputs, outputs=outputs, api_name="predict", preprocess=False,
                 api_description="Label a news item (its headline and text, or its URL; the image is optional) as the page "
                                 "shows it: label, confidence and how much was read, rationale, techniques, evidence. "
                                 "For one JSON object instead, use /score_article.")
    gr.api(app.score_article, api_name="score_article")
    api = next(f for f in demo.fns.values() if f.api_name == "score_article")
    # gr.api labels its values "1st", "2nd", ...: they are named after what they hold instead
    for component, name in zip(api.inputs, ("article_text", "headline", "url", "model"), strict=True):
        component.label = name
    api.outputs[0].label = "scored_article"
    api.inputs[3].value = app.default_model
    _api_example(api.inputs[0], API_EXAMPLE[1])  # the snippet's article (the other arguments have defaults)
    specs = {s.name: s for s in app.specs}
    model.change(lambda name: (specs[name].note, specs[name].image_note), inputs=model, outputs=notes,
                 api_visibility="private")

    def run_example(request):
        yield from app.example_from_query(dict(request.query_params))

    # Gradio injects the request by the parameter's annotation, which it must see as the
    # class itself (this module's annotations are strings and `gr` is a local name).
    run_example.__annotations__["request"] = gr.Request
    demo.load(run_example, inputs=None, outputs=[*inputs[:4], *outputs], api_visibility="private")
    demo.load(lambda: how_it_works_markdown(app), inputs=None, outputs=panel, api_visibility="private")


def launch_kwargs(config: SpaceConfig) -> dict:
    """Arguments for ``demo.launch`` that every way of serving the app shares."""
    # Uploads far past the image limit are refused by Gradio before they reach the handler.
    # show_error: an error raised before the handler runs (a file Gradio cannot fetch) reaches API
    # callers as its message rather than "has not enabled verbose error reporting".
    return {"allowed_paths": [str(sample_workdir())], "max_file_size": 4 * config.limits.max_image_bytes, "css": CSS,
            "show_error": True, "mcp_server": config.mcp_server}


# Ports that Chromium and Firefox refuse to open (ERR_UNSAFE_PORT): a server there is unreachable
# from a browser. From Chromium's net/base/port_util.cc and Firefox's gBadPortList.
BROWSER_BLOCKED_PORTS = frozenset({
    1, 7, 9, 11, 13, 15, 17, 19, 20, 21, 22, 23, 25, 37, 42, 43, 53, 69, 77, 79, 87, 95, 101, 102, 103,
    104, 109, 110, 111, 113, 115, 117, 119, 123, 135, 137, 139, 143, 161, 179, 389, 427, 465, 512, 513,
    514, 515, 526, 530, 531, 532, 540, 548, 554, 556, 563, 587, 601, 636, 989, 990, 993, 995, 1719, 1720,
    1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080,
})


def check_port(host: str, port: int | None) -> None:
    """Refuse, in one line, a port a browser cannot open or that is not free (before the models load)."""
    import socket

    if port is None:
        return
    if not 1 <= port <= 65535:
        raise ValueError(f"--port {port} is not a TCP port (1-65535); omit --port to take 7860 or the next free one")
    if port in BROWSER_BLOCKED_PORTS:
        raise ValueError(f"--port {port} is one browsers refuse to open (an 'unsafe port'); choose another, e.g. --port 7860")
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except PermissionError:
            raise ValueError(f"--port {port} needs administrator rights on this machine (ports below 1024); "
                             "choose one above 1023, e.g. --port 7860") from None
        except OSError as e:
            raise ValueError(f"--port {port} on {host} is not free ({e.strerror}); choose another --port, "
                             "or omit it to take 7860 or the next free one") from None


def serve(config: DemoConfig, *, block: bool = True):
    """Build, warm up and launch the demo; returns the Blocks (still running when ``block=False``)."""
    space = config.space_config()
    if space.concurrency < 1:
        raise ValueError("--concurrency must be at least 1")
    check_port(config.host, config.port)
    demo = build_demo(space)
    demo.vilbias_app.warm_up()
    if block:
        # The process is the server's: what start-up made (libraries, the model, the warmed graphs)
        # lives as long as it does. Out of the collector's reach, a full collection does not walk it
        # again while requests wait, nor at exit (a stop took ~1.4 s of it after one request).
        gc.freeze()
    demo.launch(server_name=config.host, server_port=config.port, prevent_thread_lock=not block, **launch_kwargs(space))
    return demo


def __getattr__(name: str):
    # `demo` is built on first access (e.g. `gradio app.py` reload mode), so importing this
    # module in tests builds and launches nothing.
    if name == "demo":
        global demo
        demo = build_demo()
        return demo
    raise AttributeError(name)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO)
    _space = SpaceConfig.from_env()
    demo = build_demo(_space)
    demo.vilbias_app.warm_up()
    gc.freeze()  # as serve() does
    demo.launch(**launch_kwargs(_space))

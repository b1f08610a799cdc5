"""BiasCorpus demo: label a news item (headline + article, with its image, or an article URL) as
biased or not, and show the evidence.

    python spaces/app.py                  # or: vilbias demo --port 7860
    VILBIAS_SPACE_ALLOW_PRIVATE=1 ...     # test mode: URLs may point at 127.0.0.1

The API endpoint is ``predict``::

    from gradio_client import Client, handle_file
    client = Client("http://127.0.0.1:7860/")      # or "ORG/vilbias-demo" on the Hub
    label, confidence, rationale, techniques, highlighted, image, evidence = client.predict(
        handle_file("photo.jpg"), "Headline", "Article text ...", "", "offline-default",
        api_name="/predict")

Arguments: image (optional for a model that reads text only), headline, article_text, url
(instead of the three before; an uploaded image then replaces the page's), model (a name from
``models.yaml``). ``evidence`` is a table: each sentence read, its probability of being biased,
the words the model marks in it.

gradio and torch are imported inside the functions that build and serve the app (importing this
module for its config classes stays light).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from vilbias.spaces.config import DemoConfig
from vilbias.spaces.inputs import InputError, Item, Limits, item_from_upload, item_from_url
from vilbias.spaces.predictors import (
    MODELS_YAML,
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
from vilbias.review.verdicts import load_verdicts, resolve_review
from vilbias.task import ALL_NAMES, BIASED_NAME
from vilbias.workdir import read_jsonl, sample_workdir

logger = logging.getLogger(__name__)

ALLOW_PRIVATE_ENV = "VILBIAS_SPACE_ALLOW_PRIVATE"
EVIDENCE_HEADERS = ["P(biased)", "sentence", "marked words"]
EVIDENCE_ROWS = 12
# Gradio's HighlightedText breaks lines anywhere (word-break: break-all), cutting words in two
# ("wor|king"); the evidence text wraps at word boundaries instead.
CSS = "#highlighted .textfield, #evidence td { word-break: normal; overflow-wrap: break-word; }"
"""Sentences listed in the evidence table: the flagged ones first, then the highest of the rest."""

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


@dataclass
class SpaceConfig:
    """How the demo is built and served."""

    models_config: Path = field(default=MODELS_YAML, metadata={"help": "YAML list of models for the picker (first = default)."})
    concurrency: int = field(default=8, metadata={"help": "Requests handled at once; more wait in the queue. A model runs one pass at a time: the sentence model's waiting requests share it (up to 8 articles a pass), other models take them in turn."})
    queue_size: int = field(default=32, metadata={"help": "Requests that may wait in the queue before new ones are refused."})
    limits: Limits = field(default_factory=Limits)
    rationale_backend: dict | None = field(default=None, metadata={"help": "Model spec (vilbias.models.catalogue, YAML form) of the rationale writer (default: embedded SmolLM2)."})
    n_examples: int = field(default=4, metadata={"help": "Examples taken from the embedded sample."})
    rationale_delay_s: float = field(default=20.0, metadata={"help": "Start loading the rationale writer this long after start (or at the first label)."})
    threads: int | None = field(default=None, metadata={"help": "torch threads (default: CPU cores: the sentence model's concurrent requests share one pass at a time)."})

    def torch_threads(self) -> int:
        return self.threads or max(1, os.cpu_count() or 1)

    @classmethod
    def from_env(cls) -> SpaceConfig:
        """The Space's settings; ``VILBIAS_SPACE_ALLOW_PRIVATE=1`` is the test mode."""
        # The models.yaml next to this file: on a Space that is the uploaded copy, which the
        # Space's owner may edit without releasing the package.
        here = Path(__file__).with_name("models.yaml")
        return cls(models_config=here if here.is_file() else MODELS_YAML,
                   limits=Limits(allow_private_addresses=os.environ.get(ALLOW_PRIVATE_ENV) == "1"))


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

    def predict(self, image, headline, article_text, url, model):
        """Generator: the label with its evidence first, then (if a model words it) the rationale."""
        import gradio as gr

        try:
            yield from self._predict(image, headline, article_text, url, model or self.default_model)
        except InputError as e:
            # The user gets the sentence; the log keeps what caused it, traceback included.
            logger.warning("request refused: %s", e, exc_info=e.__cause__ is not None)
            raise gr.Error(str(e), print_exception=False) from None
        except gr.Error:
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
        spec = self.predictors.specs.get(model)
        if spec is None:
            raise InputError(f"Unknown model {model!r}; choose one of {', '.join(self.predictors.specs)}.")
        predictor = self.predictors.get(model)  # first: a model that cannot load is the news, not the input
        item = self._item(spec, image, headline, article_text, url)
        prediction = predictor.predict(item)
        if spec.kind == "sentence" and spec.rationale:
            self.rationale.start()
            pending = f"{self.rationale.name} is wording this explanation; its wording replaces it only if it agrees with the evidence…"
            yield self._outputs(item, prediction, pending)
            prediction = self.rationale.word(item, prediction)
        yield self._outputs(item, prediction)

    def _outputs(self, item, p: Prediction, pending: str | None = None):
        label = {_label_name(k): v for k, v in p.probabilities.items()}
        confidence = f"**{_label_name(p.label)}**, confidence {p.confidence:.0%} — {p.confidence_kind}. Model: {p.model_title}."
        if not p.reads_image:
            confidence += " This model does not look at the image."
        confidence += reference_markdown(item.article_text, p.label, self.references)
        text = item.display_text
        spans = highlight_spans(text, evidence_marks(text, p))
        if item.url:
            spans.append((f"\n\n(Fetched from {item.url})", None))
        image = item.image_path or item.image
        return (label, confidence, rationale_markdown(p, pending), techniques_markdown(p), spans, image, evidence_table(p))

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
        _how_it_works(gr, app)
        _wire(gr, demo, app, inputs, submit, outputs, notes)
    demo.queue(default_concurrency_limit=config.concurrency, max_size=config.queue_size)
    return demo


def _input_column(gr, app: DemoApp):
    default = app.specs[0]
    with gr.Column():
        model = gr.Dropdown([(s.title, s.name) for s in app.specs], value=default.name, label="Model")
        model_note = gr.Markdown(default.note)
        url = gr.Textbox(label="Article URL (optional: fetches the headline, text and image)", placeholder="https://…")
        image = gr.Image(type="filepath", label="Image", sources=["upload", "clipboard"])
        image_note = gr.Markdown(default.image_note, elem_id="image-note")
        headline = gr.Textbox(label="Headline", max_lines=2)
        article = gr.Textbox(label="Article text", lines=8)
        submit = gr.Button("Label it", variant="primary")
    return [image, headline, article, url, model], submit, [model_note, image_note]


def _output_column(gr):
    with gr.Column():
        label = gr.Label(label="Label", num_top_classes=2)
        confidence = gr.Markdown()
        gr.Markdown("### Why")
        rationale = gr.Markdown(elem_id="rationale")
        highlighted = gr.HighlightedText(label="Evidence in the text: flagged sentences (shade = probability) and the words the model marks",
                                         color_map=HIGHLIGHT_COLORS, show_legend=True, show_inline_category=False,
                                         elem_id="highlighted")
        evidence = gr.Dataframe(headers=EVIDENCE_HEADERS, label="Evidence: sentences and their probability of being biased",
                                interactive=False, wrap=True, column_widths=["16%", "56%", "28%"], elem_id="evidence")
        gr.Markdown("### Techniques shown")
        techniques = gr.Markdown()
        seen = gr.Image(label="The item's image", interactive=False)
    return [label, confidence, rationale, techniques, highlighted, seen, evidence]


def _how_it_works(gr, app: DemoApp) -> None:
    notes = "\n".join(f"- **{s.title}**: {s.note}" for s in app.specs if s.note)
    card, diagram = default_model_card(app.specs[0])
    with gr.Accordion("How this works and its limits", open=False):
        gr.Markdown(HOW_IT_WORKS + ("\n" + card if card else "") + ("\n\n**The models.**\n" + notes if notes else ""))
        if diagram:
            gr.Image(diagram, label="Reliability diagram of the offline default (unseen BABE sentences)", interactive=False, height=320)


def _wire(gr, demo, app: DemoApp, inputs, submit, outputs, notes) -> None:
    model = inputs[4]
    submit.click(app.predict, inputs=inputs, outputs=outputs, api_name="predict", preprocess=False,
                              api_description="Label a news item (headline + article with its image, or a URL) and show the evidence.")
    specs = {s.name: s for s in app.specs}
    model.change(lambda name: (specs[name].note, specs[name].image_note), inputs=model, outputs=notes,
                 api_visibility="private")

    def run_example(request):
        yield from app.example_from_query(dict(request.query_params))

    # Gradio injects the request by the parameter's annotation, which it must see as the
    # class itself (this module's annotations are strings and `gr` is a local name).
    run_example.__annotations__["request"] = gr.Request
    demo.load(run_example, inputs=None, outputs=[*inputs[:4], *outputs], api_visibility="private")


def launch_kwargs(config: SpaceConfig) -> dict:
    """Arguments for ``demo.launch`` that every way of serving the app shares."""
    # Uploads far past the image limit are refused by Gradio before they reach the handler.
    return {"allowed_paths": [str(sample_workdir())], "max_file_size": 4 * config.limits.max_image_bytes, "css": CSS}


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
    demo.launch(**launch_kwargs(_space))

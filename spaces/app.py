"""BiasCorpus demo: label a news item (image + headline + article, or an article URL) as biased
or not, and explain why.

    python spaces/app.py                  # or: vilbias demo --port 7860
    VILBIAS_SPACE_ALLOW_PRIVATE=1 ...     # test mode: URLs may point at 127.0.0.1

The API endpoint is ``predict``::

    from gradio_client import Client, handle_file
    client = Client("http://127.0.0.1:7860/")      # or "ORG/vilbias-demo" on the Hub
    label, confidence, rationale, techniques, highlighted, image = client.predict(
        handle_file("photo.jpg"), "Headline", "Article text ...", "", "offline-default",
        api_name="/predict")

Arguments: image, headline, article_text, url (instead of the three before; an uploaded image
then replaces the page's), model (a name from ``models.yaml``).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from vilbias.spaces.predictors import (
    MODELS_YAML,
    InputError,
    Limits,
    Prediction,
    Predictors,
    RationaleWriter,
    highlight_spans,
    item_from_upload,
    item_from_url,
    load_model_specs,
)

logger = logging.getLogger(__name__)

ALLOW_PRIVATE_ENV = "VILBIAS_SPACE_ALLOW_PRIVATE"

HOW_IT_WORKS = """\
**What you see.** A model reads the image and the text together and answers one question: *does
this news item show bias?* The answer is one of two labels, **biased** or **not biased**, with a
confidence whose meaning is stated next to it (a calibrated probability for classifiers, the
share of agreeing answers for generative models). A rationale explains the label and names the
persuasion techniques the explaining model saw; quoted words are highlighted in the text.

**Its limits.**
- *Two labels only.* Bias comes in degrees and kinds; a yes/no answer hides that.
- *Annotator bias.* The training labels came from language models and human reviewers, with
  their own leanings about what counts as bias. The model learns those leanings.
- *Not a fact-checker.* It judges how a story is told, not whether it is true.
- *Explanations can be wrong.* With a classifier, the rationale is written afterwards by a small
  language model told the decision; it is a plausible story, not the classifier's reasons.
- *The offline default is a demo model* trained on a tiny fictional sample; its labels are close
  to chance. Pick a model trained on the full corpus for real use.
"""


@dataclass
class SpaceConfig:
    """How the demo is built and served."""

    models_config: Path = field(default=MODELS_YAML, metadata={"help": "YAML list of models for the picker (first = default)."})
    concurrency: int = field(default=2, metadata={"help": "Predictions running at once; more requests wait in the queue."})
    queue_size: int = field(default=32, metadata={"help": "Requests that may wait in the queue before new ones are refused."})
    limits: Limits = field(default_factory=Limits)
    rationale_backend: dict | None = field(default=None, metadata={"help": "load_backend spec of the rationale writer (default: embedded SmolLM2)."})
    n_examples: int = field(default=4, metadata={"help": "Examples taken from the embedded sample."})
    rationale_delay_s: float = field(default=20.0, metadata={"help": "Start loading the rationale writer this long after start (or at the first label)."})

    @classmethod
    def from_env(cls) -> SpaceConfig:
        """The Space's settings; ``VILBIAS_SPACE_ALLOW_PRIVATE=1`` is the test mode."""
        # The models.yaml next to this file: on a Space that is the uploaded copy, which the
        # Space's owner may edit without releasing the package.
        here = Path(__file__).with_name("models.yaml")
        return cls(models_config=here if here.is_file() else MODELS_YAML,
                   limits=Limits(allow_private_addresses=os.environ.get(ALLOW_PRIVATE_ENV) == "1"))


def sample_examples(n: int) -> list[list[str]]:
    """``[image_path, headline, article_text, url, model]`` rows from the embedded sample,
    alternating outlets so the examples are not all one voice."""
    from vilbias.workdir import sample_workdir

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


def _label_name(label: str) -> str:
    return label.replace("_", " ")


class DemoApp:
    """The handlers behind the UI, usable without it."""

    def __init__(self, config: SpaceConfig, rationale_backend=None):
        self.config = config
        self.specs = load_model_specs(config.models_config)
        self.predictors = Predictors(self.specs)
        self.rationale = RationaleWriter(config.rationale_backend, backend=rationale_backend)

    @property
    def default_model(self) -> str:
        return self.specs[0].name

    def warm_up(self) -> None:
        """Load the default model now; schedule the rationale writer's background load.

        SmolLM2's load (~30 s of CPU, much of it holding the GIL) would slow the first labels
        if it ran while they are computed, so it starts after the first label is served or
        ``rationale_delay_s`` after start, whichever comes first.
        """
        self.predictors.get(self.default_model)
        if self.specs[0].kind == "fusion" and self.specs[0].rationale:
            timer = threading.Timer(self.config.rationale_delay_s, self.rationale.start)
            timer.daemon = True
            timer.start()

    def predict(self, image, headline, article_text, url, model):
        """Generator: the label first, then the rationale once written (see module docstring)."""
        import gradio as gr

        try:
            yield from self._predict(image, headline, article_text, url, model or self.default_model)
        except InputError as e:
            raise gr.Error(str(e), print_exception=False) from None
        except gr.Error:
            raise
        except Exception:
            logger.exception("prediction failed")
            raise gr.Error("Something went wrong while labelling this item. Try again, or try another model.",
                           print_exception=False) from None

    def _predict(self, image, headline, article_text, url, model):
        limits = self.config.limits
        if model not in self.predictors.specs:
            raise InputError(f"Unknown model {model!r}; choose one of {', '.join(self.predictors.specs)}.")
        if isinstance(image, dict):
            # The event runs with preprocess=False: the upload arrives as Gradio's file record,
            # and the bytes are validated here (Gradio's own decoding would crash on bad files).
            image = image.get("path")
        if url and url.strip():
            item = item_from_url(url, limits, image_path=image)
        else:
            item = item_from_upload(image, headline, article_text, limits)
        spec = self.predictors.specs.get(model)
        predictor = self.predictors.get(model)
        prediction = predictor.predict(item)
        writes_rationale = spec.kind == "fusion" and spec.rationale
        if writes_rationale:
            pending = f"*{self.rationale.name} is writing the rationale…*" + (
                "" if self.rationale.ready else " (it is still loading; the first one takes a minute)")
            yield self._outputs(item, prediction, pending)
            prediction = self.rationale.explain(item, prediction)
        yield self._outputs(item, prediction)

    @staticmethod
    def _outputs(item, p: Prediction, pending: str | None = None):
        label = {_label_name(k): v for k, v in p.probabilities.items()}
        confidence = f"**{_label_name(p.label)}**, confidence {p.confidence:.0%} — {p.confidence_kind}. Model: {p.model_title}."
        if pending:
            rationale = pending
        elif p.rationale_error:
            rationale = f"Rationale unavailable: {p.rationale_error}"
        elif p.reasoning:
            rationale = f"{p.reasoning}\n\n*Written by {p.rationale_by}.*"
        else:
            rationale = "This model gives no rationale."
        if pending:
            techniques = ""
        elif p.techniques:
            from vilbias.task import ALL_NAMES

            techniques = "\n".join(f"- {ALL_NAMES[t]}" for t in p.techniques)
        else:
            techniques = "None named."
        text = item.display_text
        if item.url:
            text = f"{text}\n\n(Fetched from {item.url})"
        return label, confidence, rationale, techniques, highlight_spans(text, p.evidence), item.image_path or item.image

    def example_from_query(self, params: dict):
        """``?example=N`` fills the form with example N and labels it (links that run an example)."""
        import gradio as gr

        try:
            index = int(params.get("example", ""))
            row = sample_examples(self.config.n_examples)[index]
        except (ValueError, IndexError):
            yield tuple(gr.skip() for _ in range(10))
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
    examples = sample_examples(config.n_examples)
    notes = "\n".join(f"- **{s.title}**: {s.note}" for s in app.specs if s.note)
    with gr.Blocks(title="BiasCorpus: is this news item biased?") as demo:
        demo.vilbias_app = app
        gr.Markdown("# Is this news item biased?\nUpload the article's image and paste its headline and text, "
                    "or give the article's URL. The model labels the item and explains why.")
        with gr.Row():
            with gr.Column():
                model = gr.Dropdown([(s.title, s.name) for s in app.specs], value=app.default_model, label="Model")
                model_note = gr.Markdown(app.specs[0].note)
                url = gr.Textbox(label="Article URL (optional: fetches the headline, text and image)", placeholder="https://…")
                image = gr.Image(type="filepath", label="Image", sources=["upload", "clipboard"])
                headline = gr.Textbox(label="Headline", max_lines=2)
                article = gr.Textbox(label="Article text", lines=8)
                submit = gr.Button("Label it", variant="primary")
            with gr.Column():
                label = gr.Label(label="Label", num_top_classes=2)
                confidence = gr.Markdown()
                gr.Markdown("### Rationale")
                rationale = gr.Markdown(elem_id="rationale")
                gr.Markdown("### Techniques found")
                techniques = gr.Markdown()
                highlighted = gr.HighlightedText(label="Evidence in the text", color_map={"evidence": "orange"})
                seen = gr.Image(label="Image the model saw", interactive=False)
        inputs = [image, headline, article, url, model]
        outputs = [label, confidence, rationale, techniques, highlighted, seen]
        gr.Examples(examples, inputs=[image, headline, article, url], label="Examples from the embedded sample")
        with gr.Accordion("How this works and its limits", open=False):
            gr.Markdown(HOW_IT_WORKS + ("\n**The models.**\n" + notes if notes else ""))
        submit.click(app.predict, inputs=inputs, outputs=outputs, api_name="predict", preprocess=False,
                     api_description="Label a news item (image + headline + article, or a URL) and explain the label.")

        notes_by_name = {s.name: s.note for s in app.specs}
        model.change(lambda name: notes_by_name.get(name, ""), inputs=model, outputs=model_note, api_visibility="private")

        def run_example(request):
            yield from app.example_from_query(dict(request.query_params))

        # Gradio injects the request by the parameter's annotation, which it must see as the
        # class itself (this module's annotations are strings and `gr` is a local name).
        run_example.__annotations__["request"] = gr.Request

        demo.load(run_example, inputs=None, outputs=[image, headline, article, url, *outputs], api_visibility="private")
    demo.queue(default_concurrency_limit=config.concurrency, max_size=config.queue_size)
    return demo


def launch_kwargs(config: SpaceConfig) -> dict:
    """Arguments for ``demo.launch`` that every way of serving the app shares."""
    from vilbias.workdir import sample_workdir

    # Uploads far past the image limit are refused by Gradio before they reach the handler.
    return {"allowed_paths": [str(sample_workdir())], "max_file_size": 4 * config.limits.max_image_bytes}


@dataclass
class DemoConfig:
    """``vilbias demo``: serve the Space locally."""

    host: str = field(default="127.0.0.1", metadata={"help": "Interface to listen on (0.0.0.0 to share on your network)."})
    port: int | None = field(default=None, metadata={"help": "Port (default: Gradio's, 7860 or the next free one)."})
    models_config: Path = field(default=MODELS_YAML, metadata={"help": "YAML list of models for the picker (first = default)."})
    concurrency: int = field(default=2, metadata={"help": "Predictions running at once; more requests wait in the queue."})
    allow_private_addresses: bool = field(default=False, metadata={"help": "Test mode: let URLs reach loopback/private addresses."})

    def space_config(self) -> SpaceConfig:
        return SpaceConfig(models_config=Path(self.models_config), concurrency=self.concurrency,
                           limits=Limits(allow_private_addresses=self.allow_private_addresses))


def serve(config: DemoConfig, *, block: bool = True):
    """Build, warm up and launch the demo; returns the Blocks (still running when ``block=False``)."""
    space = config.space_config()
    if space.concurrency < 1:
        raise ValueError("--concurrency must be at least 1")
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

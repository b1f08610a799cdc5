"""The annotate stage: every item × prompt × annotator × sample, asked once and stored.

:func:`annotate` reads the workdir's ``articles.jsonl``, asks each configured annotator the
``text`` and ``multimodal`` prompts K times per item, and records every call in
``annotations.sqlite`` as it completes. Re-running asks only the calls the store lacks for the
current prompt versions and annotators (a changed prompt or annotator re-asks only what it
changes); a killed run loses at most the calls that were in flight.

The annotators file (YAML)::

    annotators:
      - name: qwen2.5-vl-7b
        backend: openai            # openai | transformers | smollm2
        model: Qwen/Qwen2.5-VL-7B-Instruct
        base_url: http://localhost:8000/v1
        api_key_env: OPENAI_API_KEY  # optional; the default variable
        vision: true               # sees the image itself, and describes images for the others
        params: {temperature: 0.7, max_tokens: 512}
        concurrency: 32            # openai: requests in flight
      - name: llama3.1-8b
        backend: transformers
        model: meta-llama/Llama-3.1-8B-Instruct
        params: {temperature: 0.7, max_tokens: 512}
        batch_size: 8

Without a file, the embedded SmolLM2-135M-Instruct is the one annotator (:data:`DEFAULT_ANNOTATORS`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import mimetypes
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vilbias.annotate import prompts as prompting
from vilbias.models.chat import ChatBackend, ChatRequest, ChatResult, image_part, load_backend
from vilbias.annotate.store import ActiveAnnotator, AnnotationStore, CallKey, call_row
from vilbias.annotate.voting import hierarchical_vote
from vilbias.workdir import ARTICLES, Article, read_articles

logger = logging.getLogger(__name__)

BACKENDS = ("openai", "transformers", "smollm2")
DESCRIBE = "describe_image"


@dataclass
class AnnotatorSpec:
    """One annotator: a model behind a backend, with its sampling parameters."""

    name: str
    backend: str = "openai"
    model: str = ""
    base_url: str | None = None
    vision: bool = False
    params: dict[str, Any] = field(default_factory=dict)
    api_key_env: str | None = None
    concurrency: int = 16
    timeout_s: float = 120.0
    max_retries: int = 5
    batch_size: int = 4
    gguf_file: str | None = None

    def fingerprint(self) -> str:
        """What makes this annotator's answers what they are. Where it is served (URL, key,
        concurrency) is left out, so moving a model to another server re-asks nothing."""
        payload = {"backend": self.backend, "model": self.model, "vision": self.vision, "params": self.params, "gguf_file": self.gguf_file}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:12]

    def validate(self) -> None:
        where = f"annotator {self.name!r}"
        if not self.name or not isinstance(self.name, str):
            raise ValueError("every annotator needs a name")
        if self.backend not in BACKENDS:
            raise ValueError(f"{where}: backend {self.backend!r} is not one of {', '.join(BACKENDS)}")
        if self.backend in ("openai", "transformers") and not self.model:
            raise ValueError(f"{where}: the {self.backend} backend needs a model")
        if self.backend == "openai" and not self.base_url:
            raise ValueError(f"{where}: the openai backend needs base_url (e.g. http://localhost:8000/v1)")
        if self.backend == "smollm2" and self.vision:
            raise ValueError(f"{where}: SmolLM2 is text-only; set vision: false")
        if not isinstance(self.params, dict):
            raise ValueError(f"{where}: params must be a mapping")


DEFAULT_ANNOTATORS = [
    AnnotatorSpec(
        name="smollm2-135m-instruct",
        backend="smollm2",
        model="HuggingFaceTB/SmolLM2-135M-Instruct",
        params={"temperature": 0.7, "top_p": 0.9, "max_tokens": 256},
    )
]
"""Used when no annotators file is given: one text-only model (it sees the image description)."""


def load_annotators(path: str | Path) -> list[AnnotatorSpec]:
    """Read and validate an annotators YAML file (see the module docstring)."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"annotators file {path} does not exist")
    data = yaml.safe_load(path.read_text()) or {}
    entries = data.get("annotators") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{path}: expected a non-empty list under 'annotators:'")
    known = set(AnnotatorSpec.__dataclass_fields__)
    specs = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ValueError(f"{path}: annotator #{i + 1} is not a mapping")
        unknown = sorted(set(entry) - known)
        if unknown:
            raise ValueError(f"{path}: annotator #{i + 1} has unknown fields {unknown}; known: {sorted(known)}")
        spec = AnnotatorSpec(**entry)
        spec.validate()
        specs.append(spec)
    names = Counter(s.name for s in specs)
    if dupes := [n for n, c in names.items() if c > 1]:
        raise ValueError(f"{path}: annotator names must be unique, repeated: {dupes}")
    return specs


@dataclass
class AnnotateConfig:
    workdir: Path = field(metadata={"help": "The workdir written by `vilbias ingest` (holds articles.jsonl)."})
    annotators: Path | None = field(
        default=None, metadata={"help": "YAML file listing the annotators (default: the embedded SmolLM2-135M-Instruct)."}
    )
    samples: int = field(default=3, metadata={"help": "K: samples asked of each annotator per item and prompt (majority of K)."})
    prompts: list[str] = field(
        default_factory=lambda: list(prompting.PROMPT_NAMES),
        metadata={"help": "Which prompts to ask: text, multimodal.", "choices": list(prompting.PROMPT_NAMES)},
    )
    limit: int | None = field(default=None, metadata={"help": "Annotate only the first N items (for a trial run)."})
    max_article_chars: int = field(
        default=prompting.DEFAULT_MAX_ARTICLE_CHARS, metadata={"help": "Article text beyond this is cut from the prompt (small context windows)."}
    )
    progress: bool = field(default=True, metadata={"help": "Show progress bars."})
    annotator_specs: list[AnnotatorSpec] | None = field(
        default=None, metadata={"cli": False, "help": "Annotators given from Python (instead of a file)."}
    )
    backends: dict[str, ChatBackend] | None = field(
        default=None, metadata={"cli": False, "help": "Ready backends by annotator name (tests, reuse of a loaded model)."}
    )

    def resolve_annotators(self) -> list[AnnotatorSpec]:
        """Validate the config and return the annotators, before anything expensive starts."""
        if not (Path(self.workdir) / ARTICLES).is_file():
            raise FileNotFoundError(f"{Path(self.workdir) / ARTICLES} not found: run `vilbias ingest --workdir {self.workdir}` first")
        if self.samples < 1:
            raise ValueError("--samples must be at least 1")
        if not self.prompts or set(self.prompts) - set(prompting.PROMPT_NAMES):
            raise ValueError(f"--prompts must name some of {', '.join(prompting.PROMPT_NAMES)}")
        if self.limit is not None and self.limit < 1:
            raise ValueError("--limit must be at least 1")
        if self.annotator_specs is not None:
            specs = list(self.annotator_specs)
            for s in specs:
                s.validate()
        elif self.annotators is not None:
            specs = load_annotators(self.annotators)
        else:
            specs = list(DEFAULT_ANNOTATORS)
        return specs


def _articles(config: AnnotateConfig) -> Iterator[Article]:
    for i, article in enumerate(read_articles(config.workdir)):
        if config.limit is not None and i >= config.limit:
            return
        yield article


def _image(workdir: Path, article: Article) -> tuple[str, bytes, str]:
    path = workdir / article.image_path
    mime = mimetypes.guess_type(path.name)[0] or "image/jpeg"
    return Path(article.image_path).stem, path.read_bytes(), mime


class _Recorder:
    """Hands requests to a backend lazily and stores each result as it arrives.

    Called from inside an event loop (the OpenAI backend), results are committed in groups: a
    result joins the current group, one SQLite transaction stores the group as soon as the loop
    has run the steps that were ready together, and :meth:`call` returns a future the backend
    awaits before that worker takes its next request. So a result not yet committed still
    holds its worker's slot: what a ``kill -9`` can lose is never more than ``concurrency``
    calls, the same bound as with one commit per call, at a fraction of the commits. Called
    without a running loop (local models), each result is committed at once.
    """

    def __init__(self, store: AnnotationStore, bar: Any, model: str):
        self.store = store
        self.model = model
        self.bar = bar
        self.inflight: dict[int, Any] = {}
        self.counts: Counter[str] = Counter()
        self._rows: list[tuple] = []
        self._group: asyncio.Future | None = None
        self._error: BaseException | None = None

    def feed(self, jobs: Iterator[tuple[Any, ChatRequest]]) -> Iterator[ChatRequest]:
        for index, (key, request) in enumerate(jobs):
            self.inflight[index] = key
            yield request

    def call(self, index: int, result: ChatResult) -> asyncio.Future | None:
        key: CallKey = self.inflight.pop(index)
        text = result.text
        answer = prompting.parse_annotation(text) if text is not None else None
        if answer is None:
            row = call_row(key, model=self.model, raw=text, error=result.error, latency_s=result.latency_s)
        else:
            row = call_row(
                key, model=self.model, raw=text, label=answer.label, tone=answer.tone, techniques=answer.techniques,
                rationale=answer.rationale, error=result.error, latency_s=result.latency_s,
            )
        self.counts["failed" if text is None else "answered" if answer else "unparseable"] += 1
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.store.record_calls([row])
            self.bar.update(1)
            return None
        self._rows.append(row)
        if self._group is None:
            # call_soon runs after the steps already ready in this loop iteration: every
            # result that arrived in the same poll goes into one transaction.
            self._group = loop.create_future()
            loop.call_soon(self._commit)
        return self._group

    def _commit(self) -> None:
        rows, group = self._rows, self._group
        self._rows, self._group = [], None
        try:
            self.store.record_calls(rows)
        except BaseException as e:  # handed to the awaiting workers: the run stops with it
            self._error = e
            if group is not None and not group.done():
                group.set_exception(e)
            return
        if group is not None and not group.done():
            group.set_result(None)
        self.bar.update(len(rows))

    def flush(self) -> None:
        """Commit what a backend left uncommitted (one that did not await :meth:`call`'s future)
        and raise a commit error the backend did not."""
        if self._rows:
            self._commit()
        if self._error is not None:
            raise self._error


def annotate(config: AnnotateConfig) -> dict[str, Any]:
    """Annotate the workdir's items and return the run's summary (see :func:`summarize`)."""
    from tqdm.auto import tqdm

    specs = config.resolve_annotators()
    workdir = Path(config.workdir)
    versions = {p: prompting.prompt_version(p) for p in config.prompts}
    active = [ActiveAnnotator(s.name, s.fingerprint()) for s in specs]
    backends: dict[str, ChatBackend] = dict(config.backends or {})
    run: Counter[str] = Counter()
    with AnnotationStore.for_workdir(workdir) as store:
        for p in config.prompts:
            store.set_active(p, versions[p], active, config.samples)
        describer = next((s for s in specs if s.vision), None) if "multimodal" in config.prompts else None
        describer_key = f"{describer.name}@{describer.fingerprint()}" if describer else None
        if describer is not None:
            _describe_images(config, store, describer, describer_key, backends, run)

        for spec in specs:
            fp = spec.fingerprint()
            pending = sum(1 for _ in _jobs(config, store, spec, fp, versions, describer_key, count_only=True))
            if pending == 0:
                logger.info("%s: nothing to ask", spec.name)
                continue
            if spec.name not in backends:
                logger.info("%s: loading %s backend for %s", spec.name, spec.backend, spec.model)
                backends[spec.name] = load_backend(asdict(spec))
            with tqdm(total=pending, desc=f"annotate {spec.name}", unit="call", disable=not config.progress) as bar:
                recorder = _Recorder(store, bar, spec.model)
                try:
                    backends[spec.name].chat(recorder.feed(_jobs(config, store, spec, fp, versions, describer_key)), on_result=recorder.call)
                finally:
                    recorder.flush()
            run.update(recorder.counts)
            # Free a local model before loading the next one; injected backends belong to the caller.
            if not (config.backends and spec.name in config.backends):
                backends.pop(spec.name, None)
        summary = summarize(store, {a.unique_id for a in _articles(config)})
    summary["run"] = dict(run)
    for line in format_summary(summary).splitlines():
        logger.info(line)
    return summary


def _jobs(
    config: AnnotateConfig,
    store: AnnotationStore,
    spec: AnnotatorSpec,
    fp: str,
    versions: dict[str, str],
    describer_key: str | None,
    count_only: bool = False,
) -> Iterator[tuple[CallKey, ChatRequest | None]]:
    """The missing calls of one annotator, item by item (lazily: memory stays flat).

    The K samples of an item and prompt share one rendered prompt and one message list (the
    requests are read, never changed): rendering is done once per item and prompt, not per call.
    """
    workdir = Path(config.workdir)
    system = {"role": "system", "content": prompting.system_message()}
    # Sample k's parameters; with a seed, seed + k so the K samples differ.
    sample_params = []
    for k in range(config.samples):
        params = dict(spec.params)
        if "seed" in params:
            params["seed"] = int(params["seed"]) + k
        sample_params.append(params)
    for article in _articles(config):
        done = store.answered(article.unique_id)
        missing = [
            (p, k)
            for p in config.prompts
            for k in range(config.samples)
            if (p, spec.name, fp, k, versions[p]) not in done
        ]
        if not missing:
            continue
        description = ""
        sha = Path(article.image_path).stem
        if describer_key is not None and any(p == "multimodal" for p, _ in missing):
            description = store.image_description(sha, describer_key) or ""
            if not description:
                # Asked again next run, once the description exists: the answer depends on it.
                missing = [(p, k) for p, k in missing if p != "multimodal"]
        image = None
        messages: dict[str, list[dict[str, Any]]] = {}
        for p, k in missing:
            key = CallKey(article.unique_id, p, spec.name, fp, k, versions[p])
            if count_only:
                yield key, None
                continue
            if p not in messages:
                text = prompting.render(
                    p,
                    outlet=article.outlet,
                    headline=article.headline,
                    article_text=article.article_text,
                    image_caption=article.image_caption,
                    image_description=description,
                    max_article_chars=config.max_article_chars,
                )
                content: Any = text
                if p == "multimodal" and spec.vision:
                    if image is None:
                        _, data, mime = _image(workdir, article)
                        image = image_part(data, mime)
                    content = [image, {"type": "text", "text": text}]
                messages[p] = [system, {"role": "user", "content": content}]
            yield key, ChatRequest(messages[p], sample_params[k])


def _describe_images(
    config: AnnotateConfig,
    store: AnnotationStore,
    describer: AnnotatorSpec,
    describer_key: str,
    backends: dict[str, ChatBackend],
    run: Counter[str],
) -> None:
    """Ask the first vision annotator once per image for the description text-only annotators see."""
    from tqdm.auto import tqdm

    workdir = Path(config.workdir)

    def todo() -> Iterator[Article]:
        seen: set[str] = set()
        for article in _articles(config):
            sha = Path(article.image_path).stem
            if sha not in seen and store.image_description(sha, describer_key) is None:
                seen.add(sha)
                yield article

    pending = sum(1 for _ in todo())
    if not pending:
        return
    if describer.name not in backends:
        backends[describer.name] = load_backend(asdict(describer))
    shas: dict[int, str] = {}

    def requests() -> Iterator[ChatRequest]:
        for i, article in enumerate(todo()):
            sha, data, mime = _image(workdir, article)
            shas[i] = sha
            params = {**describer.params, "temperature": 0.0}
            yield ChatRequest([{"role": "user", "content": [image_part(data, mime), {"type": "text", "text": prompting.template(DESCRIBE)}]}], params)

    with tqdm(total=pending, desc=f"describe images ({describer.name})", unit="image", disable=not config.progress) as bar:

        def record(index: int, result: ChatResult) -> None:
            sha = shas.pop(index)
            if result.text and result.text.strip():
                store.set_image_description(sha, describer_key, result.text.strip())
                run["described"] += 1
            else:
                logger.warning("no description for image %s (%s); its multimodal calls wait for the next run", sha, result.error)
                run["description_failed"] += 1
            bar.update(1)

        backends[describer.name].chat(requests(), on_result=record)


def summarize(store: AnnotationStore, item_ids: set[str] | None = None) -> dict[str, Any]:
    """Figures for the active configuration: items, calls, unparseable rate per annotator, tie
    rate and label shares per prompt. ``item_ids`` restricts the item figures to those items."""
    active = store.active()
    per_prompt: dict[str, dict[str, Any]] = {}
    for prompt, cfg in active.items():
        per_prompt[prompt] = {"items": 0, "decided": 0, "flagged": Counter(), "labels": Counter(), "annotators": [a.name for a in cfg["annotators"]]}
    for item_id, by_prompt in store.iter_votes():
        if item_ids is not None and item_id not in item_ids:
            continue
        for prompt, votes in by_prompt.items():
            if prompt not in per_prompt or not votes:
                continue
            s = per_prompt[prompt]
            result = hierarchical_vote(votes, s["annotators"])
            s["items"] += 1
            if result.flagged:
                s["flagged"][result.reason] += 1
            else:
                s["decided"] += 1
                s["labels"][result.label] += 1
    prompts_out = {}
    for prompt, s in per_prompt.items():
        n = s["items"]
        prompts_out[prompt] = {
            "items": n,
            "decided": s["decided"],
            "flagged": dict(s["flagged"]),
            "tie_rate": s["flagged"]["tie"] / n if n else 0.0,
            "flag_rate": sum(s["flagged"].values()) / n if n else 0.0,
            "label_shares": {lab: c / s["decided"] for lab, c in sorted(s["labels"].items())} if s["decided"] else {},
        }
    annotators = {}
    for (prompt, name), c in store.call_counts().items():
        annotators.setdefault(name, {})[prompt] = {
            **c,
            "unparseable_rate": c["unparseable"] / c["answered"] if c["answered"] else 0.0,
        }
    return {
        "items": len(item_ids) if item_ids is not None else max((s["items"] for s in prompts_out.values()), default=0),
        "prompts": prompts_out,
        "annotators": annotators,
        "active": {p: {"prompt_version": cfg["prompt_version"], "samples": cfg["samples"]} for p, cfg in active.items()},
    }


def format_summary(summary: dict[str, Any]) -> str:
    """The summary as a few readable lines (the CLI prints this)."""
    lines = [f"items: {summary['items']}"]
    if "run" in summary:
        run = summary["run"]
        lines.append("this run: " + ", ".join(f"{k} {v}" for k, v in sorted(run.items())) if run else "this run: nothing to ask")
    for prompt, s in summary["prompts"].items():
        shares = ", ".join(f"{k} {v:.1%}" for k, v in s["label_shares"].items()) or "-"
        flagged = ", ".join(f"{k} {v}" for k, v in sorted(s["flagged"].items())) or "none"
        lines.append(
            f"{prompt}: {s['decided']}/{s['items']} decided, tie rate {s['tie_rate']:.1%}, flagged: {flagged}; labels: {shares}"
        )
    for name, by_prompt in summary["annotators"].items():
        parts = [
            f"{p} {c['answered']} answered, {c['unparseable_rate']:.1%} unparseable, {c['failed']} failed"
            for p, c in by_prompt.items()
        ]
        lines.append(f"annotator {name}: " + "; ".join(parts))
    return "\n".join(lines)

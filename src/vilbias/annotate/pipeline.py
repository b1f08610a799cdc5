"""The annotate stage: every item × prompt × annotator × sample, asked once and stored.

:func:`annotate` reads the workdir's ``articles.jsonl``, asks each configured annotator the
``text`` and ``multimodal`` prompts K times per item, and records every call in
``annotations.sqlite`` as it completes. The K samples of an item, prompt and annotator are one
request for K samples (OpenAI's and vLLM's ``n``; local models: ``num_return_sequences``), so the
server reads the prompt once; each sample is stored, and checked, on its own. A server that does
not take ``n`` is asked one sample per request (recorded in the store's ``sampling`` table). Re-running asks only the calls the store lacks for the
current prompt versions and annotators (a changed prompt or annotator re-asks only what it
changes); a killed run loses at most the calls that were in flight and the answers of the last
few milliseconds, not yet committed (see :class:`_Recorder`).

The annotators are configured in a YAML file (:mod:`vilbias.annotate.specs`); without one, the
sentence-level bias model shipped with vilbias labels the items (text prompt). An annotator
abstains, unasked, on an item in a language it does not read (the call status
``other_language``; see :func:`_abstain_on_languages` and ``docs/annotate.md``, *Languages*). An annotator may
be any model the catalogue loads: a checkpoint that labels without writing text answers from its
evidence, one sample per item (:mod:`vilbias.annotate.classifiers`).

Every answer is asked for as the JSON Schema of :func:`vilbias.annotate.prompts.response_format`
(servers: ``response_format``; local models: llguidance-constrained decoding) and checked with
:func:`vilbias.annotate.prompts.parse_annotation`; only valid answers vote.

The annotators asked over HTTP are asked together (:meth:`_Stage.together`): each prompt of each
annotator, and the image descriptions, from a thread of its own, their requests streamed through
one budget of requests in flight per server (:mod:`vilbias.models.chat_openai`), so the server
has as many as it takes while work remains and never more; an annotator's multimodal calls start
once the images are described (the description is part of their prompt), its text calls at once.
Local models are asked one after another (one loaded at a time).

Why this module is long: it is the stage's one loop and the parts that keep it at the server's
limit, which are read together — the annotators asked together (:class:`_Stage`, :class:`_Asking`),
the lazy jobs (:class:`_Jobs`, with the run's image parts), the grouped commits
(:class:`_Recorder`) and the image descriptions.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_EXCEPTION, CancelledError, Future, ThreadPoolExecutor, wait
from itertools import islice
from pathlib import Path
from typing import Any

from vilbias.annotate import prompts as prompting
from vilbias.annotate.classifiers import (
    PredictorAnnotator,
    ResolvedAnnotator,
    load_annotator,
    resolve_annotator,
)
from vilbias.annotate.config import AnnotateConfig
from vilbias.annotate.store import ActiveAnnotator, AnnotationStore, CallKey, call_row, row_status
from vilbias.annotate.summary import format_summary, summarize
from vilbias.annotate.voting import OTHER_LANGUAGE
from vilbias.languages import ANY, describe_languages, item_language, reads
from vilbias.ledger import ask_missing
from vilbias.models.chat import (
    ChatBackend,
    ChatRequest,
    ChatResult,
    chat_jobs,
    image_mime,
    image_part,
)
from vilbias.models.chat_openai import OpenAIBackend
from vilbias.progress_flag import follows_progress_flag
from vilbias.workdir import Article, claim_workdir, read_articles, utcnow

logger = logging.getLogger(__name__)

CHUNK = 512
"""Items whose answered calls are read from the store in one query."""

DESCRIBE = "describe_image"
"""The prompt that asks the first vision annotator for an image description."""



def _articles(config: AnnotateConfig) -> Iterator[Article]:
    for i, article in enumerate(read_articles(config.workdir)):
        if config.limit is not None and i >= config.limit:
            return
        yield article


def _image_sha(article: Article) -> str:
    """The image's content hash: ``images/<sha256>.<ext>`` -> ``<sha256>``."""
    return article.image_path.rpartition("/")[2].partition(".")[0]


def _image(workdir: Path, article: Article) -> tuple[str, bytes, str]:
    data = (workdir / article.image_path).read_bytes()
    return _image_sha(article), data, image_mime(data)


class _ImageParts(OrderedDict):
    """The images of a run as request parts, by content hash: the latest ones up to
    :data:`IMAGE_CACHE_BYTES` (an image that several items share, a wire photo, is read and
    encoded once for all of them and for every annotator; distinct images are read once each)."""

    def __init__(self, workdir: Path):
        super().__init__()
        self.workdir, self.size = workdir, 0

    def __call__(self, article: Article) -> dict[str, Any]:
        sha = _image_sha(article)
        if (hit := self.get(sha)) is not None:
            self.move_to_end(sha)
            return hit[0]
        _, data, mime = _image(self.workdir, article)
        part = image_part(data, mime)
        self[sha] = (part, len(data))
        self.size += len(data)
        while self.size > IMAGE_CACHE_BYTES and len(self) > 1:
            self.size -= self.popitem(last=False)[1][1]
        return part


IMAGE_CACHE_BYTES = 16 << 20
"""Image bytes :class:`_ImageParts` keeps (memory stays flat, whatever the corpus)."""


COMMIT_INTERVAL_S = 0.005
"""How long the first result of a group waits for others before the group is committed."""


class _Recorder:
    """Hands requests to a backend lazily and stores each result as it arrives (one row per
    sample of the request).

    Called from inside an event loop (the OpenAI backend), results are committed in groups by a
    writer thread: the first result of a group schedules its commit :data:`COMMIT_INTERVAL_S`
    later, the results that arrive meanwhile (and during a commit) join it, and the group goes to
    the writer (SQLite works outside the GIL, so the loop keeps serving requests meanwhile). A
    worker does not wait for its result's commit: it takes its next request at once, so
    ``concurrency`` requests stay at the server while SQLite writes. Results awaiting their commit
    are bounded: past ``max_backlog`` requests' results, :meth:`call` returns the group's future
    and the backend awaits it before that worker takes its next request (when SQLite cannot keep
    up). So what a ``kill -9`` can lose is never more than the requests in flight plus
    ``max_backlog`` answered ones (in practice those of the last few milliseconds). Called
    without a running loop (local models), each result is committed at once. A failed commit
    stops the run: the next result raises it.
    """

    def __init__(self, store: AnnotationStore, model: str, max_backlog: int = 32):
        self.store = store
        self.model = model
        self.max_backlog = max_backlog
        self.counts: Counter[str] = Counter()
        self.fallback: str | None = None
        self.sampling_fallback: str | None = None
        self._rows: list[tuple] = []
        self._requests = 0
        """Requests whose results are in :attr:`_rows`."""
        self._backlog = 0
        """Requests whose results are not committed yet (in :attr:`_rows` or being written)."""
        self._group: asyncio.Future | None = None
        self._scheduled = False
        self._writing = False
        self._writer: ThreadPoolExecutor | None = None
        self._error: BaseException | None = None
        self._last_commit: Future | None = None
        self._second, self._created = -1, ""
        self._handing = threading.Lock()
        """Held while a group is handed to the writer and while flush() stops it: a group whose
        commit comes due on the loop as flush() stops the writer is left to flush(), never handed
        to a writer that takes no more work (its rows were lost so, on a loaded machine)."""
        self._flushing = False

    def call(self, keys: tuple[CallKey, ...], result: ChatResult) -> asyncio.Future | None:
        """Store the answers to one request: ``keys`` are its samples, in the order asked.
        Returns a future to await before the next request when too many results await their
        commit (else None)."""
        if self._error is not None:
            raise self._error
        if (second := int(time.time())) != self._second:  # the stamp is to the second: made once a second
            self._second, self._created = second, utcnow()
        created = self._created
        rows = [self._row(key, sample, created) for key, sample in zip(keys, result.per_sample(len(keys)), strict=True)]
        self.counts.update(row_status(row) for row in rows)
        self.fallback = self.fallback or result.fallback
        self.sampling_fallback = self.sampling_fallback or result.sampling_fallback
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.store.record_calls(rows)
            return None
        if self._flushing:  # a late result (a stop): flush() has taken what was left, so store it now
            self.store.record_calls(rows)
            return None
        self._rows.extend(rows)
        self._requests += 1
        self._backlog += 1
        if not self._scheduled and not self._writing:
            self._scheduled = True
            loop.call_later(COMMIT_INTERVAL_S, self._commit)
        if self._backlog <= self.max_backlog:
            return None
        if self._group is None:
            self._group = loop.create_future()
        return self._group

    def _row(self, key: CallKey, result: ChatResult, created: str) -> tuple:
        """The stored call: a refusal and a failure as such, an answer checked against the schema."""
        common = {"model": self.model, "error": result.error, "latency_s": result.latency_s, "structured": result.structured, "created_at": created}
        if result.refusal is not None:
            return call_row(key, raw=result.refusal, status="refused", problem="the model refused", **common)
        if result.text is None:
            return call_row(key, status="failed", **common)
        answer = prompting.parse_annotation(result.text, key.prompt)
        problem = answer.problem
        if answer.status != prompting.VALID and result.finish_reason == "length":
            problem += " (the answer was cut at max_tokens)"
        if answer.label is None:
            return call_row(key, raw=result.text, status=answer.status, problem=problem, **common)
        return call_row(
            key, raw=result.text, label=answer.label, tone=answer.tone, techniques=answer.techniques,
            rationale=answer.rationale, status=answer.status, **common,
        )

    def mode(self, annotator: ResolvedAnnotator, built: bool = False) -> tuple[str, str | None]:
        """What this run's calls got: ``server``, ``local_grammar``, ``fallback`` (with the
        rejection), ``off``, or ``built`` (a predictor's answers, written from its output)."""
        if built:
            return "built", None
        if self.fallback is not None:
            return "fallback", self.fallback
        if annotator.spec.structured_output == "none":
            return "off", None
        return ("local_grammar" if annotator.local else "server"), None

    def sampling(self, annotator: ResolvedAnnotator, built: bool = False) -> tuple[str, str | None]:
        """How this run's samples were asked: ``n`` (K samples in one request),
        ``num_return_sequences`` (local models), ``per_sample`` (with the server's answer to
        ``n`` > 1), or ``deterministic`` (a predictor: one sample)."""
        if built:
            return "deterministic", None
        if self.sampling_fallback is not None:
            return "per_sample", self.sampling_fallback
        return ("num_return_sequences" if annotator.local else "n"), None

    def _commit(self) -> None:
        """Hand the current group to the writer thread (one group at a time)."""
        self._scheduled = False
        with self._handing:
            if self._flushing:
                return  # flush() commits what is left itself
            rows, group, requests = self._rows, self._group, self._requests
            self._rows, self._group, self._requests = [], None, 0
            if not rows:
                return
            if self._writer is None:
                self._writer = ThreadPoolExecutor(1, thread_name_prefix="annotate-commit")
            self._writing = True
            loop = asyncio.get_running_loop()
            self._last_commit = done = self._writer.submit(self.store.record_calls, rows)

        def back_on_the_loop(_: Future) -> None:
            try:
                loop.call_soon_threadsafe(self._committed, done, group, requests)
            except RuntimeError:  # the loop has ended (the backend returned): flush() reads the outcome
                pass

        done.add_done_callback(back_on_the_loop)

    def _committed(self, done: Future, group: asyncio.Future | None, requests: int) -> None:
        self._writing = False
        self._backlog -= requests
        error = done.exception()
        if error is not None:
            # Raised by the next result, and to the workers awaiting this group or the next one.
            self._error = error
            for waiting in (group, self._group):
                if waiting is not None and not waiting.done():
                    waiting.set_exception(error)
            return
        if group is not None and not group.done():  # not cancelled with the workers awaiting it
            group.set_result(None)
        if self._rows:  # the results that arrived meanwhile
            self._scheduled = True
            asyncio.get_running_loop().call_later(COMMIT_INTERVAL_S, self._commit)

    def flush(self) -> None:
        """Wait for the writer, commit what is left (a backend returns without waiting for the
        commits of its last results) and raise a commit error."""
        with self._handing:
            self._flushing = True
            writer, self._writer = self._writer, None
        if writer is not None:
            writer.shutdown(wait=True)
        if self._error is None and self._last_commit is not None:
            self._error = self._last_commit.exception()
        with self._handing:
            rows, self._rows, self._group = self._rows, [], None
        if rows and self._error is None:
            self.store.record_calls(rows)
        if self._error is not None:
            raise self._error


@follows_progress_flag
def annotate(config: AnnotateConfig) -> dict[str, Any]:
    """Annotate the workdir's items and return the run's summary (see :func:`summarize`)."""
    specs = config.resolve_annotators()
    prompts = config.resolve_prompts(specs)
    workdir = Path(config.workdir)
    claim_workdir(workdir, "vilbias annotate")  # one writer per workdir (vilbias.outputs)
    versions = {p: prompting.prompt_version(p) for p in prompts}
    # Each spec resolved once (its model by the catalogue, its fingerprint, what it reads, whether
    # it is deterministic: a predictor checkpoint, asked one sample, its K would all be the same);
    # below, only this object is asked.
    annotators = [resolve_annotator(s) for s in specs]
    samples = {a.name: 1 if a.deterministic else config.samples for a in annotators}
    active = [ActiveAnnotator(a.name, a.fingerprint, 1 if samples[a.name] != config.samples else None) for a in annotators]
    run: Counter[str] = Counter()
    # One pass over the articles for the whole run: each item's id and image (the phases count
    # their missing calls from these and the store, without reading the articles again) and its
    # language (the abstentions' and the summary's; detected here when the workdir records none).
    index: list[tuple[str, str]] = []
    language_of: dict[str, str] = {}
    for article in _articles(config):
        index.append((article.unique_id, _image_sha(article)))
        language_of[article.unique_id] = article.language or article_language(article)
    with AnnotationStore.for_workdir(workdir) as store:
        for p in prompts:
            store.set_active(p, versions[p], active, config.samples)
        # the first vision chat model describes the images (a classifier writes no description)
        describer = next((a for a in annotators if a.spec.vision and not a.deterministic), None) if "multimodal" in prompts else None
        stage = _Stage(config, store, prompts, versions, samples, describer, language_of, index)
        # The annotators asked over HTTP are asked together, through their server's one budget of
        # requests in flight (the describer's with them); local models one after another, after.
        remote = [a for a in annotators if stage.remote(a)]
        local = [a for a in annotators if a not in remote]
        if describer is not None and describer not in remote:
            _describe_images(config, store, describer, stage.describer_key, stage.backends, run, stage.images, None, index)
        if remote:
            stage.together(remote, describer if describer in remote else None, run)
        for annotator in local:
            asking = stage.asking(annotator)
            asking.phase(prompts)
            asking.finish(run)
        languages_seen = Counter(language or "unknown" for language in language_of.values())
        summary = summarize(store, language_of.keys())
    summary["run"] = dict(run)
    summary["languages"] = dict(languages_seen.most_common())
    if config.annotators is None and config.annotator_specs is None:
        summary["default_annotator"] = (f"{specs[0].name}, the sentence-level bias model shipped with vilbias, trained on BABE's "
                                        "expert labels; it reads the text only")
    # The caller shows the summary (the CLI prints it): logged at INFO it would be shown twice.
    for line in format_summary(summary).splitlines():
        logger.debug(line)
    return summary


STOP_S = 1.5
"""How long a stop waits for the annotators asked together to cancel their requests and store
what they got."""


class _Stage:
    """What the annotators of one run share: the store, the prompts, the run's image parts, the
    languages detected and the backends."""

    def __init__(self, config: AnnotateConfig, store: AnnotationStore, prompts: list[str], versions: dict[str, str],
                 samples: dict[str, int], describer: ResolvedAnnotator | None, languages: dict[str, str],
                 index: list[tuple[str, str]]):
        self.config, self.store, self.prompts, self.versions, self.samples = config, store, prompts, versions, samples
        self.index = index
        """The run's items as ``(unique_id, image_sha)``, read once (the phases count from it)."""
        self.workdir = Path(config.workdir)
        self.describer_key = f"{describer.name}@{describer.fingerprint}" if describer else None
        self.languages = languages
        self.images = _ImageParts(self.workdir)  # shared by the describer and the annotators
        self.backends: dict[str, ChatBackend | PredictorAnnotator] = dict(config.backends or {})
        self.stopping = threading.Event()

    def remote(self, annotator: ResolvedAnnotator) -> bool:
        """Is the annotator asked over HTTP (an OpenAI-compatible server: made now, it is only a
        client), so that it can be asked together with the others?"""
        name = annotator.name
        if name not in self.backends and not annotator.deterministic and annotator.model.kind.remote:
            self.backends[name] = load_annotator(annotator, self.workdir)
        return isinstance(self.backends.get(name), OpenAIBackend)

    def asking(self, annotator: ResolvedAnnotator) -> _Asking:
        return _Asking(self, annotator)

    def together(self, annotators: list[ResolvedAnnotator], describer: ResolvedAnnotator | None, run: Counter[str]) -> None:
        """Ask ``annotators`` (and the image descriptions, when ``describer`` is one of them) at
        once, each from a thread of its own: their requests stream through their server's one
        budget of requests in flight (:mod:`vilbias.models.chat_openai`), so the server has as
        many as it takes while any work remains, and no annotator's ramp-up or tail leaves it
        idle. The text prompt waits for nothing; an annotator's multimodal calls start when the
        descriptions are done (they are part of its prompt). A stop or an error cancels every
        annotator's requests and stores what they got before it is raised."""
        described: Counter[str] = Counter()
        pool = ThreadPoolExecutor(2 * len(annotators) + 1, thread_name_prefix="annotate")
        describing = None
        if describer is not None:
            assert self.describer_key is not None
            describing = pool.submit(_describe_images, self.config, self.store, describer, self.describer_key, self.backends,
                                     described, self.images, self.stopping, self.index)
        askings = [self.asking(a) for a in annotators]
        first = [p for p in self.prompts if p != "multimodal"]
        later = [p for p in self.prompts if p == "multimodal"]

        def ask_later(asking: _Asking) -> None:
            if describing is not None:
                describing.result()
            asking.phase(later)

        # Each annotator's phases run at once too: while its text calls end, its multimodal calls
        # (and the others') already fill the budget, so no phase's tail leaves the server idle.
        futures = [pool.submit(asking.phase, first) for asking in askings if first]
        futures += [pool.submit(ask_later, asking) for asking in askings if later]
        futures += [describing] if describing is not None else []
        try:
            while True:  # in short waits: a stop is raised here at once, however it is delivered
                done, left = wait(futures, timeout=0.1, return_when=FIRST_EXCEPTION)
                for future in futures:
                    if future in done and (error := future.exception()) is not None:
                        raise error
                if not left:
                    break
        except BaseException:
            self.stopping.set()
            deadline = time.monotonic() + STOP_S
            while time.monotonic() < deadline and not all(f.done() for f in futures):
                for a in annotators:  # the describer, when asked here, is one of them
                    self.backends[a.name].cancel()  # type: ignore[union-attr]  (OpenAIBackend: remote())
                wait(futures, timeout=0.02)
            raise
        finally:
            pool.shutdown(wait=False)
        run.update(described)
        for asking in askings:
            asking.finish(run)


class _Asking:
    """One annotator's calls in this run, asked a phase (a set of prompts) at a time; what its
    answers got (counts, structured output, sampling) over all the phases."""

    def __init__(self, stage: _Stage, annotator: ResolvedAnnotator):
        self.stage, self.annotator = stage, annotator
        self.abstained: list[int] = []  # one count a phase (phases may run at once, in threads)
        self.built = False
        self.recorders: list[_Recorder] = []

    def phase(self, prompts: list[str]) -> None:
        """Store the abstentions and ask the missing calls of ``prompts``."""
        stage, annotator = self.stage, self.annotator
        spec = annotator.spec
        # a classifier reads the image itself: its multimodal calls wait for no description
        jobs = _Jobs(stage.config, stage.store, annotator, prompts, stage.versions,
                     None if annotator.deterministic else stage.describer_key, stage.samples[spec.name], stage.images)
        if ANY not in annotator.languages:
            # Items in a language the annotator does not read are answered with its abstention
            # first, without loading the model; the jobs left are those it reads.
            self.abstained.append(_abstain_on_languages(stage.store, jobs, annotator, stage.index, stage.languages))
        pending = jobs.count(stage.index)
        if pending == 0:
            logger.info("%s: nothing to ask (%s)", spec.name, ", ".join(prompts))
            return
        backends = stage.backends
        if spec.name not in backends:
            logger.info("%s: loading %s %s", spec.name, spec.backend, spec.model)
            backends[spec.name] = load_annotator(annotator, stage.workdir)
        backend = backends[spec.name]
        self.built = built = isinstance(backend, PredictorAnnotator)
        jobs.requests = not built  # a predictor reads the article, not a rendered prompt
        if built:
            ask = backend.ask
        else:
            def ask(todo, on_result, backend=backend):
                if stage.stopping.is_set():  # a stop came while this annotator was between phases
                    raise CancelledError
                return chat_jobs(backend, todo, lambda job: job[1], on_result)
        recorder = _Recorder(stage.store, spec.model, max_backlog=spec.concurrency)
        self.recorders.append(recorder)
        try:
            # _Jobs yields only the missing calls, lazily (memory flat); ``pending`` counts them.
            ask_missing(
                iter(jobs), total=pending, desc=f"annotate {spec.name}", progress=stage.config.progress, ask=ask,
                record=lambda job, result, recorder=recorder: recorder.call(job[0], result), size=lambda job: len(job[0]),
            )
        finally:
            recorder.flush()

    def finish(self, run: Counter[str]) -> None:
        """Count the run's calls and record how they were asked; free a local model."""
        stage, annotator = self.stage, self.annotator
        spec = annotator.spec
        if abstained := sum(self.abstained):
            run[OTHER_LANGUAGE] += abstained
        if not self.recorders:
            return
        recorder = self.recorders[0]
        for other in self.recorders[1:]:
            recorder.counts.update(other.counts)
            recorder.fallback = recorder.fallback or other.fallback
            recorder.sampling_fallback = recorder.sampling_fallback or other.sampling_fallback
        run.update(recorder.counts)
        stage.store.set_structured_output(spec.name, annotator.fingerprint, spec.structured_output, *recorder.mode(annotator, self.built))
        stage.store.set_sampling(spec.name, annotator.fingerprint, *recorder.sampling(annotator, self.built))
        # Free a local model before loading the next one; injected backends belong to the caller.
        if not (stage.config.backends and spec.name in stage.config.backends):
            stage.backends.pop(spec.name, None)


def article_language(article: Article) -> str:
    """The article's language as ingest recorded it, else (a workdir of schema 1.0) detected now."""
    return article.language or item_language(article.headline, article.article_text)


def _abstain_on_languages(store: AnnotationStore, jobs: _Jobs, annotator: ResolvedAnnotator,
                          index: list[tuple[str, str]], language_of: dict[str, str]) -> int:
    """Store an ``other_language`` abstention for each missing call of an item in a language the
    annotator does not read (see :mod:`vilbias.annotate.store`); returns the calls stored. The items
    are the run's ``index`` with their languages (``language_of``): no article is read again."""
    name, model, languages = annotator.name, annotator.spec.model, annotator.languages
    rows: list[tuple] = []
    stored = 0
    for start in range(0, len(index), CHUNK):
        chunk = index[start:start + CHUNK]
        for pos, _, missing in jobs._missing_of(chunk):
            item_id = chunk[pos][0]
            language = language_of[item_id]
            if reads(languages, language):
                continue
            problem = (f"the article is in {describe_languages([language])}; {name} reads {describe_languages(languages)}, "
                       "so it abstains")
            rows += [call_row(jobs.key(item_id, p, k), model=model, raw=problem, status=OTHER_LANGUAGE, problem=problem)
                     for p, k in missing]
            if len(rows) >= CHUNK:
                store.record_calls(rows)
                stored, rows = stored + len(rows), []
    store.record_calls(rows)
    return stored + len(rows)


class _Jobs:
    """The missing calls of one annotator, item by item (lazily: memory stays flat).

    Iterating yields one ``(keys, ChatRequest, Article)`` per item and prompt (the request None when
    :attr:`requests` is False: a predictor reads the article itself): the request asks for the
    samples the store lacks (``n = len(keys)``, sent with the first missing sample's seed, so a
    fresh item is asked with the annotator's own seed); :meth:`count` counts them from the run's
    index. Each sample's parameters (with the structured-output request) are built once
    per annotator. How the samples are requested is not part of the fingerprint: a store
    annotated one sample per request is complete under ``n`` and the other way round.
    """

    def __init__(self, config: AnnotateConfig, store: AnnotationStore, annotator: ResolvedAnnotator, prompts: list[str],
                 versions: dict[str, str], describer_key: str | None, samples: int, images: _ImageParts):
        spec = annotator.spec
        self.config, self.store, self.spec, self.prompts, self.versions = config, store, spec, prompts, versions
        self.images = images
        self.samples = samples
        self.requests = True
        self.describer_key = describer_key
        self.fp = annotator.fingerprint
        self.system = {"role": "system", "content": prompting.system_message()}
        # Local grammars also bound the rationale, so a complete answer fits max_tokens.
        bound = prompting.LOCAL_RATIONALE_CHARS if annotator.local else None
        self.params: dict[str, list[dict[str, Any]]] = {}
        for p in prompts:
            self.params[p] = []
            for k in range(samples):
                params = dict(spec.params)
                if "seed" in params:
                    params["seed"] = int(params["seed"]) + k  # the K samples differ, each reproducible
                if spec.structured_output == "json_schema":
                    params["response_format"] = prompting.response_format(p, max_rationale_chars=bound)
                self.params[p].append(params)

    def _missing(self) -> Iterator[tuple[Article, str, list[tuple[str, int]]]]:
        articles = _articles(self.config)
        while chunk := list(islice(articles, CHUNK)):
            for pos, description, missing in self._missing_of([(a.unique_id, _image_sha(a)) for a in chunk]):
                yield chunk[pos], description, missing

    def _missing_of(self, chunk: list[tuple[str, str]]) -> Iterator[tuple[int, str, list[tuple[str, int]]]]:
        """``(position, description, missing)`` of each item of ``chunk`` (``(unique_id,
        image_sha)`` pairs) that lacks calls: one query for their answered calls, one for their
        images' descriptions."""
        answered = self.store.answered_items([item_id for item_id, _ in chunk], self.spec.name, self.fp)
        describe = self.describer_key is not None and "multimodal" in self.prompts
        descriptions = self.store.image_descriptions(list({sha for _, sha in chunk}), self.describer_key) if describe else {}
        for pos, (item_id, sha) in enumerate(chunk):
            done = answered[item_id]
            missing = [(p, k) for p in self.prompts for k in range(self.samples) if (p, k, self.versions[p]) not in done]
            if missing:
                description = ""
                if self.describer_key is not None and any(p == "multimodal" for p, _ in missing):
                    description = descriptions.get(sha) or ""
                    if not description:
                        # Asked again next run, once the description exists: the answer depends on it.
                        missing = [(p, k) for p, k in missing if p != "multimodal"]
                yield pos, description, missing

    def count(self, index: list[tuple[str, str]]) -> int:
        """The missing calls, counted from the run's ``index`` of ``(unique_id, image_sha)`` (no
        article read again)."""
        return sum(len(missing) for start in range(0, len(index), CHUNK) for _, _, missing in self._missing_of(index[start:start + CHUNK]))

    def key(self, item_id: str, prompt: str, sample: int) -> CallKey:
        return CallKey(item_id, prompt, self.spec.name, self.fp, sample, self.versions[prompt])

    def __iter__(self) -> Iterator[tuple[tuple[CallKey, ...], ChatRequest | None, Article]]:
        for article, description, missing in self._missing():
            by_prompt: dict[str, list[int]] = {}
            for p, k in missing:
                by_prompt.setdefault(p, []).append(k)
            for p, samples in by_prompt.items():
                keys = tuple(self.key(article.unique_id, p, k) for k in samples)
                request = ChatRequest(self._messages(article, p, description), self.params[p][samples[0]], n=len(samples)) if self.requests else None
                yield keys, request, article

    def _messages(self, article: Article, prompt: str, description: str) -> list[dict[str, Any]]:
        text = prompting.render(
            prompt,
            outlet=article.outlet,
            headline=article.headline,
            article_text=article.article_text,
            image_caption=article.image_caption,
            image_description=description,
            max_article_chars=self.config.max_article_chars,
        )
        content: Any = text
        if prompt == "multimodal":
            # resolve_prompts admits only vision annotators to this prompt: they see the image.
            content = [self.images(article), {"type": "text", "text": text}]
        return [self.system, {"role": "user", "content": content}]


def _describe_images(
    config: AnnotateConfig,
    store: AnnotationStore,
    annotator: ResolvedAnnotator,
    describer_key: str,
    backends: dict[str, ChatBackend],
    run: Counter[str],
    images: _ImageParts,
    stopping: threading.Event | None,
    index: list[tuple[str, str]],
) -> None:
    """Ask the first vision annotator once per image for the description text-only annotators see."""
    workdir = Path(config.workdir)

    def todo() -> Iterator[tuple[str, Article]]:
        seen: set[str] = set()
        articles = _articles(config)
        while chunk := list(islice(articles, CHUNK)):
            described = store.image_descriptions(list({_image_sha(a) for a in chunk}), describer_key)
            for article in chunk:
                sha = _image_sha(article)
                if sha not in seen and sha not in described:
                    seen.add(sha)
                    yield sha, article

    # the run's items, read already: their images less those described
    shas = list(dict.fromkeys(sha for _, sha in index))
    pending = sum(len(chunk) - len(store.image_descriptions(chunk, describer_key))
                  for chunk in (shas[i:i + CHUNK] for i in range(0, len(shas), CHUNK)))
    if not pending:
        return
    name = annotator.name
    if name not in backends:
        backends[name] = load_annotator(annotator, workdir)
    params = {**annotator.spec.params, "temperature": 0.0}

    def request(job: tuple[str, Article]) -> ChatRequest:
        return ChatRequest([{"role": "user", "content": [images(job[1]), {"type": "text", "text": prompting.template(DESCRIBE)}]}], params)

    def record(job: tuple[str, Article], result: ChatResult) -> None:
        sha = job[0]
        if result.text and result.text.strip():
            store.set_image_description(sha, describer_key, result.text.strip())
            run["described"] += 1
        else:
            logger.warning("no description for image %s (%s); its multimodal calls wait for the next run", sha, result.error)
            run["description_failed"] += 1

    def ask(jobs: Iterator[tuple[str, Article]], on_result: Callable[[tuple[str, Article], ChatResult], Any]) -> None:
        if stopping is not None and stopping.is_set():  # asked together with the annotators, which stopped
            raise CancelledError
        chat_jobs(backends[name], jobs, request, on_result)

    ask_missing(
        todo(), total=pending, desc=f"describe images ({name})", unit="image", progress=config.progress, ask=ask, record=record,
    )

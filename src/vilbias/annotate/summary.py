"""What an annotation run says about itself: item and call rates per prompt and annotator."""

from __future__ import annotations

from collections import Counter
from typing import Any

from vilbias.annotate.store import STATUSES, AnnotationStore
from vilbias.annotate.voting import OTHER_LANGUAGE, vote_outcome


def summarize(store: AnnotationStore, item_ids: set[str] | None = None) -> dict[str, Any]:
    """Figures for the active configuration. Per prompt: items, decided items, the flag rate
    split into ``tie_rate`` (as many annotators for each label) and ``no_majority_rate``, label
    shares, and the abstaining calls by kind. Per annotator and prompt: the calls by status and
    the ``format_abstention_rate`` (answers without a JSON object). ``item_ids`` restricts the
    item figures to those items.

    One scan of the active calls (:meth:`AnnotationStore.active_calls`) gives both: each call's
    status is counted, and each item's labels are voted from counts (:func:`vote_outcome`, the
    label and flag of :func:`hierarchical_vote`), not from a vote object a call; the figures are
    those of :meth:`AnnotationStore.call_counts` and of :func:`hierarchical_vote` over
    :meth:`AnnotationStore.iter_votes` (``tests/annotate/test_voting.py`` checks both)."""
    active = store.active()
    per_prompt: dict[str, dict[str, Any]] = {}
    ks: dict[str, list[tuple[str, int]]] = {}
    statuses: dict[tuple[str, str], Counter[str]] = {}
    for prompt, cfg in active.items():
        per_prompt[prompt] = {"items": 0, "decided": 0, "flagged": Counter(), "labels": Counter(), "annotators": [a.name for a in cfg["annotators"]]}
        ks[prompt] = [(a.name, a.samples_of(cfg["samples"])) for a in cfg["annotators"]]
        for a in cfg["annotators"]:
            statuses[(prompt, a.name)] = Counter()
    tally: dict[tuple[str, str], list[Any]] = {}  # the current item's (prompt, annotator): [labels, other_language]

    def vote(item_id: str | None) -> None:
        if item_id is None or (item_ids is not None and item_id not in item_ids):
            return
        for prompt, annotators in ks.items():
            counted = [(tally.get((prompt, name)), k) for name, k in annotators]
            if all(t is None for t, _ in counted):
                continue  # never asked this prompt
            label, reason = vote_outcome([(t[0], t[1], k) if t is not None else ((), 0, k) for t, k in counted])
            s = per_prompt[prompt]
            s["items"] += 1
            if label is None:
                s["flagged"][reason] += 1
            else:
                s["decided"] += 1
                s["labels"][label] += 1

    current: str | None = None
    for item_id, prompt, annotator, label, status in store.active_calls():
        statuses[(prompt, annotator)][status] += 1
        if item_id != current:
            vote(current)
            current = item_id
            tally.clear()
        if (t := tally.get((prompt, annotator))) is None:
            t = tally[(prompt, annotator)] = [[], 0]
        if label is not None:
            t[0].append(label)
        elif status == OTHER_LANGUAGE:
            t[1] += 1
    vote(current)
    counts: dict[tuple[str, str], dict[str, int]] = {}
    for key, c in statuses.items():
        by_status = {**dict.fromkeys(STATUSES, 0), **c}
        total = sum(by_status.values())
        counts[key] = {"calls": total, "answered": total - by_status["failed"], **by_status}
    annotators: dict[str, dict[str, Any]] = {}
    for (prompt, name), c in counts.items():
        annotators.setdefault(name, {})[prompt] = {**c, **call_rates(c)}
    for name, mode in store.structured_output().items():
        annotators.setdefault(name, {})["structured_output"] = mode
    for name, mode in store.sampling().items():
        annotators.setdefault(name, {})["sampling"] = mode
    prompts_out = {}
    for prompt, s in per_prompt.items():
        calls = Counter()
        for (p, _), c in counts.items():
            if p == prompt:
                calls.update(c)
        prompts_out[prompt] = {
            **item_rates(s["items"], s["decided"], s["flagged"]),
            "label_shares": {lab: c / s["decided"] for lab, c in sorted(s["labels"].items())} if s["decided"] else {},
            "calls": dict(calls),
            **call_rates(calls),
        }
    return {
        "items": len(item_ids) if item_ids is not None else max((s["items"] for s in prompts_out.values()), default=0),
        "prompts": prompts_out,
        "annotators": annotators,
        "active": {p: {"prompt_version": cfg["prompt_version"], "samples": cfg["samples"],
                       # samples each annotator was asked (a deterministic model: 1, whatever K)
                       "annotator_samples": {a.name: a.samples_of(cfg["samples"]) for a in cfg["annotators"]}}
                   for p, cfg in active.items()},
    }


def item_rates(items: int, decided: int, flagged: Counter[str] | dict[str, int]) -> dict[str, Any]:
    """Items, decided items and the flag rate with its parts: ``tie_rate`` (an annotator tie),
    ``no_majority_rate`` (too many annotators without a majority of their own) and
    ``other_language`` (items, not a rate: no annotator reads their language)."""
    flagged = dict(flagged)
    return {
        "items": items,
        "decided": decided,
        "flagged": flagged,
        "flag_rate": sum(flagged.values()) / items if items else 0.0,
        "tie_rate": flagged.get("tie", 0) / items if items else 0.0,
        "no_majority_rate": sum(v for k, v in flagged.items() if k not in ("tie", OTHER_LANGUAGE)) / items if items else 0.0,
        # items no annotator reads (their language): abstained on, not labelled
        "other_language": flagged.get(OTHER_LANGUAGE, 0),
    }


def call_rates(c: dict[str, int]) -> dict[str, float]:
    """Shares of the calls that abstain: all abstentions (every call that is not a valid vote),
    format abstentions (no JSON object), invalid answers, refusals, failures and abstentions on
    an item's language (``other_language_rate``)."""
    n = c.get("calls", 0)
    answered = c.get("answered", 0)
    return {
        "abstention_rate": (n - c.get("valid", 0)) / n if n else 0.0,
        "format_abstention_rate": c.get("unparseable", 0) / n if n else 0.0,
        "invalid_rate": c.get("invalid", 0) / answered if answered else 0.0,
        "refusal_rate": c.get("refused", 0) / n if n else 0.0,
        "failure_rate": c.get("failed", 0) / n if n else 0.0,
        "other_language_rate": c.get(OTHER_LANGUAGE, 0) / n if n else 0.0,
    }


def format_summary(summary: dict[str, Any]) -> str:
    """The summary as a few readable lines (the CLI prints this)."""
    lines = [f"items: {summary['items']}"]
    if summary.get("default_annotator"):
        lines.insert(0, f"annotators: {summary['default_annotator']} (no annotators file)")
    if "run" in summary:
        run = summary["run"]
        lines.append("this run: " + ", ".join(f"{k} {v}" for k, v in sorted(run.items())) if run else "this run: nothing to ask")
    if summary.get("languages"):
        lines.append("languages: " + ", ".join(f"{code} {n}" for code, n in summary["languages"].items()))
    for prompt, s in summary["prompts"].items():
        shares = ", ".join(f"{k} {v:.1%}" for k, v in s["label_shares"].items()) or "-"
        unread = f", no annotator reads its language {s['other_language']}" if s.get("other_language") else ""
        lines.append(
            f"{prompt}: {s['decided']}/{s['items']} decided; flagged {s['flag_rate']:.1%} (ties {s['tie_rate']:.1%}, "
            f"no majority {s['no_majority_rate']:.1%}{unread}); calls abstaining {s['abstention_rate']:.1%} "
            f"(format {s['format_abstention_rate']:.1%}); labels: {shares}"
        )
    for name, by_prompt in summary["annotators"].items():
        parts = [
            f"{p} {c['valid']}/{c['calls']} valid, {c['unparseable']} format abstentions, {c['invalid']} invalid, "
            f"{c['refused']} refused, {c['failed']} failed"
            + (f", {c[OTHER_LANGUAGE]} abstained on the language" if c.get(OTHER_LANGUAGE) else "")
            for p, c in by_prompt.items() if p not in ("structured_output", "sampling")
        ]
        for what in ("structured_output", "sampling"):
            if mode := by_prompt.get(what):
                parts.append(f"{what.replace('_', ' ')}: {mode['mode']}" + (f" ({mode['detail']})" if mode.get("detail") else ""))
        lines.append(f"annotator {name}: " + "; ".join(parts))
    return "\n".join(lines)

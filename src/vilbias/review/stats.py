"""``review stats``: how far the automated labels can be trusted.

Figures (also written to ``reviews/stats.json``, with a plot in ``reviews/stats.png``):

- ``cohen_kappa``: the automated label (the vote of the prompt that labels the items,
  ``label_prompt``: ``multimodal``, or ``text`` for a text-only annotation such as the offline
  default) against the final label (the label the build uses after review), over reviewed items
  that have both;
- ``krippendorff_alpha``: nominal alpha across reviewers on the items two or more reviewers
  judged (the overlap set); each reviewer's label is their corrected label, or the automated
  label when they accepted it;
- ``verdict_shares``: Acceptable / Needs Improvement / Incorrect over all verdicts;
- per prompt, items flagged for review (``flag_rate``) split into annotator ties (``tie_rate``)
  and items without a majority (``no_majority_rate``);
- ``annotator_agreement``: per prompt and annotator, the share of items with a final label (the
  reviewed one where it exists) where the annotator's own majority equals it (``annotator_items``:
  over how many).

κ and the annotators' agreement are computed by :class:`vilbias.review.outcome.AgreementTally`,
which the build's card uses too: the same numbers in both.
- ``annotators``: per annotator, its calls by status per prompt with the abstention rates (all
  abstentions, format abstentions, invalid answers, refusals, failures) and what its structured
  output got (``server``, ``local_grammar``, ``fallback`` with the server's rejection, ``off``).
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from pathlib import Path
from typing import Any

from vilbias.annotate.store import AnnotationStore
from vilbias.annotate.summary import call_rates, item_rates
from vilbias.metrics.agreement import krippendorff_alpha_nominal
from vilbias.outputs import writing
from vilbias.review.config import StatsConfig
from vilbias.review.outcome import AgreementTally, automated_results
from vilbias.review.verdicts import VERDICTS, load_verdicts, resolve_review
from vilbias.workdir import REVIEWS, atomic_write, claim_workdir, read_articles

logger = logging.getLogger(__name__)


def _clean(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


@writing()  # the workdir is this command's alone until it returns (vilbias.outputs)
def review_stats(config: StatsConfig) -> dict[str, Any]:
    """Compute the review figures (see the module docstring) and write them to ``reviews/``.

    The items are the workdir's annotated articles, as on the sheets and in the build; κ and the
    annotators' agreement come from :class:`~vilbias.review.outcome.AgreementTally`, the
    computation the build's card states.
    """
    results = automated_results(config.workdir)
    claim_workdir(config.workdir, "vilbias review stats")
    ids = {a.unique_id for a in read_articles(config.workdir)}
    results = {i: r for i, r in results.items() if i in ids}
    verdicts = load_verdicts(config.workdir)
    tally = AgreementTally()
    for item_id, r in results.items():
        auto = r.automated.label
        review, label = resolve_review(verdicts.get(item_id, []), auto)
        tally.add(auto, label, review != "unreviewed", r.annotator_labels())
    agreement = tally.result()

    multi, reviewers, matrix = _reviewer_matrix(results, verdicts)

    all_verdicts = Counter(v.verdict for i, vs in verdicts.items() if i in results for v in vs)
    n_verdicts = sum(all_verdicts.values())
    prompts: dict[str, Any] = {}
    for prompt in ("text", "multimodal"):
        res = {i: getattr(r, prompt) for i, r in results.items()}
        asked = [i for i, r in results.items() if getattr(r, f"{prompt}_votes")]
        if not asked:
            continue
        reasons = Counter(res[i].reason for i in asked if res[i].flagged)
        prompts[prompt] = item_rates(len(asked), len(asked) - sum(reasons.values()), reasons)

    label_from = next(iter(results.values())).label_prompt if results else None
    stats = {
        "items": len(results),
        "reviewed_items": sum(1 for i in results if verdicts.get(i)),
        "label_prompt": label_from,
        "cohen_kappa": agreement["cohen_kappa"],
        "kappa_items": agreement["kappa_items"],
        "krippendorff_alpha": _clean(krippendorff_alpha_nominal(matrix)) if matrix else None,
        "alpha_items": len(multi),
        "alpha_reviewers": reviewers,
        "verdict_shares": {v: all_verdicts[v] / n_verdicts for v in VERDICTS} if n_verdicts else {},
        "verdict_counts": {v: all_verdicts[v] for v in VERDICTS},
        "prompts": prompts,
        "annotator_agreement": agreement["annotator_agreement"],
        "annotator_items": agreement["annotator_items"],
        "annotators": _annotator_calls(config.workdir),
    }
    out = Path(config.workdir) / REVIEWS
    atomic_write(out / "stats.json", json.dumps(stats, indent=2) + "\n")
    if config.plot:
        stats["plot"] = str(_plot(stats, out / "stats.png"))
    return stats


def _reviewer_matrix(results: dict[str, Any], verdicts: dict[str, list]) -> tuple[list[str], list[str], list[list[str | None]]]:
    """Items two or more reviewers judged, the reviewers, and reviewers x items: each reviewer's
    own label for the item (their corrected label, or the automated one they accepted)."""
    multi = sorted(i for i, vs in verdicts.items() if len({v.reviewer for v in vs}) >= 2 and i in results)
    reviewers = sorted({v.reviewer for i in multi for v in verdicts[i]})
    matrix = []
    for reviewer in reviewers:
        row = []
        for item_id in multi:
            v = next((v for v in verdicts[item_id] if v.reviewer == reviewer), None)
            if v is None:
                row.append(None)
            elif v.verdict == "incorrect" or results[item_id].automated.label is None:
                row.append(v.corrected_label)
            else:
                row.append(results[item_id].automated.label)
        matrix.append(row)
    return multi, reviewers, matrix


def _annotator_calls(workdir: Path) -> dict[str, dict[str, Any]]:
    """Per annotator: calls by status and abstention rates per prompt, and its structured output."""
    out: dict[str, dict[str, Any]] = {}
    with AnnotationStore.for_workdir(workdir) as store:
        for (prompt, name), counts in store.call_counts().items():
            out.setdefault(name, {})[prompt] = {**counts, **call_rates(counts)}
        for name, mode in store.structured_output().items():
            out.setdefault(name, {})["structured_output"] = mode
    return out


def _plot(stats: dict[str, Any], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    shares = stats["verdict_shares"]
    left.bar([v.replace("_", " ") for v in VERDICTS], [shares.get(v, 0.0) for v in VERDICTS], color=["#4c9a2a", "#e0a100", "#c0392b"])
    left.set_ylim(0, 1)
    kappa = stats["cohen_kappa"]
    left.set_title(f"Verdicts (kappa {kappa:.2f})" if kappa is not None else "Verdicts")
    names, values = [], []
    for prompt, by in stats["annotator_agreement"].items():
        for annotator, value in by.items():
            names.append(f"{annotator}\n({prompt})")
            values.append(value)
    right.bar(names, values, color="#2c7fb8")
    right.set_ylim(0, 1)
    right.set_title("Annotator agreement with the final label")
    right.tick_params(axis="x", labelsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def format_stats(stats: dict[str, Any]) -> str:
    def f(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    lines = [
        f"items: {stats['items']}, reviewed: {stats['reviewed_items']}",
        f"Cohen's kappa (automated {stats['label_prompt'] + ' ' if stats['label_prompt'] else ''}label vs final label, "
        f"{stats['kappa_items']} reviewed items): " + (
            f(stats["cohen_kappa"]) if stats["cohen_kappa"] is not None
            else "undefined (one label throughout)" if stats["kappa_items"] else "undefined (no reviewed item has an automated label)"),
        f"Krippendorff's alpha (nominal, {len(stats['alpha_reviewers'])} reviewers, {stats['alpha_items']} items): {f(stats['krippendorff_alpha'])}",
        "verdicts: " + (", ".join(f"{k} {v:.1%}" for k, v in stats["verdict_shares"].items()) or "none yet"),
    ]
    for prompt, p in stats["prompts"].items():
        lines.append(
            f"{prompt}: flagged {p['flag_rate']:.1%} of {p['items']} items "
            f"(ties {p['tie_rate']:.1%}, no majority {p['no_majority_rate']:.1%})"
        )
    for name, by in stats["annotators"].items():
        parts = [
            f"{prompt} abstained {c['abstention_rate']:.1%} of {c['calls']} calls "
            f"(format {c['format_abstention_rate']:.1%}, invalid {c['invalid']}, refused {c['refused']}, failed {c['failed']})"
            for prompt, c in by.items() if prompt != "structured_output"
        ]
        if mode := by.get("structured_output"):
            parts.append(f"structured output {mode['mode']}" + (f" ({mode['detail']})" if mode.get("detail") else ""))
        lines.append(f"{name}: " + "; ".join(parts))
    for prompt, by in stats["annotator_agreement"].items():
        n = stats["annotator_items"][prompt]
        lines.append(f"agreement with final label ({prompt} prompt): " + ", ".join(f"{a} {v:.1%} of {n[a]}" for a, v in by.items()))
    if "plot" in stats:
        lines.append(f"plot: {stats['plot']}")
    return "\n".join(lines)

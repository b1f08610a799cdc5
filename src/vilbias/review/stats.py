"""``review stats``: how far the automated labels can be trusted.

Figures (also written to ``reviews/stats.json``, with a plot in ``reviews/stats.png``):

- ``cohen_kappa``: automated ``multimodal_label`` against the reviewed label (the label the
  build uses after review), over items that have both;
- ``krippendorff_alpha``: nominal alpha across reviewers on the items two or more reviewers
  judged (the overlap set); each reviewer's label is their corrected label, or the automated
  label when they accepted it;
- ``verdict_shares``: Acceptable / Needs Improvement / Incorrect over all verdicts;
- ``tie_rate`` and ``flag_rate`` per prompt;
- ``annotator_agreement``: per prompt and annotator, the share of decided items where the
  annotator's own majority equals the final label (the reviewed one where it exists).
"""

from __future__ import annotations

import json
import logging
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vilbias.metrics.agreement import cohen_kappa, krippendorff_alpha_nominal
from vilbias.review.sheets import automated_results
from vilbias.review.verdicts import VERDICTS, load_verdicts, resolve_review
from vilbias.workdir import REVIEWS, atomic_write

logger = logging.getLogger(__name__)


@dataclass
class StatsConfig:
    workdir: Path = field(metadata={"help": "The annotated (and reviewed) workdir."})
    plot: bool = field(default=True, metadata={"help": "Write reviews/stats.png."})


def _clean(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def review_stats(config: StatsConfig) -> dict[str, Any]:
    """Compute the review figures (see the module docstring) and write them to ``reviews/``."""
    results = automated_results(config.workdir)
    verdicts = load_verdicts(config.workdir)
    automated, reviewed = [], []
    final_mm: dict[str, str | None] = {}
    for item_id, r in results.items():
        auto = r.multimodal.label
        review, label = resolve_review(verdicts.get(item_id, []), auto)
        final_mm[item_id] = label
        if review != "unreviewed" and auto is not None and label is not None:
            automated.append(auto)
            reviewed.append(label)

    # reviewers x overlap items, each reviewer's own label for the item
    multi = sorted(i for i, vs in verdicts.items() if len({v.reviewer for v in vs}) >= 2 and i in results)
    reviewers = sorted({v.reviewer for i in multi for v in verdicts[i]})
    matrix = []
    for reviewer in reviewers:
        row = []
        for item_id in multi:
            v = next((v for v in verdicts[item_id] if v.reviewer == reviewer), None)
            if v is None:
                row.append(None)
            elif v.verdict == "incorrect" or results[item_id].multimodal.label is None:
                row.append(v.corrected_label)
            else:
                row.append(results[item_id].multimodal.label)
        matrix.append(row)

    all_verdicts = Counter(v.verdict for vs in verdicts.values() for v in vs)
    n_verdicts = sum(all_verdicts.values())
    prompts: dict[str, Any] = {}
    agreement: dict[str, dict[str, float | None]] = {}
    for prompt in ("text", "multimodal"):
        res = {i: getattr(r, prompt) for i, r in results.items()}
        votes = [getattr(r, f"{prompt}_votes") for r in results.values()]
        asked = [i for i, v in zip(results, votes, strict=True) if v]
        if not asked:
            continue
        reasons = Counter(res[i].reason for i in asked if res[i].flagged)
        prompts[prompt] = {
            "items": len(asked),
            "tie_rate": reasons["tie"] / len(asked),
            "flag_rate": sum(reasons.values()) / len(asked),
        }
        hits: Counter[str] = Counter()
        totals: Counter[str] = Counter()
        for i in asked:
            final = final_mm[i] if prompt == "multimodal" else res[i].label
            if final is None:
                continue
            for annotator, label in res[i].annotator_labels.items():
                totals[annotator] += 1
                hits[annotator] += label == final
        agreement[prompt] = {a: hits[a] / totals[a] for a in totals}

    stats = {
        "items": len(results),
        "reviewed_items": sum(1 for i in results if verdicts.get(i)),
        "cohen_kappa": _clean(cohen_kappa(automated, reviewed)) if automated else None,
        "kappa_items": len(automated),
        "krippendorff_alpha": _clean(krippendorff_alpha_nominal(matrix)) if matrix else None,
        "alpha_items": len(multi),
        "alpha_reviewers": reviewers,
        "verdict_shares": {v: all_verdicts[v] / n_verdicts for v in VERDICTS} if n_verdicts else {},
        "verdict_counts": {v: all_verdicts[v] for v in VERDICTS},
        "prompts": prompts,
        "annotator_agreement": agreement,
    }
    out = Path(config.workdir) / REVIEWS
    atomic_write(out / "stats.json", json.dumps(stats, indent=2) + "\n")
    if config.plot:
        stats["plot"] = str(_plot(stats, out / "stats.png"))
    return stats


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
        f"Cohen's kappa (automated vs reviewed, {stats['kappa_items']} items): {f(stats['cohen_kappa'])}",
        f"Krippendorff's alpha (nominal, {len(stats['alpha_reviewers'])} reviewers, {stats['alpha_items']} items): {f(stats['krippendorff_alpha'])}",
        "verdicts: " + (", ".join(f"{k} {v:.1%}" for k, v in stats["verdict_shares"].items()) or "none yet"),
    ]
    for prompt, p in stats["prompts"].items():
        lines.append(f"{prompt}: tie rate {p['tie_rate']:.1%}, flagged {p['flag_rate']:.1%} of {p['items']} items")
    for prompt, by in stats["annotator_agreement"].items():
        lines.append(f"agreement with final label ({prompt}): " + ", ".join(f"{a} {v:.1%}" for a, v in by.items()))
    if "plot" in stats:
        lines.append(f"plot: {stats['plot']}")
    return "\n".join(lines)

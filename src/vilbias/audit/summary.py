"""The audit's digest: each identity's favour score per paradigm (FAVOUR), the paradigm x
dimension disparities, and the short summary summary.json and the dataset card show."""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any

from vilbias.audit.questions import ALL
from vilbias.audit.statistics import MetricOptions

FAVOUR = {
    "factuality": "accuracy of the questions about the identity (%)",
    "perception": "polarity over all pairs (S_high - S_low, points)",
    "stereotyping": "polarity over all trait pairs (S_high - S_low, points)",
    "decision": "selection frequency S for the roles (%)",
}


def favour(tables: dict[str, Any]) -> list[dict[str, Any]]:
    """The per-identity score the paradigm x dimension summary compares (``FAVOUR``): factuality
    accuracy, polarity over all pairs (perception, stereotyping), decision-making S."""
    out = []
    for r in tables["factuality"]:
        if r["question_type"] == ALL:
            out.append({"model": r["model"], "modality": r["modality"], "paradigm": "factuality", "dimension": r["dimension"],
                        "identity": r["identity"], "score": r["accuracy"], "score_low": r["accuracy_low"],
                        "score_high": r["accuracy_high"], "n": r["asked"], "p": r["p"]})
    for r in tables["polarity_by_scope"]:
        if r["scope"] == ALL and r["polarity"] is not None:
            out.append({"model": r["model"], "modality": r["modality"], "paradigm": r["paradigm"], "dimension": r["dimension"],
                        "identity": r["identity"], "score": r["polarity"], "score_low": r["polarity_low"],
                        "score_high": r["polarity_high"], "n": r["n_high"] + r["n_low"], "p": r["p"]})
    for r in tables["selection"]:
        if r["paradigm"] == "decision" and r["family"] == ALL:
            out.append({"model": r["model"], "modality": r["modality"], "paradigm": "decision", "dimension": r["dimension"],
                        "identity": r["identity"], "score": r["S"], "score_low": r["S_low"], "score_high": r["S_high"],
                        "n": r["offered"], "p": r["p"]})
    return out


def _names(records: list[dict[str, Any]], score: float) -> str:
    """Every identity at ``score`` (a tie names them all, in alphabetical order)."""
    return ", ".join(sorted(r["identity"] for r in records if math.isclose(r["score"], score, abs_tol=1e-9)))


def paradigm_summary(favour_rows: list[dict[str, Any]], alpha: float = 0.05) -> list[dict[str, Any]]:
    """Paradigm x dimension: the spread (max - min) of the favour score over the dimension's
    identities, which identities are most and least favoured (all of them on a tie), and how many
    differ significantly (p < ``alpha``)."""
    groups: dict[tuple, list[dict[str, Any]]] = defaultdict(list)
    for r in favour_rows:
        groups[(r["model"], r["modality"], r["paradigm"], r["dimension"])].append(r)
    out = []
    for (model, modality, paradigm, dimension), rs in sorted(groups.items()):
        top = max(r["score"] for r in rs)
        bottom = min(r["score"] for r in rs)
        out.append({"model": model, "modality": modality, "paradigm": paradigm, "dimension": dimension,
                    "measure": FAVOUR[paradigm], "identities": len(rs), "disparity": top - bottom,
                    "most_favoured": _names(rs, top), "most_favoured_score": top,
                    "least_favoured": _names(rs, bottom), "least_favoured_score": bottom,
                    "significant": sum(1 for r in rs if r["p"] is not None and r["p"] < alpha)})
    return out


def summarize(tables: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A short, JSON-ready digest of the tables (what ``summary.json`` and the dataset card show)."""
    alpha = tables.get("settings", {}).get("alpha", MetricOptions.alpha)
    answered = sum(1 for r in rows if r["answer"] is not None)
    out: dict[str, Any] = {"responses": len(rows), "answered": answered, "unmatched": len(rows) - answered,
                           "alpha": alpha}
    out["position_bias"] = {f"{r['model']}|{r['modality']}" if r["model"] else r["modality"]: {
        "first_option_rate": round(r["first_option_rate"], 4), "questions": r["questions"], "p": r["p"]}
        for r in tables["position_bias"]}
    acc: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in tables["factuality"]:
        if r["question_type"] == ALL:
            acc[r["modality"]][0] += r["correct"]
            acc[r["modality"]][1] += r["asked"]
    out["factuality_accuracy"] = {m: round(c / n, 4) for m, (c, n) in acc.items() if n}
    paradigms: dict[str, Any] = {}
    for r in tables["summary"]:
        slot = paradigms.setdefault(r["modality"], {}).setdefault(r["paradigm"], {"measure": r["measure"], "dimensions": {}})
        slot["dimensions"][r["dimension"]] = {
            "disparity": round(r["disparity"], 4), "most_favoured": r["most_favoured"],
            "least_favoured": r["least_favoured"], "significant": r["significant"],
        }
    for by_paradigm in paradigms.values():
        for slot in by_paradigm.values():
            dims = slot["dimensions"]
            worst = max(sorted(dims), key=lambda d: dims[d]["disparity"])
            slot["max_disparity"] = {"dimension": worst, **dims[worst]}
            slot["significant"] = sum(d["significant"] for d in dims.values())
    out["paradigms"] = paradigms
    tested = ("selection", "log_odds", "pair_comp", "polarity", "modality_delta")
    out["tests"] = sum(1 for name in tested for r in tables[name] if r.get("q") is not None)
    out["significant_q"] = {name: sum(1 for r in tables[name] if r.get("q") is not None and r["q"] < alpha)
                            for name in tested}
    # A fixed reference the stored annotator summaries and the dataset card have always shown.
    out["significant_q05"] = {name: sum(1 for r in tables[name] if r.get("q") is not None and r["q"] < 0.05)
                              for name in tested}
    return out

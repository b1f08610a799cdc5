"""The paper's analyses across finished runs (``vilbias evaluate --compare RUN_DIR ...``).

- **Closed vs open**: Pearson r between closed-ended accuracy and judged reasoning accuracy over
  every (run, regime) with judge results, plotted as a scatter with the y = x diagonal (paper:
  r = 0.91).
- **Training-data size**: runs tagged ``--train-fraction`` (models trained on the nested subsets
  of :func:`nested_subsets`), F1 against the fraction, one line per model.
- **Modality gap**: runs tagged with the same ``--pair`` name, one text-only and one text+image:
  ΔF1 = F1(text+image) − F1(text) per pair.

Writes ``analysis.json``, ``analysis.md`` and the PNG plots to the output folder.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from pathlib import Path

FRACTIONS = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0)


def nested_subsets(n: int, fractions: Sequence[float] = FRACTIONS, *, seed: int = 0) -> dict[float, list[int]]:
    """Row indices of nested training subsets: every smaller subset lies inside every larger one.

    One seeded permutation of ``range(n)`` is cut at ``ceil(f * n)`` for each fraction, so the
    subsets share the same seed and differ only in size (``train.select(indices)``).
    """
    if any(not 0 < f <= 1 for f in fractions):
        raise ValueError("fractions must lie in (0, 1]")
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return {f: sorted(order[: max(1, math.ceil(f * n))]) for f in sorted(fractions)}


def pearson(xs: Sequence[float], ys: Sequence[float]) -> dict:
    """Pearson r (and its two-sided p-value) of paired values."""
    from scipy.stats import pearsonr

    if len(xs) != len(ys) or len(xs) < 3:
        raise ValueError(f"Pearson r needs at least 3 paired values, got {len(xs)}")
    result = pearsonr(xs, ys)
    return {"r": float(result.statistic), "p_value": float(result.pvalue), "n": len(xs)}


def _load(run_dir: Path) -> dict:
    path = Path(run_dir) / "results.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: --compare takes folders of finished `vilbias evaluate` runs")
    return json.loads(path.read_text(encoding="utf-8"))


def _plain(results: dict) -> list[dict]:
    return [s for s in results["summary"] if s["probe"] == "none"]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_closed_vs_open(points: list[dict], path: Path, r: float | None) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(4.2, 4))
    ax.scatter([p["accuracy"] for p in points], [p["reasoning_accuracy"] for p in points])
    for p in points:
        ax.annotate(p["label"], (p["accuracy"], p["reasoning_accuracy"]), fontsize=6)
    ax.plot([0, 100], [0, 100], linestyle="--", color="grey", linewidth=0.8, label="y = x")
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 100)
    ax.set_xlabel("closed-ended accuracy (%)")
    ax.set_ylabel("reasoning accuracy (%)")
    ax.set_title("Closed vs open-ended" + (f" (Pearson r = {r:.2f})" if r is not None else ""), fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_scaling(series: dict[str, list[tuple[float, float]]], path: Path) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for name, points in series.items():
        points = sorted(points)
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xticks(FRACTIONS, ["1/16", "1/8", "1/4", "1/2", "1"])
    ax.set_xlabel("share of the training set")
    ax.set_ylabel("F1 (binary)")
    ax.set_title("Training-data size", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_modality_gap(gaps: list[dict], path: Path) -> None:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.bar(range(len(gaps)), [g["delta_f1"] for g in gaps], color="C0")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(gaps)), [f"{g['pair']}\n{g['regime']}" for g in gaps], fontsize=7)
    ax.set_ylabel("ΔF1 (text+image − text)")
    ax.set_title("What the image adds", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def compare_runs(run_dirs: Sequence[str | Path], output: str | Path) -> dict:
    """The cross-run analyses of the module docstring over ``run_dirs``; written to ``output``."""
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    runs = [_load(Path(d)) for d in run_dirs]
    analysis: dict = {"runs": [r["run"] for r in runs], "closed_vs_open": None, "scaling": None, "modality_gap": None,
                      "plots": []}

    points = [
        {"label": f"{r['run']} {s['regime']}", "accuracy": 100 * s["closed"]["accuracy"]["mean"],
         "reasoning_accuracy": s["open"]["reasoning_accuracy"]["mean"]}
        for r in runs for s in _plain(r) if s["open"] and "reasoning_accuracy" in s["open"]
    ]
    if points:
        stats = pearson([p["accuracy"] for p in points], [p["reasoning_accuracy"] for p in points]) if len(points) >= 3 else None
        analysis["closed_vs_open"] = {"points": points, "pearson": stats}
        plot_closed_vs_open(points, output / "closed_vs_open.png", stats["r"] if stats else None)
        analysis["plots"].append("closed_vs_open.png")

    series: dict[str, list[tuple[float, float]]] = {}
    for r in runs:
        fraction = r.get("tags", {}).get("train_fraction")
        if fraction is None:
            continue
        for s in _plain(r):
            name = (r["tags"].get("pair") or r["model"]["id"].rstrip("/").split("/")[-1]) + f" {s['regime']}"
            series.setdefault(name, []).append((fraction, s["closed"]["f1_binary"]["mean"]))
    if series:
        analysis["scaling"] = {name: [{"train_fraction": f, "f1_binary": v} for f, v in sorted(pts)] for name, pts in series.items()}
        plot_scaling(series, output / "scaling.png")
        analysis["plots"].append("scaling.png")

    by_pair: dict[str, dict[str, dict]] = {}
    for r in runs:
        pair = r.get("tags", {}).get("pair")
        if pair:
            modality = "text" if r["model"]["modality"] == "text" else "text+image"
            if modality in by_pair.setdefault(pair, {}):
                raise ValueError(f"pair {pair!r} has two {modality} runs; give each text-only/text+image pair its own --pair")
            by_pair[pair][modality] = r
    gaps = []
    for pair, members in sorted(by_pair.items()):
        if set(members) != {"text", "text+image"}:
            continue
        text = {s["regime"]: s for s in _plain(members["text"])}
        for s in _plain(members["text+image"]):
            if s["regime"] in text:
                f1_mm, f1_text = s["closed"]["f1_binary"]["mean"], text[s["regime"]]["closed"]["f1_binary"]["mean"]
                gaps.append({"pair": pair, "regime": s["regime"], "f1_text": f1_text, "f1_text_image": f1_mm,
                             "delta_f1": f1_mm - f1_text})
    if gaps:
        analysis["modality_gap"] = gaps
        plot_modality_gap(gaps, output / "modality_gap.png")
        analysis["plots"].append("modality_gap.png")

    (output / "analysis.json").write_text(json.dumps(analysis, indent=2) + "\n", encoding="utf-8")
    (output / "analysis.md").write_text(_render(analysis), encoding="utf-8")
    return analysis


def _render(a: dict) -> str:
    lines = ["# Analyses across runs", "", "Runs: " + ", ".join(f"`{r}`" for r in a["runs"]), ""]
    c = a["closed_vs_open"]
    if c:
        lines += ["## Closed vs open-ended", ""]
        if c["pearson"]:
            lines += [f"Pearson r = {c['pearson']['r']:.3f} (p = {c['pearson']['p_value']:.3g}, n = {c['pearson']['n']}).", ""]
        else:
            lines += ["Fewer than 3 points: no correlation reported.", ""]
        lines += ["| run, regime | accuracy % | reasoning accuracy % |", "|---|---|---|"]
        lines += [f"| {p['label']} | {p['accuracy']:.1f} | {p['reasoning_accuracy']:.1f} |" for p in c["points"]]
        lines += ["", "![closed vs open](closed_vs_open.png)", ""]
    if a["scaling"]:
        lines += ["## Training-data size", "", "| model | fraction | F1 (binary) |", "|---|---|---|"]
        for name, pts in a["scaling"].items():
            lines += [f"| {name} | {p['train_fraction']:g} | {p['f1_binary']:.4f} |" for p in pts]
        lines += ["", "![scaling](scaling.png)", ""]
    if a["modality_gap"]:
        lines += ["## Text-only vs text+image", "", "| pair | regime | F1 text | F1 text+image | ΔF1 |", "|---|---|---|---|---|"]
        lines += [f"| {g['pair']} | {g['regime']} | {g['f1_text']:.4f} | {g['f1_text_image']:.4f} | {g['delta_f1']:+.4f} |"
                  for g in a["modality_gap"]]
        lines += ["", "![modality gap](modality_gap.png)", ""]
    if not (c or a["scaling"] or a["modality_gap"]):
        lines += ["No analysis applies: runs need judge results (closed vs open), --train-fraction tags (scaling) or "
                  "--pair tags with a text and a text+image run (modality gap).", ""]
    return "\n".join(lines)

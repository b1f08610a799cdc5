"""The paper's analyses across finished runs (``vilbias evaluate compare RUN_DIR ...``).

- **Closed vs open**: Pearson r between closed-ended accuracy (the label-only question's answers)
  and judged reasoning accuracy (the oVQA answers, a separate generation) over every (run,
  regime, probe) with judge results — models and settings (k-shot, probes, checkpoints) — plotted
  as a scatter with the y = x diagonal (paper: r = 0.91).
- **Training-data size**: runs of models whose training-data record states the share of the
  training set they saw (``TrainingData.extra["train_fraction"]``, or ``["fraction"]`` as ``vilbias
  train classifier --train-fractions`` writes it into ``<output>/fraction_<f>/``): F1 against that
  fraction, one line per folder of fraction models and regime.
- **Modality gap**: runs tagged with the same ``--pair`` name, one text-only and one text+image:
  ΔF1 = F1(text+image) − F1(text) per pair.

Runs whose model answers one class for every row (``results.json``'s ``degenerate``) are named at the
top of ``analysis.md``: their points are a constant's.

Writes ``analysis.json``, ``analysis.md`` and the PNG plots to the output folder.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from pathlib import Path

from vilbias.metrics.plots import pyplot
from vilbias.outputs import claim_output

# scipy (the evaluate extra) is imported where Pearson r is computed: it is slow to import.

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


def pearson(xs: Sequence[float], ys: Sequence[float]) -> dict | None:
    """Pearson r (and its two-sided p-value) of paired values; None for fewer than 3 pairs or a
    constant side (r is undefined)."""
    from scipy.stats import pearsonr

    if len(xs) != len(ys):
        raise ValueError(f"{len(xs)} x values but {len(ys)} y values")
    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return None
    result = pearsonr(xs, ys)
    return {"r": float(result.statistic), "p_value": float(result.pvalue), "n": len(xs)}


def closed_open_points(results: dict, prefix: str = "") -> list[dict]:
    """(closed accuracy %, reasoning accuracy %) of each (regime, probe) of a run with judge results."""
    return [
        {"label": f"{prefix}{s['regime']} {s['probe']}", "accuracy": 100 * s["closed"]["accuracy"]["mean"],
         "reasoning_accuracy": s["open"]["reasoning_accuracy"]["mean"]}
        for s in results["summary"] if s["open"] and "reasoning_accuracy" in s["open"]
    ]


def closed_vs_open(points: list[dict]) -> dict | None:
    """The points and their Pearson r (None when it is undefined), or None without points."""
    if not points:
        return None
    return {"points": points, "pearson": pearson([p["accuracy"] for p in points], [p["reasoning_accuracy"] for p in points])}


def _load(run_dir: Path) -> dict:
    path = Path(run_dir) / "results.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: --compare takes folders of finished `vilbias evaluate` runs")
    return json.loads(path.read_text(encoding="utf-8"))


def _plain(results: dict) -> list[dict]:
    return [s for s in results["summary"] if s["probe"] == "none"]


def plot_closed_vs_open(points: list[dict], path: Path, r: float | None) -> None:
    plt = pyplot()
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


def plot_scaling(series: dict[str, list[dict]], path: Path) -> None:
    """F1 against the share of the training set (log2 axis), one line per series."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.4))
    for name, points in series.items():
        ax.plot([p["train_fraction"] for p in points], [p["f1_binary"] for p in points], marker="o", label=name)
    ax.set_xscale("log", base=2)
    ax.set_xticks(FRACTIONS, ["1/16", "1/8", "1/4", "1/2", "1"])
    ax.set_xlabel("share of the training set (training-data records)", fontsize=8)
    ax.set_ylabel("F1 (binary)")
    ax.set_title("Training-data size", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_modality_gap(gaps: list[dict], path: Path) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5, 3.2))
    ax.bar(range(len(gaps)), [g["delta_f1"] for g in gaps], color="C0")
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(gaps)), [f"{g['pair']}\n{g['regime']}" for g in gaps], fontsize=7)
    ax.set_ylabel("ΔF1 (text+image − text)")
    ax.set_title("What the image adds", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


# The key under which a training-data record states its share of the training set: `train_fraction`,
# or `fraction` as `vilbias train classifier --train-fractions` writes it.
FRACTION_KEYS = ("train_fraction", "fraction")


def train_fraction(results: dict) -> float | None:
    """The share of the training set the run's model(s) trained on, from their training-data records."""
    fractions = set()
    for t in results.get("training_data", []):
        extra = (t["training_data"] or {}).get("extra", {})
        fractions.add(next((extra[k] for k in FRACTION_KEYS if k in extra), None))
    if len(fractions) != 1 or None in fractions:
        return None  # no record, no fraction, or folds that disagree
    return float(fractions.pop())


def _series(results: dict) -> str:
    """A scaling line: the folder holding the fraction models (``outputs/roberta/fraction_0.25`` → ``roberta``)."""
    model = results["model"]["id"].rstrip("/")
    local = model.startswith((".", "/", "~")) or model.count("/") > 1
    return (Path(model).parent.name or model) if local else model


def scaling(runs: list[dict]) -> dict[str, list[dict]]:
    """F1 against training-set share, per series and regime, from runs whose models record it."""
    series: dict[str, list[dict]] = {}
    for r in runs:
        fraction = train_fraction(r)
        if fraction is None:
            continue
        rows = sorted({(t["training_data"] or {}).get("rows") for t in r["training_data"]} - {None})
        for s in _plain(r):
            series.setdefault(f"{_series(r)} {s['regime']}", []).append(
                {"train_fraction": fraction, "train_rows": rows, "f1_binary": s["closed"]["f1_binary"]["mean"], "run": r["run"]})
    return {name: sorted(points, key=lambda p: p["train_fraction"]) for name, points in series.items()}


def modality_gap(runs: list[dict]) -> list[dict]:
    """ΔF1 between the text+image and the text-only run of each ``--pair``, per regime."""
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
    return gaps


def compare_runs(run_dirs: Sequence[str | Path], output: str | Path) -> dict:
    """The cross-run analyses of the module docstring over ``run_dirs``; written to ``output``."""
    claim_output(output, "vilbias evaluate compare", signs=("analysis.json", "evaluate_compare_config.yaml"))
    runs = [_load(Path(d)) for d in run_dirs]
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    analysis: dict = {"runs": [r["run"] for r in runs],
                      "closed_vs_open": closed_vs_open([p for r in runs for p in closed_open_points(r, f"{r['run']} ")]),
                      "scaling": scaling(runs) or None, "modality_gap": modality_gap(runs) or None,
                      # runs whose scores are a constant's (or over rows of one class): points, not findings
                      "degenerate_runs": {r["run"]: r["degenerate"] for r in runs if r.get("degenerate")}, "plots": []}
    if analysis["closed_vs_open"]:
        c = analysis["closed_vs_open"]
        plot_closed_vs_open(c["points"], output / "closed_vs_open.png", c["pearson"]["r"] if c["pearson"] else None)
        analysis["plots"].append("closed_vs_open.png")
    if analysis["scaling"]:
        plot_scaling(analysis["scaling"], output / "scaling.png")
        analysis["plots"].append("scaling.png")
    if analysis["modality_gap"]:
        plot_modality_gap(analysis["modality_gap"], output / "modality_gap.png")
        analysis["plots"].append("modality_gap.png")
    (output / "analysis.json").write_text(json.dumps(analysis, indent=2) + "\n", encoding="utf-8")
    (output / "analysis.md").write_text(_render(analysis), encoding="utf-8")
    return analysis


def _render_closed_vs_open(c: dict) -> list[str]:
    lines = ["## Closed vs open-ended", "",
             "Closed accuracy comes from the label-only question, reasoning accuracy from the judged oVQA answers "
             "(a separate generation).", ""]
    if c["pearson"]:
        lines += [f"Pearson r = {c['pearson']['r']:.3f} (p = {c['pearson']['p_value']:.3g}, n = {c['pearson']['n']}).", ""]
    else:
        lines += ["No correlation reported: it needs at least 3 points and both scores varying.", ""]
    lines += ["| run, regime, probe | accuracy % | reasoning accuracy % |", "|---|---|---|"]
    lines += [f"| {p['label']} | {p['accuracy']:.1f} | {p['reasoning_accuracy']:.1f} |" for p in c["points"]]
    return lines + ["", "![closed vs open](closed_vs_open.png)", ""]


def _render(a: dict) -> str:
    lines = ["# Analyses across runs", "", "Runs: " + ", ".join(f"`{r}`" for r in a["runs"]), ""]
    if a["degenerate_runs"]:
        lines += ["> **Runs whose scores do not measure the task** (their points below are a constant's, not evidence):", ">"]
        lines += [f"> - `{run}`: {note}" for run, note in a["degenerate_runs"].items()] + [""]
    if a["closed_vs_open"]:
        lines += _render_closed_vs_open(a["closed_vs_open"])
    if a["scaling"]:
        lines += ["## Training-data size", "", "The share of the training set is read from each model's training-data record.",
                  "", "| series | fraction | training rows | F1 (binary) | run |", "|---|---|---|---|---|"]
        for name, pts in a["scaling"].items():
            lines += [f"| {name} | {p['train_fraction']:g} | {', '.join(map(str, p['train_rows'])) or '—'} | "
                      f"{p['f1_binary']:.4f} | {p['run']} |" for p in pts]
        lines += ["", "![scaling](scaling.png)", ""]
    if a["modality_gap"]:
        lines += ["## Text-only vs text+image", "", "| pair | regime | F1 text | F1 text+image | ΔF1 |", "|---|---|---|---|---|"]
        lines += [f"| {g['pair']} | {g['regime']} | {g['f1_text']:.4f} | {g['f1_text_image']:.4f} | {g['delta_f1']:+.4f} |"
                  for g in a["modality_gap"]]
        lines += ["", "![modality gap](modality_gap.png)", ""]
    if not (a["closed_vs_open"] or a["scaling"] or a["modality_gap"]):
        lines += ["No analysis applies: runs need judge results (closed vs open), models whose training-data record "
                  "states a train_fraction (scaling) or --pair tags with a text and a text+image run (modality gap).", ""]
    return "\n".join(lines)

"""The audit's figures (matplotlib, Agg), as in the VIGNETTE paper.

- ``selection_<paradigm>.png``: selection frequency per identity, a lollipop panel per dimension
  (image and text side by side when both were asked; a star marks p < 0.05);
- ``log_odds_<paradigm>_<modality>.png``: identity x context heat maps of log odds, a panel per
  question family (bold: p < 0.05);
- ``pair_comp_<paradigm>_<family>_<modality>.png``: identity x partner PairComp heat maps, a
  panel per dimension (row identity's selection against the column identity minus against the
  others; bold: p < 0.05);
- ``polarity_<paradigm>_<modality>.png``: S_high - S_low per identity, a panel per dimension;
- ``summary_<modality>.png``: paradigm x dimension disparity of the favour score (cell: spread,
  and the number of identities with p < 0.05);
- ``modality_delta.png``: S_image - S_text per identity and paradigm.

A responses file with several models gets one set per model (file names carry the model).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from vilbias.audit.metrics import ALL
from vilbias.audit.space import DIMENSION_TITLES, DIMENSIONS
from vilbias.metrics.plots import pyplot

COLOURS = {"image": "#00807f", "text": "#9d7fd6"}
SIGNIFICANT = 0.05


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "model"


def _name(stem: str, model: str, models: set[str]) -> str:
    return f"{stem}__{_slug(model)}.png" if len(models) > 1 else f"{stem}.png"


def _dims(records: list[dict[str, Any]]) -> list[str]:
    present = {r["dimension"] for r in records}
    return [d for d in DIMENSIONS if d in present] + sorted(present - set(DIMENSIONS))


def _grid(n: int) -> tuple[int, int]:
    cols = min(4, n)
    return math.ceil(n / cols), cols


def _sig(p: float | None) -> bool:
    return p is not None and p < SIGNIFICANT


def _heatmap(ax: Any, values: list[list[float | None]], pvalues: list[list[float | None]], rows: list[str],
             cols: list[str], vmax: float, fontsize: float = 6.0) -> Any:
    import numpy as np

    data = np.array([[np.nan if v is None else v for v in row] for row in values], dtype=float)
    image = ax.imshow(np.ma.masked_invalid(data), cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto")
    for i, row in enumerate(values):
        for j, v in enumerate(row):
            if v is not None:
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=fontsize,
                        fontweight="bold" if _sig(pvalues[i][j]) else "normal")
    ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right", fontsize=fontsize + 1)
    ax.set_yticks(range(len(rows)), rows, fontsize=fontsize + 1)
    return image


def _separate_dimensions(ax: Any, row_dimensions: list[str], label: bool = True) -> None:
    """Lines between the dimensions' blocks of rows, and (``label``) the dimension's name."""
    start = 0
    for k in range(1, len(row_dimensions) + 1):
        if k == len(row_dimensions) or row_dimensions[k] != row_dimensions[start]:
            if k < len(row_dimensions):
                ax.axhline(k - 0.5, color="black", linewidth=0.8)
            if label:
                ax.annotate(DIMENSION_TITLES.get(row_dimensions[start], row_dimensions[start]), xy=(0, (start + k - 1) / 2),
                            xycoords=("axes fraction", "data"), xytext=(-95, 0), textcoords="offset points",
                            ha="right", va="center", fontsize=6, fontstyle="italic")
            start = k


def plot_selection(selection: list[dict[str, Any]], out: Path) -> list[Path]:
    plt = pyplot()
    paths = []
    models = {r["model"] for r in selection}
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in selection:
        if r["family"] == ALL:
            groups[(r["model"], r["paradigm"])].append(r)
    for (model, paradigm), records in sorted(groups.items()):
        dims = _dims(records)
        nrows, ncols = _grid(len(dims))
        fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols, 2.4 * nrows), squeeze=False)
        modalities = sorted({r["modality"] for r in records})
        for ax, dim in zip(axes.flat, dims, strict=False):
            rs = [r for r in records if r["dimension"] == dim]
            identities = sorted({r["identity"] for r in rs})
            for k, modality in enumerate(modalities):
                offset = (k - (len(modalities) - 1) / 2) * 0.22
                for y, identity in enumerate(identities):
                    r = next((x for x in rs if x["identity"] == identity and x["modality"] == modality), None)
                    if r is None:
                        continue
                    ax.hlines(y + offset, 0, r["frequency"], color=COLOURS.get(modality, "grey"), linewidth=2)
                    ax.plot(r["frequency"], y + offset, "*" if _sig(r["p"]) else "o", color=COLOURS.get(modality, "grey"),
                            markersize=9 if _sig(r["p"]) else 5, label=modality if y == 0 else None)
            ax.axvline(0.5, color="grey", linestyle="--", linewidth=0.8)
            ax.set_xlim(0, 1)
            ax.set_yticks(range(len(identities)), identities, fontsize=7)
            ax.set_title(DIMENSION_TITLES.get(dim, dim), fontsize=9)
            ax.tick_params(axis="x", labelsize=7)
        for ax in list(axes.flat)[len(dims):]:
            ax.axis("off")
        axes.flat[0].legend(fontsize=7, loc="lower right")
        fig.suptitle(f"{paradigm}: selection frequency per identity (* p < 0.05)", fontsize=10)
        fig.tight_layout()
        path = out / _name(f"selection_{paradigm}", model, models)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def plot_log_odds(log_odds: list[dict[str, Any]], out: Path) -> list[Path]:
    plt = pyplot()
    paths = []
    models = {r["model"] for r in log_odds}
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in log_odds:
        groups[(r["model"], r["paradigm"], r["modality"])].append(r)
    for (model, paradigm, modality), records in sorted(groups.items()):
        families = sorted({r["family"] for r in records})
        dims = _dims(records)
        rows = [(d, i) for d in dims for i in sorted({r["identity"] for r in records if r["dimension"] == d})]
        labels = [f"{i}" for _, i in rows]
        widths = [len({r["context"] for r in records if r["family"] == f}) for f in families]
        fig, axes = plt.subplots(1, len(families), figsize=(max(4.0, 0.45 * sum(widths) + 2.2 * len(families)),
                                                             max(3.0, 0.22 * len(rows) + 1.6)), squeeze=False)
        vmax = max(1.0, max(abs(r["log_odds"]) for r in records))
        image = None
        for k, (ax, fam) in enumerate(zip(axes.flat, families, strict=True)):
            rs = [r for r in records if r["family"] == fam]
            contexts = sorted({r["context"] for r in rs})
            cell = {(r["dimension"], r["identity"], r["context"]): r for r in rs}
            values = [[cell[(d, i, c)]["log_odds"] if (d, i, c) in cell else None for c in contexts] for d, i in rows]
            pvals = [[cell[(d, i, c)]["p"] if (d, i, c) in cell else None for c in contexts] for d, i in rows]
            image = _heatmap(ax, values, pvals, labels, contexts, vmax, fontsize=5.5)
            _separate_dimensions(ax, [d for d, _ in rows], label=k == 0)
            if k:
                ax.set_yticklabels([])
            ax.set_title(fam, fontsize=9)
        if image is not None:
            fig.colorbar(image, ax=list(axes.flat), shrink=0.6, label="log odds")
        fig.suptitle(f"{paradigm} ({modality}): log odds of selection by context (bold: p < 0.05)", fontsize=10)
        path = out / _name(f"log_odds_{paradigm}_{modality}", model, models)
        fig.savefig(path, dpi=110, bbox_inches="tight")
        plt.close(fig)
        paths.append(path)
    return paths


def plot_pair_comp(pair_comp: list[dict[str, Any]], out: Path) -> list[Path]:
    plt = pyplot()
    paths = []
    models = {r["model"] for r in pair_comp}
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in pair_comp:
        groups[(r["model"], r["paradigm"], r["family"], r["modality"])].append(r)
    for (model, paradigm, fam, modality), records in sorted(groups.items()):
        dims = _dims(records)
        nrows, ncols = _grid(len(dims))
        size = max(len({r["identity"] for r in records if r["dimension"] == d}) for d in dims)
        side = 2.2 + 0.32 * size
        fig, axes = plt.subplots(nrows, ncols, figsize=(side * ncols + 1.5, side * nrows + 0.6), squeeze=False,
                                 layout="constrained")
        image = None
        for ax, dim in zip(axes.flat, dims, strict=False):
            rs = [r for r in records if r["dimension"] == dim]
            identities = sorted({r["identity"] for r in rs} | {r["partner"] for r in rs})
            cell = {(r["identity"], r["partner"]): r for r in rs}
            values = [[cell[(a, b)]["pair_comp"] if (a, b) in cell else None for b in identities] for a in identities]
            pvals = [[cell[(a, b)]["p"] if (a, b) in cell else None for b in identities] for a in identities]
            image = _heatmap(ax, values, pvals, identities, identities, 1.0, fontsize=6)
            ax.set_title(DIMENSION_TITLES.get(dim, dim), fontsize=9)
        for ax in list(axes.flat)[len(dims):]:
            ax.axis("off")
        if image is not None:
            fig.colorbar(image, ax=list(axes.flat), shrink=0.6, label="PairComp")
        fig.suptitle(f"{paradigm} / {fam} ({modality}): PairComp S(row | column) - S(row | not column)"
                     " (bold: p < 0.05; blank: never paired)", fontsize=10)
        path = out / _name(f"pair_comp_{paradigm}_{fam}_{modality}", model, models)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def plot_polarity(polarity: list[dict[str, Any]], out: Path) -> list[Path]:
    plt = pyplot()
    paths = []
    models = {r["model"] for r in polarity}
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in polarity:
        if r["trait_dimension"] == ALL and r["polarity"] is not None:
            groups[(r["model"], r["paradigm"], r["modality"])].append(r)
    for (model, paradigm, modality), records in sorted(groups.items()):
        dims = _dims(records)
        nrows, ncols = _grid(len(dims))
        fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols, 2.3 * nrows), squeeze=False)
        for ax, dim in zip(axes.flat, dims, strict=False):
            rs = sorted((r for r in records if r["dimension"] == dim), key=lambda r: r["identity"])
            ys = range(len(rs))
            ax.barh(list(ys), [r["polarity"] for r in rs],
                    color=["#2b6cb0" if r["polarity"] >= 0 else "#c53030" for r in rs])
            for y, r in zip(ys, rs, strict=True):
                if _sig(r["p"]):
                    ax.text(r["polarity"], y, " *", va="center", fontsize=9)
            ax.axvline(0, color="black", linewidth=0.8)
            ax.set_xlim(-1, 1)
            ax.set_yticks(list(ys), [r["identity"] for r in rs], fontsize=7)
            ax.set_title(DIMENSION_TITLES.get(dim, dim), fontsize=9)
            ax.tick_params(axis="x", labelsize=7)
        for ax in list(axes.flat)[len(dims):]:
            ax.axis("off")
        fig.suptitle(f"{paradigm} ({modality}): polarity S_high - S_low (* p < 0.05)", fontsize=10)
        fig.tight_layout()
        path = out / _name(f"polarity_{paradigm}_{modality}", model, models)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def plot_summary(summary: list[dict[str, Any]], out: Path) -> list[Path]:
    from vilbias.audit.questions import PARADIGMS

    plt = pyplot()
    paths = []
    models = {r["model"] for r in summary}
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in summary:
        groups[(r["model"], r["modality"])].append(r)
    for (model, modality), records in sorted(groups.items()):
        paradigms = [p for p in PARADIGMS if any(r["paradigm"] == p for r in records)]
        dims = _dims(records)
        cell = {(r["paradigm"], r["dimension"]): r for r in records}
        fig, ax = plt.subplots(figsize=(1.2 * len(dims) + 2.5, 0.7 * len(paradigms) + 1.8))
        import numpy as np

        data = np.array([[cell[(p, d)]["disparity"] if (p, d) in cell else np.nan for d in dims] for p in paradigms])
        image = ax.imshow(np.ma.masked_invalid(data), cmap="Reds", vmin=0, vmax=max(1.0, np.nanmax(data) if data.size else 1))
        for i, p in enumerate(paradigms):
            for j, d in enumerate(dims):
                if (p, d) in cell:
                    r = cell[(p, d)]
                    ax.text(j, i, f"{r['disparity']:.2f}\n{r['significant']}*", ha="center", va="center", fontsize=7)
        ax.set_xticks(range(len(dims)), [DIMENSION_TITLES.get(d, d) for d in dims], rotation=35, ha="right", fontsize=8)
        ax.set_yticks(range(len(paradigms)), paradigms, fontsize=8)
        fig.colorbar(image, ax=ax, shrink=0.8, label="disparity (max - min favour score)")
        ax.set_title(f"Paradigm x dimension ({modality}); n* = identities with p < 0.05", fontsize=9)
        fig.tight_layout()
        path = out / _name(f"summary_{modality}", model, models)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def plot_modality_delta(delta: list[dict[str, Any]], out: Path) -> list[Path]:
    from vilbias.audit.questions import PARADIGMS

    plt = pyplot()
    paths = []
    models = {r["model"] for r in delta}
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in delta:
        if r["family"] == ALL:
            groups[r["model"]].append(r)
    for model, records in sorted(groups.items()):
        paradigms = [p for p in PARADIGMS if any(r["paradigm"] == p for r in records)]
        dims = _dims(records)
        rows = [(d, i) for d in dims for i in sorted({r["identity"] for r in records if r["dimension"] == d})]
        cell = {(r["dimension"], r["identity"], r["paradigm"]): r for r in records}
        values = [[cell[(d, i, p)]["delta"] if (d, i, p) in cell else None for p in paradigms] for d, i in rows]
        pvals = [[cell[(d, i, p)]["p"] if (d, i, p) in cell else None for p in paradigms] for d, i in rows]
        fig, ax = plt.subplots(figsize=(1.1 * len(paradigms) + 3.0, 0.22 * len(rows) + 1.6))
        image = _heatmap(ax, values, pvals, [i for _, i in rows], paradigms, 1.0)
        _separate_dimensions(ax, [d for d, _ in rows])
        fig.colorbar(image, ax=ax, shrink=0.7, label="S(text+image) - S(text)")
        ax.set_title("Text+image vs text-only selection frequency (bold: p < 0.05)", fontsize=9)
        fig.tight_layout()
        path = out / _name("modality_delta", model, models)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def plot_all(tables: dict[str, list[dict[str, Any]]], out: str | Path) -> list[Path]:
    """Every figure the tables support, into ``out``; returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    paths += plot_selection(tables["selection"], out)
    paths += plot_log_odds(tables["log_odds"], out)
    paths += plot_pair_comp(tables["pair_comp"], out)
    paths += plot_polarity(tables["polarity"], out)
    paths += plot_summary(tables["summary"], out)
    paths += plot_modality_delta(tables["modality_delta"], out)
    return paths

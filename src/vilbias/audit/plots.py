"""The audit's figures (matplotlib, Agg), as in the VIGNETTE paper, with the project's intervals.

- ``selection_<paradigm>.png``: selection frequency S per identity with its interval as an error
  bar, a lollipop panel per dimension (image and text side by side when both were asked; a star
  marks p < alpha);
- ``log_odds_<paradigm>_<modality>.png``: identity x activity heat maps of log odds, a panel per
  question family; each cell shows the value over its interval (bold: p < alpha);
  ``log_odds_by_role_question_decision_<modality>.png``: the same by role question (an extra);
- ``pair_comp_<paradigm>_<family>_<modality>.png``: identity x partner PairComp heat maps, a
  panel per dimension (row identity's S against the column identity minus against the others;
  value over interval; bold: p < alpha; blank: never paired);
- ``polarity_<paradigm>_<modality>.png``: S_high - S_low per identity and trait pair with its
  interval as an error bar, a panel per dimension;
- ``summary_<modality>.png``: paradigm x dimension disparity of the favour score (cell: spread,
  and the number of identities with p < alpha);
- ``modality_delta.png``: S_image - S_text per identity and paradigm (value over interval).

The figures take the records of :func:`vilbias.audit.metrics.compute_metrics` (plain dicts) and
the threshold ``alpha``; this module does not import the metrics. A responses file with several
models gets one set per model (file names carry the model).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from vilbias.audit.questions import ALL, PARADIGMS
from vilbias.audit.space import DIMENSION_TITLES, DIMENSIONS
from vilbias.metrics.plots import pyplot

COLOURS = {"image": "#00807f", "text": "#9d7fd6"}
UNITS = {"activity": ("an activity", "activities"), "role_question": ("a role question", "role questions")}
DPI = 110
"""The figures' resolution (dots per inch)."""
PAIR_COLOURS = ["#2b6cb0", "#c05621", "#2f855a", "#6b46c1", "#b83280", "#718096"]


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


def _sig(p: float | None, alpha: float) -> bool:
    return p is not None and p < alpha


def _err(value: float, low: float | None, high: float | None) -> list[float]:
    """``[below, above]`` for an error bar (zero where no interval; rounding can put an interval's
    end a hair inside its value, which matplotlib refuses as a negative error)."""
    return [max(0.0, value - low) if low is not None else 0.0, max(0.0, high - value) if high is not None else 0.0]


def _fmt(v: float, digits: int) -> str:
    text = f"{v:.{digits}f}"
    return text.lstrip("-") if float(text) == 0 else text  # no "-0"


def _cell_text(v: float, low: float | None, high: float | None, digits: int) -> str:
    if low is None or high is None:
        return _fmt(v, digits)
    return f"{_fmt(v, digits)}\n[{_fmt(low, digits)}, {_fmt(high, digits)}]"


def _heatmap(ax: Any, cells: list[list[dict[str, Any] | None]], value: str, rows: list[str], cols: list[str],
             vmax: float, alpha: float, fontsize: float = 6.0, digits: int = 2) -> Any:
    """A diverging heat map of ``record[value]``; each cell prints the value over its interval
    (``<value>_low``, ``<value>_high``), bold where ``record["p"] < alpha``."""
    image = ax.imshow(_cell_values(cells, value), cmap="RdBu_r", vmin=-vmax, vmax=vmax, aspect="auto")
    _cell_texts(ax, cells, value, alpha, fontsize, digits)
    ax.set_xticks(range(len(cols)), cols, rotation=45, ha="right", fontsize=fontsize + 1)
    ax.set_yticks(range(len(rows)), rows, fontsize=fontsize + 1)
    return image


def _heatmap_cells(ax: Any, image: Any, cells: list[list[dict[str, Any] | None]], value: str, alpha: float,
                   fontsize: float = 6.0, digits: int = 2) -> None:
    """Another group's values into a heat map :func:`_heatmap` drew (the same rows and columns)."""
    image.set_data(_cell_values(cells, value))
    _cell_texts(ax, cells, value, alpha, fontsize, digits)


def _cell_values(cells: list[list[dict[str, Any] | None]], value: str) -> Any:
    import numpy as np

    data = np.array([[np.nan if c is None or c[value] is None else c[value] for c in row] for row in cells], dtype=float)
    return np.ma.masked_invalid(data)


def _cell_texts(ax: Any, cells: list[list[dict[str, Any] | None]], value: str, alpha: float, fontsize: float,
                digits: int) -> None:
    for i, row in enumerate(cells):
        for j, c in enumerate(row):
            if c is not None and c[value] is not None:
                ax.text(j, i, _cell_text(c[value], c.get(f"{value}_low"), c.get(f"{value}_high"), digits),
                        ha="center", va="center", fontsize=fontsize * 0.85,
                        fontweight="bold" if _sig(c.get("p"), alpha) else "normal")


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


def plot_selection(selection: list[dict[str, Any]], out: Path, alpha: float = 0.05) -> list[Path]:
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
                colour = COLOURS.get(modality, "grey")
                placed = [(y + offset, r) for y, identity in enumerate(identities)
                          for r in [next((x for x in rs if x["identity"] == identity and x["modality"] == modality), None)] if r is not None]
                if not placed:
                    continue
                # a modality's stems in one call and its points in one a marker (an artist set a record was most of the drawing time)
                ax.hlines([y for y, _ in placed], 0, [r["S"] for _, r in placed], color=colour, linewidth=1.2, alpha=0.5)
                for sig in (False, True):
                    group = [(y, r) for y, r in placed if _sig(r["p"], alpha) == sig]
                    if group:
                        ax.errorbar([r["S"] for _, r in group], [y for y, _ in group], fmt="*" if sig else "o", color=colour,
                                    ecolor=colour, elinewidth=1, capsize=2, markersize=9 if sig else 5,
                                    xerr=[list(e) for e in zip(*(_err(r["S"], r["S_low"], r["S_high"]) for _, r in group), strict=True)],
                                    label=modality if any(y == offset for y, _ in group) else None)  # the first identity's: the legend's
            ax.axvline(50, color="grey", linestyle="--", linewidth=0.8)
            ax.set_xlim(0, 100)
            ax.set_yticks(range(len(identities)), identities, fontsize=7)
            ax.set_title(DIMENSION_TITLES.get(dim, dim), fontsize=9)
            ax.tick_params(axis="x", labelsize=7)
        for ax in list(axes.flat)[len(dims):]:
            ax.axis("off")
        axes.flat[0].legend(fontsize=7, loc="lower right")
        fig.suptitle(f"{paradigm}: selection frequency S (%, mean over activities) per identity, "
                     f"{1 - alpha:.0%} intervals (* p < {alpha:g})", fontsize=10)
        fig.tight_layout()
        path = out / _name(f"selection_{paradigm}", model, models)
        fig.savefig(path, dpi=DPI)
        plt.close(fig)
        paths.append(path)
    return paths


def plot_log_odds(log_odds: list[dict[str, Any]], out: Path, alpha: float = 0.05, unit: str = "activity",
                  stem: str = "log_odds") -> list[Path]:
    """Identity x ``unit`` heat maps (``activity``; ``role_question`` for the decision-making extra)."""
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
        widths = [len({r[unit] for r in records if r["family"] == f}) for f in families]
        fig, axes = plt.subplots(1, len(families), figsize=(max(4.0, 0.75 * sum(widths) + 2.2 * len(families)),
                                                             max(3.0, 0.36 * len(rows) + 1.6)), squeeze=False)
        vmax = max(1.0, max(abs(r["log_odds"]) for r in records))
        image = None
        for k, (ax, fam) in enumerate(zip(axes.flat, families, strict=True)):
            rs = [r for r in records if r["family"] == fam]
            activities = sorted({r[unit] for r in rs})
            cell = {(r["dimension"], r["identity"], r[unit]): r for r in rs}
            cells = [[cell.get((d, i, a)) for a in activities] for d, i in rows]
            image = _heatmap(ax, cells, "log_odds", labels, activities, vmax, alpha, fontsize=5.5)
            _separate_dimensions(ax, [d for d, _ in rows], label=k == 0)
            if k:
                ax.set_yticklabels([])
            ax.set_title(fam, fontsize=9)
        if image is not None:
            fig.colorbar(image, ax=list(axes.flat), shrink=0.6, label="log odds")
        one, others = UNITS[unit]
        fig.suptitle(f"{paradigm} ({modality}): log odds of selection in {one} vs the identity's other {others} "
                     f"[{1 - alpha:.0%} interval] (bold: p < {alpha:g})", fontsize=10)
        path = out / _name(f"{stem}_{paradigm}_{modality}", model, models)
        fig.savefig(path, dpi=DPI, bbox_inches="tight")
        plt.close(fig)
        paths.append(path)
    return paths


def plot_pair_comp(pair_comp: list[dict[str, Any]], out: Path, alpha: float = 0.05) -> list[Path]:
    """A figure per (model, paradigm, family, modality): identity x partner heat maps, a panel per
    dimension. Figures of one geometry (the same dimensions and identities: a paradigm's families
    and modalities) are one matplotlib figure drawn again with each group's values: its axes,
    colour bar and constrained layout are made once (the layout measured every tick label twice,
    and it was made anew for each of ~14 figures, half of an audit's plotting time). The pixels are
    those of a figure made afresh: the layout depends only on the geometry, titles and labels."""
    plt = pyplot()
    paths = []
    models = {r["model"] for r in pair_comp}
    groups: dict[tuple[str, str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in pair_comp:
        groups[(r["model"], r["paradigm"], r["family"], r["modality"])].append(r)
    drawn: dict[tuple, tuple[Any, list[tuple[Any, Any]]]] = {}  # geometry -> (figure, [(axes, image)] per dimension)
    try:
        for (model, paradigm, fam, modality), records in sorted(groups.items()):
            dims = _dims(records)
            panels = [sorted({r["identity"] for r in records if r["dimension"] == d} | {r["partner"] for r in records if r["dimension"] == d})
                      for d in dims]
            # the panels, and the row identities the figure's size is made for (_pair_comp_figure)
            rows = max(len({r["identity"] for r in records if r["dimension"] == d}) for d in dims)
            geometry = (tuple(dims), tuple(map(tuple, panels)), rows)
            title = (f"{paradigm} / {fam} ({modality}): PairComp S(row | column) - S(row | not column), points "
                     f"[{1 - alpha:.0%} interval] (bold: p < {alpha:g}; blank: never paired, or no other partner)")
            if geometry in drawn:
                fig, axes_images = drawn[geometry]
                for (ax, image), dim, identities in zip(axes_images, dims, panels, strict=True):
                    for text in list(ax.texts):
                        text.remove()
                    _heatmap_cells(ax, image, _pair_cells(records, dim, identities), "pair_comp", alpha, fontsize=6, digits=0)
                fig._suptitle.set_text(title)  # not suptitle(): it would move the title back from where the layout put it
            else:
                fig, axes_images = _pair_comp_figure(plt, records, dims, panels, rows, alpha)
                fig.suptitle(title, fontsize=10)
                fig.get_layout_engine().execute(fig)  # once: later groups of this geometry keep these positions
                fig.set_layout_engine("none")
                drawn[geometry] = fig, axes_images
            path = out / _name(f"pair_comp_{paradigm}_{fam}_{modality}", model, models)
            fig.savefig(path, dpi=DPI)
            paths.append(path)
    finally:
        for fig, _ in drawn.values():
            plt.close(fig)
    return paths


def _pair_cells(records: list[dict[str, Any]], dim: str, identities: list[str]) -> list[list[dict[str, Any] | None]]:
    cell = {(r["identity"], r["partner"]): r for r in records if r["dimension"] == dim}
    return [[cell.get((a, b)) for b in identities] for a in identities]


def _pair_comp_figure(plt: Any, records: list[dict[str, Any]], dims: list[str], panels: list[list[str]], rows: int,
                      alpha: float) -> tuple[Any, list[tuple[Any, Any]]]:
    nrows, ncols = _grid(len(dims))
    side = 2.2 + 0.55 * rows
    fig, axes = plt.subplots(nrows, ncols, figsize=(side * ncols + 1.5, side * nrows + 0.6), squeeze=False,
                             layout="constrained", dpi=DPI)  # laid out at the dpi it is saved at (text extents depend on it)
    axes_images = []
    for ax, dim, identities in zip(axes.flat, dims, panels, strict=False):
        image = _heatmap(ax, _pair_cells(records, dim, identities), "pair_comp", identities, identities, 100.0, alpha,
                         fontsize=6, digits=0)
        ax.set_title(DIMENSION_TITLES.get(dim, dim), fontsize=9)
        axes_images.append((ax, image))
    for ax in list(axes.flat)[len(dims):]:
        ax.axis("off")
    fig.colorbar(axes_images[-1][1], ax=list(axes.flat), shrink=0.6, label="PairComp")
    return fig, axes_images


def plot_polarity(polarity: list[dict[str, Any]], out: Path, alpha: float = 0.05) -> list[Path]:
    """A panel per dimension: for each identity, one bar per trait pair (S_high - S_low, points)
    with its interval as an error bar."""
    plt = pyplot()
    paths = []
    models = {r["model"] for r in polarity}
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in polarity:
        if r["polarity"] is not None:
            groups[(r["model"], r["paradigm"], r["modality"])].append(r)
    for (model, paradigm, modality), records in sorted(groups.items()):
        dims = _dims(records)
        pairs = sorted({r["trait_pair"] for r in records})
        colour = {pair: PAIR_COLOURS[k % len(PAIR_COLOURS)] for k, pair in enumerate(pairs)}
        height = 0.8 / len(pairs)
        nrows, ncols = _grid(len(dims))
        size = max(len({r["identity"] for r in records if r["dimension"] == d}) for d in dims)
        fig, axes = plt.subplots(nrows, ncols, figsize=(3.8 * ncols, (0.5 + 0.12 * len(pairs)) * size * nrows + 1.2),
                                 squeeze=False)
        for ax, dim in zip(axes.flat, dims, strict=False):
            rs = [r for r in records if r["dimension"] == dim]
            identities = sorted({r["identity"] for r in rs})
            ys = [identities.index(r["identity"]) + (pairs.index(r["trait_pair"]) - (len(pairs) - 1) / 2) * height for r in rs]
            # a pair's bars in one call and the panel's error bars in one (an artist a bar was most of the drawing time)
            for pair in dict.fromkeys(r["trait_pair"] for r in rs):  # in the order they first come: the legend's
                ax.barh([y for r, y in zip(rs, ys, strict=True) if r["trait_pair"] == pair],
                        [r["polarity"] for r in rs if r["trait_pair"] == pair], height=height * 0.9, color=colour[pair],
                        label=pair if dim == dims[0] else None)
            if rs:
                ax.errorbar([r["polarity"] for r in rs], ys, fmt="none", ecolor="black", elinewidth=0.7, capsize=1.5,
                            xerr=[list(e) for e in zip(*(_err(r["polarity"], r["polarity_low"], r["polarity_high"]) for r in rs), strict=True)])
            for r, y in zip(rs, ys, strict=True):
                if _sig(r["p"], alpha):
                    ax.text(r["polarity"], y, " *", va="center", fontsize=8)
            ax.axvline(0, color="black", linewidth=0.8)
            ax.set_xlim(-100, 100)
            ax.set_yticks(range(len(identities)), identities, fontsize=7)
            ax.set_title(DIMENSION_TITLES.get(dim, dim), fontsize=9)
            ax.tick_params(axis="x", labelsize=7)
        for ax in list(axes.flat)[len(dims):]:
            ax.axis("off")
        handles, labels = axes.flat[0].get_legend_handles_labels()
        if handles:
            by_label = dict(zip(labels, handles, strict=True))
            fig.legend(by_label.values(), by_label.keys(), fontsize=7, loc="lower center", ncol=min(6, len(by_label)))
        fig.suptitle(f"{paradigm} ({modality}): polarity S_high - S_low per pair (points), "
                     f"{1 - alpha:.0%} intervals (* p < {alpha:g})", fontsize=10)
        fig.tight_layout(rect=(0, 0.06, 1, 1))
        path = out / _name(f"polarity_{paradigm}_{modality}", model, models)
        fig.savefig(path, dpi=DPI)
        plt.close(fig)
        paths.append(path)
    return paths


def plot_summary(summary: list[dict[str, Any]], out: Path, alpha: float = 0.05) -> list[Path]:
    import numpy as np

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
        data = np.array([[cell[(p, d)]["disparity"] if (p, d) in cell else np.nan for d in dims] for p in paradigms])
        image = ax.imshow(np.ma.masked_invalid(data), cmap="Reds", vmin=0,
                          vmax=max(100.0, np.nanmax(data) if data.size else 100.0))
        for i, p in enumerate(paradigms):
            for j, d in enumerate(dims):
                if (p, d) in cell:
                    r = cell[(p, d)]
                    ax.text(j, i, f"{r['disparity']:.0f}\n{r['significant']}*", ha="center", va="center", fontsize=7)
        ax.set_xticks(range(len(dims)), [DIMENSION_TITLES.get(d, d) for d in dims], rotation=35, ha="right", fontsize=8)
        ax.set_yticks(range(len(paradigms)), paradigms, fontsize=8)
        fig.colorbar(image, ax=ax, shrink=0.8, label="disparity (max - min favour score, points)")
        ax.set_title(f"Paradigm x dimension ({modality}); n* = identities with p < {alpha:g}", fontsize=9)
        fig.tight_layout()
        path = out / _name(f"summary_{modality}", model, models)
        fig.savefig(path, dpi=DPI)
        plt.close(fig)
        paths.append(path)
    return paths


def plot_modality_delta(delta: list[dict[str, Any]], out: Path, alpha: float = 0.05) -> list[Path]:
    """A panel per paradigm: S_image - S_text per identity with its interval as an error bar."""
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
        fig, axes = plt.subplots(1, len(paradigms), figsize=(2.6 * len(paradigms) + 2.5, 0.22 * len(rows) + 1.6),
                                 squeeze=False, sharey=True)
        for k, (ax, paradigm) in enumerate(zip(axes.flat, paradigms, strict=True)):
            for y, (d, i) in enumerate(rows):
                r = cell.get((d, i, paradigm))
                if r is None:
                    continue
                sig = _sig(r["p"], alpha)
                ax.errorbar(r["delta"], y, xerr=[[e] for e in _err(r["delta"], r["delta_low"], r["delta_high"])],
                            fmt="*" if sig else "o", markersize=7 if sig else 3.5, color="#2b6cb0" if r["delta"] >= 0
                            else "#c53030", elinewidth=0.8, capsize=1.5)
            ax.axvline(0, color="black", linewidth=0.8)
            ax.set_xlim(-100, 100)
            ax.set_title(paradigm, fontsize=9)
            ax.tick_params(axis="x", labelsize=7)
            ax.set_yticks(range(len(rows)), [i for _, i in rows], fontsize=6)
            _separate_dimensions(ax, [d for d, _ in rows], label=k == 0)
        axes.flat[0].invert_yaxis()  # the axes share y: the first dimension's identities on top in every panel
        fig.suptitle(f"S(text+image) - S(text), points, {1 - alpha:.0%} intervals (* p < {alpha:g}, z-test)", fontsize=9)
        fig.tight_layout()
        path = out / _name("modality_delta", model, models)
        fig.savefig(path, dpi=DPI)
        plt.close(fig)
        paths.append(path)
    return paths


def plot_all(tables: dict[str, Any], out: str | Path, alpha: float = 0.05) -> list[Path]:
    """Every figure the tables support, into ``out``; returns their paths. ``alpha``: the
    significance threshold the figures mark (and the level of the intervals they draw)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    paths += plot_selection(tables["selection"], out, alpha)
    paths += plot_log_odds(tables["log_odds"], out, alpha)
    paths += plot_log_odds(tables["log_odds_by_role_question"], out, alpha, unit="role_question",
                           stem="log_odds_by_role_question")
    paths += plot_pair_comp(tables["pair_comp"], out, alpha)
    paths += plot_polarity(tables["polarity"], out, alpha)
    paths += plot_summary(tables["summary"], out, alpha)
    paths += plot_modality_delta(tables["modality_delta"], out, alpha)
    return paths

"""Figures of the metrics (matplotlib with the Agg backend: no display needed)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from vilbias.task import LABEL_NAMES


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def set_title(ax, title: str, fontsize: float) -> None:
    """``ax``'s title, wrapped to the figure's width: a title naming the model must not run off the image."""
    # about 0.6 em per character, 72 points per inch
    width = max(20, int(ax.figure.get_figwidth() * 72 / (0.62 * fontsize)))
    ax.set_title(textwrap.fill(title, width), fontsize=fontsize)


def plot_confusion_matrix(matrix: list[list[int]], path: Path, title: str = "") -> None:
    """Confusion matrix heat map (rows gold, columns predicted)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4, 3.6))
    ax.imshow(matrix, cmap="Blues")
    for i, row in enumerate(matrix):
        for j, v in enumerate(row):
            ax.text(j, i, str(v), ha="center", va="center")
    ax.set_xticks(range(len(LABEL_NAMES)), LABEL_NAMES)
    ax.set_yticks(range(len(LABEL_NAMES)), LABEL_NAMES)
    ax.set_xlabel("predicted")
    ax.set_ylabel("gold")
    set_title(ax, title, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)

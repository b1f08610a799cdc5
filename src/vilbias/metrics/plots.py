"""Figures of the metrics (matplotlib with the Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path

from vilbias.task import LABEL_NAMES


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


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
    ax.set_title(title, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)

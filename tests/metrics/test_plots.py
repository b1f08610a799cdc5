"""Plot titles that name a model stay on the image."""

from __future__ import annotations

from vilbias.metrics.plots import plot_confusion_matrix, pyplot, set_title


def test_a_long_title_is_wrapped_to_the_figure(tmp_path):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4, 3.6))
    title = "fusion (fusion: MiniLM + EfficientNet-Lite0) — classifier (default/test)"
    set_title(ax, title, fontsize=7)
    lines = ax.get_title().splitlines()
    assert len(lines) == 2 and " ".join(lines) == title
    set_title(ax, "short", fontsize=7)
    assert ax.get_title() == "short"
    plt.close(fig)
    plot_confusion_matrix([[5, 0], [5, 0]], tmp_path / "cm.png", title=title)
    assert (tmp_path / "cm.png").read_bytes()[:4] == b"\x89PNG"

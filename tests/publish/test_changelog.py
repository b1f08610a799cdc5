from __future__ import annotations

import pytest

from tests.publish.conftest import base_rows, make_release_folder
from vilbias.publish.changelog import (
    END,
    START,
    changelog_section,
    compute_changelog,
    insert_changelog,
    read_release_rows,
    render_changelog,
)


def test_compute_changelog_counts_added_removed_relabelled_per_split():
    old = {"a": ("train", 0), "b": ("train", 1), "c": ("test", 0), "d": ("validation", 1)}
    new = {"a": ("train", 1), "b": ("train", 1), "d": ("validation", 0), "e": ("test", 1), "f": ("train", 0)}
    c = compute_changelog(old, new, version="v1.1.0", previous="v1.0.0")
    assert (c.added, c.removed, c.relabelled, c.moved, c.total) == (2, 1, 2, 0, 5)
    assert c.splits["train"].previous == 2 and c.splits["train"].current == 3
    assert (c.splits["train"].added, c.splits["train"].relabelled) == (1, 1)
    assert (c.splits["test"].added, c.splits["test"].removed, c.splits["test"].current) == (1, 1, 1)
    assert c.splits["validation"].relabelled == 1
    assert c.label_counts["train"] == {0: 1, 1: 2}


def test_first_release_and_moved_rows():
    first = compute_changelog(None, {"a": ("train", 0)}, version="v1.0.0")
    assert first.previous is None and first.added == 1
    assert "First release: 1 rows." in render_changelog(first)
    moved = compute_changelog({"a": ("train", 0)}, {"a": ("test", 0)}, version="v1.0.1", previous="v1.0.0")
    assert moved.moved == 1 and moved.added == moved.removed == moved.relabelled == 0
    assert "1 rows changed split" in render_changelog(moved)


def test_render_and_insert_keep_history_between_markers():
    c1 = compute_changelog(None, {"a": ("train", 0)}, version="v1.0.0")
    card = f"---\nlicense: mit\n---\n# T\n\n{START}\nlocal\n{END}\n\n## Citation\n"
    v1 = insert_changelog(card, render_changelog(c1))
    assert "local" not in v1 and "### v1.0.0" in changelog_section(v1) and v1.endswith("## Citation\n")
    c2 = compute_changelog({"a": ("train", 0)}, {"a": ("train", 1)}, version="v1.1.0", previous="v1.0.0")
    v2 = insert_changelog(card, render_changelog(c2), previous_card=v1)
    section = changelog_section(v2)
    assert section.index("### v1.1.0") < section.index("### v1.0.0")
    assert "0 rows added, 0 removed, 1 relabelled" in section
    # A card without markers gets the section appended.
    assert changelog_section(insert_changelog("# no markers\n", "### v1.0.0\n")) == "### v1.0.0"


def test_read_release_rows_reads_default_config(tmp_path):
    rows = base_rows(12)
    make_release_folder(tmp_path, rows)
    assert read_release_rows(tmp_path) == rows
    (tmp_path / "README.md").unlink()
    with pytest.raises(FileNotFoundError, match="README.md"):
        read_release_rows(tmp_path)

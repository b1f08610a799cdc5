"""Read a previous release's assignment: which split and fold each row was in.

The build keeps every row of the previous release where it was, so it needs that release's
cells. They come from where the rows live, never from a recomputation:

- this layout: ``data/{split}-fold{k}-….parquet`` — the file name is the cell;
- the earlier seven-copy layout: ``data/{split}-….parquet`` gives the split and
  ``fold_k/test-….parquet`` the fold (read once, so such a release migrates with every row kept
  where it was).

Only the ``unique_id`` column is read; images never leave the disk. A previous release can be a
folder or a Hub dataset ``ORG/NAME[@REVISION]`` (only its Parquet files are downloaded).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pyarrow.parquet as pq

from vilbias.corpus.splits import Cell
from vilbias.corpus.writer import CELL_FILE, DATA_DIR
from vilbias.provenance import data_name
from vilbias.task import N_FOLDS, SPLITS

_OLD_SPLIT_FILE = re.compile(r"^(?P<split>train|validation|test)-\d{5}-of-\d{5}\.parquet$")
_HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+(@[\w./-]+)?$")


class PreviousReleaseError(ValueError):
    """A previous release exists but cannot be read as one."""


def is_release(folder: str | Path) -> bool:
    folder = Path(folder)
    return (folder / "README.md").is_file() and (folder / DATA_DIR).is_dir()


def _ids(path: Path) -> list[str]:
    try:
        return pq.read_table(path, columns=["unique_id"]).column(0).to_pylist()
    except Exception as e:  # a truncated shard, a file of another schema
        raise PreviousReleaseError(f"{path}: cannot read its unique_id column ({type(e).__name__}: {e})") from e


def read_cells(folder: str | Path) -> dict[str, Cell]:
    """``{unique_id: Cell}`` of a built release folder, in either layout.

    Raises:
        PreviousReleaseError: no shards of a known layout, an unreadable shard, or a row that is
            in no fold of an old-layout release.
    """
    folder = Path(folder)
    shards = sorted((folder / DATA_DIR).glob("*.parquet"))
    cells: dict[str, Cell] = {}
    for path in shards:
        if m := CELL_FILE.match(path.name):
            for uid in _ids(path):
                cells[uid] = Cell(m["split"], int(m["fold"]))
    if cells:
        return cells
    old = [(p, m["split"]) for p in shards if (m := _OLD_SPLIT_FILE.match(p.name))]
    if not old or not (folder / "fold_0").is_dir():
        raise PreviousReleaseError(
            f"{folder} is not a BiasCorpus release: expected Parquet shards named "
            f"{DATA_DIR}/<split>-fold<k>-NNNNN-of-NNNNN.parquet (or the earlier layout's {DATA_DIR}/<split>-… "
            f"with fold_<k>/test-…)"
        )
    return _read_old_layout(folder, old)


def _read_old_layout(folder: Path, split_files: list[tuple[Path, str]]) -> dict[str, Cell]:
    fold_of: dict[str, int] = {}
    for k in range(N_FOLDS):
        for path in sorted((folder / f"fold_{k}").glob("test-*.parquet")):
            fold_of.update(dict.fromkeys(_ids(path), k))
    cells = {}
    for path, split in split_files:
        for uid in _ids(path):
            if uid not in fold_of:
                raise PreviousReleaseError(f"{folder}: row {uid} of {split} is in no fold_<k>/test file; the release is incomplete")
            cells[uid] = Cell(split, fold_of[uid])
    return cells


def looks_like_hub_id(spec: str) -> bool:
    return bool(_HUB_ID.match(spec)) and not Path(spec.split("@")[0]).exists()


def read_hub_cells(spec: str, token: str | None = None) -> dict[str, Cell]:
    """``{unique_id: Cell}`` of a Hub release ``ORG/NAME[@REVISION]``."""
    from huggingface_hub import snapshot_download

    repo_id, _, revision = spec.partition("@")
    with tempfile.TemporaryDirectory(prefix="vilbias-previous-") as tmp:
        snapshot_download(
            repo_id, repo_type="dataset", revision=revision or None, token=token, local_dir=tmp,
            allow_patterns=["README.md", f"{DATA_DIR}/*.parquet", "fold_*/test-*.parquet"],
        )
        return read_cells(tmp)


def previous_cells(spec: str | Path | None, output: Path) -> tuple[dict[str, Cell], str | None]:
    """The assignment to keep, and where it came from.

    ``spec`` is a folder or ``ORG/NAME[@REVISION]``; without it, the output folder's existing
    build is the previous release (a first build has none). A local release is named by its
    folder's name (the report and card are uploaded: no path of the building machine in them).
    """
    if spec is None:
        return (read_cells(output), data_name(output)) if is_release(output) else ({}, None)
    if Path(spec).exists():
        if not is_release(spec):
            raise PreviousReleaseError(f"--previous {spec} is not a built dataset folder (no README.md and {DATA_DIR}/)")
        return read_cells(spec), data_name(spec)
    if looks_like_hub_id(str(spec)):
        return read_hub_cells(str(spec)), str(spec)
    raise FileNotFoundError(f"--previous {spec}: no such folder, and not a Hub id ORG/NAME[@REVISION]")


__all__ = ["PreviousReleaseError", "is_release", "previous_cells", "read_cells", "read_hub_cells", "SPLITS"]

"""Write a Hub-layout Parquet repository that stores every row once.

A row lives in exactly one *cell* — its split and fold — and every config reads the cells it
needs from the same files, through the ``configs:`` entries of the card::

    data/{split}-fold{k}-NNNNN-of-NNNNN.parquet      15 cells: train/validation/test x folds 0-4

    default  train = data/train-*, validation = data/validation-*, test = data/test-*
    fold_k   test  = data/*-fold{k}-*, train = the other four folds' files
    sft      the default splits, reading only the conversation columns (``columns:``)

So a user who loads ``default``, a fold and ``sft`` downloads the corpus once, and the file a row
lives in records its split and fold. :class:`RepoWriter` writes the cells straight from Arrow
tables with the options ``datasets`` uses (content-defined chunking, page index, image bytes
stored plain and uncompressed, the features in the ``huggingface`` schema metadata; text
columns in zstd rather than snappy), in row
groups of :attr:`RepoWriter.row_group_size`, rolling to a new shard past ``max_shard_size``.
Nothing is decoded or re-encoded, and memory holds one row group per cell.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import tempfile
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from datasets import DatasetInfo, Features, SplitDict, SplitInfo
from datasets import config as ds_config
from datasets.arrow_writer import get_parquet_column_options
from datasets.info import DatasetInfosDict
from datasets.utils.metadata import MetadataConfigs
from datasets.utils.py_utils import convert_file_size_to_int
from huggingface_hub import DatasetCardData

# The folder's names and the claim on it live in the light config module (the command line refuses
# a folder before this module's imports load); importers of this module find them here too.
from vilbias import stops
from vilbias.corpus.config import BUILD_FILES, DATA_DIR, REPORT, claim_build_output  # noqa: F401
from vilbias.loading_script.biascorpus import CELLS, VIEWS
from vilbias.outputs import carry_lock
from vilbias.task import N_FOLDS

CELL_FILE = re.compile(r"^(?P<split>train|validation|test)-fold(?P<fold>\d+)-\d{5}-of-\d{5}\.parquet$")
"""A cell shard's file name; its split and fold are the row's assignment."""


def cell_name(split: str, fold: int) -> str:
    return f"{split}-fold{fold}"


@dataclass
class ConfigView:
    """One config of the repository as written: its columns, which cells make each split, and the
    ``data_files`` globs that select those cells' files."""

    features: Features
    """The config's columns."""
    splits: dict[str, list[tuple[str, int]]]
    """split -> cells."""
    patterns: dict[str, list[str]] = field(default_factory=dict)
    """split -> ``data_files`` globs."""


def cell_patterns(cells: tuple[tuple[str, int], ...]) -> list[str]:
    """The fewest globs over the cell files that select exactly ``cells``: a whole split
    (``data/train-*``), whole folds (``data/*-fold3-*``), else cell by cell."""
    chosen = set(cells)
    if len({s for s, _ in chosen}) == 1 and {k for _, k in chosen} == set(range(N_FOLDS)):
        return [f"{DATA_DIR}/{next(iter(chosen))[0]}-*"]
    folds = sorted({k for _, k in chosen})
    if chosen == {c for c in CELLS if c[1] in folds}:
        return [f"{DATA_DIR}/*-fold{k}-*" for k in folds]
    return [f"{DATA_DIR}/{cell_name(s, k)}-*" for s, k in sorted(chosen)]


def corpus_views(default_features: Features, sft_features: Features | None = None) -> dict[str, ConfigView]:
    """The configs of :data:`~vilbias.loading_script.biascorpus.VIEWS` as written over the 15
    cells; a view reading the ``sft`` columns only when ``sft_features`` is given."""
    features = {"default": default_features, "sft": sft_features}
    return {
        name: ConfigView(features[view.columns], {s: list(c) for s, c in view.splits.items()},
                         {s: cell_patterns(c) for s, c in view.splits.items()})
        for name, view in VIEWS.items() if features[view.columns] is not None
    }


class _WriteAhead:
    """One thread writing row groups in the order they are handed over, at most :attr:`depth`
    behind the caller; an error in it is raised to the caller at its next hand-over or at
    :meth:`drain`."""

    depth = 3

    def __init__(self) -> None:
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="write-rows")
        self.pending: deque[Future] = deque()

    def submit(self, fn: Callable[[], None]) -> None:
        while self.pending and (self.pending[0].done() or len(self.pending) >= self.depth):
            self.pending.popleft().result()
        self.pending.append(self.pool.submit(fn))

    def drain(self) -> None:
        while self.pending:
            self.pending.popleft().result()

    def shutdown(self) -> None:
        """Nothing queued is written; the write under way finishes (a Parquet write is not interrupted)."""
        self.pool.shutdown(wait=True, cancel_futures=True)


class _CellWriter:
    def __init__(self, folder: Path, name: str, schema: pa.Schema, options: dict, max_bytes: int,
                 ahead: _WriteAhead | None = None):
        self.folder, self.name, self.schema = folder, name, schema
        self.options, self.max_bytes, self.ahead = options, max_bytes, ahead
        self.rows: list[dict] = []
        """Examples not yet converted: a row group's are converted to Arrow together (one call per
        row group, not one per batch of the few rows a batch holds for each of the 15 cells)."""
        self.pending = 0
        self.shards: list[Path] = []
        self.writer: pq.ParquetWriter | None = None
        self.opened = False
        self.shard_bytes = 0
        self.num_examples = 0
        self.column_bytes: dict[str, int] = {}

    def add_rows(self, rows: list[dict], row_group_size: int) -> None:
        self.rows.extend(rows)
        self.pending += len(rows)
        if self.pending >= row_group_size:
            self.flush(row_group_size)

    def flush(self, row_group_size: int) -> None:
        """The pending rows as one row group: converted here, written here or by the write-ahead
        thread (the shard it goes to and the sizes are decided here, in order)."""
        if not self.pending:
            if not self.opened:
                self.opened = True
                self._run(self._open)  # an empty cell still gets a shard carrying its schema
            return
        table = pa.Table.from_pylist(self.rows, schema=self.schema)
        self.rows, self.pending = [], 0
        roll = not self.opened or self.shard_bytes >= self.max_bytes
        if roll:
            self.opened, self.shard_bytes = True, 0
        self.shard_bytes += table.nbytes
        self.num_examples += table.num_rows
        for name in table.column_names:
            self.column_bytes[name] = self.column_bytes.get(name, 0) + table.column(name).nbytes
        self._run(functools.partial(self._write, table, roll, row_group_size))

    def _run(self, fn: Callable[[], None]) -> None:
        if self.ahead is None:
            fn()
        else:
            self.ahead.submit(fn)

    def _write(self, table: pa.Table, roll: bool, row_group_size: int) -> None:
        if roll:
            self._open()
        self.writer.write_table(table, row_group_size=row_group_size)

    def _open(self) -> None:
        if self.writer is not None:
            self.writer.close()
        path = self.folder / f".{self.name}-{len(self.shards):05d}.parquet.partial"
        self.writer = pq.ParquetWriter(
            path, self.schema, use_content_defined_chunking=ds_config.DEFAULT_CDC_OPTIONS, write_page_index=True, **self.options
        )
        self.writer.add_key_value_metadata({"content_defined_chunking": json.dumps(ds_config.DEFAULT_CDC_OPTIONS)})
        self.shards.append(path)

    def close(self) -> list[Path]:
        """Close the last shard and give the shards their final names (every write done)."""
        self.writer.close()
        n = len(self.shards)
        final = [self.folder / f"{self.name}-{i:05d}-of-{n:05d}.parquet" for i in range(n)]
        for partial, path in zip(self.shards, final, strict=True):
            partial.rename(path)
        return final


class RepoWriter:
    """Examples in, one shard set per cell out. Hand every batch of ``(cell, example)`` pairs to
    :meth:`add_rows`, then call :meth:`close`, which returns ``{config: datasets.DatasetInfo}``."""

    row_group_size = 100
    """Rows per row group: image rows are ~100 KB, so this is ~10 MB per group, the size the
    Hub's dataset viewer pages through (datasets uses 100 for image datasets too)."""

    def __init__(self, root: Path, features: Features, views: dict[str, ConfigView], *, max_shard_size: str | int = "500MB",
                 write_ahead: bool = False):
        self.root = Path(root)
        self.features, self.views = features, views
        folder = self.root / DATA_DIR
        folder.mkdir(parents=True, exist_ok=True)
        self.schema = features.arrow_schema.with_metadata({"huggingface": json.dumps({"info": {"features": features.to_dict()}})})
        options = get_parquet_column_options(features, self.schema)
        # Text columns in zstd rather than datasets' snappy: article text is stored twice (the
        # row and the sft prompt) and zstd takes about a third off it, which keeps a corpus's bytes
        # within ~1% of its images'. Every Parquet reader (pyarrow, datasets, the Hub's viewer)
        # reads zstd; image bytes stay uncompressed and PLAIN as datasets writes them.
        options["compression"] = {leaf: "zstd" if codec == "snappy" else codec for leaf, codec in options["compression"].items()}
        max_bytes = convert_file_size_to_int(max_shard_size)
        # write_ahead: row groups are converted by the caller and written by one thread meanwhile
        # (Parquet writing releases the GIL, so reading the next rows and writing overlap); call
        # close(), or shutdown() when the rows stop coming, so the thread ends either way
        self.ahead = _WriteAhead() if write_ahead else None
        self.cells = {c: _CellWriter(folder, cell_name(*c), self.schema, options, max_bytes, self.ahead) for c in CELLS}
        self.files: dict[tuple[str, int], list[Path]] = {}

    def add_rows(self, rows: list[tuple[tuple[str, int], dict]]) -> None:
        """Add ``(cell, example)`` pairs of any cells: each cell's examples converted to Arrow once,
        a row group at a time (never a whole batch converted and then sliced by cell, which copies
        every image again)."""
        by_cell: dict[tuple[str, int], list[dict]] = {}
        for cell, example in rows:
            by_cell.setdefault(cell, []).append(example)
        for cell, examples in by_cell.items():
            self.cells[cell].add_rows(examples, self.row_group_size)

    def close(self) -> dict[str, DatasetInfo]:
        for w in self.cells.values():
            w.flush(self.row_group_size)
        if self.ahead is not None:
            self.ahead.drain()
            self.shutdown()
        for c, w in self.cells.items():
            self.files[c] = w.close()
        return {name: self._info(name, view) for name, view in self.views.items()}

    def shutdown(self) -> None:
        """End the write-ahead thread, if any: what it has not started is not written (a build that
        stopped removes its folder)."""
        if self.ahead is not None:
            self.ahead.shutdown()

    def corpus_bytes(self) -> int:
        """Bytes of every shard written (one copy of the corpus)."""
        return sum(p.stat().st_size for paths in self.files.values() for p in paths)

    def _info(self, name: str, view: ConfigView) -> DatasetInfo:
        splits = SplitDict()
        download = 0
        for split, cells in view.splits.items():
            n = sum(self.cells[c].num_examples for c in cells)
            nbytes = sum(self.cells[c].column_bytes.get(col, 0) for c in cells for col in view.features)
            splits.add(SplitInfo(name=split, num_bytes=nbytes, num_examples=n))
            download += sum(p.stat().st_size for c in cells for p in self.files[c])
        return DatasetInfo(
            features=view.features, splits=splits, download_size=download,
            dataset_size=sum(s.num_bytes for s in splits.values()), config_name=name,
        )


@contextlib.contextmanager
def swap_in(output: Path) -> Iterator[Path]:
    """A fresh folder to write a release into, swapped in for ``output`` when the block ends
    without error. It sits next to ``output`` (same filesystem, so the swap is a rename); a
    failed or killed build leaves ``output`` as it was and the scratch folder is removed.

    ``output`` is swapped away only when it is an earlier build holding nothing else
    (:func:`claim_build_output`, checked before anything is written and again at the swap, since a
    build takes a while); otherwise :class:`~vilbias.outputs.OutputRefused` and nothing moves.
    """
    output = claim_build_output(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    scratch: Path | None = None
    try:
        with stops.held():  # a stop as the folder is made would otherwise leave it behind, unnamed
            scratch = Path(tempfile.mkdtemp(prefix=".vilbias-build-", dir=output.parent))
        repo = scratch / "repo"
        repo.mkdir()
        yield repo
        # The old folder is kept until the new one is in place.
        claim_build_output(output)
        carry_lock(output, repo)  # the lock a waiting command asks for stays the one this build holds
        with stops.held():  # a stop between the two renames would leave no build at all
            if output.exists():
                os.replace(output, scratch / "previous-output")
            os.replace(repo, output)
    finally:
        if scratch is not None:
            with stops.held():  # a stop as the scratch folder is removed would leave it half removed
                shutil.rmtree(scratch, ignore_errors=True)


def empty_splits(infos: dict[str, DatasetInfo]) -> dict[str, list[str]]:
    """config -> its splits that hold no row (a small corpus leaves some cells empty)."""
    return {name: [s for s in info.splits if info.splits[s].num_examples == 0] for name, info in infos.items()}


def listed_infos(infos: dict[str, DatasetInfo]) -> dict[str, DatasetInfo]:
    """``infos`` without their empty splits: what the card's ``dataset_info:`` lists."""
    out = {}
    for name, info in infos.items():
        splits = SplitDict()
        for s in info.splits:
            if info.splits[s].num_examples:
                splits.add(info.splits[s])
        out[name] = DatasetInfo(features=info.features, splits=splits, download_size=info.download_size,
                                dataset_size=info.dataset_size, config_name=info.config_name)
    return out


def card_metadata(card_data: DatasetCardData, views: dict[str, ConfigView], infos: dict[str, DatasetInfo], stored_columns: list[str], default: str = "default") -> None:
    """Put ``configs:`` (the cells' data files per split; ``columns:`` where a config reads fewer
    columns than a row stores) and ``dataset_info:`` into a ``DatasetCardData``.

    A split without rows is left out of its config (``configs:`` and ``dataset_info:`` alike):
    ``datasets`` refuses to load a config that lists an empty split ("Instruction 'test'
    corresponds to no data"), so a corpus of a few rows would not load at all. Its cell files
    stay (with the schema and no rows), so a later build that fills them lists the split again.
    A built corpus has at least one row, and every config then has a non-empty split (a row is
    in some split of ``default`` and in the train or test split of every fold).
    """
    empty = empty_splits(infos)
    DatasetInfosDict(listed_infos(infos)).to_dataset_card_data(card_data)
    configs = {}
    for name, view in views.items():
        patterns = {s: p for s, p in view.patterns.items() if s not in empty.get(name, ())}
        entry: dict[str, Any] = {"data_files": [{"split": s, "path": p if len(p) > 1 else p[0]} for s, p in patterns.items()]}
        if list(view.features) != stored_columns:
            entry["columns"] = list(view.features)
        if name == default:
            entry["default"] = True
        configs[name] = entry
    MetadataConfigs(configs).to_dataset_card_data(card_data)

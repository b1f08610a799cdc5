"""Write a Hub-layout Parquet repository, all configs in one pass.

``push_to_hub`` lays a dataset out as ``data/{split}-NNNNN-of-NNNNN.parquet`` for ``default``
and ``<config>/{split}-…`` for the others, with the features in each file's ``huggingface``
schema metadata and ``configs:`` + ``dataset_info:`` in the README's YAML. :class:`RepoWriter`
produces the same files straight from row dicts: a row is converted to Arrow with the
features' schema once per split it belongs to, written in row groups of
:attr:`RepoWriter.row_group_size` with the options ``datasets`` uses (content-defined chunking,
page index, image bytes stored plain and uncompressed), and rolled into a new shard past
``max_shard_size``. Nothing is decoded or re-encoded, and memory holds one row group per open
split.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq


@dataclass
class ConfigSpec:
    folder: str
    features: Any
    """A ``datasets.Features``."""
    splits: tuple[str, ...]


class _SplitWriter:
    def __init__(self, folder: Path, split: str, features: Any, schema: pa.Schema, options: dict, max_bytes: int):
        self.folder, self.split, self.features, self.schema = folder, split, features, schema
        self.options, self.max_bytes = options, max_bytes
        self.rows: list[dict] = []
        self.tables: list[pa.Table] = []
        self.pending = 0
        self.shards: list[Path] = []
        self.writer: pq.ParquetWriter | None = None
        self.shard_bytes = 0
        self.num_examples = 0
        self.num_bytes = 0

    def add(self, row: dict, row_group_size: int) -> None:
        self.rows.append(row)
        self.pending += 1
        if self.pending >= row_group_size:
            self.flush(row_group_size)

    def add_table(self, table: pa.Table, row_group_size: int) -> None:
        if self.rows:
            self.tables.append(pa.Table.from_pylist(self.rows, schema=self.schema))
            self.rows = []
        self.tables.append(table)
        self.pending += table.num_rows
        if self.pending >= row_group_size:
            self.flush(row_group_size)

    def flush(self, row_group_size: int) -> None:
        if self.rows:
            self.tables.append(pa.Table.from_pylist(self.rows, schema=self.schema))
            self.rows = []
        if not self.pending:
            if self.writer is None:
                self._open()  # an empty split still gets a shard carrying its schema
            return
        table = pa.concat_tables(self.tables) if len(self.tables) > 1 else self.tables[0]
        self.tables, self.pending = [], 0
        if self.writer is None or self.shard_bytes >= self.max_bytes:
            self._open()
        self.writer.write_table(table, row_group_size=row_group_size)
        self.shard_bytes += table.nbytes
        self.num_examples += table.num_rows
        self.num_bytes += table.nbytes

    def _open(self) -> None:
        from datasets import config as ds_config

        if self.writer is not None:
            self.writer.close()
        path = self.folder / f".{self.split}-{len(self.shards):05d}.parquet.partial"
        self.writer = pq.ParquetWriter(
            path,
            self.schema,
            use_content_defined_chunking=ds_config.DEFAULT_CDC_OPTIONS,
            write_page_index=True,
            **self.options,
        )
        self.writer.add_key_value_metadata({"content_defined_chunking": json.dumps(ds_config.DEFAULT_CDC_OPTIONS)})
        self.shards.append(path)
        self.shard_bytes = 0

    def close(self, row_group_size: int) -> None:
        self.flush(row_group_size)
        self.writer.close()
        n = len(self.shards)
        for i, partial in enumerate(self.shards):
            partial.rename(self.folder / f"{self.split}-{i:05d}-of-{n:05d}.parquet")


class RepoWriter:
    """Rows in, a Hub-layout folder out. Use :meth:`add` for every (config, split, row), then
    :meth:`close`, which returns ``{config: datasets.DatasetInfo}`` with split sizes."""

    row_group_size = 100
    """Rows per row group: image rows are ~100 KB, so this is ~10 MB per group, the size the
    Hub's dataset viewer pages through (datasets uses 100 for image datasets too)."""

    def __init__(self, root: Path, configs: dict[str, ConfigSpec], *, max_shard_size: str | int = "500MB"):
        from datasets.arrow_writer import get_parquet_column_options
        from datasets.utils.py_utils import convert_file_size_to_int

        self.root = Path(root)
        self.configs = configs
        max_bytes = convert_file_size_to_int(max_shard_size)
        self.writers: dict[tuple[str, str], _SplitWriter] = {}
        for name, spec in configs.items():
            folder = self.root / spec.folder
            folder.mkdir(parents=True, exist_ok=True)
            schema = spec.features.arrow_schema.with_metadata(
                {"huggingface": json.dumps({"info": {"features": spec.features.to_dict()}})}
            )
            options = get_parquet_column_options(spec.features, schema)
            for split in spec.splits:
                self.writers[name, split] = _SplitWriter(folder, split, spec.features, schema, options, max_bytes)

    def add(self, config: str, split: str, row: dict) -> None:
        self.writers[config, split].add(row, self.row_group_size)

    def to_table(self, config: str, rows: list[dict]) -> pa.Table:
        """Convert rows to Arrow once with ``config``'s schema, to hand slices of the result to
        several splits with :meth:`add_table` (a row that lands in 7 configs is converted once)."""
        return pa.Table.from_pylist(rows, schema=self.writers[config, self.configs[config].splits[0]].schema)

    def add_table(self, config: str, split: str, table: pa.Table) -> None:
        self.writers[config, split].add_table(table, self.row_group_size)

    def close(self) -> dict[str, Any]:
        from datasets import DatasetInfo, SplitDict, SplitInfo

        infos = {}
        for name, spec in self.configs.items():
            splits = SplitDict()
            download = 0
            for split in spec.splits:
                w = self.writers[name, split]
                w.close(self.row_group_size)
                splits.add(SplitInfo(name=split, num_bytes=w.num_bytes, num_examples=w.num_examples))
                download += sum(p.stat().st_size for p in (self.root / spec.folder).glob(f"{split}-*.parquet"))
            infos[name] = DatasetInfo(
                features=spec.features,
                splits=splits,
                download_size=download,
                dataset_size=sum(s.num_bytes for s in splits.values()),
                config_name=name,
            )
        return infos


def card_metadata(card_data: Any, configs: dict[str, ConfigSpec], infos: dict[str, Any], default: str = "default") -> None:
    """Put ``configs:`` (data files per split, as push_to_hub names them) and ``dataset_info:``
    into a ``DatasetCardData``."""
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs

    DatasetInfosDict(infos).to_dataset_card_data(card_data)
    MetadataConfigs(
        {
            name: {
                "data_files": [{"split": s, "path": f"{spec.folder}/{s}-*"} for s in spec.splits],
                **({"default": True} if name == default else {}),
            }
            for name, spec in configs.items()
        }
    ).to_dataset_card_data(card_data)

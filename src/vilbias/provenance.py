"""What a checkpoint trained on, recorded beside its weights, and the check that uses it.

Every checkpoint the project writes (classifier, fusion head, SFT adapter, merged model) gets two
files in its output folder::

    training_data.json   {"dataset", "revision", "config", "split", "rows", "ids_sha256", ...}
    training_ids.txt     the training rows' unique_id, one per line, sorted

so that ``vilbias evaluate`` can refuse to score a row the model trained on, and the model card can
say what the model saw (its ``datasets:`` metadata links the dataset and revision)::

    from vilbias.provenance import TrainingData, read_training_data
    TrainingData.from_ids("ORG/BiasCorpus", ids, revision="v1.0.0", config="default", split="train").write(out)
    seen = read_training_data(out)          # None for a model without provenance
    seen.overlap(test_ids)                   # ids scored that the model trained on
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

TRAINING_DATA = "training_data.json"
TRAINING_IDS = "training_ids.txt"


_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def is_hub_id(name: str) -> bool:
    """``ORG/NAME`` that is not a local path."""
    return bool(_HUB_ID.match(name)) and not Path(name).exists()


def data_name(dataset: str | Path) -> str:
    """How an artifact names data: a Hub id as it is, a local folder or file by its own name
    (``BiasCorpus``, ``final_labels_SG2_public.csv``), never by where it sat on the machine."""
    text = str(dataset)
    if is_hub_id(text):
        return text
    return Path(text).expanduser().resolve().name if Path(text).exists() else Path(text).name or text


def ids_digest(ids: Iterable[str]) -> str:
    """sha256 over the sorted, newline-joined ids: the same rows give the same digest."""
    return hashlib.sha256("\n".join(sorted(ids)).encode("utf-8")).hexdigest()


@dataclass
class TrainingData:
    """The rows a checkpoint trained on (``ids`` is held in memory, written to its own file)."""

    dataset: str
    """Hub repo id, or a local folder's or file's name as the user named it (never a path of the
    machine that trained: an artifact names data by name and hash, ``extra["sha256"]`` for a file)."""
    revision: str | None
    """Tag or commit of a Hub dataset; None for a local folder."""
    config: str
    split: str
    rows: int
    ids_sha256: str
    ids: list[str] = field(default_factory=list, repr=False)
    extra: dict = field(default_factory=dict)
    """Anything else worth stating (training fraction, distant-supervision corpus, ...)."""

    @classmethod
    def from_ids(cls, dataset: str, ids: Iterable[str], *, revision: str | None = None, config: str = "default",
                 split: str = "train", **extra) -> TrainingData:
        ids = sorted(set(ids))
        dataset = data_name(dataset)
        return cls(dataset, revision, config, split, len(ids), ids_digest(ids), ids, dict(extra))

    def write(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        record = {k: v for k, v in asdict(self).items() if k != "ids"}
        (folder / TRAINING_DATA).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        (folder / TRAINING_IDS).write_text("".join(f"{i}\n" for i in self.ids), encoding="utf-8")

    def overlap(self, ids: Iterable[str]) -> list[str]:
        """The given ids the model trained on, sorted."""
        seen = set(self.ids)
        return sorted(i for i in set(ids) if i in seen)

    def describe(self) -> str:
        """One line for a model card or a report."""
        where = f"{self.dataset}" + (f"@{self.revision}" if self.revision else "")
        return f"{self.rows} rows of {where}, config `{self.config}`, split `{self.split}` (ids sha256 {self.ids_sha256[:12]})"

    def card_datasets(self) -> list[str]:
        """The card's ``datasets:`` metadata: Hub repo ids only (a local folder or file is not linkable)."""
        return [self.dataset] if is_hub_id(self.dataset) else []


def read_training_data(folder_or_repo: str | Path, *, revision: str | None = None) -> TrainingData | None:
    """The provenance of a checkpoint folder or Hub model repo; None when it has none.

    Raises:
        ValueError: the record exists but its ids do not match its digest (a corrupted or
            hand-edited record must not silently pass the overlap check).
    """
    folder = Path(folder_or_repo)
    if folder.is_dir():
        record_path, ids_path = folder / TRAINING_DATA, folder / TRAINING_IDS
        if not record_path.is_file():
            return None
    else:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import EntryNotFoundError, RepositoryNotFoundError

        try:
            record_path = Path(hf_hub_download(str(folder_or_repo), TRAINING_DATA, revision=revision))
            ids_path = Path(hf_hub_download(str(folder_or_repo), TRAINING_IDS, revision=revision))
        except (EntryNotFoundError, RepositoryNotFoundError):
            return None
    record = json.loads(record_path.read_text(encoding="utf-8"))
    ids = [line for line in ids_path.read_text(encoding="utf-8").splitlines() if line] if ids_path.is_file() else []
    if ids_digest(ids) != record["ids_sha256"]:
        raise ValueError(f"{ids_path}: the training ids do not match the digest in {TRAINING_DATA}; the record is corrupted")
    return TrainingData(**{k: v for k, v in record.items() if k in TrainingData.__dataclass_fields__ and k != "ids"}, ids=ids)

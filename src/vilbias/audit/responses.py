"""Reading a responses file (ours or another tool's) into normalised rows, and grouping them by
identity, question family and activity as the metrics need."""

from __future__ import annotations

import csv
import json
import math
import os
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from vilbias.audit.questions import ALL
from vilbias.audit.statistics import Cells

REQUIRED = ("paradigm", "dimension", "options", "answer", "identity_1", "identity_2")

UNNAMED = "-"
"""The activity of a row that names none (a third-party file without activity columns)."""


def missing_to_none(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    # Only the empty cell is missing: "None" may be an option (and an answer) of its own.
    if isinstance(value, str) and not value.strip():
        return None
    return value


def option_list(value: Any) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    text = str(value or "").strip()
    if text.startswith("["):
        return [str(v) for v in json.loads(text)]
    return [o.strip() for o in text.split("|") if o.strip()]


def normalize_row(row: dict[str, Any], where: str = "") -> dict[str, Any]:
    """One responses row with defaults filled in: options as a list, empty fields as None,
    ``modality`` (default ``image``), ``model`` (default ``""``), ``question_type`` (default the
    paradigm). ``context`` stays as given: a missing one is resolved per identity by
    :func:`activity_of`. Normalising a normalised row changes nothing."""
    missing = [k for k in REQUIRED if k not in row]
    if missing:
        raise ValueError(f"{where}responses row lacks {', '.join(missing)} (format: docs/audit.md)")
    out = {k: missing_to_none(v) for k, v in row.items()}
    out["options"] = option_list(row["options"])
    out["answer"] = None if out["answer"] is None else str(out["answer"])
    out["modality"] = out.get("modality") or "image"
    out["model"] = out.get("model") or ""
    out["question_type"] = out.get("question_type") or out["paradigm"]
    out["context"] = out.get("context")
    return out


def read_responses(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Rows of a responses file: JSON Lines (``.jsonl``) or CSV (``options`` a JSON list or
    ``|``-separated)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"responses file {path} does not exist")
    rows = []
    if path.suffix.lower() == ".csv":
        with path.open(encoding="utf-8", newline="") as f:
            for n, row in enumerate(csv.DictReader(f), 2):
                rows.append(normalize_row(row, f"{path}:{n}: "))
    else:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                try:
                    data = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path}:{n}: not a JSON object ({e.msg})") from None
                rows.append(normalize_row(data, f"{path}:{n}: "))
    return rows


def identity_options(row: dict[str, Any]) -> list[str]:
    """The options of ``row`` that are the pair's identities (none for an activity contrast)."""
    i1, i2 = row["identity_1"], row["identity_2"]
    if i1 == i2:
        return []
    return [o for o in row["options"] if o in (i1, i2)]


def family(row: dict[str, Any]) -> str:
    """The question family a row is compared within (see the module docstring)."""
    paradigm = row["paradigm"]
    if paradigm == "stereotyping":
        return row.get("valence") or ALL
    if paradigm == "decision":
        return "role"
    return row["question_type"]


def activity_of(row: dict[str, Any], identity: str) -> str:
    """The activity in which ``identity`` is evaluated by ``row``.

    Factuality and perception: the activity asked about (``context``); without a context column,
    the person's own activity (``activity_1`` for ``identity_1``, ``activity_2`` for
    ``identity_2``) — in an identity-activity contrast the two differ, and neither is the other's.
    Decision making: the activity the role belongs to (the person's activity; ``context`` there is
    the role question), else the role. Stereotyping has no activities: the trait is the unit.
    """
    paradigm = row["paradigm"]
    own = row.get("activity_1") if identity == row["identity_1"] else row.get("activity_2")
    if paradigm == "stereotyping":
        return row.get("context") or row.get("trait") or UNNAMED
    if paradigm == "decision":
        return own or row.get("role") or UNNAMED
    return row.get("context") or own or UNNAMED


def identity_rows(rows: Iterable[dict[str, Any]]) -> Iterator[tuple[dict[str, Any], list[str]]]:
    for row in rows:
        if row["answer"] is None:
            continue
        ids = identity_options(row)
        if len(ids) == 2:
            yield row, ids


def group_key(row: dict[str, Any], fam: str) -> tuple[str, str, str, str, str]:
    return (row["model"], row["modality"], row["paradigm"], fam, row["dimension"])


KEY = ("model", "modality", "paradigm", "family", "dimension")


def cells_by_identity(rows: list[dict[str, Any]], families: bool = True,
                       unit: Any = activity_of) -> dict[tuple, dict[str, Cells]]:
    """``{group key: {identity: {activity: [n_response, n_option]}}}``; ``families`` adds the
    family ``all`` beside each row's own; ``unit(row, identity)`` names the cell."""
    cells: dict[tuple, dict[str, Cells]] = defaultdict(lambda: defaultdict(lambda: defaultdict(lambda: [0, 0])))
    for row, ids in identity_rows(rows):
        for fam in ({family(row), ALL} if families else {family(row)}):
            for identity in ids:
                cell = cells[group_key(row, fam)][identity][unit(row, identity)]
                cell[0] += row["answer"] == identity
                cell[1] += 1
    return cells


def plain_cells(cells: Cells) -> dict[str, list[int]]:
    return {a: list(c) for a, c in sorted(cells.items())}

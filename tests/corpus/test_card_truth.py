"""The card says only what is so of the data it sits on (CONTRIBUTING.md: what a user reads is computed from the data).

A card is rendered for every kind of build — the embedded sample (a pipeline build), a
``--sentences`` build and an import in each published layout — and read for contradictions of the
kind a new user found: a sentence about zero things that reads as if there were some ("from 0
outlets", "0 of 60 rows … Their `sft` answer"), counts that disagree with the table beside them,
a claim of human review or of LLM annotators where there was none, and a loading example naming a
repository that was never made instead of the folder just built.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.corpus.releases import items, write_2025, write_paper_zip, write_v1
from tests.training_classifier.conftest import write_babe_csv
from vilbias.corpus import BuildConfig, build

ZERO_AS_IF_SOME = [
    (r"\bfrom 0 outlets", "'from 0 outlets'"),
    (r"\b0 of \d+ rows[^.]*\.\s+Their\b", "'0 of N rows …. Their …'"),
    (r"\b0 groups? (hold|holds)", "'0 groups hold'"),
    (r"[:(]\s*0\s*[;.,)]", "a count of 0 stated as a figure ': 0;'"),
    (r"\b0 (remain|items reviewed)", "'0 remain / 0 items reviewed'"),
    (r"\b0\.0% of annotated items", "'0.0% of annotated items'"),
    (r"\b0\.0% of \d+ calls gave no vote", "'0.0% of N calls gave no vote'"),
]


def contradictions(card: str, report: dict, output: str) -> list[str]:
    """Every contradiction of ``card`` with the build ``report`` of a folder built as ``output``."""
    found = []
    for pattern, what in ZERO_AS_IF_SOME:
        if re.search(pattern, card):
            found.append(f"zero as if some: {what}")
    kind = report["source"]["kind"]
    reviewed = kind in ("sample", "workdir") and any(
        r != "unreviewed" for r in _reviews(report))
    if not reviewed and re.search(r"after review|Human review covers", card):
        found.append("claims human review; none happened")
    if kind == "release" and re.search(r"labels come from LLM annotators|majority annotator", card):
        found.append("an import's card credits LLM annotators / voting")
    if kind == "release" and not re.search(r"no one reviewed|not reviewed", card, re.I):
        found.append("an import's card does not say that no one reviewed it")
    if "vilbias/BiasCorpus" in card:
        found.append("Loading names vilbias/BiasCorpus, a repo that was never made")
    # the folder built, by its name: the card is uploaded, so no path of the machine that built it
    if f'load_dataset("{Path(output).name}"' not in card or str(Path(output).parent) in card:
        found.append(f"Loading does not show the folder built by its name ({output})")
    if kind == "sentences" and not re.search(r"text[- ]only", card, re.I):
        found.append("a sentence build's card does not say it is text-only")
    # outlets: the count stated agrees with the outlet table
    m = re.search(r"from (\d+) outlets?", card)
    table = re.search(r"\| outlet \| rows \| biased share \|\n\|[-:|]+\|\n((?:\|.*\|\n)+)", card)
    if m and table:
        named = [r for r in table.group(1).splitlines() if not r.startswith("| (unknown)")]
        if int(m.group(1)) <= 10 and int(m.group(1)) != len(named):
            found.append(f"'from {m.group(1)} outlets' above a table of {len(named)} named outlets")
    if table and not m and "(unknown)" in table.group(1) and "no outlet" not in card:
        found.append("an outlet table of (unknown) rows the text does not explain")
    # sizes: the stated total agrees with the default splits' rows
    size = re.search(r"^(\d+) (article–image pairs|sentences kept)", card, re.M)
    if size and int(size.group(1)) != report["rows"]:
        found.append(f"states {size.group(1)} rows, the build has {report['rows']}")
    if report.get("rationale_check"):
        rc = report["rationale_check"]
        if rc["with_rationale"] and f"{rc['passed']} of {rc['rows']}" not in card:
            found.append("the rationale check's pass count is not stated")
        if not rc["with_rationale"] and "No row has a rationale" not in card:
            found.append("the rationale check's pass count is not stated")
    return found


def _reviews(report: dict) -> list[str]:
    return report.get("_reviews", [])


def _build(tmp_path: Path, name: str, **kwargs) -> tuple[str, dict, str]:
    out = tmp_path / name
    report = build(BuildConfig(output=out, **kwargs))
    report["_reviews"] = _review_values(out) if report["source"]["kind"] in ("sample", "workdir") else []
    return (out / "README.md").read_text(encoding="utf-8"), report, str(out)


def _review_values(folder: Path) -> list[str]:
    import pyarrow.parquet as pq

    return [v for p in sorted((folder / "data").glob("*.parquet")) for v in pq.read_table(p, columns=["review"]).column("review").to_pylist()]


@pytest.fixture(scope="module")
def cards(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cards")
    rows = items(24)
    write_v1(tmp / "v1/table.parquet", rows, images=tmp / "v1/images")
    write_2025(tmp / "hub/data/dataset_cleaned.parquet", rows)
    write_paper_zip(tmp / "paper/dataset.zip", rows)
    return {
        "sample": _build(tmp, "sample"),
        "sentences": _build(tmp, "babe", sentences=write_babe_csv(tmp / "babe.csv")),
        "nmb-plus-v1": _build(tmp, "v1-out", source=str(tmp / "v1/table.parquet")),
        "nmb-plus-2025": _build(tmp, "hub-out", source=str(tmp / "hub")),
        "vilbias-paper": _build(tmp, "paper-out", source=str(tmp / "paper/dataset.zip")),
    }


@pytest.mark.parametrize("build_name", ["sample", "sentences", "nmb-plus-v1", "nmb-plus-2025", "vilbias-paper"])
def test_card_has_no_contradiction(cards, build_name):
    card, report, output = cards[build_name]
    assert contradictions(card, report, output) == []


def test_an_import_card_says_where_labels_and_rationales_came_from(cards):
    card, report, _ = cards["vilbias-paper"]
    assert "`Biased` → `biased`" in card and "the source's" in card
    assert re.search(r"no one reviewed", card, re.I) and "no vote" in card.lower()
    card, report, _ = cards["nmb-plus-2025"]
    assert "has no rationales" in card and "Their `sft` answer" not in card


def test_the_checker_finds_the_contradictions_it_is_for():
    report = {"source": {"kind": "release"}, "rows": 60}
    bad = ("60 article–image pairs: 30 biased (50.0%), 30 not biased, from 0 outlets.\n\n"
           "| outlet | rows | biased share |\n|---|---:|---:|\n| (unknown) | 60 | 50.0% |\n\n"
           "- 0 of 60 rows have no rationale in the source. Their `sft` answer is the label alone.\n"
           "| `multimodal_label` | ClassLabel | **the task label** (text + image prompt, after review) |\n"
           "- labels come from LLM annotators. Human review covers a subset.\n"
           'ds = load_dataset("vilbias/BiasCorpus")\n')
    found = contradictions(bad, report, "out")
    assert len(found) == 7, found


def test_report_and_card_state_the_rationale_check(cards):
    for name in ("sample", "nmb-plus-v1", "nmb-plus-2025", "vilbias-paper"):
        _, report, _ = cards[name]
        rc = report["rationale_check"]
        assert rc["rows"] == report["rows"] and 0 <= rc["passed"] <= rc["rows"]
    assert cards["sentences"][1]["rationale_check"] is None and cards["sentences"][1]["warning"] is None
    on_disk = json.loads((Path(cards["vilbias-paper"][2]) / "build_report.json").read_text())
    assert on_disk["rationale_check"]["by_author"]


def _sft_answers(folder: Path) -> dict[str, str]:
    from datasets import load_dataset

    ds = load_dataset(str(folder), "sft")
    return {r["unique_id"]: r["messages"][-1]["content"][0]["text"] for split in ds for r in ds[split]}


def _default_rows(folder: Path) -> dict[str, dict]:
    """Every stored row (its split from its file's name), read straight from the shards."""
    import pyarrow.parquet as pq

    columns = ["unique_id", "multimodal_label", "reasoning", "rationale_problems"]
    return {r["unique_id"]: {**r, "split": p.name.split("-")[0]} for p in sorted((folder / "data").glob("*.parquet"))
            for r in pq.read_table(p, columns=columns).to_pylist()}


def test_rows_carry_their_check_in_default_not_in_sft(cards):
    folder = Path(cards["sample"][2])
    rows = _default_rows(folder)
    from datasets import load_dataset

    assert "rationale_problems" not in load_dataset(str(folder), "sft", split="train").column_names
    failing = {u for u, r in rows.items() if r["rationale_problems"]}
    assert len(failing) == cards["sample"][1]["rationale_check"]["failing"] > 0
    answers = _sft_answers(folder)
    assert all("\nReasoning: " in answers[u] for u in failing)  # kept as written without the flag


def test_exclude_failed_rationales_keeps_them_out_of_sft_and_moves_no_row(cards, tmp_path):
    card, report, _ = _build(tmp_path, "excluded", exclude_failed_rationales=True)
    rc = report["rationale_check"]
    assert rc["exclude_failed"] and rc["sft_label_only"] == rc["failing"] > 0 and rc["sft_failing_rationales"] == 0
    rows, answers = _default_rows(tmp_path / "excluded"), _sft_answers(tmp_path / "excluded")
    plain = _default_rows(Path(cards["sample"][2]))
    assert {u: r["split"] for u, r in rows.items()} == {u: r["split"] for u, r in plain.items()}  # no row moves
    for u, r in rows.items():
        label = "biased" if r["multimodal_label"] else "not biased"
        if r["rationale_problems"]:
            assert answers[u] == f"Label: {label}" and r["reasoning"]  # out of sft, still in default
        else:
            assert answers[u].startswith(f"Label: {label}\nReasoning: ")
    assert f"the {rc['failing']} failing rationales are kept out of what `sft` trains on" in card
    assert contradictions(card, report, str(tmp_path / "excluded")) == []


def test_an_import_whose_rationales_mostly_fail_says_so_first(tmp_path):
    from dataclasses import replace

    from vilbias.corpus import format_report

    rows = items(12)
    bad = {0: 'It calls the plan "a shameful betrayal of voters".', 1: "The wording is loaded and the",
           2: "The article is neutral and balanced.", 3: "", 4: "Short.", 5: "The text repeats. The text repeats.",
           6: 'It quotes "words nobody wrote here".'}
    rows = [replace(it, reasoning=bad.get(i, it.reasoning), label=1 if i == 2 else it.label) for i, it in enumerate(rows)]
    write_paper_zip(tmp_path / "dataset.zip", rows)
    report = build(BuildConfig(source=str(tmp_path / "dataset.zip"), output=tmp_path / "out"))
    rc = report["rationale_check"]
    assert list(report)[0] == "warning" and report["warning"] and "mostly fail" in report["warning"]
    assert rc["passed"] == 5 and rc["no_rationale"] == 1 and rc["by_author"]["the source"] == {"rows": 11, "passed": 5, "pass_share": 0.4545}
    assert set(rc["by_code"]) == {"quote_not_in_article", "cut_off", "argues_other_label", "empty", "repeats_itself"}
    assert format_report(report).startswith("WARNING: the rationales mostly fail")
    got = _default_rows(tmp_path / "out")
    assert got[rows[0].unique_id]["rationale_problems"] == ["quote_not_in_article"]
    assert got[rows[3].unique_id]["rationale_problems"] == ["empty"] and got[rows[3].unique_id]["reasoning"] is None
    card = (tmp_path / "out/README.md").read_text(encoding="utf-8")
    assert "**5 of 12 rows pass (41.7%)**; 1 has no rationale, 6 rationales fail." in card
    assert contradictions(card, report, str(tmp_path / "out")) == []


@pytest.mark.parametrize("build_name", ["sample", "sentences", "nmb-plus-v1", "nmb-plus-2025", "vilbias-paper"])
def test_both_yaml_parsers_read_the_card_alike(cards, build_name):
    """The suite's processes parse YAML with PyYAML's LibYAML parser (tests/conftest.py); a user's
    huggingface_hub may run the pure-Python one: on every kind of card a build writes, both read
    the same values."""
    import yaml

    card = cards[build_name][0]
    header = card.split("---\n")[1]
    assert yaml.load(header, Loader=yaml.SafeLoader) == yaml.load(header, Loader=yaml.CSafeLoader) != {}

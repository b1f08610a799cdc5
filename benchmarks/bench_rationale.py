"""Cost of the rationale check per 10,000 rows, against a bare substring search over the same rows.

    .venv/bin/python benchmarks/bench_rationale.py [--rows 10000]

Rows are the embedded sample's annotations (src/vilbias/sample: each vote's rationale with its
article, label and techniques), repeated to ``--rows``. The baseline looks each rationale's quoted
passages up in its article with a plain ``in`` (no normalisation, none of the other checks): the
least a quotation check can cost. Prints rows/s and milliseconds per 10,000 rows for both.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from importlib import resources

from vilbias.rationale import check_rationale


def sample_rows() -> list[dict]:
    folder = resources.files("vilbias.sample")
    articles = {a["unique_id"]: a for a in map(json.loads, folder.joinpath("articles.jsonl").read_text().splitlines())}
    rows = []
    for vote in map(json.loads, folder.joinpath("annotations.jsonl").read_text().splitlines()):
        if vote["status"] == "valid" and vote["label"]:
            a = articles[vote["item_id"]]
            rows.append({"reasoning": vote["rationale"], "article_text": a["article_text"], "headline": a["headline"],
                         "caption": a.get("image_caption", ""), "label": vote["label"], "techniques": vote["techniques"]})
    return rows


def timed(fn, rows: list[dict]) -> float:
    start = time.perf_counter()
    for row in rows:
        fn(row)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--smoke", action="store_true", help="A tiny run of every step, in seconds, for the test suite (tests/test_benchmarks.py); its figures mean nothing.")
    args = parser.parse_args()
    n = 200 if args.smoke else args.rows
    base = sample_rows()
    rows = (base * (n // len(base) + 1))[:n]
    quoted = re.compile(r"[\"“]([^\"“”]{3,300})[\"”]")

    def baseline(row):
        source = row["headline"] + "\n" + row["article_text"]
        return [q for q in quoted.findall(row["reasoning"]) if q not in source]

    def check(row):
        return check_rationale(row["reasoning"], article_text=row["article_text"], headline=row["headline"],
                               caption=row["caption"], label=row["label"], techniques=row["techniques"])

    check(rows[0])  # compile the patterns outside the timing
    for name, fn in (("baseline (bare `in` on quotations)", baseline), ("check_rationale", check)):
        seconds = timed(fn, rows)
        print(f"{name:38s} {n / seconds:10,.0f} rows/s  {seconds * 1000 * 10_000 / n:8.1f} ms per 10k rows")


if __name__ == "__main__":
    main()

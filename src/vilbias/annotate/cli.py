"""``vilbias annotate``: label every item of a workdir with annotators (LLMs, VLMs or any catalogue model).

    vilbias annotate --workdir work --annotators paper --samples 3   # the paper's three VLMs on vLLM
    vilbias annotate --workdir work --annotators annotators.yaml --samples 3
    vilbias annotate --workdir work                                  # offline: the shipped BABE sentence model (text prompt)
    vilbias annotate --workdir work --annotators smollm2             # the embedded SmolLM2-135M (text prompt, K=3)
    vilbias annotate --workdir work --limit 20 --prompts text        # a quick trial
    vilbias annotate --config work/annotate_config.yaml              # the options the last run used

Re-running asks only what is missing. The annotators file format, the shipped ``paper`` file and
structured output are in ``docs/annotate.md``. Each run writes its options to
``<workdir>/annotate_config.yaml``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from vilbias.argparser import ConfigParser
from vilbias.config import save_config
from vilbias.ledger import ledger_kept
from vilbias.stops import on_stop
from vilbias.workdir import ANNOTATIONS


@dataclass
class SummaryPrint:
    json: bool = field(default=False, metadata={"help": "Print the summary as JSON."})


def main(argv: list[str], prog: str = "vilbias annotate") -> int:
    from vilbias.annotate.config import AnnotateConfig
    from vilbias.annotate.pipeline import annotate
    from vilbias.annotate.summary import format_summary

    config, shown = ConfigParser([AnnotateConfig, SummaryPrint], prog=prog,
                                 description=__doc__.splitlines()[0]).parse(argv)
    store = Path(config.workdir) / ANNOTATIONS
    # Each answer is committed as it arrives (vilbias.ledger): a stop keeps them all, a re-run asks the rest.
    with on_stop(lambda: ledger_kept(store, "calls", "raw IS NOT NULL")):
        summary = annotate(config)
    print(json.dumps(summary, indent=2) if shown.json else format_summary(summary))
    save_config(config.workdir, "annotate", config)
    return 0

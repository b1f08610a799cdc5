"""``vilbias build``: build the Hub-layout dataset folder.

    vilbias build                                   # embedded sample -> ./BiasCorpus
    vilbias build --workdir work --output ./BiasCorpus
    vilbias build --sentences babe.csv --output ./babe
    vilbias build --from vector-institute/newsmediabias-plus --output ./nmb-plus
    vilbias build --config BiasCorpus/build_config.yaml   # the options a previous build ran with
"""

from __future__ import annotations

from vilbias.config import ConfigParser
from vilbias.corpus.config import BuildConfig


def main(argv: list[str], prog: str = "vilbias build") -> int:
    (config,) = ConfigParser([BuildConfig], prog=prog, description=__doc__.splitlines()[0]).parse(argv)
    from vilbias.corpus.pipeline import build, format_report

    report = build(config)
    print(format_report(report))
    name = str(config.output)
    print("\nLoad it with:")
    print("  from datasets import load_dataset")
    for cfg in [""] + [f', "{c}"' for c in ("fold_3", "sft") if c in report["configs"]]:
        print(f'  load_dataset("{name}"{cfg})')
    return 0

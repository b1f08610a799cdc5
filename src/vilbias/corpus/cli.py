"""``vilbias build``: build the Hub-layout dataset folder.

    vilbias build                                   # embedded sample -> ./BiasCorpus
    vilbias build --workdir work --output ./BiasCorpus
    vilbias build --sentences babe.csv --output ./babe
    vilbias build --from vector-institute/newsmediabias-plus --output ./nmb-plus
    vilbias build --config BiasCorpus/build_config.yaml   # the options a previous build ran with
"""

from __future__ import annotations

from pathlib import Path

from vilbias.argparser import ConfigParser
from vilbias.corpus.config import BuildConfig, claim_build_output
from vilbias.stops import on_stop


def main(argv: list[str], prog: str = "vilbias build") -> int:
    (config,) = ConfigParser([BuildConfig], prog=prog, description=__doc__.splitlines()[0]).parse(argv)
    claim_build_output(config.output)  # a folder that is not a build's is refused before the build's libraries load
    from vilbias.corpus.pipeline import build, format_report

    # A build is written beside the output and swapped in at the end (corpus.writer.swap_in): a stop
    # before the swap leaves the output as it was and removes the scratch folder; nothing is resumed.
    before = _build_stamp(config.output)
    with on_stop(lambda: _what_a_stop_kept(config.output, before)):
        report = build(config)
    print(format_report(report))
    name = str(config.output)
    print("\nLoad it with:")
    print("  from datasets import load_dataset")
    for cfg in [""] + [f', "{c}"' for c in ("fold_3", "sft") if c in report["configs"]]:
        print(f'  load_dataset("{name}"{cfg})')
    return 0


def _build_stamp(output: Path) -> tuple[int, int] | None:
    """What identifies the build in ``output`` (its report file's inode and mtime), None for none."""
    # loaded by then with the pipeline; imported here so that --help loads no pyarrow
    from vilbias.corpus.writer import REPORT

    try:
        stat = (Path(output) / REPORT).stat()
    except OSError:
        return None
    return stat.st_ino, stat.st_mtime_ns


def _what_a_stop_kept(output: Path, before: tuple[int, int] | None) -> str:
    now = _build_stamp(output)
    if now is not None and now != before:  # the stop came after the swap: the build is whole
        return f"the new build is complete in {output}"
    again = "a build starts over: re-run the same command to build it"
    if before is not None and now == before:
        return f"the previous build in {output} is untouched; {again}"
    return f"nothing was written to {output}; {again}"


"""The ``vilbias`` command: one subcommand per pipeline stage.

    vilbias build                      # the embedded sample -> ./BiasCorpus
    vilbias ingest --feed URL --workdir work
    vilbias annotate --workdir work
    vilbias review stats --workdir work
    vilbias publish dataset --repo-id ORG/NAME --version 1.0.0
    vilbias -v train sft --recipe training/recipes/SmolVLM-Instruct/lora.yaml --max_steps 10

Each stage's module defines ``main(argv, prog)``: it parses its arguments with
:class:`vilbias.argparser.ConfigParser` (``HfArgumentParser`` over the stage's config dataclasses,
``--config FILE.yaml`` included) and calls the stage function, which Python callers use directly
with the same config dataclasses. A stage with commands of its own (``review export``) dispatches
them with :func:`run_subcommand`.
"""

from __future__ import annotations

import argparse
import difflib
import gc
import importlib
import logging
import sys
from collections.abc import Callable, Sequence

from vilbias import outputs, stops

# stage -> (module defining main(argv, prog), one-line description)
STAGES: dict[str, tuple[str, str]] = {
    "ingest": ("vilbias.ingest.cli", "Fetch news feeds into a workdir of article-image pairs."),
    "annotate": ("vilbias.annotate.cli", "Label a workdir's items with LLM annotators and hierarchical voting."),
    "review": ("vilbias.review.cli", "Export review sheets, import verdicts, report agreement."),
    "build": ("vilbias.corpus.cli", "Build the Hub-layout dataset folder (default: the embedded sample)."),
    "publish": ("vilbias.publish.cli", "Publish a dataset release, a model or the Space to the Hub."),
    "train": ("vilbias.training.cli", "Train classifier baselines or run a trl sft recipe."),
    "evaluate": ("vilbias.evaluate.cli", "Score a model: closed-ended metrics, LLM-judged reasoning, analyses."),
    "audit": ("vilbias.audit.cli", "Audit a VLM or the corpus's LLM annotators for stereotypes (VIGNETTE)."),
    "demo": ("vilbias.spaces.cli", "Run the Gradio demo locally."),
}

# stage -> the pyproject extra that brings what it imports beyond the core
EXTRAS: dict[str, str] = {
    "ingest": "ingest", "annotate": "annotate", "review": "annotate", "train": "train", "evaluate": "evaluate",
    "audit": "evaluate", "demo": "space",
}


Handler = Callable[[list[str], str], int]


def run_subcommand(prog: str, description: str, commands: dict[str, tuple[str, Handler]], argv: Sequence[str]) -> int:
    """Dispatch ``prog COMMAND ...`` to ``commands[COMMAND] = (help, handler(argv, prog))``.

    ``--help`` (or no command) lists the commands; a misspelled one names the closest.
    """
    argv = list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        width = max(map(len, commands))
        lines = [f"usage: {prog} {{{','.join(commands)}}} [--help] ...", "", description, "", "commands:"]
        lines += [f"  {name:<{width}}  {help_}" for name, (help_, _) in commands.items()]
        print("\n".join(lines), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name not in commands:
        close = difflib.get_close_matches(name, list(commands), n=1)
        hint = f"; did you mean {close[0]}?" if close else f"; choose from {', '.join(commands)}"
        print(f"{prog}: error: unknown command {name!r}{hint}", file=sys.stderr)
        return 2
    return commands[name][1](rest, f"{prog} {name}")


def _top_parser() -> argparse.ArgumentParser:
    """The global flags and the stage; everything after the stage is the stage's own."""
    from vilbias import __version__

    parser = argparse.ArgumentParser(
        prog="vilbias", description="BiasCorpus: bias in multimodal news, from feeds to the Hub.",
        formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False,
        epilog="stages:\n" + "\n".join(f"    {name:<10} {help_}" for name, (_, help_) in STAGES.items())
        + "\n\n`vilbias STAGE --help` lists a stage's options; every stage takes --config FILE.yaml.",
    )
    parser.add_argument("--version", action="version", version=f"vilbias {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="Log debug messages; show tracebacks.")
    parser.add_argument("-q", "--quiet", action="store_true", help="Log warnings and errors only.")
    return parser


def split_argv(argv: list[str]) -> tuple[list[str], str | None, list[str]]:
    """``(global flags, stage, the stage's arguments)``: the stage is the first word that is not a flag."""
    for i, arg in enumerate(argv):
        if not arg.startswith("-"):
            return argv[:i], arg, argv[i + 1:]
    return argv, None, []


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    flags, stage, rest = split_argv(argv)
    top = _top_parser()
    args = top.parse_args(flags)
    if stage is None:
        top.exit(2, "vilbias: error: the following arguments are required: STAGE (one of "
                    + ", ".join(STAGES) + "; --help describes them)\n")
    if stage not in STAGES:
        close = difflib.get_close_matches(stage, list(STAGES), n=1)
        top.exit(2, f"vilbias: error: unknown stage {stage!r}" + (f"; did you mean {close[0]}?" if close else
                                                                   f"; choose from {', '.join(STAGES)}") + "\n")
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING if args.quiet else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    # SIGTERM (a job scheduler's stop) takes Ctrl-C's path: cleanup runs, and the line below says what was kept.
    stops.install()
    # Only the chosen stage's module is imported: `vilbias build` must not pay for torch or trl.
    try:
        module = importlib.import_module(STAGES[stage][0])
        # Every folder the stage claims stays locked until it ends, however it ends (one writer per
        # folder), and a full disk becomes one line (vilbias.outputs).
        with outputs.writing():
            return int(module.main(rest, f"vilbias {stage}") or 0)
    except ModuleNotFoundError as e:
        missing = (e.name or "").split(".")[0]
        if args.verbose or not missing or missing == "vilbias" or stage not in EXTRAS:
            raise
        extra = EXTRAS[stage]
        print(f"vilbias {stage}: error: this needs the optional dependency {missing!r}, which is not installed; "
              f"install it with: pip install 'vilbias[{extra}]'", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        # One line: what the stop kept and whether a re-run resumes, as the stage computed it
        # (vilbias.stops.on_stop); a stage that declares nothing promises nothing.
        print(f"vilbias {stage}: stopped" + (f"; {e.kept}" if isinstance(e, stops.Stopped) else ""), file=sys.stderr)
        # Everything the stage opened is closed by now. With torch loaded, the interpreter's last
        # garbage collections take seconds; objects frozen here are left to the exit, so a stopped
        # command ends at once (gc.freeze: the objects stay alive and are freed with the process).
        gc.freeze()
        return stops.exit_status()
    except outputs.DiskFull as e:
        # The folder, the space free, what the step needed and what was kept (the stage's own
        # sentence, as for a stop): one line; -v shows the traceback.
        if args.verbose:
            raise
        print(f"vilbias {stage}: error: {e}", file=sys.stderr)
        return 1
    except (ValueError, FileNotFoundError, PermissionError, RuntimeError) as e:
        # Expected failures (bad input, missing files, refused actions) get one clear line;
        # -v shows the traceback.
        if args.verbose:
            raise
        # The whole message: some list every problem (`review import` names each bad row).
        print(f"vilbias {stage}: error: {str(e) or type(e).__name__}", file=sys.stderr)
        return 2


_owns_process = False
"""Whether this process is the ``vilbias`` command's own (:func:`run`), not a test or a notebook
that called :func:`main`."""


def libraries_loaded() -> None:
    """Called by a stage once its libraries are imported, before its work (``vilbias train
    classifier`` and ``sentence``): in the command's own process, everything alive now (the
    libraries' modules, kept to the end anyway) is frozen out of the garbage collector
    (``gc.freeze``), so each full collection after it walks only what the work makes.
    transformers' Trainer asks for one at every ``train()`` (accelerate's ``free_memory``) and
    Python starts its own as objects pile up: ~0.2 s each once torch and transformers are loaded.
    A 5-fold ``train sentence --cv`` of one step on 40 sentences: 15.8-16.2 -> 14.7 CPU-s (paired
    runs, 2-core AVX-512 Xeon). A :func:`main` called in a longer process (a test, a notebook)
    leaves its collector alone."""
    if _owns_process:
        gc.freeze()


def run() -> None:
    """The ``vilbias`` command: :func:`main`, then exit with its status. Whatever the stage
    opened is closed when it returns; with torch or gradio loaded, the interpreter's last garbage
    collection then walks every object the libraries made (~1.3 s of a command's exit on 2 cores),
    to free memory the process's end frees anyway. Frozen out of it (``gc.freeze``), the command
    ends at once. Only here, in the process the command owns: :func:`main` called in a longer
    process (a test, a notebook) leaves its collector alone."""
    global _owns_process
    _owns_process = True
    status = main()
    gc.freeze()
    sys.exit(status)


if __name__ == "__main__":
    run()

"""Deprecated: ``python -m vilbias.training.train_default`` is now ``vilbias train sentence``
(:mod:`vilbias.training.sentence`), and this alias goes in the next release.

It runs ``vilbias train sentence`` with the same arguments, with one difference kept from the old
command: the 5-fold CV runs unless ``--no-cv`` is given (``vilbias train sentence`` runs it with ``--cv``).
"""

from __future__ import annotations

import sys

from vilbias.training.cli import main as train

PROG = "python -m vilbias.training.train_default"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    print(f"{PROG} is deprecated and will be removed in the next release; use vilbias train sentence "
          "(with --cv for the 5-fold CV this command ran by default)", file=sys.stderr)
    cv = [a for a in argv if a.split("=")[0] in ("--cv", "--no-cv", "--no_cv", "--help", "-h")]
    argv = [a for a in argv if a not in ("--no-cv", "--no_cv")] + ([] if cv else ["--cv"])
    return train(["sentence", *argv])


if __name__ == "__main__":
    raise SystemExit(main())

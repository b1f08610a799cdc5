"""What ``vilbias train`` does before torch, transformers and trl load: fail fast on a dataset path
that is not there, and keep library noise off the terminal.

Importing ``transformers``' Trainer imports PEFT, which imports bitsandbytes; on a CPU with AVX-512
bf16, bitsandbytes then logs "Failed to load CPU gemm_4bit_forward from kernels-community ... pip
install kernels": a message about its 4-bit CPU kernels, which concerns only a run that asked for
4-bit weights (``load_in_4bit``, the qlora recipes).
"""

from __future__ import annotations

import logging

from vilbias.paths import looks_local, resolve_dataset

BITSANDBYTES_CPU_LOGGER = "bitsandbytes.backends.cpu.ops"


def quiet_bitsandbytes(four_bit: bool = False) -> None:
    """Keep bitsandbytes' CPU-kernel warning off the terminal unless ``four_bit`` was asked for.

    Call it before bitsandbytes is first imported (its message is logged at import time).
    """
    logging.getLogger(BITSANDBYTES_CPU_LOGGER).setLevel(logging.WARNING if four_bit else logging.ERROR)


def check_dataset(dataset: str | None) -> None:
    """Fail in one line, before anything loads, when ``dataset`` looks like a local path that is not a
    folder (such a name is never sent to the Hub; :func:`vilbias.paths.resolve_dataset` decides).

    Raises:
        FileNotFoundError: naming the path.
    """
    if dataset and looks_local(dataset):
        resolve_dataset(dataset)

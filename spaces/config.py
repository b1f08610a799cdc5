"""What ``vilbias demo`` is told, importable without gradio, the models or the fetcher (so that
parsing its command line stays fast); :mod:`vilbias.spaces.app` re-exports :class:`DemoConfig`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

# its lazy map: the app and its inputs (httpx, PIL) load when a demo is served, not to parse its flags
from vilbias import spaces

if TYPE_CHECKING:
    from vilbias.spaces.inputs import Limits

MODELS_YAML = Path(__file__).with_name("models.yaml")
"""The models the picker offers, first = default (shipped beside the app)."""
ALLOW_PRIVATE_ENV = "VILBIAS_SPACE_ALLOW_PRIVATE"
"""Set to ``1``, the Space's fetcher may reach loopback and private addresses (tests)."""


@dataclass
class DemoConfig:
    """``vilbias demo``: serve the Space locally."""

    host: str = field(default="127.0.0.1", metadata={"help": "Interface to listen on (0.0.0.0 to share on your network)."})
    port: int | None = field(default=None, metadata={"help": "Port (default: Gradio's, 7860 or the next free one)."})
    models_config: Path | None = field(default=None, metadata={
        "help": "YAML list of models for the picker, first = default (default: the shipped models.yaml)."})
    concurrency: int = field(default=8, metadata={"help": "Requests handled at once; more wait in the queue. A model runs one pass at a time: the sentence model's waiting requests share it (up to 8 articles a pass), other models take them in turn."})
    allow_private_addresses: bool = field(default=False, metadata={"help": "Test mode: let URLs reach loopback/private addresses."})
    threads: int | None = field(default=None, metadata={"help": "torch threads (default: CPU cores)."})
    mcp: bool = field(default=True, metadata={"help": "Serve Gradio's MCP server at /gradio_api/mcp/, so an agent can call score_article as a tool (on unless --no-mcp: it adds one endpoint and costs requests that do not use it nothing)."})

    def space_config(self) -> SpaceConfig:
        models = {} if self.models_config is None else {"models_config": Path(self.models_config)}
        return spaces.SpaceConfig(**models, concurrency=self.concurrency, threads=self.threads, mcp_server=self.mcp,
                                  limits=spaces.Limits(allow_private_addresses=self.allow_private_addresses))


@dataclass
class SpaceConfig:
    """How the demo is built and served."""

    models_config: Path = field(default=MODELS_YAML, metadata={"help": "YAML list of models for the picker (first = default)."})
    concurrency: int = field(default=8, metadata={"help": "Requests handled at once; more wait in the queue. A model runs one pass at a time: the sentence model's waiting requests share it (up to 8 articles a pass), other models take them in turn."})
    queue_size: int = field(default=32, metadata={"help": "Requests that may wait in the queue before new ones are refused."})
    limits: Limits = field(default_factory=lambda: spaces.Limits())  # the fetcher's limits (httpx, PIL: loaded on use)
    rationale_backend: dict | None = field(default=None, metadata={"help": "Model spec (vilbias.models.catalogue, YAML form) of the rationale writer (default: embedded SmolLM2)."})
    n_examples: int = field(default=4, metadata={"help": "Examples taken from the embedded sample."})
    rationale_delay_s: float = field(default=20.0, metadata={"help": "Start loading the rationale writer this long after start (or at the first label)."})
    threads: int | None = field(default=None, metadata={"help": "torch threads (default: CPU cores: the sentence model's concurrent requests share one pass at a time)."})
    mcp_server: bool = field(default=True, metadata={"help": "Serve Gradio's MCP server at /gradio_api/mcp/ (an agent's tool score_article). On by default: the app's API is for code and agents alike, and the server costs nothing to requests that do not use it."})

    def torch_threads(self) -> int:
        return self.threads or max(1, os.cpu_count() or 1)

    @classmethod
    def from_env(cls) -> SpaceConfig:
        """The Space's settings; ``VILBIAS_SPACE_ALLOW_PRIVATE=1`` is the test mode."""
        # The models.yaml next to this file: on a Space that is the uploaded copy, which the
        # Space's owner may edit without releasing the package.
        here = Path(__file__).with_name("models.yaml")
        return cls(models_config=here if here.is_file() else MODELS_YAML,
                   limits=spaces.Limits(allow_private_addresses=os.environ.get(ALLOW_PRIVATE_ENV) == "1"))

"""What ``vilbias demo`` is told, importable without gradio, the models or the fetcher (so that
parsing its command line stays fast); :mod:`vilbias.spaces.app` re-exports :class:`DemoConfig`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

# its lazy map: the app and its inputs (httpx, PIL) load when a demo is served, not to parse its flags
from vilbias import spaces

if TYPE_CHECKING:
    from vilbias.spaces.app import SpaceConfig


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

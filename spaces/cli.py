"""``vilbias demo``: run the Gradio Space locally.

    vilbias demo                         # http://127.0.0.1:7860, offline default model
    vilbias demo --port 8000 --host 0.0.0.0
    vilbias demo --models-config my_models.yaml
    vilbias demo --no-mcp                # without the MCP server at /gradio_api/mcp/

The same app runs on Hugging Face Spaces after ``vilbias publish space``.
"""

from __future__ import annotations

from vilbias.spaces.config import DemoConfig

from vilbias.argparser import ConfigParser


def main(argv: list[str], prog: str = "vilbias demo") -> int:
    (config,) = ConfigParser([DemoConfig], prog=prog, description=__doc__.splitlines()[0]).parse(argv)
    from vilbias.spaces.app import serve

    serve(config)
    return 0

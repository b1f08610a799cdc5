"""A running Space on 127.0.0.1 (ephemeral port) with the real offline default classifier and a
deterministic rationale writer standing in for SmolLM2 (its load takes ~30 s on 2 cores)."""

from __future__ import annotations

import socket

import pytest

from vilbias.models.chat import ChatResult

STUB_RATIONALE = (
    'Reasoning: The wording stays factual and attributes claims to named sources.\n'
    'Techniques: Word Choice, Framing\n'
    'Evidence: "container", "not in the text at all"'
)


class StubRationale:
    """Answers every rationale request with :data:`STUB_RATIONALE` and records the prompts."""

    def __init__(self):
        self.prompts = []

    def chat(self, requests, on_result=None):
        out = []
        for r in requests:
            self.prompts.append(r.messages)
            out.append(ChatResult(STUB_RATIONALE))
        return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(demo, config):
    from vilbias.spaces.app import launch_kwargs

    demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=free_port(), quiet=True,
                **launch_kwargs(config))
    return demo


@pytest.fixture(scope="session")
def space():
    """``(demo, client, stub)``: the app in test mode (URLs may reach 127.0.0.1)."""
    from gradio_client import Client
    from vilbias.spaces.app import SpaceConfig, build_demo
    from vilbias.spaces.predictors import Limits

    config = SpaceConfig(limits=Limits(allow_private_addresses=True, fetch_timeout=1.0))
    stub = StubRationale()
    demo = build_demo(config, rationale_backend=stub)
    demo.vilbias_app.warm_up()
    launch(demo, config)
    try:
        yield demo, Client(demo.local_url, verbose=False), stub
    finally:
        demo.close()


@pytest.fixture(scope="session")
def strict_space(space):
    """The app as deployed (no test mode), with a small image-size limit; shares the loaded models."""
    from gradio_client import Client
    from vilbias.spaces.app import DemoApp, SpaceConfig, build_demo
    from vilbias.spaces.predictors import Limits

    config = SpaceConfig(limits=Limits(max_image_bytes=5_000, fetch_timeout=1.0))
    app = DemoApp(config, StubRationale())
    app.predictors = space[0].vilbias_app.predictors
    demo = launch(build_demo(config, app=app), config)
    try:
        yield demo, Client(demo.local_url, verbose=False)
    finally:
        demo.close()

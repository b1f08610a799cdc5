"""A running Space on 127.0.0.1 (ephemeral port) with the real offline default, and a picker
that also offers: the same model with a (stub) generative wording, a tiny local fusion classifier
that reads the image, and a Hub VLM that cannot be reached offline."""

from __future__ import annotations

import socket

import pytest

from tests.fakes.rationale import StubRationale

# Articles written for these tests: one in loaded, one in plain news wording.
BIASED_ITEM = (
    "Radical activists ram through a disastrous scheme",
    "Radical activists rammed through a disastrous, reckless scheme on Tuesday that will destroy what is left of the "
    "local economy. The shameful stunt was cheered by the usual far-left mob. Critics say the outrageous plan is a "
    "naked power grab by corrupt officials. The council voted five to four.",
)
NEUTRAL_ITEM = (
    "Council approves harbour budget",
    "The city council approved the harbour budget on Tuesday by a vote of seven to two. The budget sets aside "
    "funds for dredging the main channel and repairing two piers. Work is scheduled to begin in the spring. "
    "The harbour authority said it would publish the contracts next month.",
)


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
def tiny_fusion(tmp_path_factory):
    """A fusion classifier over the packaged MiniLM + EfficientNet-Lite0 (random head): a local
    model that reads the image."""
    import torch

    from vilbias.models.fusion import FusionConfig, FusionForClassification

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("fusion") / "model"
    FusionForClassification(FusionConfig(hidden_size=8, freeze_text_encoder=True)).save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def models_yaml(tmp_path_factory, tiny_fusion):
    import yaml
    from vilbias.spaces.predictors import MODELS_YAML

    shipped = yaml.safe_load(MODELS_YAML.read_text())["models"]
    default = dict(shipped[0])
    worded = default | {"name": "offline-default-worded", "title": "Offline default, worded by SmolLM2", "rationale": "smollm2"}
    fusion = {"name": "tiny-fusion", "title": "Tiny fusion (reads the image)", "kind": "fusion", "path": str(tiny_fusion)}
    hub = next(m for m in shipped if m["kind"] == "vlm")
    path = tmp_path_factory.mktemp("models") / "models.yaml"
    path.write_text(yaml.safe_dump({"models": [default, worded, fusion, hub]}))
    return path


@pytest.fixture(scope="package")
def space(models_yaml):
    """``(demo, client, stub)``: the app in test mode (URLs may reach 127.0.0.1).

    Closed when the package's tests are done, not kept for the session: gradio's queue polls every
    millisecond while it waits (``Queue.sleep_when_free``): 10% of a core for each idle server,
    for the rest of the run. The files that use it run in one process, one after the
    other (the ``space`` unit, ``SHARED_FILES`` in tests/conftest.py), so it is built once."""
    import torch
    from gradio_client import Client
    from vilbias.spaces.app import SpaceConfig, build_demo
    from vilbias.spaces.inputs import Limits

    # The test process's own thread count (warm_up would set every core for the rest of the session,
    # and later tests compare floats with runs in subprocesses that have the test environment's count).
    config = SpaceConfig(models_config=models_yaml, limits=Limits(allow_private_addresses=True, fetch_timeout=1.0),
                         threads=torch.get_num_threads())
    stub = StubRationale()
    demo = build_demo(config, rationale_backend=stub)
    demo.vilbias_app.warm_up()
    launch(demo, config)
    try:
        yield demo, Client(demo.local_url, verbose=False), stub
    finally:
        demo.close()


@pytest.fixture(scope="package")
def strict_space(space):
    """The app as deployed (no test mode), with a small image-size limit; shares the loaded models
    (closed with :func:`space`)."""
    from gradio_client import Client
    from vilbias.spaces.app import DemoApp, SpaceConfig, build_demo
    from vilbias.spaces.inputs import Limits

    config = SpaceConfig(limits=Limits(max_image_bytes=5_000, fetch_timeout=1.0))
    app = DemoApp(config, StubRationale())
    app.predictors = space[0].vilbias_app.predictors
    demo = launch(build_demo(config, app=app), config)
    try:
        yield demo, Client(demo.local_url, verbose=False)
    finally:
        demo.close()

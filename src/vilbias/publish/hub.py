"""Shared Hub plumbing for the publish commands: tokens, clear errors, revisions.

The token comes from ``HF_TOKEN`` or the ``huggingface_hub`` login (``hf auth login``), through
:func:`huggingface_hub.get_token`. It is passed to the client and nowhere else: no message, log
line or file written here ever contains it.
"""

from __future__ import annotations

import logging
import re

logger = logging.getLogger(__name__)

_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")

MISSING_TOKEN = (
    "no Hugging Face token found: set HF_TOKEN or run `hf auth login` (a token with write access "
    "is needed to publish)"
)


class HubAuthError(PermissionError):
    """The token is missing or the Hub refused it."""


class HubUnreachable(RuntimeError):
    """The Hub endpoint could not be reached (no network, offline mode, DNS, timeout)."""


def is_network_error(error: BaseException) -> bool:
    """A transport failure rather than an answer from the Hub: connection refused or reset,
    DNS, timeout, or ``HF_HUB_OFFLINE=1`` (the HTTP client's own ``TransportError`` family)."""
    return isinstance(error, (ConnectionError, TimeoutError)) or any(
        cls.__name__ in ("TransportError", "ConnectError", "TimeoutException") for cls in type(error).__mro__
    )


def unreachable(endpoint: str, error: BaseException) -> HubUnreachable:
    """The one-sentence error for a Hub that cannot be reached."""
    reason = "offline mode is on (HF_HUB_OFFLINE=1)" if type(error).__name__ == "OfflineModeIsEnabled" else type(error).__name__
    return HubUnreachable(f"could not reach the Hub at {endpoint} ({reason}): check the network or HF_ENDPOINT and re-run")


def resolve_token(token: str | None = None) -> str:
    """Return ``token``, else the one from ``HF_TOKEN`` or the saved login.

    Raises:
        HubAuthError: when there is none.
    """
    from huggingface_hub import get_token

    token = token or get_token()
    if not token:
        raise HubAuthError(MISSING_TOKEN)
    return token


def check_token(api, token: str) -> str:
    """Ask the Hub who ``token`` belongs to; return the user name.

    Raises:
        HubAuthError: when the Hub rejects the token (the message never includes it).
    """
    from huggingface_hub.errors import HfHubHTTPError

    try:
        return api.whoami(token=token)["name"]
    except HfHubHTTPError as e:
        status = getattr(e.response, "status_code", None)
        if status in (401, 403):
            raise HubAuthError(
                f"the Hub at {api.endpoint} rejected the token (HTTP {status}): check HF_TOKEN or "
                "run `hf auth login` again with a token that has write access"
            ) from None
        raise


def parse_version(version: str) -> tuple[int, int, int]:
    """``"1.2.3"`` or ``"v1.2.3"`` -> ``(1, 2, 3)``.

    Raises:
        ValueError: for anything that is not a semantic version ``X.Y.Z``.
    """
    m = _VERSION_RE.match(version.strip())
    if not m:
        raise ValueError(f"version {version!r} is not a semantic version X.Y.Z (e.g. 1.0.0)")
    return int(m[1]), int(m[2]), int(m[3])


def version_tags(tag_names: list[str]) -> dict[tuple[int, int, int], str]:
    """The ``vX.Y.Z`` tags among ``tag_names``, keyed by parsed version."""
    out = {}
    for name in tag_names:
        if name.startswith("v") and _VERSION_RE.match(name):
            out[parse_version(name)] = name
    return out

"""The fake ``sky.server.common``: where SkyPilot's API server is.

The fake's API server is this machine's unless the test made the ``remote-api-server`` switch
file: then, as for a deployed API server, its cluster table is not here to read.
"""

from __future__ import annotations

from sky._fake import state


def is_api_server_local(endpoint: str | None = None) -> bool:
    """Whether the API server (``endpoint``, or the configured one) runs on this machine."""
    return not state.switch("remote-api-server")


def check_server_healthy_or_start_fn(  # noqa: PLR0917 (SkyPilot 0.14.1's signature)
    deploy: bool = False,
    host: str = "127.0.0.1",
    foreground: bool = False,
    metrics: bool = False,
    metrics_port: int | None = None,
    enable_basic_auth: bool = False,
) -> None:
    """The fake's API server is always up."""

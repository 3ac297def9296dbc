"""The ports and the start of the servers the tests run (sshd, moto, SkyPilot's API server).

A server is given a port below the kernel's ephemeral range, free when drawn; one that loses it
anyway is started again on another port, and another process answering on its port is never
taken for it.
"""

from __future__ import annotations

import socket
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.backends.fake_sky import harness
from tests.support import free_port, listenable


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port another process's listener holds (this test's socket stands in for it)."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", free_port()))
        held.listen()
        yield int(held.getsockname()[1])


def http_server(port: int) -> list[str]:
    return [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)]


def test_a_free_port_lies_below_the_ephemeral_range_and_nothing_listens_on_it() -> None:
    lowest = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    ports = [free_port() for _ in range(50)]
    assert all(port < lowest and listenable(port) for port in ports)
    assert len(set(ports)) > 40  # drawn at random, not handed out in turn


def test_a_port_a_listener_holds_is_not_free(held_port: int) -> None:
    assert not listenable(held_port)


def test_a_server_whose_port_was_taken_is_started_again_on_another(
    held_port: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spare = free_port()
    drawn = iter([held_port, spare])
    monkeypatch.setattr(harness, "free_port", lambda: next(drawn))
    log = tmp_path / "server.log"
    process, port = harness._serve(http_server, what="http.server", log=log)
    try:
        # The held listener accepts connections on its port too: the server is known to listen
        # only once its own process holds the port.
        assert port == spare
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as answer:
            assert answer.status == 200
        assert "Address already in use" in log.read_text()
    finally:
        harness._stop(process)


def test_a_server_that_never_gets_a_port_fails_naming_each_port_and_its_error(
    held_port: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(harness, "free_port", lambda: held_port)
    with pytest.raises(RuntimeError) as failed:
        harness._serve(http_server, what="http.server", log=tmp_path / "server.log", tries=2)
    message = str(failed.value)
    assert message.startswith("http.server did not start: ")
    assert message.count(f"port {held_port}: http.server exited with 1") == 2
    assert "Address already in use" in message

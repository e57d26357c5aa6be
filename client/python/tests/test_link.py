"""The link to the server: a server that shuts down ends the client at once with a clear error, and
a link that goes silent (no FIN, no RST) is noticed by keepalive pings and reconnected with resume.

The silent link is a real TCP proxy on loopback that stops forwarding without closing anything.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import gymwire
from gymwire.client import AsyncClient

from conftest import ServerProcess


class FreezableProxy:
    """Forwards TCP connections to ``upstream``; :meth:`freeze` stops the current ones dead (no FIN, no RST)."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = 0
        self.connections = 0
        self._frozen: list[asyncio.Event] = []
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def freeze(self) -> None:
        """Connections open now stop forwarding in both directions; new ones forward normally."""
        for event in self._frozen:
            event.set()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        frozen = asyncio.Event()
        self._frozen.append(frozen)
        for src, dst in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.get_running_loop().create_task(self._pump(src, dst, frozen))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    @staticmethod
    async def _pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter, frozen: asyncio.Event) -> None:
        try:
            while not frozen.is_set():
                data = await src.read(65536)
                if not data or frozen.is_set():
                    break
                dst.write(data)
                await dst.drain()
            if frozen.is_set():
                await asyncio.Event().wait()  # hold both sockets open, forwarding nothing, until cancelled
            dst.close()
        except (ConnectionError, asyncio.CancelledError):
            dst.transport.abort()


def _host_port(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("ws://").rsplit(":", 1)
    return host, int(port)


@pytest.mark.timeout(120)
def test_keepalive_notices_a_frozen_link_and_resumes(url: str) -> None:
    async def main() -> None:
        proxy = FreezableProxy(*_host_port(url))
        await proxy.start()
        events: list[dict[str, Any]] = []
        client = await AsyncClient.connect(
            f"ws://127.0.0.1:{proxy.port}", keepalive_interval=0.2, keepalive_timeout=0.5, request_timeout=60, on_event=events.append
        )
        try:
            env = await client.make("gymwire/CartPole-v1")
            await env.reset(seed=3)
            await env.step(0)
            proxy.freeze()
            # Sent into the frozen link: it is answered once keepalive has dropped it and the client resumed.
            obs, *_ = await env.step(1)
            assert obs is not None
            assert {"type": "reconnected", "resumed": True} in events
            assert any(e["type"] == "disconnected" for e in events)
            assert proxy.connections == 2
            await env.close()
        finally:
            await client.close()
            await proxy.close()

    asyncio.run(main())


@pytest.mark.timeout(120)
def test_server_shutdown_raises_server_shutdown_error_at_once() -> None:
    server = ServerProcess()
    try:
        # Default reconnect settings: a step that waited for a reconnect would raise only after a minute.
        client = gymwire.Client(server.url)
        single = gymwire.Client(server.url, reconnect=False)
        shut = asyncio.Event()
        events: list[dict[str, Any]] = []

        def on_event(event: dict[str, Any]) -> None:
            events.append(event)
            if event.get("event") == "shutdown":
                client.loop.call_soon_threadsafe(shut.set)

        client.aclient.on_event = on_event
        env = client.make("gymwire/CartPole-v1")
        env.reset(seed=0)
        server.proc.terminate()
        client.run(asyncio.wait_for(shut.wait(), 60))
        with pytest.raises(gymwire.ServerShutdownError, match="shut down"):
            env.step(0)
        assert server.proc.wait(30) == 0
        # A client that does not reconnect is closed by the shutdown, with the same clear error.
        with pytest.raises(gymwire.ServerShutdownError):
            single.run(single.aclient.request("ping", {}))
        client.close()
        single.close()
    finally:
        server.stop()

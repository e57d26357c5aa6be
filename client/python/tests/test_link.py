"""The link to the server: a server that shuts down ends the client at once with a clear error, and
a link that goes silent (no FIN, no RST) is noticed by keepalive pings and reconnected with resume.

The silent link is a real TCP proxy on loopback that stops forwarding without closing anything; it
also counts the client's ping frames and can slow the server's bytes down (test_transport.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import ServerProcess

import gymwire
from gymwire.client import AsyncClient


class _PingCounter:
    """Reads what a client sends on a WebSocket connection (after its HTTP upgrade) and counts its pings."""

    def __init__(self) -> None:
        self.pings = 0
        self._buf = bytearray()
        self._upgraded = False

    def feed(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        if not self._upgraded:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return
            del buf[: end + 4]
            self._upgraded = True
        while len(buf) >= 2:
            length, at = buf[1] & 0x7F, 2
            if length >= 126:
                at = 4 if length == 126 else 10
                if len(buf) < at:
                    return
                length = int.from_bytes(buf[2:at], "big")
            at += 4 if buf[1] & 0x80 else 0  # the client's mask
            if len(buf) < at + length:
                return
            if buf[0] & 0x0F == 0x9:
                self.pings += 1
            del buf[: at + length]


class FreezableProxy:
    """Forwards TCP connections to ``upstream``; :meth:`freeze` stops the current ones dead (no FIN, no RST).

    :attr:`client_pings` counts the WebSocket pings clients sent through it; :meth:`slow_down` makes
    it forward the server's bytes in small chunks with a pause between them, as a slow link would.
    """

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = 0
        self.connections = 0
        self._counters: list[_PingCounter] = []
        self._downstream_chunk: int | None = None
        self._downstream_pause = 0.0
        self._frozen: list[asyncio.Event] = []
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    @property
    def client_pings(self) -> int:
        return sum(c.pings for c in self._counters)

    def slow_down(self, chunk: int, pause: float) -> None:
        """From now on the server's bytes reach the clients ``chunk`` bytes at a time, ``pause`` seconds apart."""
        self._downstream_chunk, self._downstream_pause = chunk, pause

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
        counter = _PingCounter()
        self._counters.append(counter)
        for src, dst, seen in ((reader, up_writer, counter), (up_reader, writer, None)):
            task = asyncio.get_running_loop().create_task(self._pump(src, dst, frozen, seen))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pump(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter, frozen: asyncio.Event, upstream: _PingCounter | None) -> None:
        try:
            while not frozen.is_set():
                data = await src.read(65536)
                if not data or frozen.is_set():
                    break
                if upstream is not None:
                    upstream.feed(data)
                    dst.write(data)
                    await dst.drain()
                    continue
                step = self._downstream_chunk or len(data)
                for at in range(0, len(data), step):
                    if self._downstream_pause:
                        await asyncio.sleep(self._downstream_pause)
                    dst.write(data[at : at + step])
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

        client.on_event = on_event
        env = client.make("gymwire/CartPole-v1")
        env.reset(seed=0)
        server.proc.terminate()
        client.run(asyncio.wait_for(shut.wait(), 60))
        with pytest.raises(gymwire.ServerShutdownError, match="shut down"):
            env.step(0)
        assert server.proc.wait(30) == 0
        # A client that does not reconnect is closed by the shutdown, with the same clear error.
        with pytest.raises(gymwire.ServerShutdownError):
            single.request("ping", {})
        client.close()
        single.close()
    finally:
        server.stop()

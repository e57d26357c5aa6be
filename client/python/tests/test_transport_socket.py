"""The blocking-socket WebSocket (gymwire._transport_socket) against a real websockets server: whole
messages from fragments and from frames of every length encoding, text skipped, pings answered,
the server's close code kept, a burst of messages that fill and wrap the read buffer read back in
order, waits that end at their timeout (never before it) without losing what comes later, and a
clear error for a URL it cannot serve.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest
from websockets.asyncio.server import ServerConnection, serve

from gymwire._transport_socket import SocketClosedError, SocketWebSocket

pytestmark = pytest.mark.timeout(30)

BURST = 3000


def burst_message(i: int) -> bytes:
    return bytes([i % 256]) * (1 + (i * 97) % 1500)


@pytest.fixture
def server_url() -> Iterator[str]:
    """A websockets server that, on "go", sends: text, a fragmented binary message, frames of 3 sizes, then pings and closes."""

    async def handler(ws: ServerConnection) -> None:
        async for message in ws:
            if message == b"go":
                await ws.send("text is skipped")
                await ws.send([b"frag", b"mented"])
                for size in (125, 65_535, 300_000):
                    await ws.send(bytes([size % 251]) * size)
                pong = await ws.ping(b"are you there")
                await asyncio.wait_for(pong, 5)
                await ws.send(b"pong seen")
                await ws.close(4001, "done here")
            elif message == b"burst":
                # Many small and mid-sized messages back to back: reads end inside frames and headers.
                for i in range(BURST):
                    await ws.send(burst_message(i))
            else:
                await ws.send(message)

    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict[str, object] = {}

    async def main() -> None:
        async with serve(handler, "127.0.0.1", 0, compression=None, max_size=None) as srv:
            holder["url"] = f"ws://127.0.0.1:{next(iter(srv.sockets)).getsockname()[1]}"
            holder["stop"] = asyncio.Event()
            ready.set()
            await holder["stop"].wait()  # type: ignore[attr-defined]

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    ready.wait(10)
    yield str(holder["url"])
    loop.call_soon_threadsafe(holder["stop"].set)  # type: ignore[attr-defined]
    thread.join(10)


def test_messages_arrive_whole_and_the_close_code_is_kept(server_url: str) -> None:
    ws = SocketWebSocket.connect(server_url, timeout=10)
    big = bytes(range(256)) * 1000
    ws.send(big)  # a 64-bit length, masked, echoed
    assert ws.recv() == big
    ws.send(b"go")
    assert ws.recv() == b"fragmented"
    for size in (125, 65_535, 300_000):
        assert ws.recv() == bytes([size % 251]) * size
    assert ws.recv() == b"pong seen"  # the server's ping was answered inside recv
    with pytest.raises(SocketClosedError) as closed:
        ws.recv()
    assert (closed.value.code, closed.value.reason) == (4001, "done here")
    with pytest.raises(SocketClosedError):
        ws.send(b"after close")
    ws.close()


def test_a_burst_of_messages_arrives_whole_and_in_order(server_url: str) -> None:
    ws = SocketWebSocket.connect(server_url, timeout=10)
    ws.send(b"burst")
    for i in range(BURST):
        assert ws.recv() == burst_message(i)
    ws.send(b"echo after the burst")
    assert ws.recv() == b"echo after the burst"
    ws.close()


def test_a_wait_ends_at_its_timeout_and_later_reads_are_whole(server_url: str) -> None:
    ws = SocketWebSocket.connect(server_url, timeout=10)
    start = time.monotonic()
    assert ws.wait_readable(0.05) is False  # nothing sent: the receive timeout ends the wait
    assert time.monotonic() - start >= 0.05
    # The short receive timeout stays on the socket: reads that outlast it go on (a burst, then an echo).
    ws.send(b"burst")
    assert ws.wait_readable(5)
    for i in range(BURST):
        assert ws.recv() == burst_message(i)
    ws.send(b"late")
    assert ws.wait_readable(5) and ws.recv() == b"late"
    ws.abort()
    assert ws.wait_readable(5)  # the close is what there is to read
    with pytest.raises(SocketClosedError):
        ws.recv()
    ws.close()


def test_urls_it_cannot_serve_are_refused_clearly() -> None:
    with pytest.raises(OSError, match="asyncio transport"):
        SocketWebSocket.connect("wss://127.0.0.1:9/", timeout=1)
    with pytest.raises(OSError):
        SocketWebSocket.connect("http://127.0.0.1:9/", timeout=1)

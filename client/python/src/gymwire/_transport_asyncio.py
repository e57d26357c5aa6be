"""The asyncio driver of the connection, and the way to call it from other threads.

:class:`AsyncioDriver` runs the I/O-free :class:`~gymwire._connection.ConnectionCore` on a
websockets connection: its methods are coroutines. When the connection drops it reconnects with
backoff, presents its resume token so the server re-attaches its sessions, and re-sends every
request still waiting for an answer with its original id; the server answers retried ids from its
reply cache, so a step that already ran is never applied twice (as ``client/ts/client.ts`` does).
Every request has a timeout, so nothing waits forever. :class:`gymwire.AsyncClient` is this driver
with ``make``/``make_vec`` on top.

:class:`EventLoopThread` is a loop in a daemon thread; :class:`ThreadCalls` is the blocking face of
an :class:`AsyncioDriver` running on one (what ``Client(url, transport="asyncio")`` calls).

Example::

    driver = await AsyncioDriver.connect("ws://127.0.0.1:8765")
    made = await driver.request("make", {"env_id": "gymwire/CartPole-v1", "kwargs": {}})
    await driver.close()
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import websockets
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.protocol import State

from . import errors as E
from ._connection import DriverBase, Keepalive, ReconnectSchedule
from ._request_template import FilledRequest
from ._ws_frames import OP_BINARY, FrameSplitter, apply_mask, frame_head

T = TypeVar("T")
D = TypeVar("D", bound="AsyncioDriver")


class _HeardConnection(ClientConnection):
    """websockets' client connection, noting when bytes last arrived (keepalive pings only a quiet
    link), with whole binary messages taken off its path once :meth:`deliver_binary_to` is called.

    websockets keeps the handshake, control frames, fragments and the closing handshake; a whole
    binary message (every answer and event) goes from the bytes straight to the callback, without
    websockets' frame parser, message queue and reader task in between (``gymwire._ws_frames``).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: ``time.monotonic()`` when bytes last arrived from the server.
        self.last_received = time.monotonic()
        self._on_binary: Callable[[bytes | bytearray | memoryview], None] | None = None
        self._splitter = FrameSplitter()
        self._rand = random.Random()

    def deliver_binary_to(self, callback: Callable[[bytes | bytearray | memoryview], None]) -> None:
        """Sends each whole binary message to ``callback`` from now on; call it once the connection is open.

        Only at a frame boundary: websockets' parser must hold no partial frame, or the two would
        read the stream from different places. A welcome cannot come before the hello that asks
        for it, so after the handshake nothing is buffered; if something is, websockets keeps
        everything for this connection.
        """
        if self.protocol.state is State.OPEN and not self.protocol.reader.buffer:
            self._on_binary = callback

    def data_received(self, data: bytes) -> None:
        self.last_received = time.monotonic()
        on_binary = self._on_binary
        if on_binary is None:
            return super().data_received(data)
        for whole_binary, chunk in self._splitter.feed(data):
            if whole_binary:
                on_binary(chunk)
            else:
                super().data_received(chunk)  # type: ignore[arg-type]

    def write_binary(self, messages: list[bytes]) -> bool:
        """Writes whole binary messages as masked frames in one write; False when the connection is not open."""
        if self.protocol.state is not State.OPEN:
            return False
        getrandbits = self._rand.getrandbits
        parts: list[bytes] = []
        for message in messages:
            mask = getrandbits(32).to_bytes(4, "little")
            parts.append(frame_head(OP_BINARY, len(message), mask))
            parts.append(apply_mask(message, mask))
        self.transport.write(b"".join(parts))
        return True


class AsyncioDriver(DriverBase):
    """The connection on an asyncio event loop; create it with ``await AsyncioDriver.connect(url)``.

    Options are :class:`~gymwire._connection.DriverBase`'s. Every method that waits is a coroutine
    and must run on the loop the driver connected on.
    """

    def __init__(self, url: str, **opts: Any) -> None:
        super().__init__(url, **opts)
        self._ws: _HeardConnection | None = None
        self._reconnecting: asyncio.Task[None] | None = None
        self._readers: set[asyncio.Task[None]] = set()
        self._outbox: list[bytes] = []
        # One timer for every request's deadline, at the earliest of them (see _arm_deadline).
        self._deadline_timer: asyncio.TimerHandle | None = None

    @classmethod
    async def connect(cls: type[D], url: str, **opts: Any) -> D:
        """Connects and performs the hello/welcome handshake."""
        driver = cls(url, **opts)
        await driver._open()
        return driver

    async def request(self, type: str, fields: dict[str, Any] | FilledRequest, timeout: float | None = ...) -> dict[str, Any]:  # type: ignore[assignment]
        """Sends one request and waits for its result (requests may be pipelined)."""
        timeout = self.request_timeout if timeout is ... else timeout
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        deadline = None if timeout is None else loop.time() + timeout
        rid, frame = self.core.submit(type, fields, future, deadline=deadline, timeout=timeout)
        if deadline is not None:
            self._arm_deadline(deadline, loop)
        try:
            # While reconnecting the request waits in the core; it goes out after the resume.
            if self.core.can_send and self._ws is not None:
                self._send_soon(self._ws, frame, loop)
            return await future
        finally:
            self.core.finish(rid)

    def _arm_deadline(self, deadline: float, loop: asyncio.AbstractEventLoop) -> None:
        """Makes sure the deadline timer fires by ``deadline``.

        A timer per request (``call_later`` and its ``cancel``) cost as much client time per step as
        the rest of the request's bookkeeping. Requests mostly share one timeout, so a new deadline
        is rarely earlier than the armed one: the timer stays, fires at the earliest deadline, and
        :meth:`~gymwire._connection.ConnectionCore.expire` fails what is due and names the next.
        """
        timer = self._deadline_timer
        if timer is not None:
            if timer.when() <= deadline:
                return
            timer.cancel()
        self._deadline_timer = loop.call_at(deadline, self._expire, loop)

    def _expire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._deadline_timer = None
        earliest = self.core.expire(loop.time())
        if earliest is not None:
            self._arm_deadline(earliest, loop)

    async def request_many(self, type: str, many: list[dict[str, Any]], timeout: float | None = ...) -> list[dict[str, Any]]:  # type: ignore[assignment]
        """Sends one request per fields dict, pipelined, and waits for every result."""
        return list(await asyncio.gather(*(self.request(type, fields, timeout) for fields in many)))

    async def close(self) -> None:
        """Closes the connection; the server reaps this client's sessions after its grace period."""
        self.core.close()
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
            self._deadline_timer = None
        if self._reconnecting is not None:
            self._reconnecting.cancel()
        ws, self._ws = self._ws, None
        if ws is not None:
            await ws.close()
        readers = list(self._readers)
        for task in readers:
            task.cancel()
        await asyncio.gather(*readers, return_exceptions=True)

    async def abandon(self, error: E.SdkError) -> None:
        """Closes this client for good because its server is known to be gone (a supervisor saw it die).

        Every request still waiting fails with ``error`` now, instead of after a reconnect timeout,
        every later call raises ``error`` rather than ``ClientClosedError``, and this client's
        sessions are marked closed with its message. ``gymwire.ray`` retires a dead server's
        connection this way.

        Example::

            await client.abandon(gymwire.SessionLostError("server 2 died; its sessions are gone"))
        """
        self.core.abandon(error)
        await self.close()

    async def simulate_connection_loss(self) -> None:
        """Drops the socket without telling the server, as a network failure would (for tests)."""
        if self._ws is not None:
            self._ws.transport.abort()

    # ------------------------------------------------------------------------------------------

    async def _open(self) -> None:
        try:
            ws = await self._dial()
            welcome = await self._handshake(ws)
        except BaseException:
            self.core.state = "closed"
            raise
        self.core.open(welcome)

    async def _dial(self) -> _HeardConnection:
        try:
            ws = await asyncio.wait_for(
                ws_connect(
                    self.url,
                    compression=None,
                    max_size=None,
                    open_timeout=self.connect_timeout,
                    # Keepalive is ours (_keepalive): websockets' pings on a timer whatever the traffic.
                    ping_interval=None,
                    create_connection=_HeardConnection,
                    # The closing handshake of a dead link cannot complete: do not wait long for it.
                    close_timeout=min(self.keepalive_timeout, 5.0),
                ),
                self.connect_timeout,
            )
        except (OSError, asyncio.TimeoutError, websockets.exceptions.WebSocketException) as err:
            raise E.ConnectFailedError(f"could not connect to {self.url}: {err}", {"url": self.url}) from err
        assert isinstance(ws, _HeardConnection)  # create_connection above
        self._ws = ws
        ws.deliver_binary_to(self.core.receive)
        # The reader (what websockets still delivers: the close, fragmented messages), and keepalive
        # for this socket; both end with it, and close() cancels them.
        loop = asyncio.get_running_loop()
        for job in (self._read(ws), self._keepalive(ws)):
            task = loop.create_task(job)
            self._readers.add(task)
            task.add_done_callback(self._readers.discard)
        return ws

    async def _keepalive(self, ws: _HeardConnection) -> None:
        """Pings a quiet link and drops a silent one (:class:`~gymwire._connection.Keepalive` decides);
        the reader then reconnects and resumes."""
        if self.keepalive_interval is None:
            return
        keepalive = Keepalive(self.keepalive_interval, self.keepalive_timeout)
        tick = max(0.01, min(self.keepalive_interval, self.keepalive_timeout) / 4)
        while ws is self._ws:
            await asyncio.sleep(tick)
            action = keepalive.due(time.monotonic(), ws.last_received)
            if action == "drop":
                ws.transport.abort()
                return
            if action == "ping":
                try:
                    await ws.ping()
                except websockets.exceptions.ConnectionClosed:
                    return

    async def _handshake(self, ws: ClientConnection) -> dict[str, Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        rid, hello = self.core.hello(future)
        try:
            await self._send(ws, hello)
            welcome = await asyncio.wait_for(future, self.connect_timeout)
        except asyncio.TimeoutError:
            await ws.close()
            raise E.ConnectFailedError(f"no welcome from {self.url} within {self.connect_timeout} s") from None
        except E.ServerVersionMismatchError:
            raise
        finally:
            self.core.finish(rid)
        if welcome.get("protocol_version") != self.protocol_version:
            await ws.close()
            self.core.check_version(welcome)
        return welcome

    async def _send(self, ws: ClientConnection, frame: bytes) -> None:
        try:
            await ws.send(frame)
        except websockets.exceptions.ConnectionClosed:
            pass  # the reader notices the drop; pending requests are re-sent after the resume

    def _send_soon(self, ws: _HeardConnection, frame: bytes, loop: asyncio.AbstractEventLoop) -> None:
        """Queues a request frame; every frame queued in one turn of the loop goes out in one write.

        With many sessions stepping at once (one task each), a write per frame was a system call per
        step; one write per loop turn is one for all of them. Frames are framed by the connection's
        own sans-I/O protocol, exactly as ``ws.send`` frames them.
        """
        self._outbox.append(frame)
        if len(self._outbox) == 1:
            loop.call_soon(self._flush, ws)

    def _flush(self, ws: _HeardConnection) -> None:
        frames, self._outbox = self._outbox, []
        if ws is not self._ws:
            return  # the connection dropped: these requests wait in the core and are re-sent after the resume
        try:
            ws.write_binary(frames)
        except Exception:  # noqa: BLE001 - a closing connection: the reader notices and resumes
            pass

    async def _read(self, ws: ClientConnection) -> None:
        try:
            async for frame in ws:
                if isinstance(frame, bytes):
                    self.core.receive(frame)
        except asyncio.CancelledError:
            return
        except Exception:  # noqa: BLE001 - any read failure is a lost connection; fall through to recovery
            pass
        if self._ws is ws:
            self._ws = None
            self._on_disconnect(ws.close_code or 1006, ws.close_reason or "")
        else:
            # A handshake on this socket may still be waiting (the server closed during hello).
            self.core.handshake_lost(E.ConnectionLostError("connection closed during the handshake"))

    def _on_disconnect(self, code: int, reason: str) -> None:
        if not self.core.disconnected(code, reason, reconnect=self.reconnect):
            return
        if self._reconnecting is None:
            self._reconnecting = asyncio.get_running_loop().create_task(self._reconnect_loop())

    async def _reconnect_loop(self) -> None:
        loop = asyncio.get_running_loop()
        schedule = ReconnectSchedule(loop.time(), timeout=self.reconnect_timeout, delay=self.reconnect_delay)
        try:
            while self.core.state == "reconnecting" and (wait := schedule.next_wait(loop.time())) is not None:
                await asyncio.sleep(wait)
                try:
                    ws = await self._dial()
                    if self.core.state != "reconnecting":
                        await ws.close()
                        return
                    welcome = await self._handshake(ws)
                except (E.ServerError, E.SdkError) as err:
                    if schedule.failed(err):
                        break
                    continue
                for frame in self.core.resumed(welcome):
                    await self._send(ws, frame)
                self.core.emit({"type": "reconnected", "resumed": bool(welcome.get("resumed"))})
                return
            self.core.reconnect_failed(self.url, schedule.last_error)
        finally:
            self._reconnecting = None


class EventLoopThread:
    """An asyncio event loop running in a daemon thread until :meth:`stop`.

    :class:`~gymwire.Client` runs its asyncio transport on one of its own; several clients can share one
    (``Client(url, loop=shared.loop)``), so that their requests go out from a single loop, as
    ``gymwire.ray``'s pool does for its servers.

    Example::

        shared = EventLoopThread("my-clients")
        a = Client(url_a, loop=shared.loop)
        b = Client(url_b, loop=shared.loop)
        ...
        a.close()
        b.close()
        shared.stop()
    """

    def __init__(self, name: str = "gymwire-client") -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Cancels what still runs on the loop, stops it, joins the thread and closes the loop; idempotent."""
        if self.thread.is_alive():

            async def drain() -> None:
                tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

            try:
                asyncio.run_coroutine_threadsafe(drain(), self.loop).result(timeout)
            except Exception:  # noqa: BLE001 - best effort: the loop is going away either way
                pass
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=timeout)
        if not self.loop.is_running() and not self.loop.is_closed():
            self.loop.close()


class ThreadCalls:
    """The blocking face of an :class:`AsyncioDriver` whose loop runs in another thread.

    Each call hands the driver's coroutine to that loop and blocks the calling thread until it is
    done (a thread hop each way); several threads may call at once. A call on a loop that has
    stopped (the client closed its own loop thread) raises what the client was closed with.
    """

    def __init__(self, driver: AsyncioDriver, loop: asyncio.AbstractEventLoop) -> None:
        self.driver = driver
        self.loop = loop

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Runs one of the driver's coroutines on its loop and returns its result."""
        if not self.loop.is_running():
            coro.close()
            raise self.driver.closed_by or E.ClientClosedError("the client is closed")
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def request(self, type: str, fields: dict[str, Any] | FilledRequest, timeout: float | None = ...) -> dict[str, Any]:  # type: ignore[assignment]
        return self.run(self.driver.request(type, fields, timeout))

    def request_many(self, type: str, many: list[dict[str, Any]], timeout: float | None = ...) -> list[dict[str, Any]]:  # type: ignore[assignment]
        return self.run(self.driver.request_many(type, many, timeout))

    def close(self) -> None:
        self.run(self.driver.close())

    def abandon(self, error: E.SdkError) -> None:
        self.run(self.driver.abandon(error))

    def simulate_connection_loss(self) -> None:
        self.run(self.driver.simulate_connection_loss())

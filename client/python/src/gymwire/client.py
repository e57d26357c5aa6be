"""The gymwire client: one WebSocket connection carrying pipelined requests for any number of sessions.

:class:`AsyncClient` is the asyncio client. When the connection drops it reconnects with backoff,
presents its resume token so the server re-attaches its sessions, and re-sends every request still
waiting for an answer with its original id; the server answers retried ids from its reply cache, so
a step that already ran is never applied twice (as ``client/ts/client.ts`` does). Every request has
a timeout, so nothing waits forever. The rules themselves (ids, acks, answers, events, what a resume
sends again) are the I/O-free :class:`~gymwire._connection.ConnectionCore`, shared with the socket
transport; this class is its asyncio driver.

:class:`Client` is the synchronous face, safe to call from any thread. By default it reads and
writes its socket in the calling thread (``gymwire._transport_sync``: no event loop between a step
and the wire); ``transport="asyncio"`` runs the async client on a loop in a background thread instead.

Example::

    client = Client("ws://127.0.0.1:8765")
    env = client.make("gymwire/CartPole-v1")      # a gymnasium.Env
    obs, info = env.reset(seed=42)
    client.close()
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import websockets
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect

from . import errors as E
from ._connection import ConnectionCore, Keepalive
from ._protocol import PROTOCOL_VERSION
from ._request_template import FilledRequest

if TYPE_CHECKING:
    from ._transport_sync import SocketClient
    from .env import AsyncRemoteEnv, GymwireEnv
    from .vector import AsyncRemoteVectorEnv, GymwireVectorEnv

T = TypeVar("T")


class _HeardConnection(ClientConnection):
    """websockets' client connection, noting when bytes last arrived (keepalive pings only a quiet link)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: ``time.monotonic()`` when bytes last arrived from the server.
        self.last_received = time.monotonic()

    def data_received(self, data: bytes) -> None:
        self.last_received = time.monotonic()
        super().data_received(data)


def _time_out(future: asyncio.Future[Any], type: str, rid: int, timeout: float) -> None:
    if not future.done():
        future.set_exception(E.RequestTimeoutError(f"{type} got no answer within {timeout} s", {"id": rid, "type": type}))


class AsyncClient:
    """An asyncio gymwire client; create it with ``await AsyncClient.connect(url)``.

    Options: ``token`` (auth), ``request_timeout`` (seconds per request, default 120; ``None``
    disables), ``reconnect`` (default True), ``reconnect_timeout`` (give up after, default 60 s),
    ``connect_timeout`` (default 10 s), ``keepalive_interval`` (send a WebSocket ping after this
    long without a byte from the server, in seconds, default 15; ``None`` turns keepalive off) and
    ``keepalive_timeout`` (nothing received this long after a ping, default 30 s, drops the
    connection, which is then reconnected and resumed: a link that went silent without a FIN or RST
    is noticed, while a large answer still arriving keeps it), ``on_event`` (called with server events and
    ``{"type": "reconnected"|"disconnected", ...}``), ``protocol_version`` (for tests).
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        client_name: str = "gymwire-py",
        request_timeout: float | None = 120.0,
        reconnect: bool = True,
        reconnect_timeout: float = 60.0,
        reconnect_delay: float = 0.05,
        connect_timeout: float = 10.0,
        keepalive_interval: float | None = 15.0,
        keepalive_timeout: float = 30.0,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        protocol_version: int = PROTOCOL_VERSION,
    ) -> None:
        self.url = url
        self.token = token
        self.client_name = client_name
        self.request_timeout = request_timeout
        self.reconnect = reconnect
        self.reconnect_timeout = reconnect_timeout
        self.reconnect_delay = reconnect_delay
        self.connect_timeout = connect_timeout
        self.keepalive_interval = keepalive_interval
        self.keepalive_timeout = keepalive_timeout
        self.protocol_version = protocol_version
        #: The connection's state and rules (ids, acks, answers, events, resume); this class does its I/O.
        self.core = ConnectionCore(protocol_version=protocol_version, client_name=client_name, token=token, on_event=on_event)
        self._ws: ClientConnection | None = None
        self._reconnecting: asyncio.Task[None] | None = None
        self._readers: set[asyncio.Task[None]] = set()
        self._outbox: list[bytes] = []

    @classmethod
    async def connect(cls, url: str, **opts: Any) -> AsyncClient:
        """Connects and performs the hello/welcome handshake."""
        client = cls(url, **opts)
        await client._open()
        return client

    @property
    def on_event(self) -> Callable[[dict[str, Any]], None] | None:
        """Called with server events and ``{"type": "reconnected"|"disconnected", ...}``."""
        return self.core.on_event

    @on_event.setter
    def on_event(self, callback: Callable[[dict[str, Any]], None] | None) -> None:
        self.core.on_event = callback

    @property
    def welcome(self) -> dict[str, Any]:
        if self.core.welcome is None:
            raise E.NotConnectedError("not connected")
        return self.core.welcome

    @property
    def limits(self) -> dict[str, Any]:
        return self.welcome["limits"]

    @property
    def is_open(self) -> bool:
        return self.core.state == "open"

    @property
    def closed_by(self) -> E.SdkError | None:
        """The error that closed this client for good (:meth:`abandon`, a server shutdown without
        reconnects), which every later call raises; None while open or after a plain :meth:`close`."""
        return self.core.closed_by

    async def list_envs(self) -> list[dict[str, Any]]:
        """The envs the server hosts: ``[{id, description, max_episode_steps, tags, kwargs_schema}]``."""
        return (await self.request("list_envs", {}))["envs"]

    async def make(self, env_id: str, kwargs: dict[str, Any] | None = None) -> AsyncRemoteEnv:
        """Makes a session of ``env_id``; kwargs are validated by the env's schema on the server."""
        return self.adopt(await self.request("make", {"env_id": env_id, "kwargs": kwargs or {}}))

    def adopt(self, made: dict[str, Any]) -> AsyncRemoteEnv:
        """The session a ``make`` answer describes, registered with this client (for its close events)."""
        from .env import AsyncRemoteEnv

        env = AsyncRemoteEnv(self, made)
        self.core.sessions[made["session_id"]] = env
        return env

    async def make_vec(self, env_id: str, num_envs: int, kwargs: dict[str, Any] | None = None, autoreset_mode: str = "next_step") -> AsyncRemoteVectorEnv:
        """Makes ``num_envs`` sessions stepped together, one frame per step."""
        from .vector import AsyncRemoteVectorEnv

        envs = await asyncio.gather(*(self.make(env_id, kwargs) for _ in range(num_envs)))
        return AsyncRemoteVectorEnv(self, list(envs), autoreset_mode)

    async def ping(self, payload: Any = None) -> float:
        """Round-trip time in seconds."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        await self.request("ping", {} if payload is None else {"payload": payload})
        return loop.time() - start

    async def request(self, type: str, fields: dict[str, Any] | FilledRequest, timeout: float | None = ...) -> dict[str, Any]:  # type: ignore[assignment]
        """Sends one request and waits for its result (requests may be pipelined)."""
        timeout = self.request_timeout if timeout is ... else timeout
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        rid, frame = self.core.submit(type, fields, future)
        # A timer on the future itself: asyncio.wait_for would add a task-side future and callbacks per request.
        timer = None if timeout is None else loop.call_later(timeout, _time_out, future, type, rid, timeout)
        try:
            # While reconnecting the request waits in _pending; it goes out after the resume.
            if self.core.can_send and self._ws is not None:
                self._send_soon(self._ws, frame, loop)
            return await future
        finally:
            if timer is not None:
                timer.cancel()
            self.core.finish(rid)

    async def close(self) -> None:
        """Closes the connection; the server reaps this client's sessions after its grace period."""
        self.core.close()
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

    async def close_all(self) -> None:
        """Closes every session this client made, then the connection."""
        await asyncio.gather(*(env.close() for env in list(self.core.sessions.values())), return_exceptions=True)
        await self.close()

    def forget(self, session_id: str) -> None:
        self.core.sessions.pop(session_id, None)

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

    async def _dial(self) -> ClientConnection:
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
        self._ws = ws
        # The reader, and keepalive for this socket; both end with it, and close() cancels them.
        loop = asyncio.get_running_loop()
        for job in (self._read(ws), self._keepalive(ws)):
            task = loop.create_task(job)
            self._readers.add(task)
            task.add_done_callback(self._readers.discard)
        return ws

    async def _keepalive(self, ws: ClientConnection) -> None:
        """Pings a quiet link and drops a silent one (:class:`~gymwire._connection.Keepalive` decides);
        the reader then reconnects and resumes."""
        if self.keepalive_interval is None or not isinstance(ws, _HeardConnection):
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

    def _send_soon(self, ws: ClientConnection, frame: bytes, loop: asyncio.AbstractEventLoop) -> None:
        """Queues a request frame; every frame queued in one turn of the loop goes out in one write.

        With many sessions stepping at once (one task each), a write per frame was a system call per
        step; one write per loop turn is one for all of them. Frames are framed by the connection's
        own sans-I/O protocol, exactly as ``ws.send`` frames them.
        """
        self._outbox.append(frame)
        if len(self._outbox) == 1:
            loop.call_soon(self._flush, ws)

    def _flush(self, ws: ClientConnection) -> None:
        frames, self._outbox = self._outbox, []
        if ws is not self._ws:
            return  # the connection dropped: these requests wait in _pending and are re-sent after the resume
        try:
            for frame in frames:
                ws.protocol.send_binary(frame)
            ws.transport.write(b"".join(d for d in ws.protocol.data_to_send() if d))
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
        deadline = loop.time() + self.reconnect_timeout
        delay = self.reconnect_delay
        last_error: BaseException | None = None
        try:
            while self.core.state == "reconnecting" and loop.time() < deadline:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
                try:
                    ws = await self._dial()
                    if self.core.state != "reconnecting":
                        await ws.close()
                        return
                    welcome = await self._handshake(ws)
                except (E.ServerError, E.VersionMismatchError) as err:
                    last_error = err
                    break  # refused (auth, version): retrying will not help
                except E.SdkError as err:
                    last_error = err
                    continue
                for frame in self.core.resumed(welcome):
                    await self._send(ws, frame)
                self.core.emit({"type": "reconnected", "resumed": bool(welcome.get("resumed"))})
                return
            self.core.reconnect_failed(self.url, last_error)
        finally:
            self._reconnecting = None


class EventLoopThread:
    """An asyncio event loop running in a daemon thread until :meth:`stop`.

    :class:`Client` runs its asyncio transport on one of its own; several clients can share one
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


class Client:
    """A synchronous gymwire client, safe to use from any thread.

    Two transports carry the same API. ``transport="socket"`` (the default) is the fast path: each
    call writes its request and reads its answer on a blocking socket in the calling thread (see
    ``gymwire._transport_sync``), with no event loop in between. ``transport="asyncio"`` runs an
    :class:`AsyncClient` on an event loop in a daemon thread and hands every call to it; it also
    serves ``wss://`` URLs, which the socket transport refuses. The environment variable
    ``GYMWIRE_TRANSPORT`` sets the default. ``loop`` runs the asyncio transport on a loop that
    already runs in another thread (an :class:`EventLoopThread`'s, shared by several clients);
    :meth:`close` then leaves that loop running. ``busy_poll_us`` (socket transport only): after
    sending a request, poll the socket this long before sleeping: ``'auto'`` (default, a window that
    adapts to how fast answers come, see ``gymwire._spin``), ``0`` (never) or a number of µs. Other
    options are :class:`AsyncClient`'s.

    Example::

        with Client("ws://127.0.0.1:8765") as client:
            env = client.make("gymwire/CartPole-v1")
            obs, info = env.reset(seed=0)
    """

    def __init__(self, url: str, *, transport: str | None = None, loop: asyncio.AbstractEventLoop | None = None, **opts: Any) -> None:
        if loop is not None and transport not in (None, "asyncio"):
            raise ValueError(f"a client on a given loop uses the asyncio transport, not {transport!r}")
        if loop is not None:
            transport = "asyncio"
        self.transport = transport or os.environ.get("GYMWIRE_TRANSPORT") or ("asyncio" if url.startswith("wss://") else "socket")
        if self.transport not in ("socket", "asyncio"):
            raise ValueError(f"transport must be 'socket' or 'asyncio', got {self.transport!r}")
        self._loop: asyncio.AbstractEventLoop | None = loop
        # The loop thread this client started (and stops); None for a given loop.
        self._loop_thread: EventLoopThread | None = None
        self._closed = False
        self._socket: SocketClient | None = None
        try:
            if self.transport == "socket":
                from ._transport_sync import SocketClient

                self._socket = SocketClient(url, **opts)
                self._socket.open_blocking()
                self.aclient: AsyncClient = self._socket
            else:
                self._start_loop()
                opts.pop("busy_poll_us", None)  # the socket transport's option: the asyncio one never spins
                self.aclient = self.run(AsyncClient.connect(url, **opts))
        except BaseException:
            self._stop_loop()
            raise

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop that :meth:`run` uses (started on first use with the socket transport)."""
        return self._start_loop()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Runs a coroutine on the client's loop and returns its result (from any thread but the loop's own)."""
        if self._on_own_loop():
            coro.close()
            raise RuntimeError("a blocking gymwire call was made on the client's own event loop; use the async API there")
        if self._closed and (self._loop is None or not self._loop.is_running()):
            coro.close()
            # An abandoned client raises what it was abandoned with, like its async client.
            aclient: AsyncClient | None = getattr(self, "aclient", None)
            raise (aclient.closed_by if aclient is not None else None) or E.ClientClosedError("the client is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._start_loop()).result()

    def drive(self, coro: Coroutine[Any, Any, T]) -> T:
        """Runs a coroutine of this client's remote objects (``env.remote.step(a)``) to its result.

        With the socket transport their requests never suspend (each blocks on the socket in the
        calling thread), so the coroutine runs right here, with no loop; otherwise it runs on the loop.
        """
        if self._socket is None:
            return self.run(coro)
        if self._on_own_loop():
            coro.close()
            raise RuntimeError("a blocking gymwire call was made on the client's own event loop; use the async API there")
        try:
            coro.send(None)
        except StopIteration as done:
            return done.value
        coro.close()
        raise RuntimeError("a coroutine passed to Client.drive waited on something other than this client's requests; use Client.run")

    def request(self, type: str, fields: dict[str, Any] | FilledRequest, timeout: float | None = ...) -> dict[str, Any]:  # type: ignore[assignment]
        """Sends one protocol request (docs/PROTOCOL.md) and blocks until its result; errors are raised.

        ``client.request("ping", {})`` is ``client.run(client.aclient.request("ping", {}))`` without
        the coroutine: with the socket transport the calling thread writes and reads the socket itself.
        """
        if self._socket is None:
            return self.run(self.aclient.request(type, fields, timeout))
        if self._on_own_loop():
            raise RuntimeError("a blocking gymwire call was made on the client's own event loop; use the async API there")
        return self._socket.request_blocking(type, fields, timeout)

    @property
    def welcome(self) -> dict[str, Any]:
        return self.aclient.welcome

    def list_envs(self) -> list[dict[str, Any]]:
        return self.drive(self.aclient.list_envs())

    def make(self, env_id: str, **kwargs: Any) -> GymwireEnv:
        """A ``gymnasium.Env`` for a new session of ``env_id`` on this client."""
        from .env import GymwireEnv

        return GymwireEnv(self, self.drive(self.aclient.make(env_id, kwargs)))

    def make_vec(self, env_id: str, num_envs: int, autoreset_mode: str = "next_step", **kwargs: Any) -> GymwireVectorEnv:
        """A ``gymnasium.vector.VectorEnv`` of ``num_envs`` sessions on this client."""
        from .vector import GymwireVectorEnv

        return GymwireVectorEnv(self, self.drive(self.aclient.make_vec(env_id, num_envs, kwargs, autoreset_mode)))

    def ping(self) -> float:
        start = time.perf_counter()
        self.drive(self.aclient.request("ping", {}))
        return time.perf_counter() - start

    def simulate_connection_loss(self) -> None:
        if self._socket is not None:
            self._socket.simulate_connection_loss_blocking()
        else:
            self.run(self.aclient.simulate_connection_loss())

    def abandon(self, error: E.SdkError) -> None:
        """:meth:`AsyncClient.abandon` (waiting and later calls raise ``error``), then :meth:`close`."""
        try:
            if not self._closed:
                self.drive(self.aclient.abandon(error))
        finally:
            self.close()

    def close(self) -> None:
        """Closes the connection and stops the loop thread (not a loop given to the client); idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            if self._socket is not None:
                self._socket.close_blocking()
            else:
                self.run(self.aclient.close())
        finally:
            self._stop_loop()

    def _on_own_loop(self) -> bool:
        """Whether the caller runs on this client's loop (where a blocking call would wait on itself)."""
        try:
            return self._loop is not None and asyncio.get_running_loop() is self._loop
        except RuntimeError:
            return False

    def _start_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop_thread = EventLoopThread()
            self._loop = self._loop_thread.loop
        return self._loop

    def _stop_loop(self) -> None:
        self._closed = True
        if self._socket is not None:
            self._socket.close_blocking()
        if self._loop_thread is not None:
            self._loop_thread.stop()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def with_owned_client(url: str, client_options: dict[str, Any] | None, build: Callable[[Client], T]) -> T:
    """Opens a client for one object that will own it; closes it again if building that object fails."""
    client = Client(url, **(client_options or {}))
    try:
        return build(client)
    except BaseException:
        client.close()
        raise


def release(client: Client, close_remote: Coroutine[Any, Any, Any], owns_client: bool) -> None:
    """Closes a remote session or vector (quietly when the connection is already gone), then the client if owned."""
    try:
        client.drive(close_remote)
    except (E.GymwireError, RuntimeError):
        pass
    finally:
        if owns_client:
            client.close()

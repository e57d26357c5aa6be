"""The gymwire clients: one WebSocket connection carrying pipelined requests for any number of sessions.

:class:`AsyncClient` is the asyncio client: the asyncio driver
(:class:`~gymwire._transport_asyncio.AsyncioDriver`: reconnect and resume, exactly-once retries,
keepalive, timeouts) with ``make``/``make_vec`` on top. :class:`Client` is the synchronous face,
safe to call from any thread; it runs one of two drivers over the same I/O-free
:class:`~gymwire._connection.ConnectionCore`. By default the blocking socket driver
(``gymwire._transport_sync.SocketClient``: no event loop between a step and the wire);
``transport="asyncio"`` runs an :class:`AsyncClient` on a loop in a background thread instead.
:func:`make` and :func:`make_vec` (``gymwire.make``, ``gymwire.make_vec``) open a client for one env.

Example::

    client = Client("ws://127.0.0.1:8765")
    env = client.make("gymwire/CartPole-v1")      # a gymnasium.Env
    obs, info = env.reset(seed=42)
    client.close()
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar

from gymnasium.vector import AutoresetMode

from . import errors as E
from ._connection import DriverBase
from ._protocol import PROTOCOL_VERSION
from ._request_template import FilledRequest
from ._transport_asyncio import AsyncioDriver, EventLoopThread, ThreadCalls
from ._transport_sync import SocketClient
from .env import AsyncRemoteEnv, GymwireEnv, RemoteSession, make_fields
from .vector import AsyncRemoteVectorEnv, GymwireVectorEnv, RemoteVector, autoreset_mode_name

__all__ = ["PROTOCOL_VERSION", "AsyncClient", "Client", "EventLoopThread", "make", "make_vec"]

T = TypeVar("T")


class AsyncClient(AsyncioDriver):
    """An asyncio gymwire client; create it with ``await AsyncClient.connect(url)``.

    Options are :class:`~gymwire._connection.DriverBase`'s: ``token``, ``request_timeout``,
    ``reconnect``, ``reconnect_timeout``, ``reconnect_delay``, ``connect_timeout``,
    ``keepalive_interval``, ``keepalive_timeout``, ``on_event``. ``request``, ``close``,
    ``abandon`` and the rest of the connection are the driver's
    (:class:`~gymwire._transport_asyncio.AsyncioDriver`).
    """

    async def list_envs(self) -> list[dict[str, Any]]:
        """The envs the server hosts: ``[{id, description, max_episode_steps, tags, kwargs_schema}]``."""
        return (await self.request("list_envs", {}))["envs"]

    async def make(self, env_id: str, kwargs: dict[str, Any] | None = None) -> AsyncRemoteEnv:
        """Makes a session of ``env_id``; kwargs are validated by the env's schema on the server."""
        return await AsyncRemoteEnv.make(self, env_id, kwargs)

    def adopt(self, made: dict[str, Any]) -> AsyncRemoteEnv:
        """The session a ``make`` answer describes, registered with this client (for its close events)."""
        return self.track(AsyncRemoteEnv(self, made))

    async def make_vec(self, env_id: str, num_envs: int, kwargs: dict[str, Any] | None = None, autoreset_mode: str = "next_step") -> AsyncRemoteVectorEnv:
        """Makes ``num_envs`` sessions stepped together, one frame per step."""
        made = await self.request_many("make", [make_fields(env_id, kwargs)] * num_envs)
        return AsyncRemoteVectorEnv(self, [self.adopt(m) for m in made], autoreset_mode)

    async def ping(self, payload: Any = None) -> float:
        """Round-trip time in seconds."""
        loop = asyncio.get_running_loop()
        start = loop.time()
        await self.request("ping", {} if payload is None else {"payload": payload})
        return loop.time() - start

    async def close_all(self) -> None:
        """Closes every session this client made, then the connection."""
        await asyncio.gather(*(env.close() for env in list(self.core.sessions.values()) if isinstance(env, AsyncRemoteEnv)), return_exceptions=True)
        await self.close()


class BlockingCalls(Protocol):
    """What :class:`Client` calls on its driver: the blocking socket driver, or an :class:`AsyncClient`
    on a loop thread (:class:`~gymwire._transport_asyncio.ThreadCalls`)."""

    def request(self, type: str, fields: dict[str, Any] | FilledRequest, timeout: float | None = ...) -> dict[str, Any]: ...  # type: ignore[assignment]
    def request_many(self, type: str, many: list[dict[str, Any]], timeout: float | None = ...) -> list[dict[str, Any]]: ...  # type: ignore[assignment]
    def close(self) -> None: ...
    def abandon(self, error: E.SdkError) -> None: ...
    def simulate_connection_loss(self) -> None: ...


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
        self._aclient: AsyncClient | None = None
        try:
            if self.transport == "socket":
                driver = SocketClient(url, **opts)
                driver.open()
                #: The driver's connection state (welcome, sessions, events); its calls are ``_calls``.
                self.connection: DriverBase = driver
                self._calls: BlockingCalls = driver
            else:
                loop = self._start_loop()
                opts.pop("busy_poll_us", None)  # the socket transport's option: the asyncio one never spins
                self._aclient = asyncio.run_coroutine_threadsafe(AsyncClient.connect(url, **opts), loop).result()
                self.connection = self._aclient
                self._calls = ThreadCalls(self._aclient, loop)
        except BaseException:
            self._stop_loop()
            raise

    @property
    def aclient(self) -> AsyncClient:
        """The :class:`AsyncClient` this client runs (the asyncio transport only), for coroutines on :attr:`loop`."""
        if self._aclient is None:
            raise AttributeError("the socket transport runs no AsyncClient; use Client(url, transport='asyncio') or AsyncClient.connect")
        return self._aclient

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
            # An abandoned client raises what it was abandoned with, like its driver.
            raise self.closed_by or E.ClientClosedError("the client is closed")
        return asyncio.run_coroutine_threadsafe(coro, self._start_loop()).result()

    def request(self, type: str, fields: dict[str, Any] | FilledRequest, timeout: float | None = ...) -> dict[str, Any]:  # type: ignore[assignment]
        """Sends one protocol request (docs/PROTOCOL.md) and blocks until its result; errors are raised.

        With the socket transport the calling thread writes and reads the socket itself; with the
        asyncio one the request runs on the client's loop thread.
        """
        if self._on_own_loop():
            raise RuntimeError("a blocking gymwire call was made on the client's own event loop; use the async API there")
        return self._calls.request(type, fields, timeout)

    def request_many(self, type: str, many: list[dict[str, Any]], timeout: float | None = ...) -> list[dict[str, Any]]:  # type: ignore[assignment]
        """Sends one request per fields dict, pipelined, and blocks until every result is in."""
        if self._on_own_loop():
            raise RuntimeError("a blocking gymwire call was made on the client's own event loop; use the async API there")
        return self._calls.request_many(type, many, timeout)

    @property
    def url(self) -> str:
        return self.connection.url

    @property
    def welcome(self) -> dict[str, Any]:
        return self.connection.welcome

    @property
    def is_open(self) -> bool:
        return self.connection.is_open

    @property
    def closed_by(self) -> E.SdkError | None:
        """The error this client was abandoned with (see :meth:`abandon`), or None."""
        connection: DriverBase | None = getattr(self, "connection", None)
        return None if connection is None else connection.closed_by

    @property
    def on_event(self) -> Callable[[dict[str, Any]], None] | None:
        """Called with server events and ``{"type": "reconnected"|"disconnected", ...}`` (in the driver's thread)."""
        return self.connection.on_event

    @on_event.setter
    def on_event(self, callback: Callable[[dict[str, Any]], None] | None) -> None:
        self.connection.on_event = callback

    def adopt(self, made: dict[str, Any]) -> RemoteSession:
        """The session a ``make`` answer describes, registered with this client (for its close events)."""
        return self.connection.track(RemoteSession(made))

    def forget(self, session_id: str) -> None:
        self.connection.forget(session_id)

    def list_envs(self) -> list[dict[str, Any]]:
        """The envs the server hosts: ``[{id, description, max_episode_steps, tags, kwargs_schema}]``."""
        return self.request("list_envs", {})["envs"]

    def make(self, env_id: str, **kwargs: Any) -> GymwireEnv:
        """A ``gymnasium.Env`` for a new session of ``env_id`` on this client."""
        return GymwireEnv(self, self._session(env_id, kwargs))

    def make_vec(self, env_id: str, num_envs: int, autoreset_mode: str | AutoresetMode = "next_step", **kwargs: Any) -> GymwireVectorEnv:
        """A ``gymnasium.vector.VectorEnv`` of ``num_envs`` sessions on this client."""
        return GymwireVectorEnv(self, self._sessions(env_id, num_envs, autoreset_mode, kwargs))

    def _session(self, env_id: str, kwargs: dict[str, Any]) -> RemoteSession:
        return self.adopt(self.request("make", make_fields(env_id, kwargs)))

    def _sessions(self, env_id: str, num_envs: int, autoreset_mode: str | AutoresetMode, kwargs: dict[str, Any]) -> RemoteVector:
        made = self.request_many("make", [make_fields(env_id, kwargs)] * num_envs)
        return RemoteVector([self.adopt(m) for m in made], autoreset_mode)

    def ping(self) -> float:
        start = time.perf_counter()
        self.request("ping", {})
        return time.perf_counter() - start

    def simulate_connection_loss(self) -> None:
        """Drops the connection without telling the server, as a network failure would (for tests)."""
        self._calls.simulate_connection_loss()

    def abandon(self, error: E.SdkError) -> None:
        """Closes this client for good because its server is known to be gone: waiting and later
        calls raise ``error`` (see ``AsyncClient.abandon``), then :meth:`close`."""
        try:
            if not self._closed:
                self._calls.abandon(error)
        finally:
            self.close()

    def close(self) -> None:
        """Closes the connection and stops the loop thread (not a loop given to the client); idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self._calls.close()
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
        if self._loop_thread is not None:
            self._loop_thread.stop()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _owned(url: str, client_options: dict[str, Any] | None, build: Callable[[Client], T]) -> T:
    """Opens a client for one object that will own it; closes it again if building that object fails."""
    client = Client(url, **(client_options or {}))
    try:
        return build(client)
    except BaseException:
        client.close()
        raise


def make(url: str, env_id: str, *, client_options: dict[str, Any] | None = None, **kwargs: Any) -> GymwireEnv:
    """Connects to ``url`` and makes a session of ``env_id`` with ``kwargs`` as a ``gymnasium.Env``.

    The env owns its connection and closes it in ``close()``. ``client_options`` go to
    :class:`Client` (token, request_timeout, reconnect, transport, ...). The env pickles: unpickling
    calls this again with the same arguments.
    """

    env = _owned(url, client_options, lambda c: GymwireEnv(c, c._session(env_id, kwargs), owns_client=True))
    env.reopen_args = (url, env_id, dict(kwargs), dict(client_options) if client_options is not None else None)
    env.reopener = _reopen
    return env


def _reopen(url: str, env_id: str, kwargs: dict[str, Any], client_options: dict[str, Any] | None) -> GymwireEnv:
    return make(url, env_id, client_options=client_options, **kwargs)


def make_vec(
    url: str, env_id: str, num_envs: int, autoreset_mode: str | AutoresetMode = "next_step", *, client_options: dict[str, Any] | None = None, **kwargs: Any
) -> GymwireVectorEnv:
    """Connects to ``url`` and makes ``num_envs`` sessions of ``env_id`` as one ``gymnasium.vector.VectorEnv``."""
    mode = autoreset_mode_name(autoreset_mode)
    return _owned(url, client_options, lambda c: GymwireVectorEnv(c, c._sessions(env_id, num_envs, mode, kwargs), owns_client=True))

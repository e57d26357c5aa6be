"""The connection's rules without its I/O: requests into bytes, bytes into answers and events.

:class:`ConnectionCore` is what both transports of the client share, in the sans-I/O style of
h11, wsproto and h2: it numbers requests and encodes them with their ack, keeps every request still
waiting for its answer (with its frame, so a resume can send it again with the same id), matches
answers to requests by the reply rules, tracks the sessions the client made (for their
``session_closed`` events), and holds the state a reconnect needs (the resume token, the server's
shutdown), and each request's deadline. It never touches a socket, a loop or a clock; a driver
does that and tells it what happened, and what time it is. Two drivers run it, each a :class:`DriverBase`: the asyncio driver
(``gymwire._transport_asyncio.AsyncioDriver``, whose coroutines ``gymwire.AsyncClient`` offers) and
the blocking socket driver (``gymwire._transport_sync.SocketClient``, the default of ``gymwire.Client``).

A request's *answer* is whatever the driver waits on: an ``asyncio.Future`` or a plain settable
object; the core only calls its ``done``, ``set_result`` and ``set_exception``.

Example (what a driver does)::

    core = ConnectionCore(protocol_version=PROTOCOL_VERSION, client_name="me")
    rid, hello = core.hello(answer)       # send hello, then feed what arrives
    core.receive(frame)                   # settles answer with the welcome
    core.open(answer.result())
    rid, frame = core.submit("ping", {}, other_answer)   # write frame; core.receive(...) settles it
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from . import errors as E
from ._protocol import EVENT_SESSION_CLOSED, EVENT_SHUTDOWN, FATAL_CLOSE_CODES, PROTOCOL_VERSION
from ._request_template import FilledRequest
from .codec import pack, packer, unpack

#: Requests that need no session: after a resume that lost the sessions they stand.
_SESSIONLESS = ("list_envs", "ping", "make")


class Answer(Protocol):
    """What a driver waits on for one request (an ``asyncio.Future`` is one)."""

    def done(self) -> bool: ...
    def set_result(self, result: Any) -> None: ...
    def set_exception(self, error: BaseException) -> None: ...


class ClosableSession(Protocol):
    """A session the client made: the core marks it closed when the server says so."""

    session_id: str

    def mark_closed(self, reason: str) -> None: ...


S = TypeVar("S", bound=ClosableSession)


@dataclass(slots=True)
class PendingRequest:
    """A request sent (or waiting to be) and not yet answered."""

    type: str
    frame: bytes
    answer: Answer
    #: When the request fails with ``RequestTimeoutError`` (on the driver's clock); None: never.
    deadline: float | None = None
    #: The timeout the deadline came from, for the error's message.
    timeout: float | None = None


class ConnectionCore:
    """The client connection's state and rules, with no I/O (see the module docs).

    ``state`` is ``"connecting"``, ``"open"``, ``"reconnecting"`` or ``"closed"``. ``on_event`` is
    called with server events and with ``{"type": "disconnected"|"reconnected", ...}``.
    """

    def __init__(self, *, protocol_version: int, client_name: str, token: str | None = None, on_event: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.protocol_version = protocol_version
        self.client_name = client_name
        self.token = token
        self.on_event = on_event
        self.state = "connecting"
        #: Requests waiting for their answers, by id, in the order they were numbered.
        self.pending: dict[int, PendingRequest] = {}
        #: The sessions this client made, by id.
        self.sessions: dict[str, ClosableSession] = {}
        self.welcome: dict[str, Any] | None = None
        self.max_frame_bytes: int | None = None
        #: Set from the server's ``shutdown`` event until a reconnect succeeds: requests for its
        #: (gone) sessions raise it at once.
        self.shutdown_error: E.ServerShutdownError | None = None
        #: The error that closed the client for good (abandoned, or a shutdown without reconnects):
        #: later requests raise it rather than ClientClosedError.
        self.closed_by: E.SdkError | None = None
        self._next_id = 1
        self._resume_token: str | None = None
        # One packer per connection, reused for every frame (requests are encoded one at a time).
        self._pack = packer().pack

    # -- requests ---------------------------------------------------------------------------------

    def submit(
        self, type: str, fields: dict[str, Any] | FilledRequest, answer: Answer, *, deadline: float | None = None, timeout: float | None = None
    ) -> tuple[int, bytes]:
        """Numbers and encodes a request and keeps it until its answer comes; ``(id, frame)`` to send.

        ``fields`` is a dict, or a :class:`~gymwire._request_template.FilledRequest` whose fixed
        fields were encoded once (a vector env's ``step_batch``). ``deadline`` (on the driver's
        clock, ``timeout`` seconds from now) is when :meth:`expire` fails it. Raises what the client
        was closed with, the server's shutdown for a session request, or ``FrameTooLargeLocalError``.
        """
        if self.state == "closed":
            raise self.closed_by or E.ClientClosedError("the client is closed")
        if self.shutdown_error is not None and ("session_id" in fields or "session_ids" in fields):
            raise self.shutdown_error
        rid = self._next_id
        # Every id below the oldest unanswered request has been received (ids grow and pending keeps
        # insertion order): the server may forget those answers instead of holding them for a retry.
        ack = next(iter(self.pending), rid) - 1
        frame = fields.encode(rid, ack) if isinstance(fields, FilledRequest) else self._pack({**fields, "id": rid, "type": type, "ack": ack})
        limit = self.max_frame_bytes
        if limit is not None and len(frame) > limit:
            # Sent anyway, it would close the connection, and a resume would send it again, forever.
            raise E.FrameTooLargeLocalError(
                f"{type} request is {len(frame)} bytes, over the server's max_frame_bytes {limit}; it was not sent",
                {"size": len(frame), "max_frame_bytes": limit},
            )
        self._next_id = rid + 1
        self.pending[rid] = PendingRequest(type, frame, answer, deadline, timeout)
        return rid, frame

    @staticmethod
    def timeout_error(type: str, rid: int, timeout: float | None) -> E.RequestTimeoutError:
        """The error of a request that got no answer within its timeout (both drivers raise this one)."""
        return E.RequestTimeoutError(f"{type} got no answer within {timeout} s", {"id": rid, "type": type})

    def expire(self, now: float) -> float | None:
        """Fails every waiting request whose deadline has passed; returns the earliest deadline still ahead.

        A driver that cannot block on each request (the asyncio one) keeps one timer at the earliest
        deadline and calls this when it fires: one timer for the connection instead of one per request.
        """
        earliest: float | None = None
        for rid, p in list(self.pending.items()):
            deadline = p.deadline
            if deadline is None or p.answer.done():
                continue
            if deadline <= now:
                p.answer.set_exception(self.timeout_error(p.type, rid, p.timeout))
            elif earliest is None or deadline < earliest:
                earliest = deadline
        return earliest

    def finish(self, rid: int) -> None:
        """Forgets a request whose caller has stopped waiting (answered, timed out or cancelled)."""
        self.pending.pop(rid, None)

    @property
    def can_send(self) -> bool:
        """Whether a request goes out now; otherwise it waits in :attr:`pending` for the resume."""
        return self.state == "open"

    # -- handshake --------------------------------------------------------------------------------

    def hello(self, answer: Answer) -> tuple[int, bytes]:
        """The hello frame (with the resume token after a drop); ``answer`` gets the welcome."""
        rid = self._next_id
        self._next_id += 1
        hello: dict[str, Any] = {"id": rid, "type": "hello", "protocol_version": self.protocol_version, "client_name": self.client_name}
        if self.token is not None:
            hello["token"] = self.token
        if self._resume_token is not None:
            hello["resume_token"] = self._resume_token
        self.pending[rid] = PendingRequest("hello", b"", answer)
        return rid, pack(hello)

    def check_version(self, welcome: dict[str, Any]) -> None:
        """Raises ``VersionMismatchError`` when the welcome speaks another protocol version."""
        version = welcome.get("protocol_version")
        if version != self.protocol_version:
            raise E.VersionMismatchError(
                f"the server speaks protocol version {version}, this client speaks {self.protocol_version}",
                {"server": version, "client": self.protocol_version},
            )

    def handshake_lost(self, error: E.SdkError) -> None:
        """The connection closed while a hello waited for its welcome."""
        for p in list(self.pending.values()):
            if p.type == "hello" and not p.answer.done():
                p.answer.set_exception(error)

    def open(self, welcome: dict[str, Any]) -> None:
        """The first welcome: the connection is open."""
        self._take_welcome(welcome)
        self.state = "open"

    def resumed(self, welcome: dict[str, Any]) -> list[bytes]:
        """A reconnect's welcome; returns the frames to send again, in their original order, with their original ids.

        Without ``resumed`` the server forgot this client: its sessions are marked closed and every
        request that needs one fails with ``SessionLostError``.
        """
        self._take_welcome(welcome)
        self.state = "open"
        self.shutdown_error = None
        if not welcome.get("resumed"):
            self._close_sessions("the server did not resume this client's sessions")
            self.fail_all(E.SessionLostError("reconnected, but the server no longer has this client's sessions"), lambda p: p.type not in _SESSIONLESS)
        return [p.frame for _, p in sorted(self.pending.items()) if p.type != "hello" and not p.answer.done()]

    def _take_welcome(self, welcome: dict[str, Any]) -> None:
        self.welcome = welcome
        self._resume_token = welcome["resume_token"]
        self.max_frame_bytes = (welcome.get("limits") or {}).get("max_frame_bytes")

    # -- what arrives -----------------------------------------------------------------------------

    def receive(self, frame: bytes | bytearray | memoryview) -> None:
        """One binary message from the server: settles its request's answer, or handles an event."""
        try:
            msg = unpack(frame)
        except Exception as err:  # noqa: BLE001 - a bad frame from the server must not kill the reader
            self.emit({"type": "event", "event": EVENT_SHUTDOWN, "reason": f"unreadable frame from server: {err}"})
            return
        if not isinstance(msg, dict):
            return
        kind = msg.get("type")
        if kind == "event":
            event = msg.get("event")
            if event == EVENT_SESSION_CLOSED and msg.get("session_id") in self.sessions:
                self.sessions[msg["session_id"]].mark_closed(msg.get("reason", ""))
            if event == EVENT_SHUTDOWN and self.state != "closed":
                self._server_shutdown(str(msg.get("reason") or ""))
            self.emit(msg)
            return
        rid = msg.get("id")
        if rid is None:
            error = msg.get("error") or {}
            self.emit({"type": "event", "event": EVENT_SHUTDOWN, "reason": f"server error without id: {error.get('code')}: {error.get('message')}"})
            return
        entry = self.pending.get(rid) if isinstance(rid, int) else None
        if entry is None or entry.answer.done():
            return  # answered after a timeout, or a duplicate answer after a resume
        if kind == "error":
            entry.answer.set_exception(E.server_error(msg.get("error") or {}))
        elif kind == "result" and isinstance(msg.get("result"), dict):
            entry.answer.set_result(msg["result"])
        else:
            entry.answer.set_exception(E.BadResponseError(f"the server's answer to {entry.type} is not a result or an error: {msg!r}"))

    def _server_shutdown(self, reason: str) -> None:
        # The server answered everything in flight before its shutdown event and closes next, taking
        # its sessions with it: what still waits, and any request for a session, fails now instead of
        # after a timeout. The client still reconnects (a restarted server takes new sessions);
        # requests that need no session wait for that, up to reconnect_timeout.
        self.shutdown_error = E.ServerShutdownError(f"the server shut down{f' ({reason})' if reason else ''}; its sessions are gone", {"reason": reason})
        self._close_sessions("the server shut down")
        self.fail_all(self.shutdown_error)

    # -- the connection's life --------------------------------------------------------------------

    def disconnected(self, code: int, reason: str, *, reconnect: bool) -> bool:
        """The socket closed; True when the driver should reconnect and resume.

        Otherwise (reconnects off, a fatal close code, a drop during the first handshake) the client
        is closed and everything waiting fails.
        """
        if self.state == "closed":
            return False
        self.emit({"type": "disconnected", "code": code, "reason": reason})
        if not reconnect or code in FATAL_CLOSE_CODES or self.state == "connecting":
            self.state = "closed"
            self.closed_by = self.shutdown_error
            self.fail_all(self.shutdown_error or E.ConnectionLostError(f"connection closed ({code}{': ' + reason if reason else ''})", {"code": code}))
            return False
        self.state = "reconnecting"
        return True

    def reconnect_failed(self, url: str, last_error: BaseException | None) -> None:
        """The driver gave up reconnecting: the client is closed and everything waiting fails."""
        if self.state == "reconnecting":
            self.state = "closed"
            self.fail_all(E.ConnectionLostError(f"could not reconnect to {url}: {last_error or 'timed out'}"))

    def close(self) -> bool:
        """The user closed the client: everything waiting fails; False when it was closed already."""
        if self.state == "closed":
            return False
        self.state = "closed"
        self.fail_all(E.ClientClosedError("the client was closed"))
        return True

    def abandon(self, error: E.SdkError) -> None:
        """The server is known to be gone: waiting and later requests fail with ``error``, sessions are closed."""
        self.closed_by = error
        self._close_sessions(str(error))
        self.fail_all(error)

    def fail_all(self, error: BaseException, which: Callable[[PendingRequest], bool] = lambda p: True) -> None:
        """Fails every waiting request (``which`` picks some) with ``error``."""
        for p in list(self.pending.values()):
            if which(p) and not p.answer.done():
                p.answer.set_exception(error)

    def _close_sessions(self, reason: str) -> None:
        for session in list(self.sessions.values()):
            session.mark_closed(reason)

    def emit(self, event: dict[str, Any]) -> None:
        """Hands an event to ``on_event``; a callback that raises does not break the connection."""
        if self.on_event is not None:
            try:
                self.on_event(event)
            except Exception:  # noqa: BLE001 - a user callback must not break the connection
                pass


class Keepalive:
    """When to ping a quiet link and when to drop a silent one, from times the driver reads.

    Any bytes count, as in the TypeScript client: a busy link sends no pings, and a large answer
    still arriving slowly keeps the link alive though a pong would wait behind it.

    Example::

        keepalive = Keepalive(interval=15, timeout=30)
        action = keepalive.due(time.monotonic(), last_received)   # "ping", "drop" or None
    """

    def __init__(self, interval: float, timeout: float) -> None:
        self.interval = interval
        self.timeout = timeout
        self._pinged_at: float | None = None

    def due(self, now: float, last_received: float) -> str | None:
        """``"ping"`` (send one now), ``"drop"`` (a ping went unanswered: the link is dead) or None."""
        if self._pinged_at is not None and last_received > self._pinged_at:
            self._pinged_at = None  # heard from the server since the ping
        if self._pinged_at is not None:
            if now - self._pinged_at >= self.timeout:
                self._pinged_at = None
                return "drop"
            return None
        if now - last_received >= self.interval:
            self._pinged_at = now
            return "ping"
        return None

    def reset(self) -> None:
        """A new socket: no ping outstanding."""
        self._pinged_at = None


class ReconnectSchedule:
    """When a driver tries to reconnect, and when it stops, from times the driver reads.

    Attempts wait ``delay`` seconds, doubling up to 2 s, until ``timeout`` has passed since the drop;
    a refusal by the server (auth, protocol version) ends them at once, since trying again gives the
    same answer. The driver sleeps, dials and handshakes; this only decides.

    Example::

        schedule = ReconnectSchedule(time.monotonic(), timeout=60, delay=0.05)
        while (wait := schedule.next_wait(time.monotonic())) is not None:
            time.sleep(wait)
            try:
                ...  # dial and handshake
            except (E.ServerError, E.SdkError) as err:
                if schedule.failed(err):
                    break
        core.reconnect_failed(url, schedule.last_error)
    """

    MAX_DELAY = 2.0

    def __init__(self, now: float, *, timeout: float, delay: float) -> None:
        self.deadline = now + timeout
        self._delay = delay
        #: Why the latest attempt failed (None before any did).
        self.last_error: BaseException | None = None

    def next_wait(self, now: float) -> float | None:
        """How long to wait before the next attempt; None when the time for reconnecting is up."""
        if now >= self.deadline:
            return None
        wait, self._delay = self._delay, min(self._delay * 2, self.MAX_DELAY)
        return wait

    def failed(self, error: E.GymwireError) -> bool:
        """Notes a failed attempt; True when the server refused us (stop trying)."""
        self.last_error = error
        return isinstance(error, (E.ServerError, E.VersionMismatchError))


class DriverBase:
    """What both drivers share besides their I/O: the options, the :class:`ConnectionCore`, and what
    can be asked about the connection without waiting (``welcome``, ``is_open``, ``closed_by``).

    Options: ``token`` (auth), ``request_timeout`` (seconds per request, default 120; ``None``
    disables), ``reconnect`` (default True), ``reconnect_timeout`` (give up after, default 60 s),
    ``reconnect_delay`` (first backoff, doubling to 2 s), ``connect_timeout`` (default 10 s),
    ``keepalive_interval`` (send a WebSocket ping after this long without a byte from the server, in
    seconds, default 15; ``None`` turns keepalive off) and ``keepalive_timeout`` (nothing received
    this long after a ping, default 30 s, drops the connection, which is then reconnected and
    resumed: a link that went silent without a FIN or RST is noticed, while a large answer still
    arriving keeps it), ``on_event`` (called with server events and
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
        #: The connection's state and rules (ids, acks, answers, events, resume); the driver does its I/O.
        self.core = ConnectionCore(protocol_version=protocol_version, client_name=client_name, token=token, on_event=on_event)

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
        """The error that closed this client for good (``abandon``, a server shutdown without
        reconnects), which every later call raises; None while open or after a plain ``close``."""
        return self.core.closed_by

    def track(self, session: S) -> S:
        """Registers a session this client made, so the server's ``session_closed`` and ``shutdown`` reach it."""
        self.core.sessions[session.session_id] = session
        return session

    def forget(self, session_id: str) -> None:
        """Stops tracking a session (it was closed)."""
        self.core.sessions.pop(session_id, None)

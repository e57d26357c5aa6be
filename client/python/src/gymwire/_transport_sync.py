"""The blocking socket driver: requests sent and answers read by the calling thread itself.

:class:`SocketClient` runs the connection on a blocking socket
(:class:`~gymwire._transport_socket.SocketWebSocket`); its methods block and may be called from any
thread (it is ``gymwire.Client``'s default transport). A call encodes its request, writes it, and,
when no other thread is reading, reads the socket itself until its answer comes, handing answers
for other threads to them on the way (one reader at a time; the others wait on a condition). No
event loop and no thread hop sit between a step and the socket.

A helper thread covers the time nobody calls: after a short quiet spell it watches the socket for
server events and pings, sends keepalive pings, and drops a link whose pings go unanswered (the next
reader then reconnects and resumes). A caller that arrives while it watches wakes it through a pipe.

The connection's rules (ids, acks, answers, events, what a resume sends again) are the I/O-free
:class:`~gymwire._connection.ConnectionCore`, which this driver feeds and calls under its lock.
Reconnect and resume follow the asyncio driver: the thread that notices a drop redials with backoff
while holding the reader's role, presents the resume token, and re-sends every waiting request with
its original id.

Example::

    driver = SocketClient("ws://127.0.0.1:8765")
    driver.open()
    made = driver.request("make", {"env_id": "gymwire/CartPole-v1", "kwargs": {}})
    driver.close()
"""

from __future__ import annotations

import os
import select
import threading
import time
from typing import Any

from . import errors as E
from ._connection import DriverBase, Keepalive, ReconnectSchedule
from ._request_template import FilledRequest
from ._spin import AdaptiveSpin
from ._transport_socket import SocketClosedError, SocketWebSocket

# A caller-free spell this long hands the socket to the helper thread (server events, pings).
_IDLE_AFTER_S = 0.02
_IDLE_WATCH_S = 0.25


def _spin_setting(busy_poll_us: str | float) -> tuple[AdaptiveSpin | None, float]:
    """``busy_poll_us`` as (adaptive window or None, fixed window in seconds): 'auto', 0 (off) or µs."""
    if busy_poll_us == "auto":
        return AdaptiveSpin(), 0.0
    if isinstance(busy_poll_us, bool) or not isinstance(busy_poll_us, (int, float)) or not busy_poll_us >= 0:
        raise ValueError(f"busy_poll_us must be 'auto' or a number of µs >= 0, got {busy_poll_us!r}")
    return None, busy_poll_us / 1e6


class _Answer:
    """The outcome of one request, set by whichever thread reads it (the future of a blocking call)."""

    __slots__ = ("_done", "_result", "_error")

    def __init__(self) -> None:
        self._done = False
        self._result: Any = None
        self._error: BaseException | None = None

    def done(self) -> bool:
        return self._done

    def set_result(self, result: Any) -> None:
        self._result = result
        self._done = True

    def set_exception(self, error: BaseException) -> None:
        self._error = error
        self._done = True

    def result(self) -> Any:
        if self._error is not None:
            raise self._error
        return self._result


class SocketClient(DriverBase):
    """The connection on a blocking socket; every method blocks the calling thread only, from any thread.

    Made by :class:`~gymwire.client.Client` (its default transport). Options are
    :class:`~gymwire._connection.DriverBase`'s, plus ``busy_poll_us`` (see ``Client``).
    """

    def __init__(self, url: str, *, busy_poll_us: str | float = "auto", **opts: Any) -> None:
        super().__init__(url, **opts)
        self._spin, self._fixed_spin_s = _spin_setting(busy_poll_us)
        self._sock: SocketWebSocket | None = None
        # Guards the core (ids, pending requests, the connection state); the reader's role is a lock of its own.
        self._lock = threading.Lock()
        self._reader = threading.Lock()
        self._handoff = threading.Condition(threading.Lock())
        self._waiters = 0
        self._busy = 0
        self._last_call_end = time.monotonic()
        self._idle_watching = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        self._stop = threading.Event()
        self._keepalive_timer = None if self.keepalive_interval is None else Keepalive(self.keepalive_interval, self.keepalive_timeout)
        self._helper: threading.Thread | None = None

    def open(self) -> None:
        """Connects and performs the hello/welcome handshake; starts the helper thread."""
        try:
            with self._reader:
                sock = self._dial_blocking()
                welcome = self._handshake_blocking(sock, time.monotonic() + self.connect_timeout)
        except BaseException:
            self.core.state = "closed"
            self._close_pipe()
            raise
        self.core.open(welcome)
        self._helper = threading.Thread(target=self._watch_when_idle, name="gymwire-socket", daemon=True)
        self._helper.start()

    def request(self, type: str, fields: dict[str, Any] | FilledRequest, timeout: float | None = ...) -> dict[str, Any]:  # type: ignore[assignment]
        """Sends one request and blocks until its result (or its error, raised)."""
        timeout = self.request_timeout if timeout is ... else timeout
        answer = _Answer()
        with self._lock:
            # A call in progress keeps the helper thread off the socket (see _watch_when_idle).
            self._busy += 1
            watching = self._idle_watching
            try:
                rid, frame = self.core.submit(type, fields, answer)
            except BaseException:
                self._busy -= 1
                raise
            # While reconnecting the request waits in the core; it goes out after the resume.
            if self.core.can_send and self._sock is not None:
                self._send_quietly(self._sock, frame)
        sent_at = time.perf_counter()
        try:
            if watching:
                self._wake_helper()  # the helper holds the reader's role: have it hand it over
            deadline = None if timeout is None else time.monotonic() + timeout
            self._await(answer, deadline, timeout, rid, type, sent_at)
            return answer.result()
        finally:
            with self._lock:
                self.core.finish(rid)
                self._busy -= 1
                self._last_call_end = time.monotonic()

    def request_many(self, type: str, many: list[dict[str, Any]], timeout: float | None = ...) -> list[dict[str, Any]]:  # type: ignore[assignment]
        """Sends one request per fields dict, pipelined, and blocks until every result is in."""
        timeout = self.request_timeout if timeout is ... else timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        entries: list[tuple[int, _Answer]] = []
        with self._lock:
            # A call in progress keeps the helper thread off the socket (see _watch_when_idle).
            self._busy += 1
            watching = self._idle_watching
        try:
            for fields in many:
                # Ids go out in increasing order (the server refuses one below the highest it saw),
                # so a request is numbered and sent under one lock.
                with self._lock:
                    answer = _Answer()
                    rid, frame = self.core.submit(type, fields, answer)
                    entries.append((rid, answer))
                    # While reconnecting the request waits in the core; it goes out after the resume.
                    if self.core.can_send and self._sock is not None:
                        self._send_quietly(self._sock, frame)
            if watching:
                self._wake_helper()  # the helper holds the reader's role: have it hand it over
            results = []
            for rid, answer in entries:
                self._await(answer, deadline, timeout, rid, type)
                results.append(answer.result())
            return results
        finally:
            with self._lock:
                for rid, _ in entries:
                    self.core.finish(rid)
                self._busy -= 1
                self._last_call_end = time.monotonic()

    def close(self) -> None:
        """Closes the connection and stops the helper thread; idempotent."""
        with self._lock:
            was_open = self.core.close()
        if was_open:
            self._notify_waiters()
        self._stop.set()
        self._wake_helper()
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()
        helper = self._helper
        if helper is not None and helper is not threading.current_thread():
            helper.join(timeout=5)
        self._close_pipe()

    def abandon(self, error: E.SdkError) -> None:
        """Closes this client for good because its server is known to be gone (see ``AsyncioDriver.abandon``)."""
        with self._lock:
            self.core.abandon(error)
        self.close()

    def simulate_connection_loss(self) -> None:
        """Breaks the TCP connection without telling the server, as a network failure would (for tests)."""
        sock = self._sock
        if sock is not None:
            sock.abort()
            self._wake_helper()

    # -- reading -----------------------------------------------------------------------------------

    def _await(self, answer: _Answer, deadline: float | None, timeout: float | None, rid: int, type: str, sent_at: float | None = None) -> None:
        while not answer.done():
            if self._reader.acquire(blocking=False):
                try:
                    if sent_at is not None and not answer.done() and not self._read_first(deadline, sent_at):
                        raise self.core.timeout_error(type, rid, timeout)
                    while not answer.done():
                        if not self._read_one(deadline):
                            raise self.core.timeout_error(type, rid, timeout)
                finally:
                    self._reader.release()
                    if self._waiters:
                        self._notify_waiters()
                return
            with self._handoff:
                self._waiters += 1
                try:
                    while not answer.done() and self._reader.locked():
                        remaining = None if deadline is None else deadline - time.monotonic()
                        if remaining is not None and remaining <= 0:
                            raise self.core.timeout_error(type, rid, timeout)
                        self._handoff.wait(remaining)
                finally:
                    self._waiters -= 1

    def _read_first(self, deadline: float | None, sent_at: float) -> bool:
        """The first read after sending a request, polling the socket for the spin window before sleeping.

        The adaptive window learns from the gap between the request sent and a frame readable.
        """
        window = self._fixed_spin_s if self._spin is None else self._spin.next()
        ok = self._read_one(deadline, spin_s=window - (time.perf_counter() - sent_at) if window > 0 else 0.0)
        if self._spin is not None:
            self._spin.learn(time.perf_counter() - sent_at, window)
        return ok

    def _read_one(self, deadline: float | None, control_ends: bool = False, spin_s: float = 0.0) -> bool:
        """Reads and dispatches one message (holding the reader's role); False when ``deadline`` passed first.

        ``control_ends``: a ping or pong ends the read too (see ``SocketWebSocket.recv``). With
        ``spin_s`` it polls the socket that long without sleeping before it waits.
        """
        sock = self._sock
        if sock is None:
            if self.core.state == "closed":
                return True  # closing answered every waiter
            self._reconnect_blocking()
            return True
        if spin_s > 0 and sock.spin_readable(spin_s):
            pass
        elif deadline is not None and not sock.wait_readable(deadline - time.monotonic()):
            return False
        try:
            frame = sock.recv(control_ends)
        except SocketClosedError as closed:
            self._lost(sock, closed.code, closed.reason)
            return True
        if frame is not None:
            self.core.receive(frame)
        if self._waiters:
            self._notify_waiters()
        return True

    def _notify_waiters(self) -> None:
        with self._handoff:
            self._handoff.notify_all()

    def _send_quietly(self, sock: SocketWebSocket, frame: bytes) -> None:
        try:
            sock.send(frame)
        except SocketClosedError:
            pass  # the reader notices the drop; waiting requests are re-sent after the resume

    # -- connection --------------------------------------------------------------------------------

    def _dial_blocking(self) -> SocketWebSocket:
        try:
            sock = SocketWebSocket.connect(self.url, self.connect_timeout)
        except OSError as err:
            raise E.ConnectFailedError(f"could not connect to {self.url}: {err}", {"url": self.url}) from err
        self._sock = sock
        if self._keepalive_timer is not None:
            self._keepalive_timer.reset()
        return sock

    def _handshake_blocking(self, sock: SocketWebSocket, deadline: float) -> dict[str, Any]:
        with self._lock:
            answer = _Answer()
            rid, hello = self.core.hello(answer)
        try:
            self._send_quietly(sock, hello)
            while not answer.done():
                if not sock.wait_readable(deadline - time.monotonic()):
                    sock.close()
                    raise E.ConnectFailedError(f"no welcome from {self.url} within {self.connect_timeout} s")
                try:
                    self.core.receive(sock.recv())
                except SocketClosedError as closed:
                    if not answer.done():
                        answer.set_exception(E.ConnectionLostError(f"connection closed during the handshake ({closed.code})", {"code": closed.code}))
            welcome = answer.result()
        finally:
            with self._lock:
                self.core.finish(rid)
        if welcome.get("protocol_version") != self.protocol_version:
            sock.close()
            self.core.check_version(welcome)
        return welcome

    def _lost(self, sock: SocketWebSocket, code: int, reason: str) -> None:
        """The reader saw ``sock`` fail: reconnect and resume, or fail what waits (holding the reader's role)."""
        if self._sock is sock:
            self._sock = None
        sock.close()
        with self._lock:
            reconnect = self.core.disconnected(code, reason, reconnect=self.reconnect)
        if reconnect:
            self._reconnect_blocking()

    def _reconnect_blocking(self) -> None:
        schedule = ReconnectSchedule(time.monotonic(), timeout=self.reconnect_timeout, delay=self.reconnect_delay)
        while self.core.state == "reconnecting" and (wait := schedule.next_wait(time.monotonic())) is not None:
            if self._stop.wait(wait):
                return
            try:
                sock = self._dial_blocking()
                welcome = self._handshake_blocking(sock, time.monotonic() + self.connect_timeout)
            except (E.ServerError, E.SdkError) as err:
                if schedule.failed(err):
                    break
                continue
            with self._lock:
                if self.core.state != "reconnecting":
                    sock.close()
                    return
                # Re-sent under the lock, so no new (higher) id overtakes them.
                for frame in self.core.resumed(welcome):
                    self._send_quietly(sock, frame)
            self.core.emit({"type": "reconnected", "resumed": bool(welcome.get("resumed"))})
            return
        if self.core.state == "reconnecting":
            self._sock = None
            with self._lock:
                self.core.reconnect_failed(self.url, schedule.last_error)

    # -- the helper thread -------------------------------------------------------------------------

    def _watch_when_idle(self) -> None:
        while not self._stop.is_set():
            self._keepalive()
            with self._lock:
                quiet = self._busy == 0 and time.monotonic() - self._last_call_end >= _IDLE_AFTER_S
                if quiet and self._reader.acquire(blocking=False):
                    self._idle_watching = True
                else:
                    quiet = False
            if not quiet:
                self._stop.wait(_IDLE_AFTER_S)
                continue
            try:
                self._watch_once()
            except Exception:  # noqa: BLE001 - the helper must outlive any one bad frame or callback
                pass
            finally:
                with self._lock:
                    self._idle_watching = False
                self._reader.release()
                self._notify_waiters()

    def _watch_once(self) -> None:
        """Holding the reader's role: reads what the server sends until a caller wakes us or the watch times out."""
        poller = select.poll()
        poller.register(self._wake_r, select.POLLIN)
        sock = self._sock
        if sock is not None:
            poller.register(sock.fileno(), select.POLLIN)
        elif self.core.state == "reconnecting":
            self._reconnect_blocking()
            return
        ready = {fd for fd, _ in poller.poll(_IDLE_WATCH_S * 1000)}
        if self._wake_r in ready:
            try:
                os.read(self._wake_r, 4096)
            except OSError:
                pass
            return
        if sock is not None and ready and self._busy == 0:
            # A pong ends the read: the helper goes back to its keepalive instead of waiting for a message.
            self._read_one(time.monotonic(), control_ends=True)

    def _keepalive(self) -> None:
        """Pings a quiet link; drops one whose ping went unanswered (the link is dead even without a
        FIN or RST: the reader wakes with an error, reconnects and resumes)."""
        sock, keepalive = self._sock, self._keepalive_timer
        if sock is None or keepalive is None or self.core.state != "open":
            return
        action = keepalive.due(time.monotonic(), sock.last_received)
        if action == "drop":
            sock.abort()
            self._wake_helper()
        elif action == "ping":
            try:
                sock.ping()
            except SocketClosedError:
                pass

    def _wake_helper(self) -> None:
        try:
            os.write(self._wake_w, b"\0")
        except OSError:
            pass

    def _close_pipe(self) -> None:
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
        self._wake_r = self._wake_w = -1

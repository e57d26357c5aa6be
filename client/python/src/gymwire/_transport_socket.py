"""A client WebSocket on a plain blocking socket, read and written by the calling thread.

websockets' sans-I/O :class:`~websockets.client.ClientProtocol` performs the opening handshake (the
HTTP upgrade and its key check). After that, frames are framed here (RFC 6455 section 5.2: a 2 to
14-byte header, a mask on what the client sends) because the protocol object's generator-based
parser costs more per small frame than a CartPole step costs the server; masking uses websockets' C
``apply_mask``; the header is ``gymwire._ws_frames``'s, as the asyncio driver's. Messages arrive
whole: small ones from one ``recv_into`` into a read buffer kept for the connection's life (no
buffer allocated per read; a message that lies whole in it is sliced out with one header check),
large ones straight into a buffer of their exact size with ``recv_into``.

Example::

    ws = SocketWebSocket.connect("ws://127.0.0.1:8765", timeout=10)
    ws.send(b"...")
    message = ws.recv()
"""

from __future__ import annotations

import random
import select
import socket
import struct
import threading
import time
from typing import overload

from websockets.client import ClientProtocol
from websockets.exceptions import InvalidURI
from websockets.protocol import State
from websockets.uri import parse_uri

from ._ws_frames import OP_BINARY, OP_CLOSE, OP_CONTINUATION, OP_PING, OP_PONG, apply_mask, frame_head

_LEN16 = struct.Struct("!H")
_LEN64 = struct.Struct("!Q")
# struct timeval (seconds, microseconds), as SO_RCVTIMEO takes it.
_TIMEVAL = struct.Struct("@ll")
# Messages up to this size are read through the shared buffer; larger ones go straight into their own.
_CHUNK = 256 * 1024


class SocketClosedError(ConnectionError):
    """The WebSocket is closed (by either side, or because the TCP connection broke)."""

    def __init__(self, code: int, reason: str = "") -> None:
        super().__init__(f"connection closed ({code}{': ' + reason if reason else ''})")
        self.code = code
        self.reason = reason


class SocketWebSocket:
    """One client WebSocket over a blocking TCP socket.

    :meth:`send` and :meth:`ping` may be called from any thread (a lock keeps frames whole);
    :meth:`recv` must have one caller at a time (the owner serialises readers). Pings from the
    server are answered inside :meth:`recv`; every read that brings bytes updates :attr:`last_received`.
    """

    def __init__(self, sock: socket.socket, buffered: bytes = b"") -> None:
        self._sock = sock
        self._send_lock = threading.Lock()
        # The read buffer: bytes [_start, _end) are received and not yet consumed. Its size never
        # changes, so one memoryview of it serves every recv_into.
        self._buf = bytearray(max(_CHUNK, len(buffered)))
        self._view = memoryview(self._buf)
        self._buf[: len(buffered)] = buffered
        self._start = 0
        self._end = len(buffered)
        self._poller = select.poll()
        self._poller.register(sock, select.POLLIN)
        self._rand = random.Random()
        self.closed: SocketClosedError | None = None
        # The socket's SO_RCVTIMEO in seconds (0: none), as wait_readable last set it.
        self._recv_timeout = 0.0
        #: ``time.monotonic()`` when bytes last arrived (a large message still arriving counts).
        self.last_received = time.monotonic()

    @classmethod
    def connect(cls, url: str, timeout: float) -> SocketWebSocket:
        """Opens TCP, performs the WebSocket opening handshake, and returns the open socket (blocking mode)."""
        try:
            uri = parse_uri(url)
        except InvalidURI as err:
            raise OSError(str(err)) from err
        if uri.secure:
            raise OSError("wss:// URLs need the asyncio transport (Client(url, transport='asyncio'))")
        deadline = time.monotonic() + timeout
        sock = socket.create_connection((uri.host, uri.port), timeout=timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            protocol = ClientProtocol(uri, max_size=None)
            protocol.send_request(protocol.connect())
            sock.sendall(b"".join(protocol.data_to_send()))
            while protocol.state is State.CONNECTING:
                sock.settimeout(max(0.001, deadline - time.monotonic()))
                data = sock.recv(65536)
                if data:
                    protocol.receive_data(data)
                else:
                    protocol.receive_eof()
                protocol.events_received()
                if protocol.handshake_exc is not None:
                    raise OSError(f"WebSocket handshake failed: {protocol.handshake_exc}") from protocol.handshake_exc
                if not data and protocol.state is State.CONNECTING:
                    raise OSError("the server closed the connection during the WebSocket handshake")
            # Bytes that followed the HTTP response already belong to frames; keep them for recv().
            leftover = bytes(protocol.reader.buffer)
            sock.settimeout(None)
        except BaseException:
            sock.close()
            raise
        return cls(sock, leftover)

    def fileno(self) -> int:
        return self._sock.fileno()

    def send(self, data: bytes | bytearray | memoryview) -> None:
        """Sends one binary message."""
        self._send_frame(OP_BINARY, data)

    def ping(self, payload: bytes = b"") -> None:
        self._send_frame(OP_PING, payload)

    def wait_readable(self, timeout: float | None) -> bool:
        """True when a frame (or part of one) can be read now, or arrives within ``timeout`` seconds.

        A wait of more than a millisecond sleeps in ``recv`` itself (its timeout is the socket's
        ``SO_RCVTIMEO``), and what arrives goes into the read buffer: one system call where ``poll``
        and then ``recv`` were two, and a measurable share of a sequential step on a loaded VM.
        """
        if self._end > self._start:
            return True
        if timeout is not None and timeout <= 0.001:
            return bool(self._poller.poll(max(0, int(timeout * 1000 + 0.999))))
        self._set_recv_timeout(timeout)
        try:
            return self._fill(timeout_ends=True)
        except SocketClosedError:
            return True  # the close is what there is to read: recv raises it, as after poll

    def spin_readable(self, seconds: float) -> bool:
        """Polls without sleeping for up to ``seconds``; True when a frame (or part of one) can be read."""
        if self._end > self._start:
            return True
        poll = self._poller.poll
        end = time.perf_counter() + seconds
        while not poll(0):
            if time.perf_counter() >= end:
                return False
        return True

    @overload
    def recv(self) -> bytes | bytearray: ...
    @overload
    def recv(self, control_ends: bool) -> bytes | bytearray | None: ...

    def recv(self, control_ends: bool = False) -> bytes | bytearray | None:
        """The next binary message (text messages are skipped, as the asyncio client skips them); blocks until one arrives.

        With ``control_ends`` a ping or pong between messages ends the call with None instead (an idle
        watcher must not block until the next message). Raises :class:`SocketClosedError`.
        """
        if self._end - self._start < 2:
            self._fill()
        # The common case: one whole unfragmented binary message (server frames are unmasked) in the buffer.
        buf, start = self._buf, self._start
        available = self._end - start
        if available >= 2 and buf[start] == 0x80 | OP_BINARY:
            length = buf[start + 1]
            if length < 126:
                body = start + 2
            elif length == 126 and available >= 4:
                length = (buf[start + 2] << 8) | buf[start + 3]
                body = start + 4
            else:
                body = -1
            if body >= 0 and body + length <= self._end:
                self._start = body + length
                return buf[body : body + length]
        return self._recv_frames(control_ends)

    def _recv_frames(self, control_ends: bool) -> bytes | bytearray | None:
        """:meth:`recv` for what its fast path leaves: fragments, control frames, large or partial messages."""
        fragments: list[bytes | bytearray] = []
        message_opcode = OP_BINARY
        while True:
            head = self._read_exact(2)
            first, second = head[0], head[1]
            opcode = first & 0x0F
            length = second & 0x7F
            if length == 126:
                length = _LEN16.unpack(self._read_exact(2))[0]
            elif length == 127:
                length = _LEN64.unpack(self._read_exact(8))[0]
            mask = self._read_exact(4) if second & 0x80 else None
            payload = self._read_exact(length)
            if mask is not None:
                payload = apply_mask(payload, mask)
            if opcode >= OP_CLOSE:
                self._control(opcode, bytes(payload))
                if control_ends and not fragments:
                    return None
                continue
            if opcode != OP_CONTINUATION:
                message_opcode = opcode
            fragments.append(payload)
            if first & 0x80:  # FIN
                if message_opcode != OP_BINARY:
                    fragments = []
                    continue
                return fragments[0] if len(fragments) == 1 else b"".join(fragments)

    def abort(self) -> None:
        """Breaks the TCP connection at once (a reader blocked in :meth:`recv` wakes with an error)."""
        if self.closed is None:
            self.closed = SocketClosedError(1006, "aborted")
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def close(self, code: int = 1000) -> None:
        """Sends a close frame (best effort) and closes the socket without waiting for the answer."""
        if self.closed is None:
            try:
                self._send_frame(OP_CLOSE, _LEN16.pack(code))
            except OSError:
                pass
            self.closed = SocketClosedError(code, "closed by the client")
        self.abort()
        self._sock.close()

    # ------------------------------------------------------------------------------------------

    def _send_frame(self, opcode: int, data: bytes | bytearray | memoryview) -> None:
        n = len(data)
        with self._send_lock:
            if self.closed is not None:
                raise self.closed
            mask = self._rand.getrandbits(32).to_bytes(4, "little")
            head = frame_head(opcode, n, mask)
            masked = apply_mask(data, mask)
            try:
                if n < 4096:
                    self._sock.sendall(head + masked)
                else:
                    self._sendmsg_all((head, masked))
            except OSError as err:
                raise SocketClosedError(1006, str(err)) from err

    def _sendmsg_all(self, parts: tuple[bytes, bytes]) -> None:
        views = [memoryview(p) for p in parts]
        while views:
            sent = self._sock.sendmsg(views)
            while views and sent >= len(views[0]):
                sent -= len(views[0])
                views.pop(0)
            if views and sent:
                views[0] = views[0][sent:]

    def _control(self, opcode: int, payload: bytes) -> None:
        if opcode == OP_PING:
            try:
                self._send_frame(OP_PONG, payload)
            except OSError:
                pass
        elif opcode == OP_CLOSE:
            code = _LEN16.unpack_from(payload)[0] if len(payload) >= 2 else 1005
            reason = payload[2:].decode("utf-8", "replace")
            try:
                self._send_frame(OP_CLOSE, payload[:2])
            except OSError:
                pass
            self.closed = SocketClosedError(code, reason)
            raise self.closed

    def _read_exact(self, n: int) -> bytes | bytearray:
        buf, start = self._buf, self._start
        have = self._end - start
        if have >= n:
            self._start = start + n
            return buf[start : start + n]
        if n > _CHUNK:
            # A large message: one buffer of its size, filled in place by recv_into (no re-copying).
            out = bytearray(n)
            out[:have] = buf[start : self._end]
            self._start = self._end = 0
            view = memoryview(out)[have:]
            while view:
                got = self._recv_into(view)
                view = view[got:]
            return out
        while self._end - self._start < n:
            self._fill()
        start = self._start
        self._start = start + n
        return buf[start : start + n]

    def _fill(self, timeout_ends: bool = False) -> bool:
        """One blocking ``recv_into`` after the buffered bytes (moved to the front first when the tail is short).

        With ``timeout_ends`` the socket's receive timeout running out ends it with False; otherwise the read goes on.
        """
        start, end = self._start, self._end
        if start == end:
            self._start = self._end = start = end = 0
        elif len(self._buf) - end < _CHUNK // 4:
            self._buf[: end - start] = self._buf[start:end]
            self._start, self._end = 0, end - start
            start, end = 0, end - start
        got = self._recv_into(self._view[end:], timeout_ends)
        self._end = end + got
        return got > 0

    def _set_recv_timeout(self, timeout: float | None) -> None:
        wanted = 0.0 if timeout is None else timeout
        current = self._recv_timeout
        # Kept while at most 1% longer than asked (a deadline's remaining time shrinks call by call); never shorter.
        if current == wanted or (wanted > 0 and wanted <= current <= wanted * 1.01):
            return
        seconds = int(wanted)
        try:
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _TIMEVAL.pack(seconds, int((wanted - seconds) * 1e6)))
        except OSError:
            pass  # the socket is closing: the read that follows reports it
        self._recv_timeout = wanted

    def _recv_into(self, view: memoryview, timeout_ends: bool = False) -> int:
        """Reads what has arrived into ``view`` (blocking); 0 only when ``timeout_ends`` and SO_RCVTIMEO ran out."""
        while True:
            try:
                got = self._sock.recv_into(view)
                break
            except BlockingIOError:
                # SO_RCVTIMEO ran out: the end of a wait, or (mid-message) nothing to do but read on.
                if timeout_ends:
                    return 0
            except OSError as err:
                raise self.closed or SocketClosedError(1006, str(err)) from err
        if not got:
            raise self.closed or SocketClosedError(1006, "the server closed the TCP connection")
        self.last_received = time.monotonic()
        return got

"""WebSocket framing for the client's hot path (RFC 6455 section 5.2), without I/O.

Both drivers let websockets perform the opening handshake and handle what is rare (control frames,
fragments, the closing handshake), and frame the common case here: a whole unfragmented binary
message each way. websockets' generator-based frame parser and its message queue cost more per
small frame than a CartPole step costs the server. What goes out is masked with websockets' C
``apply_mask``, as the RFC requires of a client.

Example::

    head = frame_head(OP_BINARY, len(payload), mask)        # mask: 4 random bytes
    wire = head + apply_mask(payload, mask)
    splitter = FrameSplitter()
    for whole_binary, chunk in splitter.feed(received):      # as bytes arrive from the socket
        ...  # a binary message's payload, or another frame's raw bytes for websockets
"""

from __future__ import annotations

import struct

try:
    from websockets.speedups import apply_mask
except ImportError:  # pragma: no cover - websockets ships its C speedups in every wheel
    from websockets.utils import apply_mask

__all__ = ["OP_BINARY", "OP_CLOSE", "OP_CONTINUATION", "OP_PING", "OP_PONG", "FrameSplitter", "apply_mask", "frame_head"]

OP_CONTINUATION, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x2, 0x8, 0x9, 0xA
_LEN16 = struct.Struct("!H")
_LEN64 = struct.Struct("!Q")
# FIN set, no extension bits, opcode binary: the first byte of a whole binary message.
_WHOLE_BINARY = 0x80 | OP_BINARY


def frame_head(opcode: int, size: int, mask: bytes) -> bytes:
    """The header of one final client frame of ``size`` payload bytes, its 4-byte ``mask`` included."""
    if size < 126:
        return bytes((0x80 | opcode, 0x80 | size)) + mask
    if size < 65536:
        return bytes((0x80 | opcode, 0xFE)) + _LEN16.pack(size) + mask
    return bytes((0x80 | opcode, 0xFF)) + _LEN64.pack(size) + mask


class FrameSplitter:
    """Cuts the bytes a server sends into frames, as they arrive in any pieces.

    :meth:`feed` returns ``(True, payload)`` for each whole unfragmented binary message and
    ``(False, raw)`` with the raw bytes of every other frame (control, text, fragment, or anything
    malformed, such as a masked server frame), whole and in order, for a full parser to handle; a
    frame cut short waits for the rest. A message that arrives in many reads is gathered once, and
    one that fills what was gathered is handed over without another copy.
    """

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending = bytearray()

    def feed(self, data: bytes) -> list[tuple[bool, bytes | bytearray | memoryview]]:
        pending = self._pending
        if pending:
            pending += data
            buf: bytes | bytearray = pending
        else:
            buf = data
        out: list[tuple[bool, bytes | bytearray | memoryview]] = []
        end = len(buf)
        pos = 0
        while end - pos >= 2:
            first, second = buf[pos], buf[pos + 1]
            length = second & 0x7F
            body = pos + 2
            if length == 126:
                if end - pos < 4:
                    break
                length = _LEN16.unpack_from(buf, body)[0]
                body += 2
            elif length == 127:
                if end - pos < 10:
                    break
                length = _LEN64.unpack_from(buf, body)[0]
                body += 8
            if second & 0x80:
                body += 4  # a masked frame (servers must not send one): websockets refuses it
            stop = body + length
            if stop > end:
                break
            if first == _WHOLE_BINARY and not second & 0x80:
                if pos == 0 and stop == end and buf is pending:
                    # The gathered bytes are exactly this message: hand them over, start a new buffer.
                    out.append((True, memoryview(pending)[body:]))
                    self._pending = bytearray()
                    return out
                out.append((True, buf[body:stop]))
            else:
                out.append((False, buf[pos:stop]))
            pos = stop
        if buf is pending:
            if pos:
                del pending[:pos]
        elif pos < end:
            pending += memoryview(buf)[pos:]
        return out

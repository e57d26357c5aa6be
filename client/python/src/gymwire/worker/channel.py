"""Frames between the server and a worker: a 4-byte little-endian length, then one msgpack message
(``gymwire.codec``: tensors as extension type 1, the wire's own encoding)."""

from __future__ import annotations

import os
import select
import struct

_HEADER = struct.Struct("<I")
_INITIAL_BYTES = 1 << 16


class FrameChannel:
    """Reads and writes length-prefixed frames on one file descriptor (a socketpair end from the server).

    Reads land in one reused buffer (``os.readv``): allocating a fresh read buffer per frame costs
    more than a small step.
    """

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, True)
        self.fd = fd
        self.buffer = bytearray(_INITIAL_BYTES)
        self.start = 0
        self.end = 0

    def read(self) -> bytes | None:
        """The next frame's bytes, or None once the server closed its end."""
        while True:
            available = self.end - self.start
            if available >= 4:
                (length,) = _HEADER.unpack_from(self.buffer, self.start)
                if available >= 4 + length:
                    begin = self.start + 4
                    # A copy: decoded tensors are views of it, and the buffer is reused.
                    frame = bytes(memoryview(self.buffer)[begin : begin + length])
                    self.start = begin + length
                    if self.start == self.end:
                        self.start = self.end = 0
                    return frame
                self._make_room(4 + length)
            else:
                self._make_room(4)
            n = os.readv(self.fd, [memoryview(self.buffer)[self.end :]])
            if n == 0:
                return None
            self.end += n

    def wait(self, timeout: float) -> bool:
        """Whether a frame (or the end of the channel) can be read before ``timeout`` seconds pass."""
        available = self.end - self.start
        if available >= 4 and available >= 4 + _HEADER.unpack_from(self.buffer, self.start)[0]:
            return True
        return bool(select.select([self.fd], [], [], timeout)[0])

    def _make_room(self, frame_bytes: int) -> None:
        """Moves the partial frame to the front, and grows the buffer when the frame is larger."""
        if self.start:
            self.buffer[: self.end - self.start] = self.buffer[self.start : self.end]
            self.end -= self.start
            self.start = 0
        if len(self.buffer) < frame_bytes or self.end == len(self.buffer):
            self.buffer.extend(bytes(max(frame_bytes, 2 * len(self.buffer)) - len(self.buffer)))

    def write(self, frame: bytes) -> None:
        data = memoryview(_HEADER.pack(len(frame)) + frame)
        while data:
            written = os.write(self.fd, data)
            data = data[written:]

"""Frames between the server and a worker: a 4-byte little-endian length, then one msgpack message
(``gymwire.codec``: tensors as extension type 1, the wire's own encoding)."""

from __future__ import annotations

import os
import struct

_HEADER = struct.Struct("<I")
_READ_BYTES = 1 << 20


class FrameChannel:
    """Reads and writes length-prefixed frames on one file descriptor (a socketpair end from the server)."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, True)
        self.fd = fd
        self.buffer = bytearray()
        self.start = 0

    def read(self) -> bytes | None:
        """The next frame's bytes, or None once the server closed its end."""
        while True:
            available = len(self.buffer) - self.start
            if available >= 4:
                (length,) = _HEADER.unpack_from(self.buffer, self.start)
                if available >= 4 + length:
                    begin = self.start + 4
                    frame = bytes(self.buffer[begin : begin + length])
                    self.start = begin + length
                    if self.start == len(self.buffer):
                        self.buffer.clear()
                        self.start = 0
                    return frame
            chunk = os.read(self.fd, _READ_BYTES)
            if not chunk:
                return None
            if self.start:
                del self.buffer[: self.start]
                self.start = 0
            self.buffer += chunk

    def write(self, frame: bytes) -> None:
        data = memoryview(_HEADER.pack(len(frame)) + frame)
        while data:
            written = os.write(self.fd, data)
            data = data[written:]

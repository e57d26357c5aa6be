"""The hot-path WebSocket framing (gymwire._ws_frames) against websockets' own parser and serializer."""

from __future__ import annotations

import random

from websockets.frames import Frame, Opcode
from websockets.streams import StreamReader

from gymwire._ws_frames import OP_BINARY, OP_PING, FrameSplitter, apply_mask, frame_head


def server_frame(opcode: Opcode, payload: bytes, fin: bool = True) -> bytes:
    return Frame(opcode, payload, fin=fin).serialize(mask=False)


def parsed_by_websockets(wire: bytes) -> Frame:
    reader = StreamReader()
    reader.feed_data(wire)
    parser = Frame.parse(reader.read_exact, mask=True)
    try:
        next(parser)
        raise AssertionError("incomplete frame")
    except StopIteration as done:
        return done.value


def test_client_frames_are_masked_frames_websockets_reads_back() -> None:
    for size in (0, 5, 125, 126, 65535, 65536, 200_000):
        payload = random.Random(size).randbytes(size)
        mask = random.Random(size + 1).randbytes(4)
        frame = parsed_by_websockets(frame_head(OP_BINARY, size, mask) + apply_mask(payload, mask))
        assert (frame.opcode, frame.fin, frame.data) == (Opcode.BINARY, True, payload)


def test_the_splitter_hands_over_whole_binary_messages_and_passes_every_other_frame_whole() -> None:
    messages = [b"", b"x" * 10, b"y" * 300, b"z" * 70_000]
    stream = b"".join(server_frame(Opcode.BINARY, m) for m in messages[:2])
    ping = server_frame(Opcode.PING, b"hi")
    first_fragment, last_fragment = server_frame(Opcode.BINARY, b"ab", fin=False), server_frame(Opcode.CONT, b"cd")
    stream += ping + first_fragment + last_fragment + b"".join(server_frame(Opcode.BINARY, m) for m in messages[2:])
    for cut in (1, 2, 3, 7, 64, 1000, len(stream)):
        splitter = FrameSplitter()
        got: list[tuple[bool, bytes]] = []
        for i in range(0, len(stream), cut):
            got.extend((whole, bytes(chunk)) for whole, chunk in splitter.feed(stream[i : i + cut]))
        others = [(False, ping), (False, first_fragment), (False, last_fragment)]
        assert got == [(True, messages[0]), (True, messages[1]), *others, (True, messages[2]), (True, messages[3])]
    assert OP_PING == Opcode.PING.value


def test_a_masked_server_frame_goes_to_websockets_to_be_refused() -> None:
    masked = Frame(Opcode.BINARY, b"nope").serialize(mask=True)
    assert FrameSplitter().feed(masked) == [(False, masked)]

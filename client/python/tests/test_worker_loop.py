"""The worker's loop without a server: a real ``python -m gymwire.worker`` process on a socketpair,
driven with the frames the server sends. A call that hangs keeps a thread of its own; the worker
answers the other sessions' calls by id meanwhile, and keeps each session's calls in order."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gymwire.codec import pack, unpack

TESTS = Path(__file__).parent
COUNTER = {"kind": "callable", "path": "hosted_envs:make_counter"}


class Worker:
    """One worker process and the server's end of its socket."""

    def __init__(self) -> None:
        self.sock, theirs = socket.socketpair()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")])}
        self.process = subprocess.Popen([sys.executable, "-m", "gymwire.worker", "--fd", str(theirs.fileno())], pass_fds=[theirs.fileno()], env=env)
        theirs.close()
        self.buffer = b""
        self.next_id = 1
        assert self.read(30)["id"] == 0  # ready

    def send(self, *calls: dict[str, Any]) -> list[int]:
        ids = list(range(self.next_id, self.next_id + len(calls)))
        self.next_id += len(calls)
        body = pack({"ids": ids, "calls": list(calls)})
        self.sock.sendall(struct.pack("<I", len(body)) + body)
        return ids

    def read(self, timeout: float) -> dict[str, Any]:
        self.sock.settimeout(timeout)
        while len(self.buffer) < 4 or len(self.buffer) < 4 + struct.unpack_from("<I", self.buffer)[0]:
            chunk = self.sock.recv(1 << 16)
            assert chunk, "the worker closed its socket"
            self.buffer += chunk
        (length,) = struct.unpack_from("<I", self.buffer)
        message = unpack(self.buffer[4 : 4 + length])
        self.buffer = self.buffer[4 + length :]
        return message

    def answers(self, ids: list[int], timeout: float = 10) -> dict[int, dict[str, Any]]:
        """The answers to ``ids``, in whatever frames and order they come."""
        got: dict[int, dict[str, Any]] = {}
        deadline = time.monotonic() + timeout
        while not set(ids) <= got.keys():
            message = self.read(max(0.01, deadline - time.monotonic()))
            got.update(zip(message["ids"], message["results"], strict=True))
        return got

    def close(self) -> None:
        self.sock.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture
def worker() -> Iterator[Worker]:
    w = Worker()
    yield w
    w.close()


def _make(worker: Worker, *handles: int) -> None:
    for h in handles:
        ids = worker.send({"op": "make", "handle": h, "target": COUNTER, "kwargs": {"end_chance": 0.0, "limit": 10**6}})
        assert "ok" in worker.answers(ids)[ids[0]]
        ids = worker.send({"op": "reset", "handle": h, "seed": 0, "options": None})
        assert "ok" in worker.answers(ids)[ids[0]]


def test_a_frame_of_calls_is_answered_in_one_frame_by_id(worker: Worker) -> None:
    _make(worker, 1, 2)
    ids = worker.send({"op": "step", "handle": 1, "action": 1}, {"op": "step", "handle": 2, "action": 0})
    message = worker.read(10)
    assert message["ids"] == ids
    assert [r["ok"][0][0] for r in message["results"]] == [2.0, 1.0]


def test_a_hung_call_blocks_only_its_session(worker: Worker) -> None:
    _make(worker, 1, 2)
    arm = worker.send({"op": "reset", "handle": 1, "seed": 0, "options": {"fault": "hang"}})
    assert "ok" in worker.answers(arm)[arm[0]]
    # The hung step and the other session's step travel in one frame; the other step is answered.
    hung, other = worker.send({"op": "step", "handle": 1, "action": 0}, {"op": "step", "handle": 2, "action": 1})
    assert worker.answers([other], timeout=5)[other]["ok"][0][0] == 2.0
    # The other session keeps stepping at its usual pace; the hung session's next call waits behind its hung step.
    queued = worker.send({"op": "step", "handle": 1, "action": 0})[0]
    # The hung step never returns, so any answer here is one the hung call did not hold up.
    for expected in range(4, 44, 2):
        (step,) = worker.send({"op": "step", "handle": 2, "action": 1})
        answers = worker.answers([step])
        assert answers[step]["ok"][0][0] == float(expected)
        assert hung not in answers and queued not in answers
    # A new session on the same worker works too.
    _make(worker, 3)


def test_a_slow_call_keeps_its_sessions_order(worker: Worker) -> None:
    """A call past the stall time moves to its own thread; the session's later calls run after it, in order."""
    _make(worker, 1, 2)
    arm = worker.send({"op": "reset", "handle": 1, "seed": 0, "options": {"fault": "slow"}})
    worker.answers(arm)
    ids = worker.send(
        {"op": "step", "handle": 1, "action": 1},
        {"op": "step", "handle": 2, "action": 1},
        {"op": "step", "handle": 1, "action": 1},
        {"op": "step", "handle": 1, "action": 0},
    )
    first = worker.read(5)
    assert first["ids"] == [ids[1]], "the other session's step is answered while the slow one runs"
    mine = [ids[0], ids[2], ids[3]]
    answers = worker.answers(mine)
    assert [answers[i]["ok"][0][0] for i in mine] == [2.0, 4.0, 5.0]


def test_a_thread_bound_env_keeps_every_call_on_the_thread_that_made_it(worker: Worker) -> None:
    """Renderers hold a GL context current on one thread: a slow make, then another session's slow
    step, must not move the loop (and so that env's later calls) to another thread."""
    bound = {"kind": "callable", "path": "hosted_envs:ThreadBound"}
    _make(worker, 2)
    ids = worker.send({"op": "make", "handle": 1, "target": bound, "kwargs": {"make_s": 0.3}})
    assert "ok" in worker.answers(ids)[ids[0]]
    arm = worker.send({"op": "reset", "handle": 2, "seed": 0, "options": {"fault": "slow"}})
    worker.answers(arm)
    ids = worker.send(
        {"op": "step", "handle": 2, "action": 1}, {"op": "reset", "handle": 1, "seed": 0, "options": None}, {"op": "step", "handle": 1, "action": 0}
    )
    answers = worker.answers(ids)
    assert answers[ids[1]]["ok"][0][0] == 1.0 and answers[ids[2]]["ok"][0][0] == 1.0, "the thread-bound env ran on another thread"

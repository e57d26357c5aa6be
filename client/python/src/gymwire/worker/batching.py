"""Answers that wait for a batch: how one worker runs the steps of many sessions in one call.

An env that defines ``gymwire_submit_step(action) -> Deferred`` does not step at once: it queues
the step with its :class:`Batcher` and returns a :class:`Deferred`. The worker's loop (:func:`serve`)
then holds that frame's answers and keeps reading frames until the earliest batcher deadline (the
first queued step's arrival plus the batcher's window) or until a batcher is full; then every
batcher runs its queue and the held frames are answered, in the order they came.

The server sends the calls of one event-loop tick as one frame, and each client connection's
requests arrive in their own ticks: holding frames for the window is what lets steps from many
connections share one forward pass. A call on a session whose step is still queued (a reset, a
close, a second step) runs the queues first, so every session sees its calls in order.

Envs without ``gymwire_submit_step`` never create a Deferred, and the loop answers each frame at
once, as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from .channel import FrameChannel
from .host import Host, error_answer


class Deferred:
    """A step's answer, filled in by its batcher (``resolve`` or ``fail``) and turned into the worker's answer by ``convert``."""

    __slots__ = ("convert", "value", "error", "done")
    #: How many were ever made: the loop compares it around a frame instead of scanning the answers.
    created = 0

    def __init__(self, convert: Callable[[Any], Any] = lambda value: value) -> None:
        Deferred.created += 1
        self.convert = convert
        self.value: Any = None
        self.error: BaseException | None = None
        self.done = False

    def resolve(self, value: Any) -> None:
        self.value = value
        self.done = True

    def fail(self, error: BaseException) -> None:
        self.error = error
        self.done = True

    def answer(self) -> dict[str, Any]:
        if not self.done:
            return {"error": error_answer(RuntimeError("the batcher never ran this step"))}
        if self.error is not None:
            return {"error": error_answer(self.error)}
        try:
            return {"ok": self.convert(self.value)}
        except Exception as err:  # noqa: BLE001 - a conversion failure is this session's answer
            return {"error": error_answer(err)}


class Batcher(Protocol):
    """What the loop needs from a batcher (gymwire.worldmodel.host.ModelHost is one)."""

    def deadline(self) -> float | None:
        """The ``time.monotonic()`` by which the queued steps must run; None with nothing queued."""

    def flush(self) -> None:
        """Runs every queued step and resolves or fails its Deferred."""


_batchers: list[Batcher] = []


def add_batcher(batcher: Batcher) -> None:
    _batchers.append(batcher)


def remove_batcher(batcher: Batcher) -> None:
    if batcher in _batchers:
        _batchers.remove(batcher)


def _deadline() -> float | None:
    deadlines = [d for d in (b.deadline() for b in _batchers) if d is not None]
    return min(deadlines) if deadlines else None


def _flush() -> None:
    for batcher in list(_batchers):
        batcher.flush()


def serve(channel: FrameChannel, host: Host, unpack: Callable[[bytes], Any], encode: Callable[[int, list[dict[str, Any]]], bytes]) -> None:
    """The worker's loop: reads frames of calls and answers them until the server closes the channel."""
    # Frames waiting on a batch: (message id, answers with Deferreds among them, their sessions).
    held: list[tuple[int, list[Any], set[Any]]] = []

    def write(message_id: int, results: list[Any]) -> None:
        channel.write(encode(message_id, [r.answer() if type(r) is Deferred else r for r in results]))

    def run_round() -> None:
        """One batch per batcher, then every frame whose steps have all run is answered."""
        _flush()
        waiting = [entry for entry in held if any(type(r) is Deferred and not r.done for r in entry[1])]
        for message_id, results, _ in held:
            if all(type(r) is not Deferred or r.done for r in results):
                write(message_id, results)
        held[:] = waiting

    def answer_all() -> None:
        while held and _deadline() is not None:
            run_round()
        for message_id, results, _ in held:
            write(message_id, results)  # a step no batcher holds any more answers with an error
        held.clear()

    while True:
        if held:
            deadline = _deadline()
            if deadline is None:
                answer_all()
                continue
            wait = deadline - time.monotonic()
            # Frames already here join before the batch runs; otherwise wait for one until the deadline.
            if not channel.wait(max(0.0, wait)):
                run_round()
                continue
        frame = channel.read()
        if frame is None:
            break
        message = unpack(frame)
        calls = message["calls"]
        if held and any(call.get("handle") in entry[2] for entry in held for call in calls):
            # A call on a session whose step is queued: the step runs first.
            answer_all()
        made = Deferred.created
        results = [host.run(call) for call in calls]
        if Deferred.created == made:
            channel.write(encode(message["id"], results))
            continue
        handles = {call.get("handle") for call, r in zip(calls, results, strict=True) if type(r.get("ok")) is Deferred}
        held.append((message["id"], [r["ok"] if type(r.get("ok")) is Deferred else r for r in results], handles))
    answer_all()

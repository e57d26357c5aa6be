"""Answers that wait for a batch: how one worker runs the steps of many sessions in one call.

An env that defines ``gymwire_submit_step(action) -> Deferred`` does not step at once: it queues
the step with its :class:`Batcher` and returns a :class:`Deferred`. The worker's loop (loop.py)
then holds that frame's answers and keeps reading frames until the earliest batcher deadline (the
first queued step's arrival plus the batcher's window) or until a batcher is full; then every
batcher runs its queue and the held frames are answered, in the order they came.

The server sends the calls of one event-loop tick as one frame, and each client connection's
requests arrive in their own ticks: holding frames for the window is what lets steps from many
connections share one forward pass. A call on a session whose step is still queued (a reset, a
close, a second step) runs the queues first, so every session sees its calls in order.

Envs without ``gymwire_submit_step`` never create a Deferred, and the loop answers each frame at
once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from .host import error_answer


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


def next_batch_deadline() -> float | None:
    """The earliest ``time.monotonic()`` by which a batcher must run its queue; None with nothing queued."""
    deadlines = [d for d in (b.deadline() for b in _batchers) if d is not None]
    return min(deadlines) if deadlines else None


def flush_batchers() -> None:
    """Runs every batcher's queue."""
    for batcher in list(_batchers):
        batcher.flush()

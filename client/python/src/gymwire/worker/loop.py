"""The worker's loop: reads frames of calls, runs them, answers each call by its id.

Calls run inline on the loop's thread: a CartPole step costs microseconds, a hand-off to another
thread costs more. A watchdog looks at the call in progress; one that has run longer than
``stall_s`` keeps its thread, and a fresh thread takes the loop over (the rest of that frame
first), so an env call that never returns blocks only its own session. The thread left behind
becomes that session's thread: when (if) its call returns it answers it, then runs the calls for
the same session that came meanwhile, in order, and ends. Calls for a session whose thread is
busy wait for it, so every session still sees its calls in order (same seed, same episode).

Answers carry the ids of their calls (``{"ids": [...], "results": [...]}``) and may come out of
order: a frame's calls are answered together when none stalled, else each part when it is done.
The server gives up on a call at its own deadline; an answer that comes later is counted there
and dropped.

Envs bound to the thread that made them (rendering ones: a GL context is current on one thread;
see ``host.binds_thread``) pin the loop: while one lives on this worker, the loop never moves, and
a call that hangs there fails at the server's deadline like a hang in C code holding the GIL.

Batched envs (batching.py) hold a frame's answers until their batcher runs, as before.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from .batching import Deferred, flush_batchers, next_batch_deadline
from .channel import FrameChannel
from .host import Host

#: A call that has run this long (seconds) keeps its thread, and the loop moves to a fresh one.
DEFAULT_STALL_S = 0.05
#: How often a session thread waiting on a batched step looks again (seconds).
_DEFERRED_POLL_S = 0.001
#: A result slot whose call is answered elsewhere (its session's thread).
_ELSEWHERE = object()
#: The session key of calls that name no env (describe): they wait for each other.
_NO_SESSION = object()

Encode = Callable[[list[int], list[Any]], bytes]


class _Frame:
    """One frame of calls while the loop runs it; a thread that takes the loop over carries on from ``position``."""

    __slots__ = ("ids", "calls", "results", "position", "split")

    def __init__(self, ids: list[int], calls: list[dict[str, Any]]) -> None:
        self.ids = ids
        self.calls = calls
        self.results: list[Any] = [_ELSEWHERE] * len(calls)
        self.position = 0
        self.split = False


class Loop:
    """The loop's state, shared by the thread that runs it now and the threads that left it."""

    def __init__(self, channel: FrameChannel, host: Host, unpack: Callable[[bytes], Any], encode: Encode, stall_s: float = DEFAULT_STALL_S) -> None:
        self.channel = channel
        self.host = host
        self.unpack = unpack
        self.encode = encode
        self.stall_s = stall_s
        self.lock = threading.Lock()
        self.write_lock = threading.Lock()
        #: Sessions whose thread is busy (a stalled call), with the calls that wait for it.
        self.busy: dict[Any, deque[tuple[int, dict[str, Any]]]] = {}
        #: The thread that runs the loop now (its ident).
        self.owner: int | None = None
        #: The call the loop's thread runs now: (its session's key, when it started, whether it
        #: pins the loop to this thread), or None.
        self.running: tuple[Any, float, bool] | None = None
        #: Frames waiting on a batch: (ids, answers with Deferreds among them, their sessions).
        self.held: list[tuple[list[int], list[Any], set[Any]]] = []
        self.frame: _Frame | None = None
        self.done = threading.Event()
        #: Calls that kept their thread (for tests and the log).
        self.stalls = 0

    # -- running ------------------------------------------------------------------------------

    def start(self) -> None:
        """Runs the loop on a thread of its own and a watchdog beside it; returns at once (``done`` is set at the end)."""
        with self.lock:
            self._hand_over()
        threading.Thread(target=self._watch, name="gymwire-watchdog", daemon=True).start()

    def _hand_over(self) -> None:
        """Starts a thread that runs the loop from here (the caller holds the lock, so the new thread sees itself as the owner)."""
        thread = threading.Thread(target=self._run, name="gymwire-loop", daemon=True)
        thread.start()
        self.owner = thread.ident

    def _watch(self) -> None:
        seen: tuple[Any, float, bool] | None = None
        while not self.done.is_set():
            time.sleep(self.stall_s / 2)
            with self.lock:
                running = self.running
                if running is None or running is not seen:
                    seen = running
                    continue
                if time.monotonic() - running[1] < self.stall_s or running[2]:
                    # A thread-bound env (host.py) keeps every call on the thread that made it: the
                    # loop does not move, and a call that hangs there fails at the server's deadline.
                    continue
                # The same call since the last look, and too long: it keeps this thread; the loop moves on.
                self.busy.setdefault(running[0], deque())
                if self.frame is not None:
                    self.frame.split = True  # its answer leaves the frame's answers
                self.running = None
                self.stalls += 1
                seen = None
                self._hand_over()

    def _run(self) -> None:
        try:
            if self.frame is not None and not self._continue_frame(self.frame):
                return
            while self._turn():
                pass
            self._answer_all()
        finally:
            if self.owner == threading.get_ident():
                self.done.set()

    def _turn(self) -> bool:
        """One frame read and run; False once the server closed the channel or this thread left the loop."""
        channel = self.channel
        if self.held:
            deadline = next_batch_deadline()
            if deadline is None:
                self._answer_all()
                return True
            # Frames already here join before the batch runs; otherwise wait for one until the deadline.
            if not channel.wait(max(0.0, deadline - time.monotonic())):
                self._run_round()
                return True
        elif self.busy and not channel.wait(_DEFERRED_POLL_S * 5):
            # A session thread may have queued a batched step: its batcher runs at its deadline here.
            deadline = next_batch_deadline()
            if deadline is not None and deadline <= time.monotonic():
                flush_batchers()
            return True
        data = channel.read()
        if data is None:
            return False
        message = self.unpack(data)
        calls = message["calls"]
        if self.held and any(call.get("handle") in entry[2] for entry in self.held for call in calls):
            # A call on a session whose step is queued: the step runs first.
            self._answer_all()
        frame = _Frame(message["ids"], calls)
        self.frame = frame
        return self._continue_frame(frame)

    def _continue_frame(self, frame: _Frame) -> bool:
        """Runs the frame's calls from its position; False when this thread stalled in one and left the loop."""
        made = Deferred.created
        calls, results = frame.calls, frame.results
        while frame.position < len(calls):
            index = frame.position
            frame.position += 1
            call = calls[index]
            key = call.get("handle", _NO_SESSION)
            # Only the watchdog adds to `busy`, and only for the call in progress: with none in progress an empty `busy` stays empty.
            if self.busy:
                with self.lock:
                    waiting = self.busy.get(key)
                    if waiting is not None:
                        waiting.append((frame.ids[index], call))
                        frame.split = True
                        continue
            self.running = (key, time.monotonic(), self.host.pins_thread(call))
            result = self.host.run(call)
            with self.lock:
                self.running = None
                left = self.owner != threading.get_ident()
            if left:
                self._session_thread(key, frame.ids[index], result)
                return False
            results[index] = result
        self.frame = None
        if Deferred.created == made and not frame.split:
            self._write(frame.ids, results)
            return True
        ids = [i for i, r in zip(frame.ids, results, strict=True) if r is not _ELSEWHERE]
        answers = [r for r in results if r is not _ELSEWHERE]
        if Deferred.created == made:
            if ids:
                self._write(ids, answers)
            return True
        handles = {call.get("handle") for call, r in zip(calls, results, strict=True) if type(r) is dict and type(r.get("ok")) is Deferred}
        self.held.append((ids, [r["ok"] if type(r.get("ok")) is Deferred else r for r in answers], handles))
        return True

    def _session_thread(self, key: Any, call_id: int, result: dict[str, Any]) -> None:
        """This thread stalled in a call of session ``key`` and left the loop: it answers that call, then the session's calls that waited, and ends."""
        while True:
            try:
                self._write([call_id], [self._settled(result)])
            except OSError:
                return  # the server closed the channel while this call ran
            with self.lock:
                waiting = self.busy[key]
                if not waiting:
                    del self.busy[key]
                    return
                call_id, call = waiting.popleft()
            result = self.host.run(call)

    def _settled(self, result: dict[str, Any]) -> Any:
        """A result whose batched step has run (the loop runs the batcher at its deadline)."""
        deferred = result.get("ok")
        if type(deferred) is not Deferred:
            return result
        while not deferred.done and not self.done.is_set():
            time.sleep(_DEFERRED_POLL_S)
        return deferred.answer()

    # -- batches ------------------------------------------------------------------------------

    def _run_round(self) -> None:
        """One batch per batcher, then every frame whose steps have all run is answered."""
        flush_batchers()
        waiting = [entry for entry in self.held if any(type(r) is Deferred and not r.done for r in entry[1])]
        for ids, results, _ in self.held:
            if all(type(r) is not Deferred or r.done for r in results):
                self._write(ids, results)
        self.held[:] = waiting

    def _answer_all(self) -> None:
        while self.held and next_batch_deadline() is not None:
            self._run_round()
        for ids, results, _ in self.held:
            self._write(ids, results)  # a step no batcher holds any more answers with an error
        self.held.clear()

    def _write(self, ids: list[int], results: list[Any]) -> None:
        answers = [r.answer() if type(r) is Deferred else r for r in results]
        # The packer keeps one buffer: encoding and writing happen under the same lock.
        with self.write_lock:
            self.channel.write(self.encode(ids, answers))


def serve(channel: FrameChannel, host: Host, unpack: Callable[[bytes], Any], encode: Encode, stall_s: float = DEFAULT_STALL_S) -> Loop:
    """Runs the worker's loop until the server closes the channel; returns it (its state, for the caller's cleanup)."""
    loop = Loop(channel, host, unpack, encode, stall_s)
    loop.start()
    loop.done.wait()
    return loop

"""The connection core without any I/O: frames out, frames in, and the state a resume needs.

These drive ``gymwire._connection.ConnectionCore`` by hand with bytes, as each transport's driver
does with its socket; tests against a live server (test_transport.py, test_link.py) run the same
core through both drivers.
"""

from __future__ import annotations

from typing import Any

import pytest

import gymwire.errors as E
from gymwire._connection import ConnectionCore, Keepalive, ReconnectSchedule
from gymwire.codec import pack, unpack


class Answer:
    def __init__(self) -> None:
        self.value: Any = None
        self.error: BaseException | None = None
        self.settled = False

    def done(self) -> bool:
        return self.settled

    def set_result(self, result: Any) -> None:
        self.value, self.settled = result, True

    def set_exception(self, error: BaseException) -> None:
        self.error, self.settled = error, True


class Session:
    def __init__(self) -> None:
        self.closed_reason: str | None = None

    def mark_closed(self, reason: str) -> None:
        self.closed_reason = reason


def opened(events: list[dict[str, Any]] | None = None, **welcome: Any) -> ConnectionCore:
    core = ConnectionCore(protocol_version=1, client_name="test", token="t", on_event=None if events is None else events.append)
    answer = Answer()
    rid, hello = core.hello(answer)
    assert unpack(hello) == {"id": rid, "type": "hello", "protocol_version": 1, "client_name": "test", "token": "t"}
    core.receive(pack({"id": rid, "type": "result", "result": {"protocol_version": 1, "resume_token": "r1", "limits": {}, **welcome}}))
    core.finish(rid)
    core.open(answer.value)
    return core


def test_requests_are_numbered_acked_and_answered_by_id() -> None:
    core = opened()
    first, second = Answer(), Answer()
    rid1, frame1 = core.submit("ping", {}, first)
    rid2, frame2 = core.submit("ping", {"payload": 1}, second)
    assert unpack(frame1) == {"id": rid1, "type": "ping", "ack": rid1 - 1}
    # The oldest unanswered request bounds the ack: the server keeps its answer for a retry.
    assert unpack(frame2)["ack"] == rid1 - 1
    core.receive(pack({"id": rid2, "type": "result", "result": {"payload": 1}}))
    core.receive(pack({"id": rid1, "type": "error", "error": {"code": "ENV_ERR_BAD_REQUEST", "message": "no"}}))
    assert second.value == {"payload": 1}
    assert isinstance(first.error, E.ServerError)
    core.finish(rid1)
    core.finish(rid2)
    _, frame3 = core.submit("ping", {}, Answer())
    assert unpack(frame3)["ack"] == rid2


def test_expire_fails_what_is_past_its_deadline_and_names_the_next() -> None:
    core = opened()
    late, soon, never, answered = Answer(), Answer(), Answer(), Answer()
    core.submit("list_envs", {}, late, deadline=30.0, timeout=30.0)
    core.submit("ping", {}, soon, deadline=10.0, timeout=10.0)
    core.submit("ping", {}, never)
    rid, _ = core.submit("ping", {}, answered, deadline=5.0, timeout=5.0)
    core.receive(pack({"id": rid, "type": "result", "result": {}}))
    assert core.expire(9.0) == 10.0 and not soon.done()
    assert core.expire(10.0) == 30.0
    assert isinstance(soon.error, E.RequestTimeoutError) and "ping got no answer within 10.0 s" in str(soon.error)
    assert answered.value == {} and not late.done() and not never.done()
    assert core.expire(31.0) is None and isinstance(late.error, E.RequestTimeoutError) and not never.done()


def test_a_frame_over_the_servers_limit_is_refused_before_it_goes_out() -> None:
    core = opened(limits={"max_frame_bytes": 64})
    with pytest.raises(E.FrameTooLargeLocalError):
        core.submit("ping", {"payload": b"x" * 100}, Answer())
    assert not core.pending


def test_events_close_sessions_and_a_shutdown_fails_what_waits() -> None:
    events: list[dict[str, Any]] = []
    core = opened(events)
    a, b = Session(), Session()
    core.sessions.update({"s1": a, "s2": b})
    core.receive(pack({"type": "event", "event": "session_closed", "session_id": "s1", "reason": "idle"}))
    assert a.closed_reason == "idle" and b.closed_reason is None
    waiting = Answer()
    core.submit("step", {"session_id": "s2", "action": 0}, waiting)
    core.receive(pack({"type": "event", "event": "shutdown", "reason": "deploy"}))
    assert isinstance(waiting.error, E.ServerShutdownError) and b.closed_reason == "the server shut down"
    with pytest.raises(E.ServerShutdownError):
        core.submit("step", {"session_id": "s2", "action": 0}, Answer())
    core.submit("ping", {}, Answer())  # needs no session: waits for a reconnect
    assert [e["event"] for e in events] == ["session_closed", "shutdown"]


def test_a_resume_resends_waiting_requests_with_their_ids_and_a_lost_one_fails_session_requests() -> None:
    core = opened()
    step, ping = Answer(), Answer()
    rid_step, frame_step = core.submit("step", {"session_id": "s", "action": 1}, step)
    rid_ping, frame_ping = core.submit("ping", {}, ping)
    assert core.disconnected(1006, "", reconnect=True) and core.state == "reconnecting" and not core.can_send
    hello_answer = Answer()
    _, hello = core.hello(hello_answer)
    assert unpack(hello)["resume_token"] == "r1"
    assert core.resumed({"protocol_version": 1, "resume_token": "r2", "resumed": True}) == [frame_step, frame_ping]
    assert core.disconnected(1006, "", reconnect=True)
    # Not resumed: the server forgot the sessions; the ping (no session) is sent again.
    assert core.resumed({"protocol_version": 1, "resume_token": "r3", "resumed": False}) == [frame_ping]
    assert isinstance(step.error, E.SessionLostError) and not ping.done()
    assert (rid_step, rid_ping) == (rid_step, rid_step + 1)


def test_a_fatal_close_or_no_reconnect_closes_the_client() -> None:
    core = opened()
    waiting = Answer()
    core.submit("ping", {}, waiting)
    assert not core.disconnected(1008, "policy", reconnect=True)
    assert core.state == "closed" and isinstance(waiting.error, E.ConnectionLostError)
    with pytest.raises(E.ClientClosedError):
        core.submit("ping", {}, Answer())
    abandoned = opened()
    abandoned.abandon(E.SessionLostError("server 2 died"))
    abandoned.close()
    with pytest.raises(E.SessionLostError, match="server 2 died"):
        abandoned.submit("ping", {}, Answer())


def test_keepalive_pings_a_quiet_link_and_drops_a_silent_one() -> None:
    keepalive = Keepalive(interval=15, timeout=30)
    assert keepalive.due(10, last_received=0) is None
    assert keepalive.due(15, last_received=0) == "ping"
    assert keepalive.due(20, last_received=0) is None  # waiting for any byte
    assert keepalive.due(21, last_received=18) is None  # heard since the ping: alive
    assert keepalive.due(33, last_received=18) == "ping"
    assert keepalive.due(62, last_received=18) is None
    assert keepalive.due(63, last_received=18) == "drop"


def test_reconnect_attempts_back_off_until_the_deadline_and_stop_at_a_refusal() -> None:
    schedule = ReconnectSchedule(100.0, timeout=10, delay=0.5)
    assert [schedule.next_wait(100.0) for _ in range(4)] == [0.5, 1.0, 2.0, 2.0]  # doubling, at most 2 s
    assert not schedule.failed(E.ConnectFailedError("refused by the network"))  # worth another try
    assert schedule.next_wait(110.0) is None and isinstance(schedule.last_error, E.ConnectFailedError)
    assert schedule.failed(E.server_error({"code": "ENV_ERR_UNAUTHORIZED", "message": "bad token"}))
    assert schedule.failed(E.VersionMismatchError("the server speaks protocol version 2"))


def test_the_core_imports_no_io_and_no_driver() -> None:
    # Sans-I/O: the core may not reach a socket, a loop, a thread or either driver, even by accident.
    import ast
    from pathlib import Path

    import gymwire._connection as core_module

    tree = ast.parse(Path(core_module.__file__).read_text())
    imported = {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
    }
    assert imported <= {"__future__", "collections.abc", "dataclasses", "typing", "", "_protocol", "_request_template", "codec"}
    imported_names = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level and not n.module for a in n.names}
    assert imported_names == {"errors"}

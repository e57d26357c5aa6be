"""Bad conditions each raise their own exception class, and nothing hangs: timeouts, drops, resumes, other versions."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import numpy as np
import pytest
from websockets.asyncio.server import ServerConnection, serve

import gymwire
from gymwire import errors as E
from gymwire.codec import pack, unpack

pytestmark = pytest.mark.timeout(30)

WELCOME = {
    "protocol_version": gymwire.PROTOCOL_VERSION,
    "server_name": "fake",
    "server_version": "0",
    "connection_id": "c_1",
    "resume_token": "r",
    "resumed": False,
    "sessions": [],
    "limits": {
        "max_frame_bytes": 1 << 20,
        "max_sessions_per_client": 8,
        "max_sessions": 8,
        "max_pending_per_session": 8,
        "idle_timeout_ms": 0,
        "resume_grace_ms": 0,
        "heartbeat_ms": 0,
    },
}


@contextlib.asynccontextmanager
async def fake_server(on_message: Callable[[ServerConnection, dict[str, Any]], Any]) -> AsyncIterator[str]:
    async def handler(ws: ServerConnection) -> None:
        async for frame in ws:
            result = on_message(ws, unpack(frame))
            if asyncio.iscoroutine(result):
                await result

    async with serve(handler, "127.0.0.1", 0) as server:
        port = next(iter(server.sockets)).getsockname()[1]
        yield f"ws://127.0.0.1:{port}"


def welcome_then(rest: Callable[[ServerConnection, dict[str, Any]], Any], welcome: dict[str, Any] = WELCOME):
    async def on_message(ws: ServerConnection, msg: dict[str, Any]) -> None:
        if msg["type"] == "hello":
            await ws.send(pack({"id": msg["id"], "type": "result", "result": welcome}))
        else:
            await rest(ws, msg)

    return on_message


async def _ignore(ws: ServerConnection, msg: dict[str, Any]) -> None:
    return None


def test_a_server_speaking_another_version_is_refused() -> None:
    async def main() -> None:
        async with fake_server(welcome_then(_ignore, {**WELCOME, "protocol_version": 99})) as url:
            with pytest.raises(E.VersionMismatchError, match="version 99"):
                await gymwire.AsyncClient.connect(url)

    asyncio.run(main())


def test_an_unanswered_request_times_out() -> None:
    async def main() -> None:
        async with fake_server(welcome_then(_ignore)) as url:
            client = await gymwire.AsyncClient.connect(url, request_timeout=0.2)
            start = time.monotonic()
            with pytest.raises(E.RequestTimeoutError, match="list_envs got no answer"):
                await client.list_envs()
            assert time.monotonic() - start < 2
            with pytest.raises(E.RequestTimeoutError):
                await client.request("ping", {}, timeout=0.1)
            await client.close()

    asyncio.run(main())


def test_a_short_timeout_fires_on_time_behind_a_long_one() -> None:
    # The driver keeps one timer at the earliest deadline: a later request with a shorter timeout moves it.
    async def main() -> None:
        async with fake_server(welcome_then(_ignore)) as url:
            client = await gymwire.AsyncClient.connect(url, request_timeout=60)
            long = asyncio.ensure_future(client.request("ping", {}))
            await asyncio.sleep(0.05)
            start = time.monotonic()
            with pytest.raises(E.RequestTimeoutError):
                await client.request("ping", {}, timeout=0.2)
            assert time.monotonic() - start < 5 and not long.done()
            await client.close()
            with pytest.raises(E.ClientClosedError):
                await long

    asyncio.run(main())


def test_a_server_error_keeps_code_message_and_details() -> None:
    async def answer(ws: ServerConnection, msg: dict[str, Any]) -> None:
        await ws.send(pack({"id": msg["id"], "type": "error", "error": {"code": "ENV_ERR_ENV_FAILURE", "message": "boom inside", "details": {"x": 1}}}))

    async def main() -> None:
        async with fake_server(welcome_then(answer)) as url:
            client = await gymwire.AsyncClient.connect(url)
            with pytest.raises(E.EnvFailureError) as info:
                await client.list_envs()
            assert (info.value.code, info.value.message, info.value.details) == ("ENV_ERR_ENV_FAILURE", "boom inside", {"x": 1})
            await client.close()

    asyncio.run(main())
    unknown = E.server_error({"code": "ENV_ERR_FROM_THE_FUTURE", "message": "m"})
    assert isinstance(unknown, E.InternalServerError) and unknown.details["original_code"] == "ENV_ERR_FROM_THE_FUTURE"


def test_a_dropped_connection_without_reconnect_raises_connection_lost() -> None:
    async def drop(ws: ServerConnection, msg: dict[str, Any]) -> None:
        await ws.close(1011, "going away")

    async def main() -> None:
        async with fake_server(welcome_then(drop)) as url:
            client = await gymwire.AsyncClient.connect(url, reconnect=False)
            with pytest.raises(E.ConnectionLostError, match="connection closed"):
                await client.list_envs()
            with pytest.raises(E.ClientClosedError):
                await client.list_envs()

    asyncio.run(main())


def test_reconnect_gives_up_with_connection_lost_when_the_server_is_gone() -> None:
    async def main() -> None:
        async with fake_server(welcome_then(_ignore)) as url:
            client = await gymwire.AsyncClient.connect(url, reconnect_timeout=0.5, request_timeout=5)
            pending = asyncio.ensure_future(client.list_envs())
            await asyncio.sleep(0.05)
        # The server is closed now: the client retries for 0.5 s, then fails what waits.
        with pytest.raises(E.ConnectionLostError):
            await asyncio.wait_for(pending, 5)
        await client.close()

    asyncio.run(main())


def test_connecting_to_nothing_fails_fast() -> None:
    with pytest.raises(E.ConnectFailedError, match="could not connect"):
        gymwire.Client("ws://127.0.0.1:9", connect_timeout=2)


def test_resume_after_a_drop_answers_each_request_once(url: str) -> None:
    """Pipelined steps survive a dropped socket: re-sent with their ids, applied exactly once."""

    events: list[dict[str, Any]] = []

    async def rollout(drop: bool) -> list[float]:
        client = await gymwire.AsyncClient.connect(url, on_event=events.append)
        env = await client.make("gymwire/Conformance-v0")
        await env.reset(seed=9, options={"goal": [0.9, 0.9]})
        action = np.array([0.1, 0.05], np.float32)
        futures = [asyncio.ensure_future(env.step(action)) for _ in range(20)]
        if drop:
            await asyncio.sleep(0)
            await client.simulate_connection_loss()
        results = await asyncio.gather(*futures)
        final = await env.call_tool("move", {"dx": 0.0, "dy": 0.0})
        await client.close_all()
        return [r[1] for r in results] + [final["reward"]]

    async def main() -> None:
        baseline = await rollout(drop=False)
        dropped = await rollout(drop=True)
        assert dropped == baseline, "a retried step was applied twice or lost"
        assert {"type": "reconnected", "resumed": True} in events

    asyncio.run(main())


def test_sync_client_is_safe_from_many_threads(url: str) -> None:
    with gymwire.Client(url) as client:
        envs = [client.make("gymwire/CartPole-v1") for _ in range(4)]
        errors: list[BaseException] = []

        def work(env: gymwire.GymwireEnv, seed: int) -> None:
            try:
                env.reset(seed=seed)
                for _ in range(50):
                    _, _, term, trunc, _ = env.step(seed % 2)
                    if term or trunc:
                        env.reset()
            except BaseException as err:  # noqa: BLE001 - collected for the assertion
                errors.append(err)

        threads = [threading.Thread(target=work, args=(e, i)) for i, e in enumerate(envs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not errors


def test_blocking_call_on_the_clients_own_loop_is_refused(url: str) -> None:
    with gymwire.Client(url) as client:

        async def inside() -> None:
            client.list_envs()

        with pytest.raises(RuntimeError, match="own event loop"):
            client.run(inside())


def test_a_server_that_forgot_us_fails_waiting_session_requests_with_session_lost() -> None:
    hellos: list[dict[str, Any]] = []

    async def on_message(ws: ServerConnection, msg: dict[str, Any]) -> None:
        if msg["type"] == "hello":
            hellos.append(msg)
            await ws.send(pack({"id": msg["id"], "type": "result", "result": {**WELCOME, "resumed": False, "resume_token": f"r{len(hellos)}"}}))
        elif msg["type"] == "step" and len(hellos) == 1:
            ws.transport.abort()  # drop the first connection while the step waits
        elif msg["type"] == "ping":
            await ws.send(pack({"id": msg["id"], "type": "result", "result": {"server_time_ms": 0}}))

    async def main() -> None:
        async with fake_server(on_message) as url:
            client = await gymwire.AsyncClient.connect(url, request_timeout=5)
            with pytest.raises(E.SessionLostError):
                await client.request("step", {"session_id": "s_1", "action": 0})
            assert hellos[1]["resume_token"] == "r1"  # it did try to resume
            assert (await client.request("ping", {}))["server_time_ms"] == 0
            await client.close()

    asyncio.run(main())


def test_every_error_pickles_whole() -> None:
    """Errors cross process boundaries (Ray actors, worker pools): class, message, code and details survive."""
    import inspect
    import pickle

    classes = [c for _, c in inspect.getmembers(E, inspect.isclass) if issubclass(c, E.GymwireError) and c is not E.GymwireError]
    assert E.UnknownEnvError in classes and E.ConnectFailedError in classes
    for cls in classes:
        err = cls("ENV_ERR_X", "what happened", {"url": "ws://h:1"}) if issubclass(cls, E.ServerError) else cls("what happened", {"url": "ws://h:1"})
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is cls and str(back) == str(err) and back.details == {"url": "ws://h:1"} and back.code == err.code, cls

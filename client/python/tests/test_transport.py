"""The sync Client on both transports: the socket fast path (calls read and write the socket in the
calling thread) and the asyncio fallback behave alike on timeouts, server errors, drops, resumes,
frozen links, large frames and many threads.

Fake servers are websockets servers on loopback run on an event loop in a helper thread; the frozen
link is test_link's real TCP proxy.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from test_errors import WELCOME, _ignore, fake_server, welcome_then
from test_link import FreezableProxy, _host_port
from websockets.asyncio.server import ServerConnection

import gymwire
from gymwire import errors as E
from gymwire.codec import pack

pytestmark = [pytest.mark.timeout(60), pytest.mark.parametrize("transport", ["socket", "asyncio"])]


@contextlib.contextmanager
def loop_in_thread() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield loop
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


@contextlib.contextmanager
def fake(on_message: Any) -> Iterator[str]:
    """A fake gymwire server (test_errors.fake_server) served from a helper thread's loop."""
    with loop_in_thread() as loop:
        cm = fake_server(on_message)
        url = asyncio.run_coroutine_threadsafe(cm.__aenter__(), loop).result(10)
        try:
            yield url
        finally:
            asyncio.run_coroutine_threadsafe(cm.__aexit__(None, None, None), loop).result(10)


def test_the_default_transport_is_the_socket_and_wss_falls_back(url: str, monkeypatch: pytest.MonkeyPatch, transport: str) -> None:
    monkeypatch.delenv("GYMWIRE_TRANSPORT", raising=False)
    with gymwire.Client(url) as client:
        assert client.transport == "socket"
    with gymwire.Client(url, transport=transport) as client:
        assert client.transport == transport
    with pytest.raises(ValueError, match="transport must be"):
        gymwire.Client(url, transport="carrier-pigeon")


def test_an_unanswered_request_times_out(transport: str) -> None:
    with fake(welcome_then(_ignore)) as url:
        with gymwire.Client(url, transport=transport, request_timeout=0.2) as client:
            start = time.monotonic()
            with pytest.raises(E.RequestTimeoutError, match="list_envs got no answer"):
                client.list_envs()
            assert time.monotonic() - start < 5


def test_a_server_error_keeps_code_message_and_details(transport: str) -> None:
    async def answer(ws: ServerConnection, msg: dict[str, Any]) -> None:
        await ws.send(pack({"id": msg["id"], "type": "error", "error": {"code": "ENV_ERR_ENV_FAILURE", "message": "boom inside", "details": {"x": 1}}}))

    with fake(welcome_then(answer)) as url, gymwire.Client(url, transport=transport) as client:
        with pytest.raises(E.EnvFailureError) as info:
            client.list_envs()
        assert (info.value.code, info.value.message, info.value.details) == ("ENV_ERR_ENV_FAILURE", "boom inside", {"x": 1})


def test_a_server_speaking_another_version_is_refused(transport: str) -> None:
    with fake(welcome_then(_ignore, {**WELCOME, "protocol_version": 99})) as url:
        with pytest.raises(E.VersionMismatchError, match="version 99"):
            gymwire.Client(url, transport=transport)


def test_a_dropped_connection_without_reconnect_raises_connection_lost(transport: str) -> None:
    async def drop(ws: ServerConnection, msg: dict[str, Any]) -> None:
        await ws.close(1011, "going away")

    with fake(welcome_then(drop)) as url:
        client = gymwire.Client(url, transport=transport, reconnect=False)
        with pytest.raises(E.ConnectionLostError, match="connection closed"):
            client.list_envs()
        with pytest.raises(E.ClientClosedError):
            client.list_envs()
        client.close()


def test_a_drop_resumes_and_applies_each_step_once(url: str, transport: str) -> None:
    def rollout(drop: bool, events: list[dict[str, Any]]) -> list[float]:
        with gymwire.Client(url, transport=transport, on_event=events.append) as client:
            env = client.make("gymwire/Conformance-v0")
            env.reset(seed=9, options={"goal": [0.9, 0.9]})
            rewards = []
            for i in range(10):
                if drop and i == 5:
                    client.simulate_connection_loss()
                rewards.append(float(env.step(np.array([0.1, 0.05], np.float32))[1]))
            rewards.append(env.call_tool("move", {"dx": 0.0, "dy": 0.0})["reward"])
            env.close()
            return rewards

    events: list[dict[str, Any]] = []
    assert rollout(True, events) == rollout(False, [])
    assert {"type": "reconnected", "resumed": True} in events


def test_a_frozen_link_is_noticed_by_keepalive_and_resumed(url: str, transport: str) -> None:
    with loop_in_thread() as loop:
        proxy = FreezableProxy(*_host_port(url))
        asyncio.run_coroutine_threadsafe(proxy.start(), loop).result(10)
        events: list[dict[str, Any]] = []
        try:
            with gymwire.Client(
                f"ws://127.0.0.1:{proxy.port}", transport=transport, keepalive_interval=0.2, keepalive_timeout=0.5, request_timeout=30, on_event=events.append
            ) as client:
                env = client.make("gymwire/CartPole-v1")
                env.reset(seed=3)
                env.step(0)
                loop.call_soon_threadsafe(proxy.freeze)
                # Sent into the frozen link: answered once keepalive has dropped it and the client resumed.
                obs, *_ = env.step(1)
                assert obs is not None
                assert {"type": "reconnected", "resumed": True} in events
                assert proxy.connections == 2
                env.close()
        finally:
            asyncio.run_coroutine_threadsafe(proxy.close(), loop).result(10)


@contextlib.contextmanager
def proxied(url: str) -> Iterator[tuple[FreezableProxy, asyncio.AbstractEventLoop]]:
    """test_link's TCP proxy in front of the server, run on a helper thread's loop."""
    with loop_in_thread() as loop:
        proxy = FreezableProxy(*_host_port(url))
        asyncio.run_coroutine_threadsafe(proxy.start(), loop).result(10)
        try:
            yield proxy, loop
        finally:
            asyncio.run_coroutine_threadsafe(proxy.close(), loop).result(10)


def test_keepalive_pings_only_a_link_that_went_quiet(url: str, transport: str) -> None:
    interval = 0.5
    with proxied(url) as (proxy, _):
        with gymwire.Client(f"ws://127.0.0.1:{proxy.port}", transport=transport, keepalive_interval=interval, keepalive_timeout=30) as client:
            env = client.make("gymwire/CartPole-v1")
            env.reset(seed=0)
            before, steps = proxy.client_pings, 0
            busy_until = time.monotonic() + 8 * interval
            while time.monotonic() < busy_until:
                _, _, terminated, truncated, _ = env.step(steps % 2)
                steps += 1
                if terminated or truncated:
                    env.reset()
            busy_pings = proxy.client_pings - before
            # Quiet: nothing arrives, so pings go out (and their pongs keep the link).
            quiet_from = proxy.client_pings
            deadline = time.monotonic() + 30
            while proxy.client_pings - quiet_from < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert proxy.client_pings - quiet_from >= 2
            # Answers arrived all along: a ping on a timer would have gone out about 8 times; only a
            # stall of a whole interval (a loaded machine) may have earned one.
            assert busy_pings <= 1, f"{busy_pings} pings while {steps} steps were answered"
            env.reset(seed=1)
            assert proxy.connections == 1


def test_a_large_answer_arriving_slowly_keeps_the_link(url: str, transport: str) -> None:
    # 1 MiB forwarded 8 KiB every 20 ms takes over 2.5 s, longer than keepalive_interval plus
    # keepalive_timeout: its bytes, not a pong stuck behind them, show the link is alive.
    payload = bytes(range(256)) * 4096
    events: list[dict[str, Any]] = []
    with proxied(url) as (proxy, loop):
        with gymwire.Client(
            f"ws://127.0.0.1:{proxy.port}", transport=transport, keepalive_interval=0.2, keepalive_timeout=1.0, request_timeout=60, on_event=events.append
        ) as client:
            loop.call_soon_threadsafe(proxy.slow_down, 8192, 0.02)
            assert client.request("ping", {"payload": payload})["payload"] == payload
            assert [e for e in events if e["type"] == "disconnected"] == []
            assert proxy.connections == 1


def test_abandon_fails_what_waits_and_every_later_call_with_the_given_error(url: str, transport: str) -> None:
    gone = E.SessionLostError("server 3 died; its sessions are gone")
    with proxied(url) as (proxy, loop):
        client = gymwire.Client(f"ws://127.0.0.1:{proxy.port}", transport=transport, keepalive_interval=None, request_timeout=60)
        env = client.make("gymwire/CartPole-v1")
        env.reset(seed=0)
        loop.call_soon_threadsafe(proxy.freeze)
        outcome: list[BaseException] = []

        def step() -> None:
            try:
                env.step(0)
            except BaseException as err:  # noqa: BLE001 - the test inspects it
                outcome.append(err)

        stepper = threading.Thread(target=step)
        stepper.start()
        deadline = time.monotonic() + 10  # the step is on its way into the frozen link
        while not client.connection.core.pending and time.monotonic() < deadline:
            time.sleep(0.01)
        client.abandon(gone)
        stepper.join(30)
        assert outcome == [gone]
        with pytest.raises(E.SessionLostError, match="server 3 died"):
            client.make("gymwire/CartPole-v1")
        assert env.remote.closed_reason == str(gone)
        client.close()  # idempotent after abandon


def test_every_env_call_goes_through_the_clients_driver(url: str, transport: str) -> None:
    # Render, tools, state, close and vector reset: plain blocking calls on either transport, no coroutine in between.
    with gymwire.Client(url, transport=transport) as client:
        env = client.make("gymwire/Conformance-v0", render_mode="rgb_array")
        assert isinstance(env.remote, gymwire.env.RemoteSession) and not isinstance(env.remote, gymwire.AsyncRemoteEnv)
        obs, _ = env.reset(seed=5)
        state = env.get_state()
        by_hand = env.remote.step_result(client.request("step", env.remote.step_request(env.action_space.sample())))
        env.set_state(state)
        assert env.render().dtype == np.uint8 and env.list_tools() == env.tools.schemas
        vec = client.make_vec("gymwire/CartPole-v1", 3)
        first, _ = vec.reset(seed=1)
        again, _ = vec.reset(seed=7, options={"reset_mask": np.array([False, True, False])})
        assert again.shape == (3, 4) and np.array_equal(again[[0, 2]], first[[0, 2]]) and len(by_hand) == 5
        env.close()
        vec.close()
        assert client.is_open and client.connection.core.sessions == {}
        if transport == "socket":
            with pytest.raises(AttributeError, match="socket transport"):
                client.aclient  # noqa: B018 - the property raises
        else:
            assert client.aclient is client.connection


def test_large_frames_arrive_whole_and_as_read_only_views(url: str, transport: str) -> None:
    payload = bytes(range(256)) * 2400  # 614,400 bytes: over the socket transport's buffered-read size
    with gymwire.Client(url, transport=transport) as client:
        assert client.request("ping", {"payload": payload})["payload"] == payload
        env = client.make("gymwire/CartPole-v1")
        obs, _ = env.reset(seed=0)
        assert isinstance(obs, np.ndarray) and obs.dtype == np.float32 and not obs.flags.writeable


def test_many_threads_pipelining_on_one_client_each_get_their_own_answers(url: str, transport: str) -> None:
    with gymwire.Client(url, transport=transport) as client:
        envs = [client.make("gymwire/CartPole-v1") for _ in range(6)]

        def rollout(env: gymwire.GymwireEnv) -> list[Any]:
            observed = [env.reset(seed=5)[0].tolist()]
            for i in range(60):
                obs, _, terminated, truncated, _ = env.step(i % 2)
                observed.append(obs.tolist())
                if terminated or truncated:
                    observed.append(env.reset()[0].tolist())
            return observed

        solo = gymwire.make(url, "gymwire/CartPole-v1")
        expected = rollout(solo)
        solo.close()
        results: dict[int, list[Any]] = {}

        def work(k: int) -> None:
            results[k] = rollout(envs[k])

        threads = [threading.Thread(target=work, args=(k,)) for k in range(len(envs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert all(results[k] == expected for k in range(len(envs)))

"""Clients sharing one event loop (``Client(url, loop=...)`` on an ``EventLoopThread``), as
``gymwire.ray``'s pool runs its servers' connections: each client closes on its own, the loop runs
until its owner stops it."""

from __future__ import annotations

import asyncio

import pytest

import gymwire
from gymwire import errors as E
from gymwire.client import EventLoopThread


def test_clients_on_one_loop_close_on_their_own_and_leave_the_loop_running(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GYMWIRE_TRANSPORT", "socket")  # a given loop means the asyncio transport all the same
    shared = EventLoopThread("test-shared")
    try:
        first = gymwire.Client(url, loop=shared.loop)
        second = gymwire.Client(url, loop=shared.loop)
        assert first.transport == second.transport == "asyncio"
        assert first.loop is second.loop is shared.loop
        envs = [c.make("gymwire/CartPole-v1") for c in (first, second)]
        observations = [env.reset(seed=4)[0].tolist() for env in envs]
        assert observations[0] == observations[1]
        first.close()
        with pytest.raises(E.ClientClosedError):
            first.make("gymwire/CartPole-v1")
        # The other client, and the loop, go on.
        assert shared.thread.is_alive()
        envs[1].step(0)
        second.close()
        assert shared.thread.is_alive()
    finally:
        shared.stop()
    assert not shared.thread.is_alive() and shared.loop.is_closed()
    shared.stop()  # idempotent


def test_a_blocking_call_on_the_shared_loop_is_refused(url: str) -> None:
    shared = EventLoopThread()
    try:
        client = gymwire.Client(url, loop=shared.loop)

        async def blocking_call_on_the_loop() -> None:
            client.ping()

        with pytest.raises(RuntimeError, match="own event loop"):
            asyncio.run_coroutine_threadsafe(blocking_call_on_the_loop(), shared.loop).result(10)
        client.close()
    finally:
        shared.stop()


def test_a_given_loop_takes_the_asyncio_transport_only(url: str) -> None:
    shared = EventLoopThread()
    try:
        with pytest.raises(ValueError, match="asyncio transport"):
            gymwire.Client(url, transport="socket", loop=shared.loop)
    finally:
        shared.stop()

"""The conformance cases the TypeScript client passes, run through the Python client against a live server."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import gymwire
from gymwire import errors as E

CONF = "gymwire/Conformance-v0"
CARTPOLE = "gymwire/CartPole-v1"


def test_handshake_welcome(client: gymwire.Client) -> None:
    welcome = client.welcome
    assert welcome["protocol_version"] == gymwire.PROTOCOL_VERSION == 2
    assert welcome["resume_token"] and welcome["resumed"] is False
    assert welcome["limits"]["max_frame_bytes"] > 0
    assert client.ping() < 5


def test_version_mismatch_raises_with_the_servers_message(url: str) -> None:
    with pytest.raises(E.VersionMismatchError) as info:
        gymwire.Client(url, protocol_version=99, reconnect=False)
    err = info.value
    assert isinstance(err, E.ServerError) and err.code == "ENV_ERR_VERSION_MISMATCH"
    assert "99" in err.message and err.details["supported"] == [2, 1]


def test_unknown_env(client: gymwire.Client) -> None:
    with pytest.raises(E.UnknownEnvError) as info:
        client.make("gymwire/Nope-v0")
    assert CARTPOLE in info.value.details["available"]


def test_bad_kwargs(client: gymwire.Client) -> None:
    with pytest.raises(E.InvalidKwargsError, match="ENV_ERR_INVALID_KWARGS"):
        client.make(CARTPOLE, no_such_kwarg=1)


def test_step_before_reset(client: gymwire.Client) -> None:
    env = client.make(CARTPOLE)
    with pytest.raises(E.ResetNeededError):
        env.step(0)
    env.reset(seed=0)
    env.step(0)


def _rollout(env: gymwire.GymwireEnv, seed: int, actions: list) -> list:
    out = [env.reset(seed=seed)[0]]
    for a in actions:
        obs, reward, terminated, truncated, _ = env.step(a)
        out.append((obs, reward, terminated, truncated))
        if terminated or truncated:
            break
    return out


def test_same_seed_same_episode_and_different_seeds_differ(client: gymwire.Client) -> None:
    env = client.make(CARTPOLE)
    actions = [i % 2 for i in range(30)]
    a, b, c = _rollout(env, 3, actions), _rollout(env, 3, actions), _rollout(env, 4, actions)
    assert all(np.array_equal(x[0], y[0]) and x[1:] == y[1:] for x, y in zip(a[1:], b[1:], strict=True))
    assert np.array_equal(a[0], b[0]) and not np.array_equal(a[0], c[0])


def test_every_dtype_arrives_exact(client: gymwire.Client) -> None:
    env = client.make(CONF)
    obs, info = env.reset(seed=1)
    assert env.observation_space.contains(obs)
    for name in ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32", "float64"):
        assert obs[f"box_{name}"].dtype == np.dtype(name)
        assert env.observation_space[f"box_{name}"].dtype == np.dtype(name)
    assert np.isinf(env.observation_space["box_float32"].low[0])
    assert isinstance(obs["text"], str) and isinstance(obs["tuple"], tuple) and isinstance(obs["sequence"], tuple)
    assert obs["multi_binary"].dtype == np.int8
    assert isinstance(info["goal"], list)


def test_invalid_actions_keep_the_session_usable(client: gymwire.Client) -> None:
    cart = client.make(CARTPOLE)
    cart.reset(seed=0)
    with pytest.raises(E.InvalidActionError, match="not in the action space"):
        cart.step(5)
    conf = client.make(CONF)
    conf.reset(seed=0)
    for bad in (np.array([np.nan, 0], np.float32), np.zeros(3, np.float32), np.array([2.0, 0.0], np.float32), "left"):
        with pytest.raises(E.InvalidActionError):
            conf.step(bad)
    cart.step(1)
    obs, *_ = conf.step(np.array([0.1, 0.1], np.float32))
    assert conf.observation_space.contains(obs)


def test_terminated_and_truncated_are_distinct(client: gymwire.Client) -> None:
    cart = client.make(CARTPOLE)
    cart.reset(seed=0)
    for _ in range(500):
        _, _, terminated, truncated, _ = cart.step(1)
        if terminated or truncated:
            break
    assert terminated and not truncated  # always pushing right topples the pole long before 500 steps
    conf = client.make(CONF)
    conf.reset(seed=0, options={"goal": [0.9, 0.9]})
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated) and steps < 50:
        steps += 1
        _, _, terminated, truncated, _ = conf.step(np.array([-1, -1], np.float32))  # away from the goal
    assert truncated and not terminated and steps == conf.max_episode_steps == 50


def test_reset_options_are_validated(client: gymwire.Client) -> None:
    conf = client.make(CONF)
    with pytest.raises(E.InvalidOptionsError, match="goal"):
        conf.reset(options={"goal": [5, 5]})
    _, info = conf.reset(seed=0, options={"goal": [0.5, -0.5]})
    assert info["goal"] == [0.5, -0.5]


def test_tools_schemas_execute_and_validation(client: gymwire.Client) -> None:
    conf = client.make(CONF)
    names = conf.tools.names
    assert {"echo", "add", "get_goal", "move"} <= set(names)
    schema = next(t for t in conf.tools.schemas if t["function"]["name"] == "add")
    assert schema["type"] == "function" and schema["function"]["parameters"]["type"] == "object"
    assert conf.tools.execute("echo", {"text": "héllo"}) == {"text": "héllo"}
    assert conf.tools.execute("add", '{"a": 2, "b": 3.5}') == {"sum": 5.5}
    with pytest.raises(E.InvalidToolArgsError, match="add"):
        conf.tools.execute("add", {"a": "x"})
    with pytest.raises(E.UnknownToolError):
        conf.tools.execute("nope", {})
    conf.reset(seed=0, options={"goal": [0.1, 0.2]})
    assert conf.call_tool("get_goal") == {"goal": [0.1, 0.2]}
    moved = conf.call_tool("move", dx=0.5, dy=0.0)
    assert set(moved) >= {"reward", "terminated", "truncated", "position"}


def test_get_and_set_state_reproduce_the_future(client: gymwire.Client) -> None:
    conf = client.make(CONF)
    conf.reset(seed=5)
    conf.step(np.array([0.2, 0.1], np.float32))
    snapshot = conf.get_state()
    assert isinstance(snapshot, bytes)
    actions = [np.array([0.3, -0.2], np.float32), np.array([-0.1, 0.4], np.float32)]
    first = [conf.step(a) for a in actions]
    conf.set_state(snapshot)
    second = [conf.step(a) for a in actions]
    for x, y in zip(first, second, strict=True):
        assert np.array_equal(x[0]["position"], y[0]["position"]) and x[1:4] == y[1:4]
    with pytest.raises(E.InvalidStateError):
        conf.set_state(b"garbage")


def test_close_is_idempotent_and_closes_the_session(client: gymwire.Client) -> None:
    env = client.make(CARTPOLE)
    env.reset(seed=0)
    sid = env.session_id
    env.close()
    env.close()
    with pytest.raises(E.UnknownSessionError):
        client.request("step", {"session_id": sid, "action": 0})
    assert client.request("close", {"session_id": sid}) == {"closed": False}


def test_async_client_pipelines_requests(url: str) -> None:
    async def main() -> list[float]:
        client = await gymwire.AsyncClient.connect(url)
        try:
            envs = await asyncio.gather(*(client.make(CARTPOLE) for _ in range(8)))
            await asyncio.gather(*(e.reset(seed=i) for i, e in enumerate(envs)))
            results = await asyncio.gather(*(e.step(1) for e in envs))
            return [r[1] for r in results]
        finally:
            await client.close_all()

    assert asyncio.run(main()) == [1.0] * 8


# ---------------------------------------------------------------------------------------------
# The remaining cases of conformance/suite.ts, at the wire level where the SDK would hide them.


async def _raw(url: str, frames: list[bytes], hello: bool = True) -> list[dict]:
    from websockets.asyncio.client import connect

    from gymwire.codec import pack, unpack

    answers = []
    async with connect(url, compression=None) as ws:
        if hello:
            await ws.send(pack({"id": 0, "type": "hello", "protocol_version": 1}))
            unpack(await ws.recv())
        for frame in frames:
            await ws.send(frame)
            answers.append(unpack(await asyncio.wait_for(ws.recv(), 10)))
    return answers


def test_requests_before_hello_get_handshake_required(url: str) -> None:
    from gymwire.codec import pack

    (answer,) = asyncio.run(_raw(url, [pack({"id": 1, "type": "list_envs"})], hello=False))
    assert answer["type"] == "error" and answer["error"]["code"] == "ENV_ERR_HANDSHAKE_REQUIRED"


def test_bad_frames_get_typed_errors_and_the_connection_stays_usable(url: str) -> None:
    import msgpack

    from gymwire.codec import pack

    bad_tensor = msgpack.packb({"id": 2, "type": "ping", "payload": msgpack.ExtType(1, bytes([99, 0]))})
    frames = [b"\x92\x01", bad_tensor, pack({"id": 3, "type": "warp"}), pack({"id": 4, "type": "make"}), pack({"id": 5, "type": "ping"})]
    a = asyncio.run(_raw(url, frames))
    assert [x.get("error", {}).get("code") for x in a[:4]] == ["ENV_ERR_BAD_FRAME", "ENV_ERR_BAD_TENSOR", "ENV_ERR_UNKNOWN_TYPE", "ENV_ERR_INVALID_MESSAGE"]
    assert a[0]["id"] is None and a[2]["id"] == 3
    assert a[4]["type"] == "result" and a[4]["id"] == 5


def test_stepping_on_after_an_episode_ended_needs_a_reset(client: gymwire.Client) -> None:
    cart = client.make(CARTPOLE)
    cart.reset(seed=1)
    for _ in range(500):
        _, _, terminated, truncated, _ = cart.step(1)
        if terminated or truncated:
            break
    with pytest.raises(E.ResetNeededError):
        cart.step(1)
    cart.reset()
    cart.step(1)


def test_batched_reset_and_step_agree_with_single_sessions(client: gymwire.Client) -> None:
    vec = client.make_vec(CONF, 2)
    singles = [client.make(CONF) for _ in range(2)]
    obs, _ = vec.reset(seed=[10, 20])
    one = [s.reset(seed=seed)[0] for s, seed in zip(singles, (10, 20), strict=True)]
    assert all(np.array_equal(obs["position"][i], one[i]["position"]) for i in range(2))
    actions = np.array([[0.3, -0.1], [-0.2, 0.4]], np.float32)
    vobs, vr, vte, vtr, _ = vec.step(actions)
    for i, s in enumerate(singles):
        o, r, te, tr, _ = s.step(actions[i])
        assert np.array_equal(vobs["position"][i], o["position"]) and (vr[i], vte[i], vtr[i]) == (r, te, tr)
        assert vobs["box_float16"].dtype == np.float16


def test_render_answers_with_a_frame_or_unsupported(client: gymwire.Client) -> None:
    plain = client.make(CARTPOLE)
    plain.reset(seed=0)
    assert plain.render() is None
    with pytest.raises(E.UnsupportedError, match="render_mode"):
        client.request("render", plain.remote.render_request())
    drawn = client.make(CARTPOLE, render_mode="rgb_array")
    drawn.reset(seed=0)
    frame = drawn.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.flags.writeable
    png = client.request("render", drawn.remote.render_request("png"))["frame"]
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_sessions_are_private_to_the_client_that_made_them(url: str, client: gymwire.Client) -> None:
    env = client.make(CARTPOLE)
    with gymwire.Client(url) as other:
        with pytest.raises(E.UnknownSessionError):
            other.request("reset", {"session_id": env.session_id})


def test_oversize_frames_are_refused_and_the_connection_stays_usable() -> None:
    from conftest import ServerProcess

    server = ServerProcess("--max-frame-bytes", "4096")
    try:
        with gymwire.Client(server.url) as c:
            # The client refuses locally what the server would refuse (and what could close the connection).
            with pytest.raises(E.FrameTooLargeLocalError, match="max_frame_bytes"):
                c.request("ping", {"payload": b"x" * 10_000})
            assert c.ping() >= 0
        # The server's own answer, for clients that do not check: the typed error, with the request id.
        import msgpack
        from websockets.sync.client import connect as ws_connect

        with ws_connect(server.url, max_size=None) as ws:
            ws.send(msgpack.packb({"id": 1, "type": "hello", "protocol_version": 1}))
            ws.recv(timeout=10)
            ws.send(msgpack.packb({"id": 2, "type": "ping", "payload": b"x" * 6000}))
            answer = msgpack.unpackb(ws.recv(timeout=10))
            assert answer["id"] == 2 and answer["error"]["code"] == "ENV_ERR_FRAME_TOO_LARGE"
    finally:
        server.stop()


def test_limits_and_auth_are_refused_with_clear_errors() -> None:
    from conftest import ServerProcess

    server = ServerProcess("--max-sessions", "2", "--token", "s3cret")
    try:
        with pytest.raises(E.UnauthorizedError, match="token"):
            gymwire.Client(server.url, reconnect=False)
        with pytest.raises(E.UnauthorizedError, match="wrong"):
            gymwire.Client(server.url, token="nope", reconnect=False)
        with gymwire.Client(server.url, token="s3cret") as c:
            c.make(CARTPOLE)
            c.make(CARTPOLE)
            with pytest.raises(E.TooManySessionsError, match="max_sessions"):
                c.make(CARTPOLE)
    finally:
        server.stop()

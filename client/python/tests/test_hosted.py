"""Hosted Python envs end to end: `gymwire serve --gym ... --python ...` with real worker processes
(this venv's python), driven through the Python SDK over a real socket.

Covers Gymnasium's check_env through gymwire.make, seeded determinism against a local
gymnasium.make, `gymwire check` (the conformance suite), every space, vector stepping in the three
autoreset modes, tools, state, render, and the faults: an env that raises, a worker that crashes,
hangs or is killed from outside, with only its own sessions affected.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from conftest import REPO, ServerProcess
from gymnasium import spaces as gs
from gymnasium.utils.env_checker import check_env
from test_vector import MODE_ENUM, MODES, assert_matches_sync_vector_env

import gymwire
from gymwire.errors import ServerError

TESTS = Path(__file__).resolve().parent
COUNTER = "hosted_envs:make_counter"
COUNTER_ID = "tests/Counter-v0"
DICT_IMAGE_ID = "tests/DictImage-v0"


def start_server(*args: str) -> ServerProcess:
    """A server whose workers run this venv's python and can import the test envs."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GYMWIRE_PYTHON", sys.executable)
        mp.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])))
        return ServerProcess("--log-level", "info", *args)


@pytest.fixture(scope="module")
def hosted() -> Iterator[ServerProcess]:
    server = start_server(
        "--gym",
        "CartPole-v1",
        "--gym",
        "MountainCarContinuous-v0",
        "--gym",
        "HalfCheetah-v5",
        "--python",
        COUNTER,
        "--python",
        "hosted_envs:EverySpace",
        "--python",
        "hosted_envs:DictImage",
        "--id",
        COUNTER_ID,
        "tests/EverySpace-v0",
        DICT_IMAGE_ID,
        "--workers",
        "2",
    )
    yield server
    server.stop()


def worker_pids(server: ServerProcess) -> set[int]:
    """The server's Python worker processes (children of its node process, found through /proc)."""
    pids: set[int] = set()
    todo = [server.proc.pid]
    while todo:
        pid = todo.pop()
        for task in Path(f"/proc/{pid}/task").glob("*"):
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            todo.extend(children)
            for child in children:
                try:
                    cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
                except OSError:
                    continue
                if b"gymwire.worker" in cmdline:
                    pids.add(child)
    return pids


def test_hosted_ids_are_listed(hosted: ServerProcess) -> None:
    with gymwire.Client(hosted.url) as client:
        listing = {e["id"]: e for e in client.list_envs()}
    assert {"gym/CartPole-v1", "gym/MountainCarContinuous-v0", "gym/HalfCheetah-v5", COUNTER_ID, "tests/EverySpace-v0"} <= set(listing)
    assert listing["gym/CartPole-v1"]["max_episode_steps"] == 500
    assert "python" in listing["gym/CartPole-v1"]["tags"]


@pytest.mark.parametrize("env_id", ["gym/CartPole-v1", "gym/MountainCarContinuous-v0", COUNTER_ID, "tests/EverySpace-v0"])
def test_check_env_passes_through_gymwire_make(hosted: ServerProcess, env_id: str) -> None:
    env = gymwire.make(hosted.url, env_id)
    try:
        with _no_raise():
            check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()


class _no_raise:
    """check_env warns about infinite bounds and a missing EnvSpec; only its errors matter here."""

    def __enter__(self) -> None:
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc: object) -> None:
        self._w.__exit__(*exc)


@pytest.mark.parametrize("gym_id", ["CartPole-v1", "MountainCarContinuous-v0"])
def test_seeded_episode_matches_local_gymnasium(hosted: ServerProcess, gym_id: str) -> None:
    local = gym.make(gym_id)
    remote = gymwire.make(hosted.url, f"gym/{gym_id}")
    try:
        obs_l, _ = local.reset(seed=7)
        obs_r, _ = remote.reset(seed=7)
        np.testing.assert_array_equal(obs_l, obs_r)
        assert obs_r.dtype == obs_l.dtype
        local.action_space.seed(3)
        for _ in range(1100):
            action = local.action_space.sample()
            out_l = local.step(action)
            out_r = remote.step(action)
            np.testing.assert_array_equal(out_l[0], out_r[0])
            assert (float(out_l[1]), out_l[2], out_l[3]) == (float(out_r[1]), out_r[2], out_r[3])
            if out_l[2] or out_l[3]:
                break
        else:
            pytest.fail("no episode end within 1100 steps")
    finally:
        remote.close()
        local.close()


def test_cartpole_truncates_at_the_specs_limit(hosted: ServerProcess) -> None:
    env = gymwire.make(hosted.url, "gym/CartPole-v1")
    try:
        assert env.max_episode_steps == 500
    finally:
        env.close()


def test_every_space_converts_both_ways(hosted: ServerProcess) -> None:
    env = gymwire.make(hosted.url, "tests/EverySpace-v0")
    try:
        from hosted_envs import EverySpace

        reference = EverySpace()
        assert repr(env.observation_space) == repr(reference.observation_space)
        assert env.observation_space == reference.observation_space
        assert env.action_space == reference.action_space
        obs, _ = env.reset(seed=5)
        want, _ = reference.reset(seed=5)
        assert env.observation_space.contains(obs)
        assert obs["box16"].dtype == np.float16
        np.testing.assert_array_equal(obs["box16"], want["box16"])
        # (Text samples follow string hashing, which differs between processes: compare the rest.)
        assert int(obs["discrete"]) == int(want["discrete"])
        np.testing.assert_array_equal(obs["multi_discrete"], want["multi_discrete"])
        np.testing.assert_array_equal(obs["graph"].nodes, want["graph"].nodes)
        action = {"move": np.array([0.25, -0.5], dtype=np.float32), "pick": 2}
        obs, reward, _, _, info = env.step(action)
        assert reward == 2.0
        np.testing.assert_array_equal(info["move"], action["move"])
        assert env.observation_space.contains(obs)
    finally:
        env.close()


def _same_value(a: Any, b: Any) -> bool:
    """Equal batches of any space: dicts key by key, tuples item by item, graphs by their arrays' values, arrays by dtype, shape and values."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    if isinstance(a, gs.GraphInstance):  # a NamedTuple: before tuples
        # By value: edge_links arrive as int64 where Gymnasium's Graph samples int32 (the same for a single env).
        return isinstance(b, gs.GraphInstance) and all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("nodes", "edges", "edge_links"))
    if isinstance(a, tuple):
        return isinstance(b, tuple) and len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
    if a is None or b is None:
        return a is b
    a, b = np.asarray(a), np.asarray(b)
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def test_every_space_batches_as_gymnasiums_sync_vector_env(hosted: ServerProcess) -> None:
    """make_vec of a Dict holding every space: the keys that stack arrive as arrays, the others
    (Tuple, Sequence, Graph, OneOf, Text) as Gymnasium batches them, equal to SyncVectorEnv's of the
    same env in-process (Text only in count and type: its samples follow string hashing, which
    differs between processes)."""
    from hosted_envs import EverySpace

    ours = gymwire.make_vec(hosted.url, "tests/EverySpace-v0", 3)
    ref = gym.vector.SyncVectorEnv([EverySpace for _ in range(3)])
    try:
        got, _ = ours.reset(seed=5)
        want, _ = ref.reset(seed=5)
        actions = {"move": np.zeros((3, 2), dtype=np.float32), "pick": np.array([0, 1, 2])}
        batches = [(got, want), (ours.step(actions)[0], ref.step(actions)[0])]
        for got, want in batches:
            assert ours.observation_space.contains(got)
            assert isinstance(got["text"], tuple) and len(got["text"]) == 3 and all(isinstance(t, str) for t in got["text"])
            others = [k for k in want if k != "text"]
            assert _same_value({k: got[k] for k in others}, {k: want[k] for k in others}), (got, want)
    finally:
        ours.close()
        ref.close()


def test_halfcheetah_steps_over_the_wire(hosted: ServerProcess) -> None:
    env = gymwire.make(hosted.url, "gym/HalfCheetah-v5")
    try:
        obs, _ = env.reset(seed=0)
        assert obs.shape == (17,) and obs.dtype == np.float64
        local = gym.make("HalfCheetah-v5")
        want, _ = local.reset(seed=0)
        np.testing.assert_array_equal(obs, want)
        action = np.full(6, 0.5, dtype=np.float32)
        for _ in range(20):
            obs, reward, terminated, truncated, info = env.step(action)
            want, want_reward, *_ = local.step(action)
        np.testing.assert_allclose(obs, want)
        assert reward == pytest.approx(float(want_reward))
        assert "x_velocity" in info
        with _no_raise():
            check_env(env.unwrapped, skip_render_check=True)
        local.close()
    finally:
        env.close()


def test_gymwire_check_passes_on_hosted_envs(hosted: ServerProcess) -> None:
    cmd = ["node", str(REPO / "bin" / "gymwire.js"), "check", hosted.url]
    for env_id in ("gym/CartPole-v1", "gym/MountainCarContinuous-v0", "gym/HalfCheetah-v5", COUNTER_ID):
        cmd += ["--env", env_id]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert " 0 failed" in out.stdout


@pytest.mark.parametrize("mode", MODES)
def test_vector_env_matches_gymnasiums_sync_vector_env(hosted: ServerProcess, mode: str) -> None:
    """Hosted sessions through make_vec step exactly like Gymnasium's SyncVectorEnv of local envs, in each autoreset mode."""
    ours = gymwire.make_vec(hosted.url, "gym/CartPole-v1", 4, autoreset_mode=mode)
    ref = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1") for _ in range(4)], autoreset_mode=MODE_ENUM[mode])
    assert_matches_sync_vector_env(ours, ref, mode)


def _frames_not_copied(obs: dict[str, Any]) -> None:
    """Each image of a Dict batch is the tensor as decoded from the frame (a read-only view), not an array concatenate filled."""
    for image in (obs["agentview_image"], obs["cameras"]["wrist_image"]):
        assert not image.flags.owndata and not image.flags.writeable, image.flags


@pytest.mark.parametrize("mode", MODES)
def test_dict_image_vector_env_matches_sync_vector_env_without_copying_frames(hosted: ServerProcess, mode: str) -> None:
    """A Dict observation with images through make_vec: every key equal (values, dtype, shape) to
    Gymnasium's SyncVectorEnv of the same env in-process, autoresets included, and each image key's
    batch the decoded per-key stack itself."""
    from hosted_envs import DictImage

    ours = gymwire.make_vec(hosted.url, DICT_IMAGE_ID, 4, autoreset_mode=mode)
    ref = gym.vector.SyncVectorEnv([DictImage for _ in range(4)], autoreset_mode=MODE_ENUM[mode])
    assert_matches_sync_vector_env(ours, ref, mode, check_obs=_frames_not_copied)


def test_tools_state_and_render(hosted: ServerProcess) -> None:
    env = gymwire.make(hosted.url, COUNTER_ID, render_mode="rgb_array", end_chance=0.0)
    try:
        tools = env.list_tools()
        assert [t["function"]["name"] for t in tools] == ["add"]
        assert tools[0]["function"]["parameters"]["required"] == ["n"]
        env.reset(seed=1, options={"start": 2})
        out = env.call_tool("add", {"n": 3})
        assert out["count"] == 5
        with pytest.raises(ServerError) as bad_args:
            env.call_tool("add", {"n": "three"})
        assert bad_args.value.code == "ENV_ERR_INVALID_TOOL_ARGS"

        state = env.get_state()
        first = [env.step(0)[0] for _ in range(3)]
        env.set_state(state)
        again = [env.step(0)[0] for _ in range(3)]
        np.testing.assert_array_equal(np.stack(first), np.stack(again))
        with pytest.raises(ServerError) as bad_state:
            env.set_state(b"not a state")
        assert bad_state.value.code == "ENV_ERR_INVALID_STATE"

        frame = env.render()
        assert frame.shape == (8, 12, 3) and frame.dtype == np.uint8
        assert frame[0, :8].min() == 255
    finally:
        env.close()


def test_state_is_unsupported_without_the_protocol(hosted: ServerProcess) -> None:
    env = gymwire.make(hosted.url, "gym/CartPole-v1")
    try:
        env.reset(seed=0)
        with pytest.raises(ServerError) as err:
            env.get_state()
        assert err.value.code == "ENV_ERR_UNSUPPORTED"
    finally:
        env.close()


def test_bad_kwargs_and_raising_env_answer_with_clear_errors(hosted: ServerProcess) -> None:
    with pytest.raises(ServerError) as bad:
        gymwire.make(hosted.url, COUNTER_ID, no_such_kwarg=1)
    assert bad.value.code == "ENV_ERR_INVALID_KWARGS"
    assert "no_such_kwarg" in bad.value.message

    env = gymwire.make(hosted.url, COUNTER_ID, end_chance=0.0)
    try:
        env.reset(seed=0, options={"start": 1, "fault": "raise"})
        with pytest.raises(ServerError) as err:
            env.step(0)
        assert err.value.code == "ENV_ERR_ENV_FAILURE"
        assert "ValueError: boom at count 1" in err.value.message
        # The env (and its worker) carry on.
        obs, *_ = env.step(0)
        assert obs[0] == 2
    finally:
        env.close()


@pytest.fixture()
def fault_server() -> Iterator[ServerProcess]:
    """Its own server: faults kill workers, and the hang test needs a short timeout."""
    server = start_server("--python", COUNTER, "--id", COUNTER_ID, "--workers", "2", "--worker-timeout", "3000")
    yield server
    server.stop()


def _two_sessions_on_two_workers(client: gymwire.Client) -> tuple[gymwire.GymwireEnv, gymwire.GymwireEnv]:
    # The pool places a new session on an idle worker first, so two sessions land on two workers.
    a = client.make(COUNTER_ID, end_chance=0.0)
    b = client.make(COUNTER_ID, end_chance=0.0)
    a.reset(seed=0)
    b.reset(seed=0)
    return a, b


def _assert_lost(env: gymwire.GymwireEnv) -> None:
    with pytest.raises(ServerError) as err:
        env.step(0)
    assert err.value.code == "ENV_ERR_ENV_FAILURE"
    assert "worker" in err.value.message and "make a new one" in err.value.message


@pytest.mark.parametrize("fault", ["crash", "hang", "kill"])
def test_a_lost_worker_affects_only_its_sessions(fault_server: ServerProcess, fault: str) -> None:
    with gymwire.Client(fault_server.url, request_timeout=60) as client:
        victim, bystander = _two_sessions_on_two_workers(client)
        before = worker_pids(fault_server)
        assert len(before) == 2
        if fault == "kill":
            # Which worker holds which session is not visible from outside: kill one, and exactly
            # one of the two sessions (the one on it) must be lost.
            os.kill(min(before), signal.SIGKILL)
            time.sleep(0.5)
            lost = []
            for env in (victim, bystander):
                try:
                    env.step(0)
                except ServerError as err:
                    assert err.code == "ENV_ERR_ENV_FAILURE" and "killed by SIGKILL" in err.message
                    lost.append(env)
            assert len(lost) == 1
            survivor = bystander if lost[0] is victim else victim
        else:
            victim.reset(options={"fault": fault})
            _assert_lost(victim)
            survivor = bystander
        # The other session keeps going, the lost one keeps failing clearly, and new sessions work.
        for _ in range(5):
            survivor.step(0)
        if fault != "kill":
            _assert_lost(victim)
        fresh = client.make(COUNTER_ID)
        fresh.reset(seed=0)
        fresh.step(0)
        deadline = time.monotonic() + 30
        while len(worker_pids(fault_server)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        after = worker_pids(fault_server)
        assert len(after) == 2 and len(after & before) == 1, (before, after)
    if fault == "crash":
        assert any("crashing the worker on purpose" in line for line in fault_server.output), "the worker's stderr reaches the server log"


@pytest.mark.parametrize("check", [False, True])
def test_serve_check_reports_a_float64_observation_for_a_float32_box(check: bool) -> None:
    """--check looks at the observation as the env returned it, before the worker casts it for the wire."""
    server = start_server(*(["--check"] if check else []), "--python", "hosted_envs:Float64ForFloat32", "--id", "tests/Float64Obs-v0")
    try:
        env = gymwire.make(server.url, "tests/Float64Obs-v0")
        try:
            if not check:
                obs, _ = env.reset(seed=0)
                assert obs.dtype == np.float32
                return
            with pytest.raises(ServerError) as caught:
                env.reset(seed=0)
            assert caught.value.code == "ENV_ERR_ENV_FAILURE"
            assert "reset returned an observation outside the observation space: an array of dtype float64 where the Box has dtype float32" in str(caught.value)
        finally:
            env.close()
    finally:
        server.stop()

"""Embodied simulators served by the workers (gymwire.sim) equal the same envs run in-process.

A real `gymwire serve` on port 0 whose workers run this venv's Python (scripts/test-sim.sh builds it
with the robosuite and metaworld extras); for the same seed, init state and actions, every
observation byte (camera images included), reward, success flag and episode end from the server
equals that of the env made here. Rendering is OSMesa on both sides (the script sets MUJOCO_GL).
LIBERO's assets cannot be installed here (LIBERO downloads them at run time), so its id is tested
for its message only.

Skipped where robosuite or metaworld is not installed (the default test venv).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

pytest.importorskip("robosuite")
pytest.importorskip("metaworld")

from conftest import ServerProcess, sessions_left  # noqa: E402

import gymwire  # noqa: E402
from gymwire.errors import ServerError  # noqa: E402
from gymwire.sim.metaworld_tasks import MetaWorldTask  # noqa: E402
from gymwire.sim.rendering import choose_gl, configure_gl, gpu_present, osmesa_present  # noqa: E402
from gymwire.sim.robosuite_tasks import RobosuiteTask  # noqa: E402

pytestmark = pytest.mark.timeout(600)


def assert_same_obs(served: Any, local: Any, where: str) -> None:
    if isinstance(local, dict):
        assert set(served) == set(local), where
        for key in local:
            assert_same_obs(served[key], local[key], f"{where}.{key}")
        return
    served, local = np.asarray(served), np.asarray(local)
    assert served.dtype == local.dtype and served.shape == local.shape, where
    assert served.tobytes() == local.tobytes(), f"{where}: bytes differ"


def run_both(served: Any, local: Any, actions: list[np.ndarray], reset: dict[str, Any]) -> list[tuple[float, bool, bool, bool]]:
    """Resets both the same way and steps them with the same actions; every result must match."""
    s_obs, s_info = served.reset(**reset)
    l_obs, l_info = local.reset(**reset)
    assert_same_obs(s_obs, l_obs, "reset")
    assert s_info["success"] == l_info["success"] and s_info["task"] == l_info["task"]
    ends = []
    for t, action in enumerate(actions):
        s_obs, s_r, s_term, s_trunc, s_info = served.step(action)
        l_obs, l_r, l_term, l_trunc, l_info = local.step(action)
        assert_same_obs(s_obs, l_obs, f"step {t}")
        assert (s_r, s_term, s_trunc, s_info["success"]) == (l_r, l_term, l_trunc, l_info["success"]), f"step {t}"
        ends.append((s_r, s_term, s_trunc, s_info["success"]))
        if l_term or l_trunc:
            break
    return ends


def test_rendering_is_osmesa_on_a_cpu_machine() -> None:
    if gpu_present() or not osmesa_present():
        pytest.skip("this check is for a CPU-only machine with libosmesa6")
    assert choose_gl({}) == "osmesa"
    assert choose_gl({"MUJOCO_GL": "egl"}) == "egl"
    env: dict[str, str] = {}
    assert configure_gl(env) == "osmesa" and env == {"MUJOCO_GL": "osmesa", "PYOPENGL_PLATFORM": "osmesa"}


def test_installed_families_are_listed(sim_server: ServerProcess) -> None:
    with gymwire.Client(sim_server.url) as client:
        listing = {e["id"]: e for e in client.list_envs()}
    for env_id in ("robosuite/Lift-v0", "robosuite/Stack-v0", "metaworld/MT1-v3", "metaworld/ML1-v3", "libero/LIBERO-v0"):
        assert env_id in listing and "simulator" in listing[env_id]["tags"], env_id
    assert listing["robosuite/Lift-v0"]["max_episode_steps"] == 300
    assert listing["metaworld/MT1-v3"]["max_episode_steps"] == 500


def test_robosuite_served_equals_local(sim_server: ServerProcess) -> None:
    local = RobosuiteTask(task="Lift", image_size=128)
    served = gymwire.make(sim_server.url, "robosuite/Lift-v0", image_size=128)
    try:
        assert served.observation_space == local.observation_space and served.action_space == local.action_space
        assert served.observation_space["agentview_image"].shape == (128, 128, 3)
        assert served.observation_space["state"].shape == (8,)
        rng = np.random.default_rng(0)
        actions = [rng.uniform(-1, 1, 7).astype(np.float32) for _ in range(6)]
        ends = run_both(served, local, actions, {"seed": 7})
        assert len(ends) == 6 and not any(success for *_, success in ends)

        # A seed fixes the scene: the same seed again gives the same first frame, another seed another.
        first, _ = local.reset(seed=7)
        again, _ = served.reset(seed=7)
        other, _ = served.reset(seed=8)
        assert_same_obs(again, first, "seed 7 again")
        assert again["task_description"] == "pick up the red cube"
        assert other["agentview_image"].tobytes() != first["agentview_image"].tobytes()

        # An init state with the cube held 0.2 m over the table: success from Lift's own check, and
        # the episode ends on it on both sides.
        local.reset(seed=7)
        sim = local.sim_env.sim
        flat = sim.get_state().flatten()
        z = 1 + sim.model.get_joint_qpos_addr("cube_joint0")[0] + 2
        flat[z] += 0.2
        ends = run_both(served, local, [np.zeros(7, np.float32)] * 3, {"seed": 7, "options": {"init_state": flat.tolist()}})
        assert ends == [(1.0, True, False, True)]
    finally:
        served.close()
        local.close()


def test_robosuite_state_continues_the_same_episode(sim_server: ServerProcess) -> None:
    # get_state carries MuJoCo's integration state, the controllers' goals and caches, the
    # grippers' ramps and the sensors' clocks (robosuite_tasks.py): the same actions after
    # set_state give the same observations, byte for byte, in this session and in another one.
    first = gymwire.make(sim_server.url, "robosuite/Door-v0")
    second = gymwire.make(sim_server.url, "robosuite/Door-v0")
    try:
        obs, info = first.reset(seed=1)
        assert info["task"] == "open the door" and obs["robot0_eye_in_hand_image"].shape == (128, 128, 3)
        rng = np.random.default_rng(3)
        actions = [rng.uniform(-1, 1, 7).astype(np.float32) for _ in range(3)]
        first.step(actions[0])
        state = first.get_state()
        ahead = [first.step(action)[0] for action in actions[1:]]
        first.set_state(state)
        second.reset(seed=9)
        second.set_state(state)
        for t, action in enumerate(actions[1:]):
            assert_same_obs(first.step(action)[0], ahead[t], f"restored, step {t}")
            assert_same_obs(second.step(action)[0], ahead[t], f"other session, step {t}")
        with pytest.raises(ServerError) as bad:
            second.set_state(b"not a state")
        assert bad.value.code == "ENV_ERR_INVALID_STATE"
    finally:
        first.close()
        second.close()


def test_metaworld_served_equals_local_with_success(sim_server: ServerProcess) -> None:
    from metaworld.policies import SawyerReachV3Policy

    kwargs = {"task": "reach-v3", "image_size": 128, "terminate_on_success": True}
    local = MetaWorldTask(**kwargs)
    served = gymwire.make(sim_server.url, "metaworld/MT1-v3", **kwargs)
    try:
        assert served.observation_space == local.observation_space
        # Goals by seed: two seeds draw two of MT1's 50 goal variations.
        _, info_a = served.reset(seed=0)
        _, info_b = served.reset(seed=5)
        assert info_a["task_index"] != info_b["task_index"]
        # Meta-World's scripted policy reaches the goal: success and the episode's end agree.
        policy = SawyerReachV3Policy()
        obs, _ = local.reset(seed=5)
        actions = []
        for _ in range(150):
            action = np.clip(policy.get_action(obs["state"]), -1, 1).astype(np.float32)
            actions.append(action)
            obs, _, terminated, _, _ = local.step(action)
            if terminated:
                break
        assert terminated, "the scripted policy should reach the goal"
        ends = run_both(served, local, actions, {"seed": 5})
        assert ends[-1][1] and ends[-1][3] and not any(success for *_, success in ends[:-1])
    finally:
        served.close()
        local.close()


def test_make_vec_of_a_rendering_env_equals_gymnasiums_vector_env_and_keeps_its_frames(sim_server: ServerProcess) -> None:
    # Meta-World's Dict observation (camera images, state, the task's text) batched key by key on
    # the wire: each image batch is the decoded tensor itself, not a copy stacked on this side.
    import gymnasium as gym

    kwargs = {"task": "reach-v3", "image_size": 64}
    local = gym.vector.SyncVectorEnv([lambda: MetaWorldTask(**kwargs) for _ in range(2)], autoreset_mode=gym.vector.AutoresetMode.SAME_STEP)
    served = gymwire.make_vec(sim_server.url, "metaworld/MT1-v3", num_envs=2, autoreset_mode="same_step", **kwargs)
    try:
        assert served.observation_space == local.observation_space
        s_obs, _ = served.reset(seed=[3, 4])
        l_obs, _ = local.reset(seed=[3, 4])
        rng = np.random.default_rng(1)
        for t in range(4):
            assert_same_obs(s_obs, l_obs, f"step {t}")
            images = [key for key, space in local.single_observation_space.spaces.items() if len(getattr(space, "shape", ()) or ()) == 3]
            assert images, "the task renders camera images"
            for key in images:
                assert not s_obs[key].flags.owndata and not s_obs[key].flags.writeable, key
            actions = rng.uniform(-1, 1, (2, 4)).astype(np.float32)
            s_obs, s_r, s_term, s_trunc, _ = served.step(actions)
            l_obs, l_r, l_term, l_trunc, _ = local.step(actions)
            assert np.array_equal(s_r, l_r) and np.array_equal(s_term, l_term) and np.array_equal(s_trunc, l_trunc)
    finally:
        served.close()
        local.close()


def test_metaworld_ml1_test_split_and_bad_kwargs(sim_server: ServerProcess) -> None:
    served = gymwire.make(sim_server.url, "metaworld/ML1-v3", task="push-v3", split="test")
    try:
        obs, info = served.reset(seed=0, options={"task_index": 3})
        assert obs.shape == (39,) and info["task_index"] == 3 and info["task"] == "push-v3"
    finally:
        served.close()
    with pytest.raises(ServerError) as bad:
        gymwire.make(sim_server.url, "robosuite/Lift-v0", image_size=64)
    assert bad.value.code == "ENV_ERR_INVALID_KWARGS"
    with pytest.raises(ServerError) as unknown:
        gymwire.make(sim_server.url, "metaworld/MT1-v3", task="fly-v3")
    assert unknown.value.code == "ENV_ERR_ENV_FAILURE" and "unknown Meta-World task 'fly-v3'" in unknown.value.message


def test_libero_says_what_is_missing(sim_server: ServerProcess) -> None:
    try:
        import libero  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("LIBERO is installed here; this checks the message where it is not")
    with pytest.raises(ServerError) as missing:
        gymwire.make(sim_server.url, "libero/LIBERO-v0", suite="libero_spatial", task_id=0)
    assert missing.value.code == "ENV_ERR_UNSUPPORTED"
    assert "LIBERO's Python package" in missing.value.message and "pip install -e LIBERO" in missing.value.message


def test_sessions_are_closed(sim_server: ServerProcess) -> None:
    # Where a user looks: the server's /metrics holds no session of the tests above.
    assert sessions_left(sim_server.url, wait=30) == 0
    assert os.environ.get("MUJOCO_GL") in ("osmesa", "egl")

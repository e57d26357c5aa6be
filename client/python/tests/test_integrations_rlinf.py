"""RLinf: RemoteGymEnv's env-worker surface without RLinf installed (numpy tensors).

RLinf's own code paths (validate_cfg, EnvWorker in a Ray actor, registration) are tested in
tests/frameworks/test_rlinf.py, which scripts/test-frameworks.sh runs in a venv with RLinf.
"""

from __future__ import annotations

import inspect
import sys

import numpy as np
import pytest

from gymwire.integrations import rlinf as gw_rlinf
from gymwire.integrations.rlinf import RemoteGymEnv, dataset_to_rlinf

EVAC = "gymwire/EvacWorldModel-v0"


def cfg(url: str, env_id: str, **extra):
    return {"gymwire": {"url": url, "env_id": env_id}, "seed": 1, "group_size": 1, "use_fixed_reset_state_ids": True, **extra}


def test_constructor_signature_matches_the_env_worker_call() -> None:
    params = list(inspect.signature(RemoteGymEnv.__init__).parameters)
    assert params[:6] == ["self", "cfg", "num_envs", "seed_offset", "total_num_processes", "worker_info"]
    assert list(inspect.signature(RemoteGymEnv.reset).parameters)[:3] == ["self", "env_idx", "reset_state_ids"]
    assert isinstance(RemoteGymEnv.is_start, property) and RemoteGymEnv.is_start.fset is not None


def test_world_model_env_chunk_step_shapes(url: str) -> None:
    env = RemoteGymEnv(cfg=cfg(url, EVAC), num_envs=2, seed_offset=0, total_num_processes=1, worker_info=None)
    try:
        obs, info = env.reset()
        assert info == {}
        assert obs["main_images"].dtype == np.uint8 and obs["main_images"].shape == (2, 64, 64, 3)
        assert obs["states"].shape == (2, 16) and obs["states"].dtype == np.float32
        assert len(obs["task_descriptions"]) == 2 and all(isinstance(t, str) and t for t in obs["task_descriptions"])
        assert obs["wrist_images"] is None
        env.is_start = False
        actions = np.zeros((2, 8, 7), dtype=np.float32)
        obs_list, rewards, terms, truncs, infos = env.chunk_step(actions)
        assert len(obs_list) == 1  # a native chunk env returns [obs], as RLinf's world-model envs do
        assert rewards.shape == terms.shape == truncs.shape == (2, 8)
        assert rewards.dtype == np.float32 and terms.dtype == np.bool_ and truncs.dtype == np.bool_
        ep = infos[-1]["episode"]
        assert set(ep) == {"success_once", "return", "episode_len", "reward"} and all(np.asarray(v).shape == (2,) for v in ep.values())
        assert list(env.elapsed_steps) == [8, 8]
    finally:
        env.close()


def test_per_step_env_chunks_and_auto_reset(url: str) -> None:
    env = RemoteGymEnv(cfg=cfg(url, "gymwire/CartPole-v1", auto_reset=True), num_envs=3, seed_offset=0, total_num_processes=1)
    try:
        env.is_start = True
        saw_reset = False
        for _ in range(40):
            obs_list, rewards, terms, truncs, infos = env.chunk_step(np.ones((3, 5, 1), dtype=np.int64))
            assert len(obs_list) == 5 and rewards.shape == (3, 5)
            assert not terms[:, :-1].any() and not truncs[:, :-1].any()  # collapsed onto the last column
            if terms[:, -1].any():
                last = infos[-1]
                assert last["_final_observation"].tolist() == terms[:, -1].tolist()
                assert last["final_observation"]["states"].shape == (3, 4)
                i = int(np.argmax(terms[:, -1]))
                assert not np.array_equal(last["final_observation"]["states"][i], obs_list[-1]["states"][i])
                saw_reset = True
                break
        assert saw_reset
    finally:
        env.close()


def test_reset_state_ids_are_shared_within_groups_and_reproducible(url: str) -> None:
    c = cfg(url, "gymwire/CartPole-v1", group_size=2, use_fixed_reset_state_ids=True)
    env = RemoteGymEnv(cfg=c, num_envs=4, seed_offset=1, total_num_processes=2)
    try:
        ids = env.reset_state_ids
        assert ids[0] == ids[1] and ids[2] == ids[3]
        obs, _ = env.reset()
        assert np.array_equal(obs["states"][0], obs["states"][1])
        env.update_reset_state_ids()
        assert not np.array_equal(ids, env.reset_state_ids)
    finally:
        env.close()


def test_offload_through_get_state_and_load_state(url: str) -> None:
    env = RemoteGymEnv(cfg=cfg(url, "gymwire/Conformance-v0"), num_envs=2, seed_offset=0, total_num_processes=1)
    try:
        env.reset()
        env.is_start = False
        snapshot = env.get_state()
        assert isinstance(snapshot, bytes)
        a = np.full((2, 3, 2), 0.2, dtype=np.float32)
        first = env.chunk_step(a)
        env.load_state(snapshot)
        second = env.chunk_step(a)
        assert np.array_equal(first[1], second[1])
        assert np.array_equal(first[0][-1]["states"], second[0][-1]["states"])
        env.offload()
        env.onload()
    finally:
        env.close()


def test_register_without_rlinf_says_so() -> None:
    if "rlinf" in sys.modules:
        pytest.skip("rlinf is importable here")
    with pytest.raises(ImportError):
        gw_rlinf.register()


def test_dataset_to_rlinf_shapes(cartpole_dataset) -> None:
    out = dataset_to_rlinf(cartpole_dataset, num_action_chunks=4)
    E, S, C = out["rewards"].shape
    assert E == 2 and C == 4 and out["states"].shape == (2, S, 4)
    assert out["mask"].sum() == out["rewards"].sum()

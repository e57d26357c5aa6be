"""RLinf: RemoteGymEnv against RLinf's env-worker contract, and the registration patch.

RLinf cannot be installed here without its GPU stack (torch, ray, simulators), so the worker's
calls, observation keys and tensor shapes are pinned from framework-contracts.md (RLinf a3816b59)
and the patch is tested against modules laid out like rlinf.workers.env.
"""

from __future__ import annotations

import inspect
import sys
import types

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
    c = cfg(url, "gymwire/CartPole-v1", group_size=2, use_fixed_reset_state_ids=False)
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


@pytest.fixture
def fake_rlinf(monkeypatch):
    """Modules laid out like rlinf.workers.env.*, whose lookups refuse unknown types like SupportedEnvType."""

    def get_env_cls(env_type, env_cfg=None, enable_offload=False):
        if env_type not in ("maniskill", "libero"):
            raise ValueError(f"'{env_type}' is not a valid SupportedEnvType")
        return f"<{env_type} class>"

    def prepare_actions(raw_chunk_actions, env_type, model_type, num_action_chunks, action_dim, action_scale=1.0, policy=None, wm_env_type=None, env_cfg=None):
        if env_type not in ("maniskill", "libero"):
            raise ValueError(f"'{env_type}' is not a valid SupportedEnvType")
        return "libero-actions"

    mods = {}
    for name in ("rlinf", "rlinf.workers", "rlinf.workers.env", "rlinf.workers.env.env_worker", "rlinf.workers.env.rtc_env_worker"):
        mods[name] = types.ModuleType(name)
        monkeypatch.setitem(sys.modules, name, mods[name])
    mods["rlinf.workers.env.env_worker"].get_env_cls = get_env_cls
    mods["rlinf.workers.env.env_worker"].prepare_actions = prepare_actions
    mods["rlinf.workers.env.rtc_env_worker"].prepare_actions = prepare_actions
    return mods


def test_register_patches_every_lookup_by_name(fake_rlinf) -> None:
    patched = gw_rlinf.register()
    assert patched == [
        "rlinf.workers.env.env_worker.get_env_cls",
        "rlinf.workers.env.env_worker.prepare_actions",
        "rlinf.workers.env.rtc_env_worker.prepare_actions",
    ]
    worker = fake_rlinf["rlinf.workers.env.env_worker"]
    assert worker.get_env_cls("gymwire", {}) is RemoteGymEnv
    assert worker.get_env_cls("libero", {}) == "<libero class>"
    raw = np.arange(2 * 4 * 7, dtype=np.float32).reshape(2, 28)
    out = worker.prepare_actions(raw, "gymwire", "openvla", 4, 7, 1.0)
    assert out.shape == (2, 4, 7)
    assert fake_rlinf["rlinf.workers.env.rtc_env_worker"].prepare_actions(raw, "gymwire", model_type="x", num_action_chunks=4, action_dim=7).shape == (2, 4, 7)
    assert worker.prepare_actions(raw, "libero", "openvla", 4, 7) == "libero-actions"
    assert gw_rlinf.register() == []  # idempotent


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

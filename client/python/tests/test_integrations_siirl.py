"""siiRL: the LIBEROAdapter surface and the multi-agent env_path class.

siiRL cannot be imported here without its GPU stack; the adapter's constructor, methods and record
keys are pinned from framework-contracts.md (siiRL af00a771), and the patch is tested against a
module laid out like siirl.engine.rollout.embodied_rollout.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
import types

import numpy as np

from gymwire.integrations import siirl as gw_siirl
from gymwire.integrations.siirl import GymwireLIBEROAdapter, GymwireTextEnv

INIT_KEYS = {"type", "obs", "task_description", "valid_images", "task_file_name", "active", "complete", "finish_step"}
STEP_KEYS = {"type", "obs", "active", "complete", "finish_step", "valid_images"}
OBS_KEYS = {"agentview_image", "robot0_eye_in_hand_image", "robot0_eef_pos", "robot0_eef_quat", "robot0_gripper_qpos"}


def test_constructor_matches_embodied_rollouts_call() -> None:
    params = list(inspect.signature(GymwireLIBEROAdapter.__init__).parameters)
    assert params[:7] == ["self", "env_name", "num_envs", "max_steps", "num_steps_wait", "model_family", "gpu_ids"]
    assert list(inspect.signature(GymwireLIBEROAdapter._blocking_reset).parameters) == ["self", "task_ids", "trial_ids"]
    assert list(inspect.signature(GymwireLIBEROAdapter._blocking_step).parameters) == ["self", "data"]
    assert inspect.iscoroutinefunction(GymwireTextEnv.step)


def test_adapter_records(url: str, monkeypatch) -> None:
    monkeypatch.setenv("GYMWIRE_URL", url)
    monkeypatch.setenv("GYMWIRE_ENV_ID", "gymwire/EvacWorldModel-v0")
    adapter = GymwireLIBEROAdapter("libero_spatial", 3, 64, 0, "openvla", [0])
    try:
        records = adapter._blocking_reset([0, 1], [0, 0])
        assert len(records) == 2 and all(set(r) == INIT_KEYS and r["type"] == "init" for r in records)
        obs = records[0]["obs"]
        assert set(obs) == OBS_KEYS and obs["agentview_image"].shape == (64, 64, 3) and obs["robot0_eef_quat"].shape == (4,)
        steps = adapter._blocking_step({"indices": [0, 1], "actions": np.zeros((2, 8, 7), np.float32)})
        assert len(steps) == 2 and all(set(r) == STEP_KEYS and r["type"] == "step" for r in steps)
        assert len(steps[0]["valid_images"]) == 1 and steps[0]["active"] is True
        # Once env 0 is done, siiRL lists only env 1 but still sends actions for every env, by env id.
        later = adapter._blocking_step({"indices": [1], "actions": np.zeros((2, 8, 7), np.float32)})
        assert later[0] is None and later[1]["type"] == "step"
        assert adapter.steps.tolist()[:2] == [8, 16]
        again = adapter._blocking_reset([0], [0])
        assert np.array_equal(again[0]["obs"]["robot0_eef_pos"], records[0]["obs"]["robot0_eef_pos"])
    finally:
        adapter.close()


def test_register_replaces_the_module_attribute(monkeypatch) -> None:
    for name in ("siirl", "siirl.engine", "siirl.engine.rollout"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    mod = types.ModuleType("siirl.engine.rollout.embodied_rollout")
    mod.LIBEROAdapter = object
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    assert gw_siirl.register() is True and mod.LIBEROAdapter is GymwireLIBEROAdapter


def test_text_env_step(url: str, monkeypatch) -> None:

    monkeypatch.setattr(gw_siirl, "_SETTINGS", {})
    gw_siirl.configure(url, "gymwire/CartPole-v1")

    async def main() -> None:
        # siiRL hands every agent's whole text (prompt plus reply) back as its action.
        env = GymwireTextEnv()
        obs, reward, stop = await env.step(["Reasoner: push right.", "Balance. Actor: <action>1</action>"], {"seed": 0})
        assert reward == 1.0 and not stop and len(obs) == 2
        assert obs[1].startswith("Balance. Actor: <action>1</action>") and "[gymwire episode " in obs[1] and "Observation:" in obs[1]
        obs, reward, stop = await GymwireTextEnv().step([obs[1] + " I think five. <action>5</action>"], None)
        assert reward == 0.0 and "refused" in obs[0]
        assert len(GymwireTextEnv.episodes) == 1  # the same trajectory, found by the tag in its text
        for _ in range(200):
            obs, _, stop = await GymwireTextEnv().step([obs[0] + "<action>1</action>"])
            if stop:
                break
        assert stop and len(GymwireTextEnv.episodes) == 0

    asyncio.run(main())

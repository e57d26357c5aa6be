"""verl: the VLA env class (EnvManager contract), the agent loop, the BaseTool keyed by request id.

These run in the SDK's own venv, without verl: signatures and shapes are pinned from
framework-contracts.md (verl b178a3cd) and the simulator-switch patch is tested against a module laid
out like verl.experimental.vla.workers.env.env_worker (verl 0.9.1 no longer has it). The integration
inside the real verl 0.9.1 is tested by tests/frameworks/verl_suite.py (scripts/test-frameworks.sh).
"""

from __future__ import annotations

import asyncio
import inspect
import pickle
import sys
import types

import numpy as np
import pytest
from fakes import CharTokenizer, ScriptedServerManager

from gymwire.integrations import verl as gw_verl
from gymwire.integrations.verl import GymWSAgentLoop, GymWSTool, RemoteGymEnv, dataset_to_verl, fetch_env_tool_schemas, parse_tool_calls

EVAC = "gymwire/EvacWorldModel-v0"


def test_signatures() -> None:
    assert list(inspect.signature(RemoteGymEnv.__init__).parameters) == ["self", "cfg", "rank", "world_size"]
    assert list(inspect.signature(RemoteGymEnv.reset_envs_to_state_ids).parameters) == ["self", "state_ids_list", "task_ids_list"]
    for m in ("chunk_step", "get_all_state_ids", "get_state", "load_state", "flush_video", "close"):
        assert callable(getattr(RemoteGymEnv, m))
    run = inspect.signature(GymWSAgentLoop.run)
    assert list(run.parameters)[:2] == ["self", "sampling_params"] and inspect.iscoroutinefunction(GymWSAgentLoop.run)
    assert list(inspect.signature(GymWSAgentLoop.__init__).parameters)[1:6] == ["trainer_config", "server_manager", "tokenizer", "processor", "dataset_cls"]
    assert list(inspect.signature(GymWSTool.__init__).parameters) == ["self", "config", "tool_schema"]
    assert list(inspect.signature(GymWSTool.execute).parameters)[:3] == ["self", "instance_id", "parameters"]
    for m in ("create", "execute", "calc_reward", "release"):
        assert inspect.iscoroutinefunction(getattr(GymWSTool, m))


def test_vla_env_obs_shapes_and_picklable_returns(url: str) -> None:
    env = RemoteGymEnv({"num_envs": 2, "gymwire": {"url": url, "env_id": EVAC, "num_state_ids": 50}}, rank=0, world_size=1)
    try:
        obs, info = env.reset_envs_to_state_ids([3, 4], [0, 1])
        ias = obs["images_and_states"]
        assert ias["full_image"].shape == (2, 64, 64, 3) and ias["full_image"].dtype == np.uint8
        assert ias["state"].shape == (2, 16)
        assert len(obs["task_descriptions"]) == 2
        out = env.chunk_step(np.zeros((2, 8, 7), np.float32))
        obs2, rews, terms, truncs, infos = out
        assert rews.shape == terms.shape == truncs.shape == (2, 8) and terms.dtype == np.bool_
        assert pickle.loads(pickle.dumps(out))[1].shape == (2, 8)  # crosses mp.Queue
        assert list(env.get_all_state_ids()) == list(range(50))
        # Same state id, same start.
        again, _ = env.reset_envs_to_state_ids([3, 4], [0, 1])
        assert np.array_equal(again["images_and_states"]["state"], ias["state"])
        env.flush_video()
        buf = env.get_state()
        env.load_state(buf)
    finally:
        env.close()


def test_register_patches_the_simulator_switch(monkeypatch) -> None:
    built = []

    class EnvWorker:
        def __init__(self, cfg):
            self.cfg = cfg

        def init_worker(self):
            if self.cfg.train.simulator_type not in ("libero", "isaac"):
                raise NotImplementedError(self.cfg.train.simulator_type)
            self.simulator_list = [types.SimpleNamespace(env_cls="LiberoEnv")]
            built.append(self.cfg.train.simulator_type)

    for name in ("verl", "verl.experimental", "verl.experimental.vla", "verl.experimental.vla.workers", "verl.experimental.vla.workers.env"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    mod = types.ModuleType("verl.experimental.vla.workers.env.env_worker")
    mod.EnvWorker = EnvWorker
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    assert gw_verl.register() is True
    w = EnvWorker(types.SimpleNamespace(train=types.SimpleNamespace(simulator_type="gymwire")))
    w.init_worker()
    assert w.simulator_list[0].env_cls is RemoteGymEnv and w.cfg.train.simulator_type == "gymwire"
    other = EnvWorker(types.SimpleNamespace(train=types.SimpleNamespace(simulator_type="libero")))
    other.init_worker()
    assert other.simulator_list[0].env_cls == "LiberoEnv"


def test_register_without_verl_returns_false() -> None:
    if "verl" in sys.modules:
        pytest.skip("verl is importable here")
    assert gw_verl.register() is False


def test_parse_tool_calls() -> None:
    text = 'x <tool_call>{"name": "step", "arguments": {"action": 1}}</tool_call> <tool_call>{bad}</tool_call>'
    assert parse_tool_calls(text) == [{"name": "step", "arguments": {"action": 1}}]


def test_agent_loop_episode_and_masks(url: str) -> None:
    call = '<tool_call>{"name": "step", "arguments": {"action": 1}}</tool_call>'
    loop = GymWSAgentLoop({"gymwire": {"url": url}}, ScriptedServerManager([call, call, call, "finished"]), CharTokenizer(), None, None, None, max_turns=10)
    out = asyncio.run(loop.run({"temperature": 1.0}, env_id="gymwire/CartPole-v1", seed=0, raw_prompt=[{"role": "system", "content": "play"}]))
    assert out.reward_score == 3.0 and out.num_turns == 8
    assert len(out.response_ids) == len(out.response_mask) == len(out.response_logprobs)
    generated = sum(out.response_mask)
    assert generated == 3 * len(call) + len("finished")
    tool_part = [i for i, m in zip(out.response_ids, out.response_mask, strict=True) if m == 0]
    assert '"reward": 1.0' in "".join(chr(i) for i in tool_part)
    assert "play" in "".join(chr(i) for i in out.prompt_ids)


class AgentData(types.SimpleNamespace):
    """verl's per-trajectory AgentData, as the tools see it (a plain object: weakly referenceable)."""


def test_base_tool_keeps_one_session_per_trajectory_and_closes_it_when_verl_drops_the_trajectory(own_server_url: str) -> None:
    from conftest import sessions_left

    url = own_server_url

    schema = {"type": "function", "function": {"name": "step", "description": "", "parameters": {}}}
    cfg = {"url": url, "env_id": "gymwire/CartPole-v1", "seed": 0}

    async def main() -> None:
        # Two trajectories with the same request id (verl's full_determinism repeats det-<index>): two sessions.
        agent_a = AgentData(request_id="det-0", tools_kwargs={})
        agent_b = AgentData(request_id="det-0", tools_kwargs={})
        for _ in range(3):
            tool = GymWSTool(cfg, schema)  # ToolAgentLoop makes a fresh instance per call
            iid, _ = await tool.create()
            resp, reward, extra = await tool.execute(iid, {"action": 1}, agent_data=agent_a)
            await tool.release(iid)  # after every call, as ToolAgentLoop does: the trajectory's session stays
            assert reward == 1.0
        tool = GymWSTool(cfg, schema)
        iid, _ = await tool.create()
        _, _, extra_b = await tool.execute(iid, {"action": 1}, agent_data=agent_b)
        assert extra["episode_return"] == 3.0 and extra_b["episode_return"] == 1.0
        assert await tool.calc_reward(iid, agent_data=agent_a) == 3.0
        assert await tool.calc_reward(iid, agent_data=agent_a) == 0.0  # counted once over all tools
        bad, reward, extra = await tool.execute(iid, {"action": 9}, agent_data=agent_a)
        assert reward == 0.0 and "ENV_ERR_INVALID_ACTION" in bad.text
        assert len(GymWSTool.episodes) == 2
        del agent_a, agent_b  # verl drops the trajectories' AgentData when their run() returns
        for _ in range(50):
            await asyncio.sleep(0.02)
            if not len(GymWSTool.episodes):
                break
        assert len(GymWSTool.episodes) == 0

    asyncio.run(main())
    assert sessions_left(url) == 0
    entries = GymWSTool.tool_config(url, "gymwire/CartPole-v1", [schema])["tools"]
    assert entries[0]["class_name"].endswith("verl.GymWSTool") and entries[0]["config"]["type"] == "native"


def test_dataset_to_verl(cartpole_dataset) -> None:
    out = dataset_to_verl(cartpole_dataset)
    bs, steps = out["rews"].shape
    assert bs == 2 and out["state"].shape == (2, steps, 4) and out["complete"].shape == (2,)
    assert out["env_state_id"][0] == 4


def test_fetch_env_tool_schemas_reads_a_live_env(url: str) -> None:
    schemas = asyncio.run(fetch_env_tool_schemas(url, "gymwire/CartPole-v1"))
    names = [s["function"]["name"] for s in schemas]
    assert {"reset", "step"} <= set(names), names
    assert all(s["type"] == "function" for s in schemas)

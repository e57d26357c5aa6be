"""siiRL (the released package, see requirements-frameworks-siirl.txt) driving gymwire sessions.

siiRL's own ``EmbodiedHFRollout`` loop runs in a Ray actor registered only through Ray's
``worker_process_setup_hook`` (siirl_app/rollout_actor.py says what stands in for the GPU parts).
The multi-agent env is loaded the way siiRL's ``AgentProcess`` loads ``env_path`` and is re-created
every step as siiRL's multi-agent loop does; the tool goes through siiRL's own ``BaseTool`` and
schema models. LIBERO is not installed, as on a machine that uses gymwire instead.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest
import ray
from ray_start import init_ray

import gymwire
from gymwire.errors import ConnectFailedError, UnknownEnvError

APP = Path(__file__).parent / "siirl_app"
VJEPA = APP / "vjepa_stand_in"
EXAMPLES = Path(__file__).resolve().parents[4] / "examples" / "python"
CARTPOLE = "gymwire/CartPole-v1"
EVAC = "gymwire/EvacWorldModel-v0"
sys.path.insert(0, str(APP))
import multi_agent  # noqa: E402
import rollout_actor  # noqa: E402
from conftest import robosuite_server, sessions_left  # noqa: E402

sys.path.insert(0, str(EXAMPLES))
from _tiny_lm import build_tokenizer  # noqa: E402

ACTION = "<action>1</action>"


@pytest.fixture(scope="module")
def ray_cluster(url: str):
    env_vars = {"GYMWIRE_URL": url, "GYMWIRE_ENV_ID": CARTPOLE, "PYTHONPATH": os.pathsep.join([str(VJEPA), os.environ.get("PYTHONPATH", "")])}
    init_ray(
        num_cpus=2,
        include_dashboard=False,
        runtime_env={"env_vars": env_vars, "worker_process_setup_hook": "gymwire.integrations.siirl.register"},
    )
    ray.cloudpickle.register_pickle_by_value(rollout_actor)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny local model directory siiRL's load_tokenizer reads: a tokenizer trained here and a Qwen2 config."""
    from transformers import Qwen2Config

    path = tmp_path_factory.mktemp("tiny-lm")
    tok = build_tokenizer(path, ["Balance the pole.", ACTION, "Observation: [0.01, -0.02]", "[gymwire episode 0a1b] agent 0: agent 1: push right"])
    config = Qwen2Config(
        architectures=["Qwen2ForCausalLM"],
        vocab_size=len(tok),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
    )
    config.save_pretrained(path)
    return path


@pytest.fixture
def text_env(url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """GymwireTextEnv set for CartPole with siiRL's turn limit; its env_path entry."""
    from gymwire.integrations import siirl as gw_siirl
    from gymwire.integrations import siirl_env

    monkeypatch.setattr(gw_siirl, "_SETTINGS", {})
    gw_siirl.configure(url, CARTPOLE, max_turns=TURNS)
    return siirl_env.ENV_PATH


TURNS = 4


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    ("replies", "siirl_process_file"),
    [([ACTION], False), (["push right", ACTION], False), ([ACTION], True)],
    ids=["one-agent", "reasoner-and-actor", "siirls-example-process-file"],
)
def test_multi_agent_loop_plays_one_session_per_trajectory(model_dir: Path, text_env: str, url: str, replies: list[str], siirl_process_file: bool) -> None:
    """siiRL's MultiAgentLoop.generate_colocate (colocate_task per sample and agent) with a process file in the shape
    of siiRL's marft example, and with that example's own file as the siirl wheel installs it; the agents' SGLang
    engines are stand-ins (multi_agent.py says what else is)."""
    from gymwire.integrations.siirl import GymwireTextEnv

    process_file = multi_agent.siirl_example_process_file() if siirl_process_file else multi_agent.PROCESS_FILE
    assert process_file.is_file(), process_file
    loop = multi_agent.build_loop(model_dir, text_env, replies, max_turns=TURNS, process_file=process_file)
    actor = loop.node_queue[-1].node_id
    for _ in range(2):  # two batches
        result = multi_agent.run_batch(loop, ["Balance the pole."] * 2, seeds=[3, 4])
        assert sessions_left(url) == 0 and len(GymwireTextEnv.episodes) == 0  # ended at siiRL's last turn
        for steps in result[actor].values():
            assert [s.rewards for s in steps] == [1.0] * TURNS  # every turn's action reached CartPole; each reward once
            tags = set(GymwireTextEnv.EPISODE_RE.findall(steps[-1].original_prompt))
            assert len(tags) == 1  # one session for the whole trajectory
        assert len({GymwireTextEnv.EPISODE_RE.findall(s[-1].original_prompt)[0] for s in result[actor].values()}) == 2
    if siirl_process_file:
        return  # its prompts to the rollout are not token ids under transformers 5 (multi_agent.siirl_example_process_file)
    # Every agent's later prompts carry the observation (the reasoner's come through siiRL's obs routing).
    decoded = loop.node_queue[0].agent_process.tokenizer.decode(loop.rollouts[0].prompts[-1])
    assert "Observation:" in decoded


@pytest.mark.timeout(600)  # two fresh imports of siiRL (torch, transformers, tensorflow) in child processes
def test_register_does_not_end_the_process_without_libero() -> None:
    code = (
        "import importlib.util, sys\n"
        "assert importlib.util.find_spec('libero') is None\n"
        "from gymwire.integrations import siirl\n"
        "print('patched', siirl.register())\n"
        "import siirl.environment.embodied as e\n"
        "print('adapter', e.LIBEROAdapter.__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(VJEPA)})
    assert out.returncode == 0, out.stderr[-3000:]
    assert "patched True" in out.stdout and "adapter GymwireLIBEROAdapter" in out.stdout
    # Without gymwire, siiRL's own adapter module ends the process with exit code 0: the failure the issue names.
    bare = subprocess.run([sys.executable, "-c", "import siirl.environment.embodied\nprint('imported')"], capture_output=True, text=True, timeout=300)
    assert "imported" not in bare.stdout


@pytest.mark.timeout(900)
def test_embodied_rollout_in_a_ray_actor_with_envs_finishing_early(ray_cluster) -> None:
    actor = rollout_actor.EmbodiedRolloutActor.remote("libero_10", num_envs=4, max_steps=48, chunk=4, action_dim=1)
    try:
        probe = ray.get(actor.probe.remote())
        assert probe["pid"] != os.getpid()
        assert probe["adapter"] == "gymwire.integrations.siirl.GymwireLIBEROAdapter" and probe["module_adapter"] == "GymwireLIBEROAdapter"
        out = ray.get(actor.run.remote([0, 1, 2, 3], [0, 0, 0, 0]))
    finally:
        ray.get(actor.close.remote())
    assert out["steps"] == 12  # siiRL's loop: 48 steps in chunks of 4
    balanced, pushed = out["finish_step"][0::2], out["finish_step"][1::2]
    assert balanced == [48, 48]  # the balancing envs got their own actions after their neighbours were done
    assert all(0 < s < 48 for s in pushed)  # the envs pushed one way fell early...
    assert out["elapsed"][1::2] == pushed  # ...and were never stepped again
    assert out["complete"] == [False] * 4  # CartPole has no success signal: a fall is not a completed task
    assert out["full_image"] is None and out["state"] == [8]


@pytest.mark.timeout(600)
def test_embodied_rollout_reads_world_model_images(ray_cluster, url: str) -> None:
    actor = rollout_actor.EmbodiedRolloutActor.options(runtime_env={"env_vars": {"GYMWIRE_ENV_ID": EVAC}}).remote(
        "libero_10", num_envs=2, max_steps=16, chunk=8, action_dim=7
    )
    try:
        out = ray.get(actor.run.remote([0, 1], [0, 0]))
    finally:
        ray.get(actor.close.remote())
    assert out["full_image"] == [224, 224, 3]  # resized as siiRL's OpenVLA input expects
    assert out["frames"] == [3.0, 3.0]  # the reset frame and one frame per chunk reach siiRL's video embedding


def sha256(image: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(image).tobytes()).hexdigest()


@pytest.mark.timeout(900)
def test_embodied_rollout_runs_a_served_robosuite_task(ray_cluster) -> None:
    """siiRL's rollout loop in its Ray actor over gymwire sessions of robosuite/Lift-v0, with a seeded
    stand-in VLA: the policy is handed what siiRL's OpenVLA input expects (upright 224x224 uint8
    images, LIBERO's 8-number state from the end-effector quaternion), the video embedding gets
    the upright agent-view frames, and a direct session with the same reset seeds and actions
    gives the same bytes."""
    from PIL import Image

    server = robosuite_server()
    kwargs = {"image_size": 128, "flip_images": True}
    env_vars = {"GYMWIRE_URL": server.url, "GYMWIRE_ENV_ID": "robosuite/Lift-v0", "GYMWIRE_ENV_KWARGS": json.dumps(kwargs), "GYMWIRE_STANDIN_SEED": "3"}
    try:
        actor = rollout_actor.EmbodiedRolloutActor.options(runtime_env={"env_vars": env_vars}).remote(
            "libero_10", num_envs=2, max_steps=16, chunk=8, action_dim=7
        )
        try:
            out = ray.get(actor.run.remote([0, 1], [0, 0]))
        finally:
            ray.get(actor.close.remote())
        assert out["steps"] == 2 and out["full_image"] == [224, 224, 3] and out["input_dtype"] == "uint8" and out["state"] == [8]
        assert len(out["actions"]) == 2 and len(out["input_sha256"]) == 2

        def policy_image(frame: np.ndarray) -> np.ndarray:
            return np.asarray(Image.fromarray(frame).resize((224, 224), Image.Resampling.LANCZOS))

        for i in range(2):
            direct = gymwire.make(server.url, "robosuite/Lift-v0", **kwargs)
            try:
                obs, _ = direct.reset(seed=i * 100_003)  # (task i, trial 0): the adapter's reset seed
                assert out["video_first_frames"][i] == sha256(obs["agentview_image"])
                for k, chunk in enumerate(out["actions"]):
                    assert out["input_sha256"][k][i] == sha256(policy_image(obs["agentview_image"])), f"env {i}, step {k}"
                    np.testing.assert_allclose(out["input_states"][k][i], obs["state"], rtol=0, atol=1e-6)
                    for row in np.asarray(chunk, dtype=np.float32)[i]:
                        obs, *_ = direct.step(row)
            finally:
                direct.close()
    finally:
        server.stop()


def test_wrong_action_shape_unknown_env_and_a_down_server_are_clear_errors(url: str) -> None:
    import numpy as np

    from gymwire.integrations.siirl import GymwireLIBEROAdapter

    adapter = GymwireLIBEROAdapter("libero_10", 2, 16, url=url, env_id=EVAC)
    try:
        adapter._blocking_reset([0, 1], [0, 0])
        with pytest.raises(ValueError, match=r"actions have shape \(2, 8, 5\), which is not \[num_envs, chunk, 7\]"):
            adapter._blocking_step({"indices": [0, 1], "actions": np.zeros((2, 8, 5), np.float32)})
    finally:
        adapter.close()
    with pytest.raises(UnknownEnvError, match="NoSuchEnv"):
        GymwireLIBEROAdapter("libero_10", 1, 16, url=url, env_id="gymwire/NoSuchEnv-v0")
    with pytest.raises(ConnectFailedError):
        GymwireLIBEROAdapter("libero_10", 1, 16, url="ws://127.0.0.1:9", env_id=CARTPOLE)


def test_text_env_from_env_path_survives_re_creation_every_step(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from siirl.execution.dag.node import AgentProcess  # the class whose load_attr reads env_path

    from gymwire.integrations import siirl_env

    monkeypatch.setenv("GYMWIRE_URL", url)
    monkeypatch.setenv("GYMWIRE_ENV_ID", CARTPOLE)
    env_cls = AgentProcess.load_attr(None, *siirl_env.ENV_PATH.rsplit(":", 1))
    assert env_cls.__name__ == "GymwireTextEnv"

    async def episode() -> tuple[int, float]:
        obs, steps, total = ["Balance the pole."], 0, 0.0
        for _ in range(100):
            env = env_cls()  # siiRL's env manager builds a new instance for every step
            obs, reward, stop = await env.step(actions=obs[:1] + ["1"], ground_truth={"seed": 3})
            steps, total = steps + 1, total + reward
            if stop:
                return steps, total
        raise AssertionError("the episode never ended")

    steps, total = asyncio.run(episode())
    assert 5 <= steps < 100 and total == steps  # one episode of CartPole pushed right, not 100 first steps


def test_tool_lifecycle_as_siirls_sglang_rollout_drives_it(url: str) -> None:
    """What siiRL's SGLang rollout does per request: create every tool with the request id, execute, then
    calc_reward and release for every tool (concurrently). Two batches of two requests."""
    from siirl.execution.rollout_flow.multiturn.tools.base_tool import BaseTool
    from siirl.execution.rollout_flow.multiturn.tools.schemas import OpenAIFunctionToolSchema

    from gymwire.integrations.siirl import GymwireSiirlTool
    from gymwire.integrations.verl import fetch_env_tool_schemas

    entries = GymwireSiirlTool.tool_config(url, CARTPOLE, asyncio.run(fetch_env_tool_schemas(url, CARTPOLE)))["tools"]
    tools = {e["tool_schema"]["function"]["name"]: GymwireSiirlTool(e["config"], OpenAIFunctionToolSchema(**e["tool_schema"])) for e in entries}
    assert all(isinstance(t, BaseTool) for t in tools.values()) and {"step", "reset"} <= set(tools)

    async def request(request_id: str, seed: int, steps: int) -> tuple[list[float], dict[str, float]]:
        for tool in tools.values():
            assert await tool.create(request_id, seed=seed) == request_id
        rewards = []
        for _ in range(steps):
            text, reward, _ = await tools["step"].execute(request_id, {"action": 1})
            payload = json.loads(text)
            assert "obs" in payload or "has ended" in payload["error"]  # after the end: refused, no second episode
            rewards.append(reward)

        async def calc_reward_and_release(name: str, tool) -> tuple[str, float]:
            reward = await tool.calc_reward(request_id)
            await tool.release(request_id)
            return name, reward

        return rewards, dict(await asyncio.gather(*(calc_reward_and_release(n, t) for n, t in tools.items())))

    async def batch() -> list:
        return await asyncio.gather(request(uuid.uuid4().hex, 3, 3), request(uuid.uuid4().hex, 4, 40))

    for _ in range(2):
        (short_rewards, short_calc), (long_rewards, long_calc) = asyncio.run(batch())
        assert short_rewards == [1.0] * 3 and sum(short_calc.values()) == 3.0  # the return, counted once over the tools
        assert 5 <= sum(long_rewards) < 40 and long_rewards[-1] == 0.0  # the episode ended; later calls start no new one
        assert sum(long_calc.values()) == sum(long_rewards)
        assert sessions_left(url) == 0 and len(GymwireSiirlTool.episodes) == 0  # release closed what the episode end did not


@pytest.mark.timeout(600)
def test_example_runs_siirl_code(url: str) -> None:
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "siirl_libero.py")],
        capture_output=True,
        text=True,
        timeout=500,
        env={**os.environ, "GYMWIRE_URL": url, "PYTHONPATH": str(VJEPA)},
    )
    assert out.returncode == 0, f"{out.stdout[-2000:]}\n{out.stderr[-3000:]}"

"""siiRL (the released package, see requirements-frameworks-siirl.txt) driving gymwire sessions.

siiRL's own ``EmbodiedHFRollout`` loop runs in a Ray actor registered only through Ray's
``worker_process_setup_hook`` (siirl_app/rollout_actor.py says what stands in for the GPU parts).
The multi-agent env is loaded the way siiRL's ``AgentProcess`` loads ``env_path`` and is re-created
every step as siiRL's multi-agent loop does; the tool goes through siiRL's own ``BaseTool`` and
schema models. LIBERO is not installed, as on a machine that uses gymwire instead.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import ray
from ray_start import init_ray

from gymwire.errors import ConnectFailedError, UnknownEnvError

APP = Path(__file__).parent / "siirl_app"
VJEPA = APP / "vjepa_stand_in"
EXAMPLES = Path(__file__).resolve().parents[4] / "examples" / "python"
CARTPOLE = "gymwire/CartPole-v1"
EVAC = "gymwire/EvacWorldModel-v0"
sys.path.insert(0, str(APP))
import rollout_actor  # noqa: E402


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


def test_tool_has_siirls_base_tool_shape(url: str) -> None:
    from siirl.execution.rollout_flow.multiturn.tools.base_tool import BaseTool
    from siirl.execution.rollout_flow.multiturn.tools.schemas import OpenAIFunctionToolSchema

    from gymwire.integrations.siirl import GymwireSiirlTool
    from gymwire.integrations.verl import fetch_env_tool_schemas

    entries = GymwireSiirlTool.tool_config(url, CARTPOLE, asyncio.run(fetch_env_tool_schemas(url, CARTPOLE)), seed=5)["tools"]
    step_entry = next(e for e in entries if e["tool_schema"]["function"]["name"] == "step")
    tool = GymwireSiirlTool(step_entry["config"], OpenAIFunctionToolSchema(**step_entry["tool_schema"]))  # siiRL's schema model accepts it
    assert isinstance(tool, BaseTool) and tool.name == "step"

    async def episode() -> list[float]:
        rewards = []
        instance = await tool.create()
        assert isinstance(instance, str)
        for _ in range(100):
            text, reward, metrics = await tool.execute(instance, {"action": 1})
            assert isinstance(text, str) and "obs" in json.loads(text)
            rewards.append(reward)
            if metrics.get("episode_done"):
                await tool.release(instance)
                return rewards
        raise AssertionError("the episode never ended")

    rewards = asyncio.run(episode())
    assert len(rewards) >= 5 and set(rewards) == {1.0}


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

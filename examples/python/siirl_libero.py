"""siiRL: gymwire sessions where siiRL's embodied rollout looks up LIBEROAdapter, and the env_path text env.

`register()` puts gymwire's adapter in place of siiRL's LIBERO one (siiRL's own module would end the
process when LIBERO is missing); siiRL's rollout then builds it by name, as here. In a training run
`register` reaches siiRL's Ray workers through `runtime_env={"worker_process_setup_hook": ...}`
(docs/integrations.md). The text env is loaded the way siiRL loads `env_path` and, as siiRL does,
built anew for every step. Needs siiRL (siirl==0.2.0, see docs/integrations.md); exits 1 without it.
Run: python examples/python/siirl_libero.py
"""

from __future__ import annotations

import asyncio
import sys

import numpy as np
from _server import check, server_url

try:
    from siirl.execution.dag.node import AgentProcess
except ImportError as e:
    print(f"FAILED: siiRL is not installed ({e}); install siirl==0.2.0 as docs/integrations.md says", file=sys.stderr)
    sys.exit(1)

from gymwire.integrations import siirl as gw_siirl
from gymwire.integrations.siirl_env import ENV_PATH

with server_url() as url:
    gw_siirl.configure(url, "gymwire/EvacWorldModel-v0")
    print("siiRL patched:", gw_siirl.register())
    import siirl.environment.embodied as embodied

    adapter = embodied.LIBEROAdapter(env_name="libero_10", num_envs=2, max_steps=64, num_steps_wait=0, model_family="openvla", gpu_ids=[0])
    records = adapter._blocking_reset(task_ids=[0, 1], trial_ids=[0, 0])
    print("adapter:", type(adapter).__name__, "init record keys:", sorted(records[0]), "obs keys:", sorted(records[0]["obs"]))
    for _ in range(3):
        steps = adapter._blocking_step({"indices": [0, 1], "actions": np.zeros((2, 8, 7), np.float32)})
    # Once env 0 is done siiRL lists only env 1 but still sends actions for every env, by env id.
    later = adapter._blocking_step({"indices": [1], "actions": np.zeros((2, 8, 7), np.float32)})
    adapter.close()
    print("step record:", {k: v for k, v in steps[0].items() if k not in ("obs", "valid_images")})
    check(type(adapter) is gw_siirl.GymwireLIBEROAdapter, "siiRL builds gymwire's adapter by its own name")
    check(all(r["type"] == "step" for r in steps) and len(steps[0]["valid_images"]) == 1, "siiRL step records")
    check(later[0] is None and later[1]["type"] == "step", "results are indexed by env id")
    try:
        from siirl.engine.rollout.embodied_rollout import EmbodiedHFRollout
    except ImportError as e:  # siiRL's rollout module also needs tensorflow and V-JEPA's package
        print(f"EmbodiedHFRollout not importable here ({e}); its _obs_to_input is patched when it builds the adapter")
    else:
        check(EmbodiedHFRollout._obs_to_input is gw_siirl.obs_to_input, "EmbodiedHFRollout reads gymwire observations")

    gw_siirl.configure(url, "gymwire/CartPole-v1")
    env_cls = AgentProcess.load_attr(None, *ENV_PATH.rsplit(":", 1))  # siiRL's own env_path loader

    async def episode() -> int:
        obs, steps = ["Balance the pole."], 0
        while True:
            obs, _, stop = await env_cls().step(actions=obs[:1] + ["1"], ground_truth={"seed": 3})
            steps += 1
            if stop or steps > 500:
                return steps

    length = asyncio.run(episode())
    print("text env episode length:", length)
    check(5 <= length < 500, "the text env keeps its episode across siiRL's per-step re-creation")

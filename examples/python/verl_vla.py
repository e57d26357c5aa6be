"""verl (before 0.9 only): the VLA env class verl's EnvManager runs, reset to dataset state ids and stepped in chunks.

In verl: `from gymwire.integrations.verl import register; register()` in the env worker process,
`env.train.simulator_type: gymwire` and `env.train.gymwire: {url, env_id}` in rob_ppo_trainer.yaml.
Needs verl with its VLA env manager (`verl.experimental.vla`, verl before 0.9); exits 1 without it.
On verl 0.9.1, the current release, it always exits 1: that release has no VLA env manager, so VLA
rollouts through verl are not possible there (docs/integrations.md, verl section). What does work on
0.9.1 is the agent loop and the tools: examples/python/verl_tools.py.
Run: python examples/python/verl_vla.py
"""

from __future__ import annotations

import importlib.util
import pickle
import sys

import numpy as np
from _server import check, server_url

try:
    import verl
except ImportError as e:
    print(f"FAILED: verl is not installed ({e}); see docs/integrations.md", file=sys.stderr)
    sys.exit(1)
if importlib.util.find_spec("verl.experimental.vla") is None:
    print(
        f"FAILED: verl {getattr(verl, '__version__', '')} has no VLA env manager (verl.experimental.vla was removed in 0.9; "
        "the VLA recipe moved to verl-recipe, which is not on PyPI), so VLA rollouts through verl cannot run on it. "
        "The agent loop and tools work on this verl: run examples/python/verl_tools.py; see docs/integrations.md",
        file=sys.stderr,
    )
    sys.exit(1)

from gymwire.integrations.verl import RemoteGymEnv, register

with server_url() as url:
    check(register(), "verl's EnvWorker is patched")
    env = RemoteGymEnv({"num_envs": 2, "gymwire": {"url": url, "env_id": "gymwire/EvacWorldModel-v0"}}, rank=0, world_size=1)
    obs, _ = env.reset_envs_to_state_ids([10, 11], [0, 0])
    total = np.zeros(2)
    for _ in range(4):
        obs, rews, terms, truncs, infos = env.chunk_step(np.zeros((2, 8, 7), np.float32))
        total += np.asarray(rews).sum(axis=1)
    saved = env.get_state()  # what EnvManager.stop_simulator keeps
    env.close()
    img = obs["images_and_states"]["full_image"]
    print("full_image", img.shape, "state", obs["images_and_states"]["state"].shape, "returns", total.round(3))
    check(len(pickle.dumps((obs, rews, terms, truncs))) > 0 and img.shape == (2, 64, 64, 3) and isinstance(saved, bytes), "verl VLA shapes")

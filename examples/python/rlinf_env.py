"""RLinf: RemoteGymEnv on the EVAC-style world model, driven the way RLinf's env worker drives it.

In RLinf: `from gymwire.integrations.rlinf import register; register()` before the env worker starts,
then `env.train.env_type: gymwire` with `gymwire: {url, env_id}` in the env config.
Run: python examples/python/rlinf_env.py
"""

from __future__ import annotations

import numpy as np
from _server import check, server_url

from gymwire.integrations.rlinf import RemoteGymEnv, register

with server_url() as url:
    try:
        print("patched:", register())
    except ImportError:
        print("rlinf is not installed: RemoteGymEnv is used directly below")
    cfg = {"gymwire": {"url": url, "env_id": "gymwire/EvacWorldModel-v0"}, "auto_reset": True, "seed": 0, "group_size": 2}
    env = RemoteGymEnv(cfg=cfg, num_envs=4, seed_offset=0, total_num_processes=1, worker_info=None)
    env.is_start = True
    rng = np.random.default_rng(0)
    rewards = []
    for _ in range(6):  # max_steps_per_rollout_epoch // num_action_chunks
        obs_list, r, terms, truncs, infos = env.chunk_step(rng.uniform(-0.2, 0.2, size=(4, 8, 7)).astype(np.float32))
        rewards.append(np.asarray(r))
    obs = obs_list[-1]
    print("main_images", obs["main_images"].shape, "states", obs["states"].shape, "task:", obs["task_descriptions"][0])
    print("rewards per chunk", np.stack(rewards).shape, "episode info keys", sorted(infos[-1]["episode"]))
    state = env.get_state()
    env.load_state(state)
    env.update_reset_state_ids()
    env.close()
    check(obs["main_images"].shape == (4, 64, 64, 3) and np.stack(rewards).shape == (6, 4, 8), "RLinf shapes")

"""RLinf: gymwire sessions through RLinf's own env lookup and action preparation.

Needs RLinf installed (pip install rlinf==0.3.0 with its torch/ray/hydra; see docs/integrations.md);
exits 1 without it. In a real RLinf run nothing here is written by hand: the config's Hydra callback
and RLINF_EXT_MODULE register gymwire, and RLinf's EnvWorker makes the calls below.
Run: python examples/python/rlinf_env.py
"""

from __future__ import annotations

import sys

import numpy as np
from _server import check, server_url

try:
    import torch
    from omegaconf import OmegaConf
    from rlinf.workers.env import env_worker
except ImportError as e:
    print(f"FAILED: RLinf is not installed ({e}); install rlinf==0.3.0 as docs/integrations.md says", file=sys.stderr)
    sys.exit(1)

from gymwire.integrations.rlinf import register

NUM_ENVS, CHUNKS, ACTION_DIM = 4, 8, 7

with server_url() as url:
    print("registered:", register())
    cfg = OmegaConf.create(
        {
            "env_type": "gymwire",
            "total_num_envs": NUM_ENVS,
            "group_size": 2,
            "seed": 0,
            "auto_reset": True,
            "ignore_terminations": False,
            "use_fixed_reset_state_ids": True,
            "max_episode_steps": 32,
            "reward_coef": 1.0,
            "use_rel_reward": False,
            "gymwire": {"url": url, "env_id": "gymwire/EvacWorldModel-v0"},
        }
    )
    # What RLinf's EnvWorker does: look the class up by env_type, build it, reset at init (auto_reset) ...
    env_cls = env_worker.get_env_cls(cfg.env_type, cfg)
    env = env_cls(cfg=cfg, num_envs=NUM_ENVS, seed_offset=0, total_num_processes=1, worker_info=None)
    obs, _ = env.reset()
    rng = np.random.default_rng(0)
    rewards = []
    ends = np.zeros(NUM_ENVS, dtype=np.int64)
    for _ in range(32 // CHUNKS):  # max_steps_per_rollout_epoch // num_action_chunks
        # ... and for each chunk, prepare the policy's flat actions with keyword arguments, then chunk_step.
        raw = torch.from_numpy(rng.uniform(-0.2, 0.2, size=(NUM_ENVS, CHUNKS * ACTION_DIM)).astype(np.float32))
        actions = env_worker.prepare_actions(
            raw_chunk_actions=raw,
            env_type=cfg.env_type,
            model_type="mlp_policy",
            num_action_chunks=CHUNKS,
            action_dim=ACTION_DIM,
            policy=None,
            wm_env_type=None,
        )
        obs_list, r, terms, truncs, infos = env.chunk_step(actions)
        rewards.append(r)
        ends += (terms | truncs)[:, -1].numpy()
    episode = infos[-1]["final_info"]["episode"]  # RLinf reads finished episodes' metrics here
    print("main_images", tuple(obs_list[-1]["main_images"].shape), "task:", obs_list[-1]["task_descriptions"][0])
    print("episode_len", episode["episode_len"].tolist(), "success_once", episode["success_once"].tolist())
    resets = env.sessions.reset_count.tolist()
    env.close()
    check(tuple(torch.stack(rewards).shape) == (4, NUM_ENVS, CHUNKS), "reward tensors are [N, C] per chunk")
    truncated = truncs[:, -1].numpy()
    check(truncated.any() and (episode["episode_len"].numpy()[truncated] == 32).all(), "max_episode_steps ends episodes at 32 frames")
    check(resets == (1 + ends).tolist(), f"one reset at start and one per finished episode, got {resets} for {ends.tolist()} ends")

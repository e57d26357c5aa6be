"""RLinf's embodied launcher reduced to its env worker, with this script standing in for the policy.

Laid out like RLinf's ``examples/embodiment/train_embodied_agent.py`` (Hydra main, ``validate_cfg``,
``Cluster``, ``HybridComponentPlacement``, ``EnvWorker.create_group(cfg).launch(...)``); the actor
and rollout groups need a VLA model and a GPU, so this script stands in for the policy and sends
the actions it would straight to RLinf's env worker methods, which run inside a Ray actor: fixed
chunks, or with GYMWIRE_STANDIN_SEED uniform chunks in [-1, 1] from a torch generator of that seed
(the stand-in VLA of the robosuite run). Nothing here
imports gymwire: registration comes only from the config's Hydra callback (driver) and
``RLINF_EXT_MODULE`` (workers). Prints one JSON line with what it saw.
"""

from __future__ import annotations

import hashlib
import json
import os

import hydra
import numpy as np
import torch
from rlinf.config import validate_cfg
from rlinf.scheduler import Cluster
from rlinf.utils.placement import HybridComponentPlacement
from rlinf.workers.env.env_worker import EnvWorker


class ProbedEnvWorker(EnvWorker):
    """RLinf's EnvWorker plus read-only probes of the process it runs in."""

    def probe(self) -> dict:
        from rlinf.workers.env import env_worker

        env = self.env_list[0]
        return {
            "pid": os.getpid(),
            "ext_module": os.environ.get("RLINF_EXT_MODULE"),
            "env_cls": f"{type(env).__module__}.{type(env).__qualname__}",
            "get_env_cls_patched": hasattr(env_worker.get_env_cls, "__gymwire_env_type__"),
            "train_resets": env.sessions.reset_count.tolist(),
            "eval_resets": self.eval_env_list[0].sessions.reset_count.tolist(),
        }

    def train_reset_ids(self) -> list[int]:
        return self.env_list[0].reset_state_ids.tolist()

    def reset_eval_envs(self) -> None:
        # What EnvWorker.evaluate does before its first eval chunk (it then waits on a rollout channel).
        for stage_id in range(self.stage_num):
            self.eval_env_list[stage_id].is_start = True
            self.eval_env_list[stage_id].reset()

    def close_envs(self) -> None:
        for env in [*self.env_list, *self.eval_env_list]:
            env.close()


def images(obs: dict, key: str) -> dict:
    """Shape, dtype and each env's image bytes (sha256) of an image batch, as RLinf's worker hands it on."""
    batch = obs.get(key)
    if batch is None:
        return {}
    return {
        key: list(batch.shape),
        f"{key}_dtype": str(batch.dtype),
        f"{key}_type": type(batch).__name__,
        f"{key}_sha256": [hashlib.sha256(np.ascontiguousarray(np.asarray(image)).tobytes()).hexdigest() for image in batch],
    }


def summarize(env_output, env_info) -> dict:
    out = {
        "obs_keys": sorted(k for k, v in env_output.obs.items() if v is not None),
        **images(env_output.obs, "main_images"),
        **images(env_output.obs, "wrist_images"),
        "states": list(env_output.obs["states"].shape),
        "state_values": np.asarray(env_output.obs["states"]).tolist(),
        "task_descriptions": list(env_output.obs["task_descriptions"]),
        "env_info": {k: v.tolist() for k, v in env_info.items()},
    }
    if env_output.rewards is not None:
        out.update(
            rewards=env_output.rewards.tolist(),
            dones=env_output.dones.tolist(),
            terminations=env_output.terminations.tolist(),
            truncations=env_output.truncations.tolist(),
        )
    return out


@hydra.main(version_base="1.1", config_path="config", config_name="gymwire_env_worker")
def main(cfg) -> None:
    cfg = validate_cfg(cfg)
    cluster = Cluster(cluster_cfg=cfg.cluster)
    placement = HybridComponentPlacement(cfg, cluster)
    env_group = ProbedEnvWorker.create_group(cfg).launch(cluster, name=cfg.env.group_name, placement_strategy=placement.get_strategy("env"))
    report: dict = {"driver_ext_module": os.environ.get("RLINF_EXT_MODULE"), "driver_pid": os.getpid()}
    env_group.init_worker().wait()
    n = cfg.env.train.total_num_envs
    c, a = cfg.actor.model.num_action_chunks, cfg.actor.model.action_dim
    bootstrap = env_group.bootstrap_step().wait()[0]
    report["bootstrap"] = {
        "states": list(bootstrap[0].obs["states"].shape),
        **images(bootstrap[0].obs, "main_images"),
        **images(bootstrap[0].obs, "wrist_images"),
    }
    report["train_reset_ids"] = env_group.train_reset_ids().wait()[0]
    seed = os.environ.get("GYMWIRE_STANDIN_SEED")
    generator = torch.Generator().manual_seed(int(seed)) if seed else None
    steps, sent = [], []
    for k in range(cfg.env.train.max_steps_per_rollout_epoch // c):
        # A policy's flat output [N, C * A]; RLinf's prepare_actions reshapes it.
        if generator is None:
            actions = torch.full((n, c * a), 0.05 * (k + 1), dtype=torch.float32)
        else:
            actions = torch.rand((n, c * a), generator=generator) * 2 - 1
        sent.append(actions.tolist())
        env_output, env_info = env_group.env_interact_step(actions, 0).wait()[0]
        steps.append(summarize(env_output, env_info))
    report["train"] = steps
    report["actions"] = sent
    env_group.finish_rollout("train").wait()
    env_group.reset_eval_envs().wait()
    evals = []
    ne = cfg.env.eval.total_num_envs
    for _ in range(cfg.env.eval.max_steps_per_rollout_epoch // c):
        env_output, env_info = env_group.env_evaluate_step(np.zeros((ne, c * a), dtype=np.float32), 0).wait()[0]
        evals.append({"env_info": {k: v.tolist() for k, v in env_info.items()}, "task_descriptions": list(env_output.obs["task_descriptions"])})
    report["eval"] = evals
    report["probe"] = env_group.probe().wait()[0]
    env_group.close_envs().wait()
    print("GYMWIRE_REPORT " + json.dumps(report), flush=True)
    # A policy whose output does not fit num_action_chunks x action_dim: RLinf reports the worker's
    # error and ends the run (its default when RLINF_CATCH_FAILURE is unset).
    env_group.env_interact_step(torch.zeros((n, c * a + 1)), 0).wait()
    print("GYMWIRE_BAD_ACTION_ACCEPTED", flush=True)


if __name__ == "__main__":
    main()

"""siiRL's embodied rollout loop (``EmbodiedHFRollout._generate_chunk_rollout``) inside a Ray actor.

siiRL runs rollouts in its DAG workers, which are Ray actors; here one actor builds siiRL's own
``EmbodiedHFRollout`` (whose ``__init__`` constructs ``LIBEROAdapter`` by name) and runs its loop.
Registration reaches the actor only through Ray's ``worker_process_setup_hook``. Stand-ins, for
what needs a GPU: the VLA (``process_input`` moves tensors to CUDA and ``_generate_one_step`` runs
OpenVLA under CUDA autocast) becomes a scripted CartPole controller (or, with
``GYMWIRE_STANDIN_SEED``, 7-dim chunks drawn uniformly in [-1, 1] from a generator of that seed:
the stand-in VLA of the robosuite run), and ``VideoEmbeddingModel`` (V-JEPA) a frame counter that
keeps a digest of each video's first frame.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import numpy as np
import ray
import torch


def sha256(image: Any) -> str:
    return hashlib.sha256(np.ascontiguousarray(np.asarray(image)).tobytes()).hexdigest()


class FrameCounter:
    """Stands in for siiRL's V-JEPA ``VideoEmbeddingModel``: the 'embedding' is the frame count."""

    first_frames: list[str] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def get_embeddings(self, names: Any, frames: Any) -> list[np.ndarray]:
        FrameCounter.first_frames.extend(sha256(f[0]) if len(f) else None for f in frames)
        return [np.array([len(f)], dtype=np.float32) for f in frames]


def cartpole_action(state: np.ndarray, env_index: int) -> int:
    """Even envs balance (x, x_dot, theta, and theta_dot as siiRL's axis-angle of the 'quaternion'); odd envs push right and fall early."""
    if env_index % 2:
        return 1
    theta, theta_dot = state[2], state[3] / np.pi
    return int(theta + 0.5 * theta_dot > 0)


@ray.remote
class EmbodiedRolloutActor:
    def __init__(self, env_name: str, num_envs: int, max_steps: int, chunk: int, action_dim: int) -> None:
        from siirl.engine.rollout import embodied_rollout
        from siirl.params.model_args import ActorRolloutRefArguments

        embodied_rollout.VideoEmbeddingModel = FrameCounter
        seed = os.environ.get("GYMWIRE_STANDIN_SEED")
        standin = np.random.default_rng(int(seed)) if seed else None
        sent: list[list] = []
        self.sent = sent

        class ScriptedPolicyRollout(embodied_rollout.EmbodiedHFRollout):
            """siiRL's rollout with the VLA replaced (it needs CUDA); the rollout loop is siiRL's."""

            def embodied_preprocess(self) -> None:
                return None

            def process_input(self, inputs: list, task_descriptions: list) -> dict:
                self.seen_inputs.append(inputs)
                return {"states": [x["state"] for x in inputs], "images": [x["full_image"] for x in inputs]}

            def _generate_one_step(self, prompts: dict) -> dict:
                b = len(prompts["states"])
                if action_dim == 1:
                    acts = np.array([[[cartpole_action(s, i)]] * chunk for i, s in enumerate(prompts["states"])], dtype=np.int64)
                elif standin is not None:
                    acts = standin.uniform(-1, 1, (b, chunk, action_dim)).astype(np.float32)
                    sent.append(acts.tolist())
                else:
                    acts = np.zeros((b, chunk, action_dim), dtype=np.float32)
                zeros = torch.zeros((b, 1), dtype=torch.long)
                return {"responses": zeros, "input_ids": zeros, "attention_mask": zeros, "pixel_values": torch.zeros((b, 1)), "action": acts}

        config = ActorRolloutRefArguments()
        config.embodied.env.env_name = env_name
        config.embodied.env.num_envs = num_envs
        config.embodied.env.max_steps = max_steps
        config.embodied.env.num_steps_wait = 0
        config.embodied.action_chunks_len = chunk
        config.embodied.n_gpus_per_node = 1
        self.rollout = ScriptedPolicyRollout(module=torch.nn.Identity(), config=config)
        self.rollout.seen_inputs = []

    def probe(self) -> dict:
        from siirl.engine.rollout import embodied_rollout

        return {
            "pid": os.getpid(),
            "adapter": f"{type(self.rollout.adapter).__module__}.{type(self.rollout.adapter).__name__}",
            "module_adapter": embodied_rollout.LIBEROAdapter.__name__,
        }

    def run(self, task_ids: list[int], trial_ids: list[int]) -> dict:
        from tensordict import TensorDict

        env_name = self.rollout.config.embodied.env.env_name
        prompts = TensorDict({"task_id": torch.tensor(task_ids), "trial_id": torch.tensor(trial_ids)}, batch_size=[len(task_ids)])
        prompts.set_non_tensor("task_suite_name", np.array([env_name] * len(task_ids)))
        out = self.rollout._generate_chunk_rollout(prompts)
        adapter = self.rollout.adapter
        first = self.rollout.seen_inputs[0][0]
        return {
            "complete": out["complete"].tolist(),
            "finish_step": out["finish_step"].tolist(),
            "frames": out["vjepa_embedding"][:, 0].tolist(),
            "steps": out["responses"].shape[1],
            "elapsed": adapter.sessions.elapsed.tolist(),
            "full_image": None if first["full_image"] is None else list(first["full_image"].shape),
            "state": list(first["state"].shape),
            # What the policy was handed at each step, per env, and the actions the stand-in sent.
            "input_sha256": [[None if x["full_image"] is None else sha256(x["full_image"]) for x in inputs] for inputs in self.rollout.seen_inputs],
            "input_dtype": None if first["full_image"] is None else str(first["full_image"].dtype),
            "input_states": [[np.asarray(x["state"]).tolist() for x in inputs] for inputs in self.rollout.seen_inputs],
            "actions": self.sent,
            "video_first_frames": FrameCounter.first_frames,
        }

    def close(self) -> None:
        self.rollout.close()

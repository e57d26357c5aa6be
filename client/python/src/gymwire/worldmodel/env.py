"""``gymwire/TorchWorldModel-v0``: a torch world model (contract.py) as a Gymnasium env, one session each.

reset starts from a frame (``options={"frame": uint8 [H, W, 3], "pose": [P]}``, the model's
``initial_observation(seed)``, or seeded noise) repeated as the context; each step sends one action
chunk [C, A], the model generates the chunk's frames and rewards, and the observation is the
chunk's last frame (and the pose). The scalar reward is the chunk's sum; ``info["rewards"]`` has the
per-frame rewards and ``info["world_model"]`` the batch the step ran in (size, queue wait, forward
time, device, device memory). Episodes count frames and truncate at ``max_episode_steps``.

In a worker the step is batched with the steps of other sessions (``gymwire_submit_step``, see
host.py); used directly, ``step`` runs the model for this session alone.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces as gs

from ..worker.batching import Deferred
from .contract import InvalidActionError
from .host import model_host


class TorchWorldModelEnv(gym.Env[dict[str, np.ndarray], np.ndarray]):
    """One session of a torch world model; every env of a worker naming the same model shares its host (weights and batch queue)."""

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"]}

    def __init__(
        self,
        model: str,
        model_kwargs: dict[str, Any] | None = None,
        device: str = "auto",
        max_batch: int = 32,
        window_ms: float = 2.0,
        memory_budget_bytes: int | None = None,
        render_mode: str | None = None,
        return_all_frames: bool = False,
        max_episode_steps: int | None = None,
    ) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.host = model_host(model, model_kwargs or {}, device=device, max_batch=max_batch, window_ms=window_ms, memory_budget_bytes=memory_budget_bytes)
        self.host.open_session()
        self.open = True
        s = self.spec_ = self.host.spec
        self.render_mode = render_mode
        self.return_all_frames = return_all_frames
        self.max_frames = max_episode_steps or s.max_episode_steps
        frame_space = gs.Box(0, 255, (s.height, s.width, 3), np.uint8)
        obs: dict[str, gs.Space[Any]] = {"full_image": frame_space}
        if s.pose_dim:
            obs["state"] = gs.Box(-np.inf, np.inf, (s.pose_dim,), np.float32)
        self.observation_space = gs.Dict(obs)
        self.action_space = gs.Box(s.action_low, s.action_high, (s.chunk, s.action_dim), np.float32)
        self.metadata = {
            **type(self).metadata,
            "device": self.host.device_name,
            "model": model,
            "max_batch": max_batch,
            "batch_window_ms": window_ms,
            "weight_bytes": self.host.weight_bytes,
            "chunk": s.chunk,
            "context_frames": s.context_frames,
        }
        dev = self.host.device
        self.context = torch.zeros((s.context_frames, s.height, s.width, 3), dtype=torch.uint8, device=dev)
        self.pose = torch.zeros((s.pose_dim,), device=dev)
        self.latent = torch.zeros(s.latent_shape, device=dev) if s.latent_shape else None
        self.noise = torch.Generator()
        self.noise_state: torch.Tensor | None = None
        self.frame = np.zeros((s.height, s.width, 3), np.uint8)
        self.elapsed = 0
        self.ready = False

    # -- Gymnasium -------------------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        s = self.spec_
        options = options or {}
        frame, pose = self._initial(options)
        dev = self.host.device
        self.frame = frame
        self.context = torch.from_numpy(frame).to(dev).expand(s.context_frames, -1, -1, -1).contiguous()
        self.pose = torch.from_numpy(pose).to(dev)
        if self.latent is not None:
            self.latent = torch.zeros(s.latent_shape, device=dev)
        self.noise.manual_seed(int(self.np_random.integers(0, 2**63 - 1)))
        self.elapsed = 0
        self.ready = True
        return self._obs(), {"device": self.host.device_name}

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        deferred = self.gymwire_submit_step(action)
        while not deferred.done:
            self.host.flush()
        if deferred.error is not None:
            raise deferred.error
        return deferred.value

    def render(self) -> np.ndarray | None:
        return self.frame if self.render_mode == "rgb_array" else None

    def close(self) -> None:
        if self.open:
            self.open = False
            self.host.close_session()

    # -- batching (gymwire/worker/batching.py, host.py) ---------------------------------------------

    def gymwire_submit_step(self, action: Any) -> Deferred:
        """Checks the action and queues the step with the model's host; the answer comes when the host runs it."""
        if not self.ready:
            raise RuntimeError("step before reset")
        return self.host.submit(self, self._check_action(action))

    def draw_noise(self) -> torch.Tensor:
        self.noise_state = self.noise.get_state()
        return torch.randn(self.spec_.noise_shape, generator=self.noise)

    def undraw_noise(self) -> None:
        """A failed step leaves the session as it was, its noise included."""
        if self.noise_state is not None:
            self.noise.set_state(self.noise_state)
            self.noise_state = None

    def advance(
        self, frames: torch.Tensor, frames_host: np.ndarray, rewards: np.ndarray, row: dict[str, torch.Tensor], stats: dict[str, Any]
    ) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Takes this session's row of a batch's outputs: the new context, pose and latent, and the step's result."""
        s = self.spec_
        self.noise_state = None
        self.context = torch.cat([self.context, frames])[-s.context_frames :]
        if self.latent is not None:
            self.latent = row["next_latent"].clone()
        if "next_pose" in row:
            self.pose = row["next_pose"].clone()
        self.frame = frames_host[-1]
        self.elapsed += s.chunk
        rewards = rewards.astype(np.float32)
        terminated = s.success_threshold is not None and bool((rewards >= s.success_threshold).any())
        truncated = not terminated and self.elapsed >= self.max_frames
        if terminated or truncated:
            self.ready = False
        info: dict[str, Any] = {"rewards": rewards, "world_model": stats}
        if self.return_all_frames:
            info["frames"] = frames_host
        return self._obs(), float(rewards.sum()), terminated, truncated, info

    # -- helpers -----------------------------------------------------------------------------------

    def _obs(self) -> dict[str, np.ndarray]:
        obs = {"full_image": self.frame}
        if self.spec_.pose_dim:
            obs["state"] = self.pose.cpu().numpy()
        return obs

    def _initial(self, options: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        s = self.spec_
        if "frame" in options:
            frame = np.asarray(options["frame"])
            if frame.shape != (s.height, s.width, 3) or frame.dtype != np.uint8:
                raise ValueError(f"options.frame must be uint8 {[s.height, s.width, 3]}, got {frame.dtype} {list(frame.shape)}")
            pose = np.asarray(options.get("pose", np.zeros(s.pose_dim)), dtype=np.float32)
        elif callable(getattr(self.host.module, "initial_observation", None)):
            frame, pose = self.host.module.initial_observation(int(self.np_random.integers(0, 2**31 - 1)))
            frame, pose = np.asarray(frame, np.uint8), np.asarray(pose, np.float32)
        else:
            frame = self.np_random.integers(0, 256, (s.height, s.width, 3), dtype=np.uint8)
            pose = np.zeros(s.pose_dim, np.float32)
        if pose.shape != (s.pose_dim,):
            raise ValueError(f"the reset pose must have {s.pose_dim} values, got shape {list(pose.shape)}")
        return np.ascontiguousarray(frame), pose

    def _check_action(self, action: Any) -> np.ndarray:
        s = self.spec_
        arr = np.asarray(action, dtype=np.float32)
        if arr.shape != (s.chunk, s.action_dim):
            raise InvalidActionError(f"the action chunk must have shape {[s.chunk, s.action_dim]}, got {list(arr.shape)}")
        if not np.isfinite(arr).all():
            raise InvalidActionError("the action chunk has NaN or infinite values")
        if (arr < s.action_low).any() or (arr > s.action_high).any():
            raise InvalidActionError(f"the action chunk has values outside [{s.action_low}, {s.action_high}]")
        return np.ascontiguousarray(arr)

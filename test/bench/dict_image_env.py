"""The Dict image env of the Python vector bench (``python_vec.bench.py --dict-image``): observed as
robosuite's and LIBERO's tasks are (two 128x128 RGB cameras, proprioception, the task's text), with
frames that cost next to nothing to draw, so the bench measures carrying them, not making them."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces as gs

SIDE = 128
TASK = "put the bowl on the plate"


class DictImageEnv(gym.Env[dict[str, Any], np.int64]):
    metadata = {"render_modes": []}

    def __init__(self, side: int = SIDE) -> None:
        image = gs.Box(0, 255, shape=(side, side, 3), dtype=np.uint8)
        self.observation_space = gs.Dict(
            {
                "agentview_image": image,
                "wrist_image": image,
                "state": gs.Box(-np.inf, np.inf, shape=(8,), dtype=np.float32),
                "task_description": gs.Text(64, charset="abcdefghijklmnopqrstuvwxyz "),
            }
        )
        self.action_space = gs.Discrete(2)
        self.side = side
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action: np.int64) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        self.t += 1
        return self._obs(), float(action), False, self.t >= 200, {}

    def _obs(self) -> dict[str, Any]:
        shape = (self.side, self.side, 3)
        return {
            "agentview_image": np.full(shape, self.t % 256, dtype=np.uint8),
            "wrist_image": np.full(shape, 255 - self.t % 256, dtype=np.uint8),
            "state": np.full(8, self.t, dtype=np.float32),
            "task_description": TASK,
        }

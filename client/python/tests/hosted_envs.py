"""Python envs that the hosted-env tests serve with ``gymwire serve --python hosted_envs:...``.

They are real ``gymnasium.Env`` classes run by real workers; a fault (raise, crash, hang) is armed
by a reset option and fires on the next step, so a test triggers it on one session while others
keep stepping (and check_env's random actions never do).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces as gs

from gymwire.worker import tool


class FaultyCounter(gym.Env[np.ndarray, np.int64]):
    """Counts steps (action 1 counts twice) and ends at random or at ``limit``; ``reset(options={"fault": "raise"|"crash"|"hang"|"slow"})`` arms a
    fault for the next step. Has a tool, the state protocol and rgb_array frames."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, render_mode: str | None = None, limit: int = 50, end_chance: float = 0.05) -> None:
        self.render_mode = render_mode
        self.limit = limit
        self.end_chance = end_chance
        self.observation_space = gs.Box(low=-np.inf, high=np.inf, shape=(2,), dtype=np.float64)
        self.action_space = gs.Discrete(2)
        self.fault: str | None = None
        self.count = 0
        self.noise = 0.0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.count = int((options or {}).get("start", 0))
        self.fault = (options or {}).get("fault")
        self.noise = float(self.np_random.random())
        return self._obs(), {"start": self.count, "trace": np.arange(3, dtype=np.int32)}

    def step(self, action: np.int64) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        fault, self.fault = self.fault, None
        if fault == "raise":
            raise ValueError(f"boom at count {self.count}")
        if fault == "crash":
            print("gymwire-test: crashing the worker on purpose", file=sys.stderr, flush=True)
            os._exit(3)
        if fault == "hang":
            time.sleep(3600)
        if fault == "slow":
            time.sleep(0.3)
        self.count += 1 + int(action)
        self.noise = float(self.np_random.random())
        # Ends at random (like CartPole) so sessions stepped together do not all end on one step.
        return self._obs(), 1.0, self.noise < self.end_chance or self.count >= self.limit, False, {"count": np.int64(self.count), "pair": (1, 2.5)}

    def render(self) -> np.ndarray:
        frame = np.zeros((8, 12, 3), dtype=np.uint8)
        frame[:, : min(self.count, 12)] = 255
        return frame

    def _obs(self) -> np.ndarray:
        return np.array([self.count, self.noise], dtype=np.float64)

    @tool(
        "Add n to the counter and return the new count",
        {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"], "additionalProperties": False},
    )
    def add(self, n: int) -> dict[str, Any]:
        self.count += n
        return {"count": self.count, "obs": self._obs()}

    def gymwire_get_state(self) -> bytes:
        return json.dumps({"count": self.count, "noise": self.noise, "rng": self.np_random.bit_generator.state}, default=int).encode()

    def gymwire_set_state(self, state: bytes) -> None:
        data = json.loads(state)  # raises ValueError on bytes that are not our JSON
        if not isinstance(data, dict) or not isinstance(data.get("count"), int):
            raise ValueError("state needs an integer count")
        self.count = data["count"]
        self.noise = float(data["noise"])
        self.np_random.bit_generator.state = data["rng"]


class Float64ForFloat32(gym.Env[np.ndarray, np.int64]):
    """Declares a float32 Box and returns float64 arrays: what ``gymwire serve --check`` must report."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        return np.zeros(3, dtype=np.float64), {}

    def step(self, action: np.int64) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        return np.zeros(3, dtype=np.float64), 0.0, False, False, {}


class ThreadBound(gym.Env[np.ndarray, np.int64]):
    """Stands in for a renderer whose GL context is current on one thread (no GL here): it notes the
    thread that made it, takes ``make_s`` seconds to make, and each step says whether it runs on that thread."""

    metadata = {"render_modes": []}
    gymwire_thread_bound = True

    def __init__(self, make_s: float = 0.0) -> None:
        time.sleep(make_s)
        self.home = threading.get_ident()
        self.observation_space = gs.Box(low=0, high=1, shape=(1,), dtype=np.float64)
        self.action_space = gs.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        return self._obs(), {}

    def step(self, action: np.int64) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        return self._obs(), 0.0, False, False, {}

    def _obs(self) -> np.ndarray:
        return np.array([float(threading.get_ident() == self.home)])


def make_counter(**kwargs: Any) -> FaultyCounter:
    """A counter env with faults on demand (the hosted-env tests' --python target)."""
    return FaultyCounter(**kwargs)


TASKS = ("open the drawer", "lift the cube", "stack the red cube on the green one")
TASK_CHARSET = "abcdefghijklmnopqrstuvwxyz "


class DictImage(gym.Env[dict[str, Any], np.int64]):
    """A camera env in miniature, observed as robosuite's and LIBERO's are: an agent-view image, a
    wrist image (nested, as a camera map), proprioception, a Discrete phase and the task's text, all
    drawn from the seeded generator; episodes end at random so vector envs autoreset."""

    metadata = {"render_modes": []}

    def __init__(self, side: int = 16, end_chance: float = 0.15) -> None:
        self.side = side
        self.end_chance = end_chance
        image = gs.Box(0, 255, shape=(side, side, 3), dtype=np.uint8)
        self.observation_space = gs.Dict(
            {
                "agentview_image": image,
                "cameras": gs.Dict({"wrist_image": image}),
                "state": gs.Box(-np.inf, np.inf, shape=(8,), dtype=np.float32),
                "phase": gs.Discrete(3),
                "task_description": gs.Text(32, charset=TASK_CHARSET),
            }
        )
        self.action_space = gs.Discrete(2)
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action: np.int64) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        self.t += 1
        return self._obs(), float(action), bool(self.np_random.random() < self.end_chance), False, {}

    def _obs(self) -> dict[str, Any]:
        rng = self.np_random
        shape = (self.side, self.side, 3)
        return {
            "agentview_image": rng.integers(0, 256, size=shape, dtype=np.uint8),
            "cameras": {"wrist_image": rng.integers(0, 256, size=shape, dtype=np.uint8)},
            "state": rng.standard_normal(8).astype(np.float32),
            "phase": int(self.t % 3),
            "task_description": TASKS[int(rng.integers(len(TASKS)))],
        }


class EverySpace(gym.Env[Any, Any]):
    """Observations and actions in every Gymnasium space, to check they convert exactly both ways."""

    metadata = {"render_modes": []}

    def __init__(self) -> None:
        self.observation_space = gs.Dict(
            {
                "box16": gs.Box(low=-np.inf, high=np.inf, shape=(2, 3), dtype=np.float16),
                "ints": gs.Box(low=0, high=200, shape=(4,), dtype=np.uint8),
                "discrete": gs.Discrete(5, start=-2),
                "multi_discrete": gs.MultiDiscrete([3, 4]),
                "multi_binary": gs.MultiBinary([2, 2]),
                "text": gs.Text(8, min_length=1),
                "tuple": gs.Tuple((gs.Discrete(2), gs.Box(-1.0, 1.0, shape=(1,), dtype=np.float32))),
                "sequence": gs.Sequence(gs.Box(-1.0, 1.0, shape=(2,), dtype=np.float32), stack=True),
                "graph": gs.Graph(gs.Box(-1.0, 1.0, shape=(2,), dtype=np.float32), gs.Discrete(3)),
                "oneof": gs.OneOf((gs.Discrete(2), gs.Box(-1.0, 1.0, shape=(2,), dtype=np.float32))),
            }
        )
        self.action_space = gs.Dict({"move": gs.Box(-1.0, 1.0, shape=(2,), dtype=np.float32), "pick": gs.Discrete(3)})
        self.last_action: Any = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.observation_space.seed(seed)
        return self.observation_space.sample(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        assert self.action_space.contains(action), f"action {action!r} is not in {self.action_space}"
        self.last_action = action
        return self.observation_space.sample(), float(action["pick"]), False, False, {"move": action["move"]}

"""Meta-World v3 tasks as Gymnasium envs: MT1 and ML1, the task chosen at make, the goal by seed.

Meta-World 3.x ships 50 Sawyer-arm tasks (``reach-v3``, ``pick-place-v3``, ...). Its MT1 and ML1
benchmarks give each task 50 goal variations (object and target positions); ``reset(seed=s)``
draws one of them from ``s`` (``options={"task_index": i}`` names one), so a seed gives the same
goal in any process. ``benchmark="ML1-test"`` draws from ML1's held-out goals.

The observation is Meta-World's 39 numbers (hand, gripper, objects, the previous frame's, and the
goal: zeros when hidden, as in MT1), and with ``image_size`` also a camera image. ``info
["success"]`` is the task's own check; the reward is Meta-World's v2 reward function. Episodes
last 500 steps (Meta-World's ``max_path_length``) and do not terminate on success unless
``terminate_on_success=True``.

>>> from gymwire.sim.metaworld_tasks import MetaWorldTask
>>> env = MetaWorldTask(task="reach-v3", image_size=128)
>>> obs, info = env.reset(seed=3)
>>> obs["state"].shape, obs["image"].shape, info["task_index"]
((39,), (128, 128, 3), 40)
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from .rendering import configure_gl, drop_effects, effects_on

BENCHMARKS = ("MT1", "ML1-train", "ML1-test")
CAMERAS = ("corner", "corner2", "corner3", "topview", "behindGripper", "gripperPOV")
MAX_EPISODE_STEPS = 500
# The benchmark's own seed fixes its list of 50 goals; the reset seed picks among them.
BENCHMARK_SEED = 0


class MetaWorldTask(gym.Env[Any, np.ndarray]):
    """One Meta-World task; the goal variation drawn per reset (module doc)."""

    #: Its renderer's GL context is current on the thread that made it (gymwire.worker.host).
    gymwire_thread_bound = True
    metadata = {"render_modes": ["rgb_array"], "render_fps": 80}

    def __init__(
        self,
        task: str = "reach-v3",
        benchmark: str = "MT1",
        image_size: int | None = None,
        camera: str = "corner",
        terminate_on_success: bool = False,
        render_effects: bool | None = None,
        render_mode: str | None = None,
    ) -> None:
        if benchmark not in BENCHMARKS:
            raise ValueError(f"benchmark must be one of {BENCHMARKS}, got {benchmark!r}")
        if camera not in CAMERAS:
            raise ValueError(f"camera must be one of {CAMERAS}, got {camera!r}")
        if image_size is not None and not (16 <= int(image_size) <= 1024):
            raise ValueError(f"image_size must be between 16 and 1024 pixels, got {image_size!r}")
        if render_mode not in (None, "rgb_array"):
            raise ValueError(f"render_mode must be 'rgb_array' or None, got {render_mode!r}")
        configure_gl()
        import metaworld

        if task not in metaworld.ALL_V3_ENVIRONMENTS:
            raise ValueError(f"unknown Meta-World task {task!r}; tasks: {', '.join(sorted(metaworld.ALL_V3_ENVIRONMENTS))}")
        if benchmark == "MT1":
            suite = metaworld.MT1(task, seed=BENCHMARK_SEED)
            self.tasks = suite.train_tasks
            env_cls = suite.train_classes[task]
        else:
            suite = metaworld.ML1(task, seed=BENCHMARK_SEED)
            self.tasks = suite.train_tasks if benchmark == "ML1-train" else suite.test_tasks
            env_cls = (suite.train_classes if benchmark == "ML1-train" else suite.test_classes)[task]
        self.task_name = task
        self.image_size = None if image_size is None else int(image_size)
        self.render_mode = render_mode
        wants_frames = self.image_size is not None or render_mode == "rgb_array"
        size = self.image_size or 480
        self.sim_env = env_cls(render_mode="rgb_array" if wants_frames else None, camera_name=camera, width=size, height=size)
        self.render_effects = effects_on(render_effects)
        if wants_frames and not self.render_effects:
            # Gymnasium's renderer makes its viewer (context and scene) on the first frame: make it
            # now, with the model's samples already at 0.
            self.sim_env.model.vis.quality.offsamples = 0
            drop_effects(self.sim_env.model, self.sim_env.mujoco_renderer._get_viewer("rgb_array").scn)
        self.terminate_on_success = bool(terminate_on_success)
        state_space = self.sim_env.observation_space
        self.observation_space = (
            state_space if self.image_size is None else gym.spaces.Dict({"state": state_space, "image": gym.spaces.Box(0, 255, (size, size, 3), np.uint8)})
        )
        self.action_space = self.sim_env.action_space

    def _observe(self, state: np.ndarray) -> Any:
        if self.image_size is None:
            return state
        return {"state": state, "image": np.ascontiguousarray(self.sim_env.render())}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        if seed is not None:
            self.sim_env.seed(seed)
        index = (options or {}).get("task_index")
        index = int(self.np_random.integers(len(self.tasks))) if index is None else int(index)
        if not 0 <= index < len(self.tasks):
            raise ValueError(f"task_index must be in [0, {len(self.tasks)}), got {index}")
        self.sim_env.set_task(self.tasks[index])
        state, _ = self.sim_env.reset()
        return self._observe(state), {"task": self.task_name, "task_index": index, "success": False}

    def step(self, action: np.ndarray) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        state, reward, _terminated, truncated, info = self.sim_env.step(np.asarray(action, dtype=np.float32))
        success = bool(info.get("success", 0.0))
        info = {key: float(value) for key, value in info.items() if isinstance(value, (int, float, np.floating, np.integer))}
        info.update(task=self.task_name, success=success)
        return self._observe(state), float(reward), success and self.terminate_on_success, bool(truncated), info

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        return np.ascontiguousarray(self.sim_env.render())

    def close(self) -> None:
        self.sim_env.close()

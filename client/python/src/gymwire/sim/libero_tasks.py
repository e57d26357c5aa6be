"""LIBERO's tasks with the same observation and action as :mod:`gymwire.sim.robosuite_tasks`.

LIBERO (https://github.com/Lifelong-Robot-Learning/LIBERO) builds its scenes on robosuite; its
package carries the task files (BDDL) and init states, but its scene assets (meshes, textures)
come from its git checkout or its download. Where either is missing, make raises
``gymnasium.error.DependencyNotInstalled`` naming what is missing and how to get it (the server
answers ENV_ERR_UNSUPPORTED with that message).

``reset(seed=s)`` picks one of the task's fixed init states from ``s`` (``options={"init_state_id":
k}`` names one), as LIBERO's evaluations do; ``options={"init_state": flat}`` restores any.
"""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import numpy as np

from .rendering import configure_gl
from .robosuite_tasks import CAMERAS, CONTROL_FREQ, check_image_size, libero_action_space, libero_observation_space, pick_observation, restore_flat_state

SUITES = ("libero_spatial", "libero_object", "libero_goal", "libero_10", "libero_90")
# LIBERO's evaluations step each suite this long at most (RLinf's and OpenVLA-OFT's limits).
MAX_EPISODE_STEPS = 520
INSTALL_HINT = "pip install it from its repository (git clone https://github.com/Lifelong-Robot-Learning/LIBERO && pip install -e LIBERO)"


def _missing(what: str) -> gym.error.DependencyNotInstalled:
    return gym.error.DependencyNotInstalled(f"libero/LIBERO-v0 needs {what}")


def load_libero() -> tuple[Any, Any, Any]:
    """LIBERO's benchmark module, path helper and env class, or a DependencyNotInstalled saying what is missing."""
    try:
        from libero.libero import benchmark, get_libero_path
        from libero.libero.envs import OffScreenRenderEnv
    except ImportError as err:
        raise _missing(f"LIBERO's Python package, which is not importable here ({err}): {INSTALL_HINT}") from err
    assets = get_libero_path("assets")
    if not os.path.isdir(assets) or not os.listdir(assets):
        raise _missing(
            f"LIBERO's scene assets at {assets} (from ~/.libero/config.yaml), which are missing: "
            "they are in LIBERO's git checkout (libero/libero/assets), not in its wheel; "
            f"{INSTALL_HINT}, or point the config's assets entry at a copy"
        )
    return benchmark, get_libero_path, OffScreenRenderEnv


class LiberoTask(gym.Env[dict[str, Any], np.ndarray]):
    """One LIBERO task (suite and task index chosen at make) with LIBERO's cameras and actions."""

    #: Its renderer's GL context is current on the thread that made it (gymwire.worker.host).
    gymwire_thread_bound = True
    metadata = {"render_modes": ["rgb_array"], "render_fps": CONTROL_FREQ}

    def __init__(
        self, suite: str = "libero_spatial", task_id: int = 0, image_size: int = 128, flip_images: bool = False, render_mode: str | None = None
    ) -> None:
        if suite not in SUITES:
            raise ValueError(f"suite must be one of {SUITES}, got {suite!r}")
        self.image_size = check_image_size(image_size)
        self.render_mode = render_mode
        self.flip_images = bool(flip_images)
        configure_gl()
        benchmark, get_libero_path, offscreen_env = load_libero()
        tasks = benchmark.get_benchmark_dict()[suite]()
        if not 0 <= int(task_id) < tasks.n_tasks:
            raise ValueError(f"task_id must be in [0, {tasks.n_tasks}) for {suite}, got {task_id}")
        task = tasks.get_task(int(task_id))
        self.language = task.language
        self.init_states = np.asarray(tasks.get_task_init_states(int(task_id)))
        bddl = os.path.join(get_libero_path("bddl_files"), task.problem_folder, task.bddl_file)
        self.sim_env = offscreen_env(bddl_file_name=bddl, camera_heights=self.image_size, camera_widths=self.image_size, camera_names=list(CAMERAS))
        self.observation_space = libero_observation_space(self.image_size)
        self.action_space = libero_action_space()
        self._last: dict[str, Any] | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        super().reset(seed=seed)
        options = options or {}
        self.sim_env.seed(0 if seed is None else seed)
        self.sim_env.reset()
        flat = options.get("init_state")
        if flat is None:
            k = options.get("init_state_id")
            k = int(self.np_random.integers(len(self.init_states))) if k is None else int(k)
            flat = self.init_states[k]
        restore_flat_state(self.sim_env.env, flat)
        raw = self.sim_env.env._get_observations(force_update=True)
        self._last = pick_observation(raw, self.observation_space, self.language, self.flip_images)
        return self._last, {"task": self.language, "success": bool(self.sim_env.check_success())}

    def step(self, action: np.ndarray) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        raw, reward, _done, _info = self.sim_env.step(np.asarray(action, dtype=np.float64))
        success = bool(self.sim_env.check_success())
        self._last = pick_observation(raw, self.observation_space, self.language, self.flip_images)
        return self._last, float(reward), success, False, {"task": self.language, "success": success}

    def render(self) -> np.ndarray | None:
        return None if self.render_mode != "rgb_array" or self._last is None else self._last["agentview_image"]

    def close(self) -> None:
        self.sim_env.close()

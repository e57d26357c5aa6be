"""Env adapters: observations to :class:`VLAInput`, predictions to the env's actions (NAVSIM, Bench2Drive, EVAC).

Each adapter knows its env's observation layout, the trajectory it takes and how a prediction
becomes an action; :func:`adapter_for` picks one by env id. Predicted waypoints always reach the
dataset as ``extras/waypoints``, also when a waypoint controller turns them into controls.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..control import WaypointPID
from .types import VLAInput, VLAPrediction
from .waypoints import adapt_waypoints

#: Bench2Drive's RoadOption codes in words (the navigation command as an instruction).
ROAD_OPTIONS = {-1: "void", 1: "turn left", 2: "turn right", 3: "go straight", 4: "follow the lane", 5: "change lane left", 6: "change lane right"}
#: NAVSIM's one-hot driving command, in index order.
NAVSIM_COMMANDS = ("turn left", "go straight", "turn right", "unknown")


class EnvAdapter:
    """Base adapter: subclasses fill :meth:`to_input` and :meth:`to_actions`."""

    #: The trajectory the env takes (None: the env takes no waypoints).
    num_waypoints: int | None = None
    waypoint_dims: int | None = None
    waypoint_interval = 0.5

    def __init__(self, num_envs: int = 1) -> None:
        self.num_envs = num_envs

    def to_input(self, obs: Any, infos: list[dict[str, Any]] | None = None) -> VLAInput:
        raise NotImplementedError

    def to_actions(self, prediction: VLAPrediction, inputs: VLAInput) -> tuple[Any, dict[str, np.ndarray]]:
        """The env's batched actions and the extras to store with them."""
        raise NotImplementedError

    def episode_start(self, env_index: int) -> None:
        """A new episode in env ``env_index``: stateful parts (controllers) start afresh."""

    def waypoints(self, prediction: VLAPrediction) -> np.ndarray:
        """The prediction's waypoints in the env's shape (:func:`adapt_waypoints`)."""
        if prediction.waypoints is None:
            raise ValueError(f"{type(self).__name__}: the model predicted no waypoints, and this env takes a trajectory")
        assert self.num_waypoints is not None and self.waypoint_dims is not None
        return adapt_waypoints(prediction.waypoints, self.num_waypoints, self.waypoint_dims, prediction.interval, self.waypoint_interval)

    def _input(self, **fields: Any) -> VLAInput:
        return VLAInput(num_waypoints=self.num_waypoints, waypoint_dims=self.waypoint_dims, waypoint_interval=self.waypoint_interval, **fields)


class NavsimAdapter(EnvAdapter):
    """NAVSIM: cameras (history frames), ego status history as state, the driving command; actions are 8 poses ``[8, 3]`` over 4 s."""

    num_waypoints = 8
    waypoint_dims = 3

    def to_input(self, obs: Any, infos: list[dict[str, Any]] | None = None) -> VLAInput:
        ego = np.asarray(obs["ego_status"], np.float32)
        onehot = np.asarray(obs["driving_command"])
        command = onehot.argmax(axis=1).astype(np.int64)
        images = {name: np.asarray(frames) for name, frames in (obs.get("cameras") or {}).items()}
        return self._input(images=images, state=ego.reshape(len(ego), -1), command=command, instruction=[NAVSIM_COMMANDS[c] for c in command], raw=obs)

    def to_actions(self, prediction: VLAPrediction, inputs: VLAInput) -> tuple[Any, dict[str, np.ndarray]]:
        if prediction.actions is not None:
            return np.asarray(prediction.actions, np.float32), {}
        poses = self.waypoints(prediction)
        return poses, {}


class Bench2DriveAdapter(EnvAdapter):
    """Bench2Drive: cameras, speed/target point/IMU as state, the RoadOption command; waypoints ``[6, 2]``.

    With ``action_type: 'waypoints'`` the env takes the waypoints (its own controller turns them into
    controls); with controls, the named reference controller does it here, and the waypoints are
    stored as ``extras/waypoints`` next to the controls.
    """

    num_waypoints = 6
    waypoint_dims = 2

    def __init__(self, num_envs: int = 1, action_type: str = "control", controller: str = "bench2drive") -> None:
        super().__init__(num_envs)
        if action_type not in ("control", "waypoints"):
            raise ValueError(f"action_type must be 'control' or 'waypoints', got {action_type!r}")
        self.action_type = action_type
        self.pid = WaypointPID(num_envs, controller=controller)

    def to_input(self, obs: Any, infos: list[dict[str, Any]] | None = None) -> VLAInput:
        speed = np.asarray(obs["speed"], np.float32).reshape(-1, 1)
        target = np.asarray(obs["target_point"], np.float32)
        imu = np.asarray(obs["imu"], np.float32)
        command = np.asarray(obs["command"], np.int64).reshape(-1)
        images = {name: np.asarray(img) for name, img in (obs.get("rgb") or {}).items()}
        return self._input(
            images=images,
            state=np.concatenate([speed, target, imu], axis=1),
            command=command,
            instruction=[ROAD_OPTIONS.get(int(c), "void") for c in command],
            raw=obs,
        )

    def to_actions(self, prediction: VLAPrediction, inputs: VLAInput) -> tuple[Any, dict[str, np.ndarray]]:
        if prediction.actions is not None and prediction.waypoints is None:
            return np.asarray(prediction.actions, np.float32), {}
        wps = self.waypoints(prediction)
        if self.action_type == "waypoints":
            return wps, {}
        raw = inputs.raw
        controls = self.pid(wps, np.asarray(raw["speed"]).reshape(-1), np.asarray(raw["target_point"]))
        return controls, {"waypoints": wps}

    def episode_start(self, env_index: int) -> None:
        self.pid.reset(env_index)


class EvacAdapter(EnvAdapter):
    """EVAC world model: the main image, the 16-d arm state and the task text; actions are chunks ``[C, 7]``."""

    def to_input(self, obs: Any, infos: list[dict[str, Any]] | None = None) -> VLAInput:
        text = obs["task_description"]
        return self._input(
            images={"full_image": np.asarray(obs["full_image"])},
            state=np.asarray(obs["state"], np.float32),
            instruction=[str(t) for t in (text if isinstance(text, (list, tuple, np.ndarray)) else [text])],
            raw=obs,
        )

    def to_actions(self, prediction: VLAPrediction, inputs: VLAInput) -> tuple[Any, dict[str, np.ndarray]]:
        if prediction.actions is None:
            raise ValueError("EvacAdapter: the model predicted no actions; the EVAC env takes action chunks [C, 7]")
        return np.asarray(prediction.actions, np.float32), {}


_ADAPTERS: dict[str, Callable[..., EnvAdapter]] = {
    "gymwire/NavsimEnv-v1": NavsimAdapter,
    "gymwire/NavsimEnv-v2": NavsimAdapter,
    "gymwire/Bench2Drive-v0": Bench2DriveAdapter,
    "gymwire/EvacWorldModel-v0": EvacAdapter,
}


def register_adapter(env_id: str, factory: Callable[..., EnvAdapter]) -> None:
    """Adds an adapter for another env id (a hosted or plugin env)."""
    _ADAPTERS[env_id] = factory


def adapter_for(env_id: str, **kwargs: Any) -> EnvAdapter:
    """The adapter of ``env_id`` built with ``kwargs`` (num_envs, and Bench2Drive's action_type and controller)."""
    if env_id not in _ADAPTERS:
        raise KeyError(f"no VLA adapter for {env_id!r}; adapters exist for: {', '.join(sorted(_ADAPTERS))} (add one with register_adapter)")
    return _ADAPTERS[env_id](**kwargs)

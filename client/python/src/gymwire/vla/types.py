"""What a VLA model sees and what it predicts, batched over envs (first dimension N)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class VLAInput:
    """A batch of model inputs built from env observations by an env adapter.

    ``images``: camera name -> ``[N, H, W, 3]`` uint8 (NAVSIM's history frames: ``[N, T, H, W, 3]``);
    ``state``: ``[N, D]`` float32 proprioception (speed, IMU, target point, ego history...);
    ``instruction``: one text per env (EVAC's task, or the navigation command in words);
    ``command``: ``[N]`` int64 navigation command (Bench2Drive's RoadOption, NAVSIM's one-hot index);
    ``num_waypoints``/``waypoint_dims``/``waypoint_interval``: the trajectory the env takes, so a model
    can predict exactly that (else the adapter resamples what it predicts); ``raw``: the observation.
    """

    images: dict[str, np.ndarray] = field(default_factory=dict)
    state: np.ndarray | None = None
    instruction: list[str] | None = None
    command: np.ndarray | None = None
    num_waypoints: int | None = None
    waypoint_dims: int | None = None
    waypoint_interval: float = 0.5
    raw: Any = None

    @property
    def batch_size(self) -> int:
        for value in (self.state, self.command, *self.images.values()):
            if value is not None:
                return len(value)
        return len(self.instruction or [])

    def as_dict(self) -> dict[str, Any]:
        """Named arrays for frameworks that feed by name (ONNX inputs, a torch module taking a dict)."""
        named: dict[str, Any] = {f"image/{k}": v for k, v in self.images.items()}
        if self.state is not None:
            named["state"] = self.state
        if self.command is not None:
            named["command"] = self.command
        if self.instruction is not None:
            named["instruction"] = self.instruction
        return named


@dataclass
class VLAPrediction:
    """A model's predictions for a batch; every field is optional, one row per env.

    ``actions``: actions in the env's action space (EVAC's chunks, controls); ``waypoints``:
    ``[N, K, 2 or 3]`` ego-frame (x forward, y left, optional heading) points ``interval`` seconds
    apart; ``log_probs``/``values``: ``[N]``; ``extras``: named ``[N, ...]`` arrays stored in datasets
    as ``extras/<name>``.
    """

    actions: Any = None
    waypoints: np.ndarray | None = None
    log_probs: np.ndarray | None = None
    values: np.ndarray | None = None
    extras: dict[str, np.ndarray] = field(default_factory=dict)
    interval: float = 0.5

    @classmethod
    def from_outputs(cls, outputs: Any, interval: float = 0.5) -> VLAPrediction:
        """Reads a framework's outputs: a prediction, a dict by name, or one array (3-D: waypoints; else actions)."""
        if isinstance(outputs, VLAPrediction):
            return outputs
        if isinstance(outputs, dict):
            known = {"actions", "action", "waypoints", "log_probs", "log_prob", "values", "value"}
            return cls(
                actions=outputs.get("actions", outputs.get("action")),
                waypoints=None if outputs.get("waypoints") is None else np.asarray(outputs["waypoints"]),
                log_probs=_vector(outputs.get("log_probs", outputs.get("log_prob"))),
                values=_vector(outputs.get("values", outputs.get("value"))),
                extras={k: np.asarray(v) for k, v in outputs.items() if k not in known},
                interval=interval,
            )
        array = np.asarray(outputs)
        return cls(waypoints=array, interval=interval) if array.ndim == 3 else cls(actions=array, interval=interval)


def _vector(value: Any) -> np.ndarray | None:
    return None if value is None else np.asarray(value, np.float64).reshape(-1)

"""How a gymwire episode maps onto the flat frames trainers' formats store (docs/datasets.md, "LeRobot").

An observation space is split once into its cameras (uint8 images), its task text (the first Text
leaf) and its proprioception (every other numeric leaf, flattened into one float32 vector in the
space's key order). Each env family names the score its info carries (NAVSIM's PDMS and EPDMS,
Bench2Drive's driving score, a success flag) and its control rate; :func:`family_of` picks it from
the env id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from gymnasium import spaces as gs

from ..dataset import ColumnPlan, _pick, plan_columns


@dataclass(frozen=True)
class Family:
    """What one env family keeps beside rewards and flags: its score keys (from info), success key and rate."""

    name: str
    #: Substrings of the env id (case-insensitive) that select this family.
    match: tuple[str, ...]
    #: Frames per second of one env step (LeRobot's ``fps``).
    fps: int
    #: Float info keys stored per frame (``next.<key>`` in LeRobot; Minari episode metadata).
    scores: tuple[str, ...] = ()
    #: The boolean info key that says the task succeeded, if the family has one.
    success: str | None = None


FAMILIES: tuple[Family, ...] = (
    # One step scores a whole 4 s plan at NAVSIM's 2 Hz.
    Family("navsim", ("navsim",), fps=2, scores=("pdms", "epdms", "score")),
    # One step is one 0.05 s CARLA tick.
    Family("bench2drive", ("bench2drive",), fps=20, scores=("driving_score", "route_completion", "infraction_penalty")),
    Family("evac", ("evac", "worldmodel", "world-model"), fps=10, success="success"),
    Family("embodied", ("robosuite", "metaworld", "meta-world"), fps=20, success="success"),
    Family("classic", ("cartpole",), fps=50),
)
DEFAULT_FAMILY = Family("other", (), fps=10)


def family_of(env_id: str) -> Family:
    """The family whose id substrings appear in ``env_id`` (the generic one, with no score, otherwise)."""
    low = env_id.lower()
    for fam in FAMILIES:
        if any(m in low for m in fam.match):
            return fam
    return DEFAULT_FAMILY


def _leaf_space(space: gs.Space[Any], keys: list[str | int]) -> gs.Space[Any]:
    for k in keys:
        space = space[k]  # type: ignore[index]
    return space


def is_camera(space: gs.Space[Any]) -> bool:
    """A uint8 image [H, W, C] (C = 1 or 3), or a stack [T, H, W, C] of them (history frames)."""
    if not isinstance(space, gs.Box) or space.dtype != np.uint8:
        return False
    shape = space.shape
    return len(shape) in (3, 4) and shape[-1] in (1, 3) and shape[-2] >= 8 and shape[-3] >= 8


@dataclass
class FrameLayout:
    """The observation and action spaces split into cameras, task text and flat vectors."""

    cameras: list[tuple[str, ColumnPlan]] = field(default_factory=list)
    camera_shapes: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    task: ColumnPlan | None = None
    state: list[ColumnPlan] = field(default_factory=list)
    state_names: list[str] = field(default_factory=list)
    action: list[ColumnPlan] = field(default_factory=list)
    action_names: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, observation_space: gs.Space[Any], action_space: gs.Space[Any]) -> FrameLayout:
        out = cls()
        for c in plan_columns(observation_space):
            leaf = _leaf_space(observation_space, c.keys)
            name = c.path.lstrip(".").replace(".", "_") or "image"
            if is_camera(leaf):
                out.cameras.append((name, c))
                out.camera_shapes[name] = tuple(int(d) for d in leaf.shape[-3:])  # type: ignore[assignment]
            elif isinstance(leaf, gs.Text):
                if out.task is None:
                    out.task = c
            elif c.encoding in ("raw", "scalar"):
                out.state.append(c)
                out.state_names += _element_names(c.path.lstrip(".") or "state", c.shape)
        for c in plan_columns(action_space):
            if c.encoding in ("raw", "scalar"):
                out.action.append(c)
                out.action_names += _element_names(c.path.lstrip(".") or "action", c.shape)
        return out

    def state_of(self, obs: Any) -> np.ndarray:
        return _flat(self.state, obs)

    def action_of(self, action: Any) -> np.ndarray:
        return _flat(self.action, action)

    def camera_of(self, obs: Any, plan: ColumnPlan) -> np.ndarray:
        """The camera's frame: the newest one of a history stack (its last frame)."""
        img = np.asarray(_pick(obs, plan.keys), dtype=np.uint8)
        return img[-1] if img.ndim == 4 else img

    def task_of(self, obs: Any, info: dict[str, Any], env_id: str) -> str:
        """The task's language: the observation's Text leaf, else ``info`` ``instruction``/``task``, else the env id."""
        if self.task is not None:
            text = _pick(obs, self.task.keys)
            if isinstance(text, str) and text:
                return text
        for key in ("instruction", "task", "task_description"):
            value = info.get(key)
            if isinstance(value, str) and value:
                return value
        return env_id


def _element_names(path: str, shape: list[int]) -> list[str]:
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if n == 1 and not shape:
        return [path]
    return [f"{path}[{','.join(str(i) for i in np.unravel_index(k, shape))}]" for k in range(n)]


def _flat(plans: list[ColumnPlan], value: Any) -> np.ndarray:
    parts = [np.asarray(_pick(value, c.keys), dtype=np.float32).reshape(-1) for c in plans]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)


def score_of(info: dict[str, Any], key: str) -> float:
    """A score from a step's info as float32-ready float (0.0 when the step's info lacks it)."""
    value = info.get(key)
    if isinstance(value, (bool, np.bool_)):
        return float(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    return 0.0

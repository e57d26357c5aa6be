"""VLAPolicy: a VLA model and an env adapter as a gymwire policy (``act(obs, ctx) -> PolicyOutput``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..policies import PolicyOutput
from .adapters import EnvAdapter
from .types import VLAInput, VLAPrediction

ImageHook = Callable[[str, np.ndarray], np.ndarray]
TextHook = Callable[[str], str]


class VLAPolicy:
    """Runs ``model`` on each batch of observations through ``adapter``, with preprocessing hooks.

    ``image_hook(camera, images)`` maps each camera's ``[N, ...]`` batch (resize, normalise, crop);
    ``text_hook(instruction)`` maps each instruction (a prompt template). The returned
    :class:`~gymwire.policies.PolicyOutput` carries the env's actions, the model's log-probs and
    values, and as extras the model's extras plus ``waypoints`` where a controller turned them into
    controls.

    Example::

        policy = VLAPolicy(TorchModel(planner, device="cuda"), adapter_for("gymwire/NavsimEnv-v1", num_envs=8))
        out = policy.act(obs)
    """

    def __init__(self, model: Any, adapter: EnvAdapter, image_hook: ImageHook | None = None, text_hook: TextHook | None = None) -> None:
        self.model = model
        self.adapter = adapter
        self.image_hook = image_hook
        self.text_hook = text_hook

    @property
    def device(self) -> str:
        return str(getattr(self.model, "device", "cpu"))

    def inputs(self, obs: Any, ctx: Any = None) -> VLAInput:
        """The model's inputs for a batch of observations, hooks applied."""
        infos = getattr(ctx, "infos", None)
        inputs = self.adapter.to_input(obs, infos)
        if self.image_hook:
            inputs.images = {name: self.image_hook(name, images) for name, images in inputs.images.items()}
        if self.text_hook and inputs.instruction is not None:
            inputs.instruction = [self.text_hook(t) for t in inputs.instruction]
        return inputs

    def predict(self, obs: Any, ctx: Any = None) -> tuple[VLAInput, VLAPrediction]:
        inputs = self.inputs(obs, ctx)
        return inputs, self.model.predict(inputs)

    def predict_waypoints(self, obs: Any, num_waypoints: int | None = None, dims: int | None = None, interval: float | None = None) -> np.ndarray:
        """The model's trajectory for a batch, resampled to ``[N, num_waypoints, dims]`` (default: the env's shape)."""
        from .waypoints import adapt_waypoints

        _, prediction = self.predict(obs)
        if prediction.waypoints is None:
            raise ValueError("the model predicted no waypoints")
        a = self.adapter
        k = num_waypoints or a.num_waypoints
        d = dims or a.waypoint_dims
        if k is None or d is None:
            raise ValueError(f"{type(a).__name__} takes no trajectory: give num_waypoints and dims")
        return adapt_waypoints(prediction.waypoints, k, d, prediction.interval, interval or a.waypoint_interval)

    def act(self, obs: Any, ctx: Any = None) -> PolicyOutput:
        inputs, prediction = self.predict(obs, ctx)
        actions, extras = self.adapter.to_actions(prediction, inputs)
        return PolicyOutput(actions=actions, log_probs=prediction.log_probs, values=prediction.values, extras={**prediction.extras, **extras})

    def episode_start(self, env_index: int, session_id: str | None = None, info: dict[str, Any] | None = None) -> None:
        self.adapter.episode_start(env_index)

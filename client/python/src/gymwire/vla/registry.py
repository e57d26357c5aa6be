"""A registry of VLA models by name, and policies built from YAML config.

A config names a registered model with its arguments, the framework that runs it, the device and
the env (its adapter)::

    model:
      name: route-follower      # registered with @register_model
      framework: callable       # torch | onnx | callable; omitted: told from the object
      device: cpu
      args: {speed: 6.0}
    env:
      id: gymwire/Bench2Drive-v0
      num_envs: 4
      action_type: control      # adapter options (Bench2Drive: action_type, controller)
      controller: bench2drive

``policy_from_config("vla.yaml")`` builds the :class:`~gymwire.vla.VLAPolicy`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .adapters import adapter_for
from .frameworks import wrap_model
from .policy import VLAPolicy
from .types import VLAInput

_MODELS: dict[str, Callable[..., Any]] = {}


def register_model(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Registers a model factory (a class or function returning a model, torch module or function) under ``name``."""

    def deco(factory: Callable[..., Any]) -> Callable[..., Any]:
        if name in _MODELS and _MODELS[name] is not factory:
            raise ValueError(f"a VLA model named {name!r} is already registered")
        _MODELS[name] = factory
        return factory

    return deco


def registered_models() -> list[str]:
    return sorted(_MODELS)


def make_model(name: str, framework: str | None = None, device: str | None = None, **args: Any) -> Any:
    """Builds the model registered as ``name`` and wraps it for its framework (see :func:`wrap_model`)."""
    if name not in _MODELS:
        raise KeyError(f"no VLA model named {name!r}; registered: {', '.join(registered_models())}")
    options = {} if device is None or framework in ("callable",) else {"device": device}
    built = _MODELS[name](**args)
    if framework is None and hasattr(built, "predict"):
        return built
    if framework is None and not (hasattr(built, "parameters") and hasattr(built, "to")):
        options = {}
    return wrap_model(built, framework, **options)


def load_config(source: str | Path | dict[str, Any]) -> dict[str, Any]:
    """A config dict from a YAML file, YAML text or a dict (YAML needs PyYAML: ``pip install gymwire[vla]``)."""
    if isinstance(source, dict):
        return source
    try:
        import yaml
    except ImportError as err:  # pragma: no cover - PyYAML is in the test requirements
        raise ImportError("VLA configs in YAML need PyYAML: pip install 'gymwire[vla]'") from err
    text = Path(source).read_text() if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source and Path(source).exists()) else str(source)
    config = yaml.safe_load(text)
    if not isinstance(config, dict):
        raise ValueError(f"a VLA config is a mapping with 'model' and 'env'; got {type(config).__name__}")
    return config


def policy_from_config(source: str | Path | dict[str, Any], **env_overrides: Any) -> VLAPolicy:
    """Builds a :class:`VLAPolicy` from a config (see the module doc); ``env_overrides`` replace env options (e.g. num_envs)."""
    config = load_config(source)
    for key in ("model", "env"):
        if not isinstance(config.get(key), dict):
            raise ValueError(f"a VLA config needs a {key!r} mapping; it has: {', '.join(config) or 'nothing'}")
    model_cfg = dict(config["model"])
    if "name" not in model_cfg:
        raise ValueError(f"model needs a 'name' (registered: {', '.join(registered_models())})")
    model = make_model(model_cfg.pop("name"), model_cfg.pop("framework", None), model_cfg.pop("device", None), **model_cfg.pop("args", {}))
    if model_cfg:
        raise ValueError(f"unknown model options {', '.join(sorted(model_cfg))}; a model takes name, framework, device and args")
    env_cfg = {**config["env"], **env_overrides}
    if "id" not in env_cfg:
        raise ValueError("env needs an 'id' (an env id such as gymwire/Bench2Drive-v0)")
    return VLAPolicy(model, adapter_for(env_cfg.pop("id"), **env_cfg))


@register_model("route-follower")
def route_follower(speed: float = 6.0, interval: float = 0.5, horizon: int = 8) -> Callable[[VLAInput], dict[str, np.ndarray]]:
    """A baseline planner without learning: ``horizon`` waypoints at ``speed`` m/s towards the route.

    Bench2Drive: straight at the target point (state columns 1-2); NAVSIM: along the current
    heading; a stand-in with the interface of a learned planner, for examples and tests.
    """

    def plan(inputs: VLAInput) -> dict[str, np.ndarray]:
        n = inputs.batch_size
        state = inputs.state if inputs.state is not None else np.zeros((n, 3), np.float32)
        if inputs.waypoint_dims == 2 and state.shape[1] >= 3:
            direction = state[:, 1:3].astype(np.float64)
        else:
            direction = np.tile([1.0, 0.0], (n, 1))
        direction = direction / np.maximum(np.linalg.norm(direction, axis=1, keepdims=True), 1e-6)
        steps = speed * interval * np.arange(1, horizon + 1)
        waypoints = direction[:, None, :] * steps[None, :, None]
        return {"waypoints": waypoints.astype(np.float32), "speed_target": np.full(n, speed, np.float32)}

    return plan

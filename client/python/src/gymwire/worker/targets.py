"""What a worker builds: a Gymnasium registry id or a ``module:callable`` that returns a ``gymnasium.Env``."""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

import gymnasium as gym


class InvalidKwargsError(TypeError):
    """The make kwargs do not fit the env's constructor."""


def _gym_spec(gym_id: str) -> gym.envs.registration.EnvSpec:
    # "module:Env-v0" imports the module first (it registers the id), as gymnasium.make does.
    module, _, env_id = gym_id.rpartition(":")
    if module:
        importlib.import_module(module)
    return gym.spec(env_id)


def _callable(path: str) -> Any:
    module, sep, attr = path.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"--python target must look like package.module:callable, got {path!r}")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{path} is a {type(obj).__name__}, not a callable returning a gymnasium.Env")
    return obj


def constructor(target: dict[str, Any]) -> Any:
    """What builds the target: the callable, or the class a Gymnasium id's entry point names."""
    if target["kind"] != "gym":
        return _callable(target["path"])
    entry = _gym_spec(target["id"]).entry_point
    return _callable(entry) if isinstance(entry, str) else entry


def describe(target: dict[str, Any]) -> dict[str, Any]:
    """Checks that a target exists (the id is registered, the callable imports) and what the server needs before any make."""
    if target["kind"] == "gym":
        spec = _gym_spec(target["id"])
        return {"max_episode_steps": spec.max_episode_steps, "description": f"Gymnasium {spec.id} ({spec.entry_point})"}
    fn = _callable(target["path"])
    doc = (getattr(fn, "__doc__", None) or "").strip().split("\n")[0]
    return {"max_episode_steps": None, "description": doc or f"Python env from {target['path']}"}


def build(target: dict[str, Any], kwargs: dict[str, Any]) -> gym.Env[Any, Any]:
    """Builds the env. Gymnasium ids are made without Gymnasium's TimeLimit, OrderEnforcing and
    PassiveEnvChecker: the server stacks its own (max_episode_steps from :func:`describe`), so
    truncation is counted once and a step does not pass through the same checks twice."""
    try:
        if target["kind"] == "gym":
            spec = dataclasses.replace(_gym_spec(target["id"]), max_episode_steps=None, order_enforce=False, disable_env_checker=True)
            env = gym.make(spec, **kwargs)
        else:
            env = _callable(target["path"])(**kwargs)
    except TypeError as err:
        if "argument" in str(err):
            raise InvalidKwargsError(str(err)) from err
        raise
    if not isinstance(env, gym.Env):
        raise TypeError(f"{target} returned a {type(env).__name__}, not a gymnasium.Env")
    return env

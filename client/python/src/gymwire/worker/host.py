"""The envs one worker hosts, by handle, and the operations the server sends for them.

Every operation gets decoded wire values and returns wire values; exceptions become error
answers (see :func:`error_answer`) and never end the worker.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces as gs

from ..spaces import space_to_wire, value_from_wire, value_to_wire
from . import targets
from .tools import find_tools
from .values import render_frame, wire_info, wire_metadata, wire_value

STATE_GET = "gymwire_get_state"
STATE_SET = "gymwire_set_state"


class UnknownHandleError(KeyError):
    """The server named an env this worker does not hold (closed, or made on a worker that has since restarted)."""


class InvalidStateError(ValueError):
    """set_state got bytes the env cannot restore."""


class ObservationContractError(ValueError):
    """With ``gymwire serve --check``: the env returned an observation outside its observation space."""


def observation_problem(space: gs.Space[Any], value: Any) -> str | None:
    """Why ``value``, exactly as the env returned it, is not in ``space`` (None when it is). Run
    before any conversion for the wire: a cast would hide a wrong dtype."""
    if isinstance(space, gs.Box) and isinstance(value, np.ndarray):
        if value.dtype != space.dtype:
            return f"an array of dtype {value.dtype} where the Box has dtype {space.dtype}"
        if value.shape != space.shape:
            return f"an array of shape {value.shape} where the Box has shape {space.shape}"
    try:
        inside = space.contains(value)
    except Exception as err:  # noqa: BLE001 - a value the space cannot even compare is outside it
        return f"{type(value).__name__} that {type(space).__name__}.contains cannot check ({err})"
    return None if inside else f"{type(value).__name__} {value!r:.200} is not in {space}"


class HostedEnv:
    """One env and what its wire conversions need."""

    __slots__ = ("env", "observation_space", "action_space", "tools", "box_dtype", "discrete_type", "check")

    def __init__(self, env: gym.Env[Any, Any], check: bool = False) -> None:
        self.env = env
        self.check = check
        self.observation_space: gs.Space[Any] = env.observation_space
        self.action_space: gs.Space[Any] = env.action_space
        self.tools = find_tools(env.unwrapped)
        # Fast paths for the common spaces: a step costs tens of microseconds, conversions should not.
        self.box_dtype = env.observation_space.dtype if isinstance(env.observation_space, gs.Box) else None
        self.discrete_type = env.action_space.dtype.type if isinstance(env.action_space, gs.Discrete) else None

    def obs(self, value: Any, op: str = "step") -> Any:
        if self.check:
            problem = observation_problem(self.observation_space, value)
            if problem is not None:
                raise ObservationContractError(f"{op} returned an observation outside the observation space: {problem}")
        if type(value) is np.ndarray and value.dtype == self.box_dtype:
            return value
        return wire_value(value_to_wire(self.observation_space, value), "obs")

    def action(self, value: Any) -> Any:
        if self.discrete_type is not None and type(value) is int:
            return self.discrete_type(value)
        action = value_from_wire(self.action_space, value)
        # Decoded tensors are read-only views of the frame; envs may write into their action.
        if isinstance(action, np.ndarray) and not action.flags.writeable:
            action = action.copy()
        return action


#: An env class attribute: True says the env keeps state bound to the thread that made it (an
#: OpenGL context for offscreen frames), so all its calls must run on that thread.
THREAD_BOUND_ATTR = "gymwire_thread_bound"


def binds_thread(env: gym.Env[Any, Any]) -> bool:
    """Whether this env's calls must stay on the thread that made it: it renders (MuJoCo's and
    robosuite's renderers hold a GL context current on one thread) or says so itself."""
    return env.render_mode is not None or bool(getattr(env.unwrapped, THREAD_BOUND_ATTR, False))


def make_binds_thread(call: dict[str, Any]) -> bool:
    """Whether a ``make`` call is about to build a thread-bound env, known before it runs (a make
    that takes long must not leave the env on a thread the loop has moved away from)."""
    if (call.get("kwargs") or {}).get("render_mode") is not None:
        return True
    try:
        return bool(getattr(targets.constructor(call["target"]), THREAD_BOUND_ATTR, False))
    except Exception:  # noqa: BLE001 - a target that does not resolve fails in make itself, with its own error
        return False


class Host:
    """The handle table and the operations on it."""

    def __init__(self) -> None:
        self.envs: dict[int, HostedEnv] = {}
        #: Handles of thread-bound envs: while any lives, the loop never moves to another thread (loop.py).
        self.thread_bound: set[int] = set()
        self.ops: dict[str, Callable[[dict[str, Any]], Any]] = {
            "describe": lambda c: targets.describe(c["target"]),
            "make": self.make,
            "reset": self.reset,
            "step": self.step,
            "render": lambda c: render_frame(self.get(c).env.render()),
            "close": self.close,
            "tool": self.tool,
            "get_state": self.get_state,
            "set_state": self.set_state,
        }

    def get(self, call: dict[str, Any]) -> HostedEnv:
        hosted = self.envs.get(call["handle"])
        if hosted is None:
            raise UnknownHandleError(f"this worker holds no env {call['handle']}")
        return hosted

    def pins_thread(self, call: dict[str, Any]) -> bool:
        """Whether this call must finish on the loop's thread: a thread-bound env lives here, or this call makes one."""
        return bool(self.thread_bound) or (call.get("op") == "make" and make_binds_thread(call))

    def run(self, call: dict[str, Any]) -> dict[str, Any]:
        """One operation's answer: ``{"ok": value}`` or ``{"error": {...}}``."""
        try:
            op = self.ops.get(call.get("op", ""))
            if op is None:
                raise ValueError(f"unknown worker operation {call.get('op')!r}")
            return {"ok": op(call)}
        except Exception as err:  # noqa: BLE001 - every env failure becomes an answer, never a dead worker
            return {"error": error_answer(err)}

    def make(self, call: dict[str, Any]) -> dict[str, Any]:
        env = targets.build(call["target"], call.get("kwargs") or {})
        hosted = HostedEnv(env, check=bool(call.get("check")))
        unwrapped = env.unwrapped
        metadata = wire_metadata(dict(env.metadata))
        metadata["render_modes"] = [m for m in metadata.get("render_modes", []) if isinstance(m, str)]
        self.envs[call["handle"]] = hosted
        if binds_thread(env):
            self.thread_bound.add(call["handle"])
        return {
            "observation_space": space_to_wire(env.observation_space),
            "action_space": space_to_wire(env.action_space),
            "metadata": metadata,
            "render_mode": env.render_mode,
            "tools": [spec for spec, _ in hosted.tools.values()],
            "state": callable(getattr(unwrapped, STATE_GET, None)) and callable(getattr(unwrapped, STATE_SET, None)),
        }

    # Steps and resets answer with arrays: cheaper to pack and unpack than maps.
    def reset(self, call: dict[str, Any]) -> list[Any]:
        hosted = self.get(call)
        obs, info = hosted.env.reset(seed=call.get("seed"), options=call.get("options"))
        return [hosted.obs(obs, "reset"), wire_info(info)]

    def step(self, call: dict[str, Any]) -> Any:
        hosted = self.get(call)
        submit = getattr(hosted.env, "gymwire_submit_step", None)
        if submit is not None:
            # A batched env (batching.py): the answer comes when its batcher runs.
            deferred = submit(hosted.action(call["action"]))
            deferred.convert = lambda result: [hosted.obs(result[0]), float(result[1]), bool(result[2]), bool(result[3]), wire_info(result[4])]
            return deferred
        obs, reward, terminated, truncated, info = hosted.env.step(hosted.action(call["action"]))
        return [hosted.obs(obs), float(reward), bool(terminated), bool(truncated), wire_info(info)]

    def close(self, call: dict[str, Any]) -> None:
        hosted = self.envs.pop(call["handle"], None)
        self.thread_bound.discard(call["handle"])
        if hosted is not None:
            hosted.env.close()

    def tool(self, call: dict[str, Any]) -> Any:
        hosted = self.get(call)
        entry = hosted.tools.get(call["name"])
        if entry is None:
            raise KeyError(f"no tool {call['name']!r}")
        return wire_value(entry[1](**(call.get("args") or {})), f"{call['name']}()")

    def get_state(self, call: dict[str, Any]) -> bytes:
        state = getattr(self.get(call).env.unwrapped, STATE_GET)()
        if not isinstance(state, (bytes, bytearray, memoryview)):
            raise TypeError(f"{STATE_GET} returned a {type(state).__name__}, not bytes")
        return bytes(state)

    def set_state(self, call: dict[str, Any]) -> None:
        try:
            getattr(self.get(call).env.unwrapped, STATE_SET)(bytes(call["state"]))
        except (ValueError, TypeError, KeyError) as err:
            raise InvalidStateError(str(err)) from err


def error_answer(err: BaseException) -> dict[str, Any]:
    """What the server needs to answer with: the kind (which wire code), the exception type and its
    traceback's last line, and the full traceback for the server log."""
    kind = "env"
    if isinstance(err, targets.InvalidKwargsError):
        kind = "invalid_kwargs"
    elif isinstance(err, InvalidStateError):
        kind = "invalid_state"
    elif isinstance(err, UnknownHandleError):
        kind = "unknown_handle"
    elif isinstance(err, gym.error.DependencyNotInstalled):
        kind = "unsupported"
    lines = traceback.format_exception_only(type(err), err)
    last_line = lines[-1].strip() if lines else type(err).__name__
    return {"kind": kind, "type": type(err).__name__, "message": last_line, "traceback": "".join(traceback.format_exception(err))}

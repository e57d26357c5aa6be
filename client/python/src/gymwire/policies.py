"""Policies: one small protocol so a model is wrapped once and used with every env and integration.

A :class:`Policy` takes a batch of observations (first dimension = number of envs, as a Gymnasium
vector env returns them) and, optionally, an :class:`ActContext` (each env's session id, latest
info and whether its observation starts an episode), and returns a :class:`PolicyOutput`: actions
for the batch and, when it has them, log-probabilities, value estimates and ``extras`` (named
arrays with one row per env, e.g. the waypoints a controller turned into the stored controls;
datasets keep them as ``extras/<name>`` columns). A policy may also define
``episode_start(env_index, session_id, info)``, called when an env starts an episode, to drop its
memory of that env. A one-argument ``act(obs)`` keeps working: :func:`act_with_context` calls
each policy the way it is written. Policies are registered by name
(:func:`register_policy`) and built from config (:func:`make_policy`), so trainers and scripts pick
them from YAML. :class:`WaypointPID` turns predicted ego-frame waypoints into throttle, steer and
brake the way Bench2Drive's TCP agent does.

Example::

    @register_policy("always-right")
    class AlwaysRight:
        def __init__(self, num_envs=1): self.n = num_envs
        def act(self, obs, ctx=None): return PolicyOutput(actions=np.ones(len(obs), np.int64))

    policy = make_policy("always-right")
"""

from __future__ import annotations

import inspect
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np
from gymnasium import spaces as gs
from gymnasium.vector.utils import batch_space


@dataclass
class ActContext:
    """What a policy may want besides the observations, aligned with the batch (one entry per env).

    ``session_ids``: the server's session of each env; ``infos``: each env's latest info (from its
    reset or its last step; an empty dict where there is none); ``episode_starts``: ``[N]`` bool,
    True where the observation is the first of an episode.
    """

    session_ids: list[str]
    infos: list[dict[str, Any]]
    episode_starts: np.ndarray


@dataclass
class PolicyOutput:
    """What a policy returns for a batch: ``actions`` (batched like the vector action space) and optional per-env arrays.

    ``log_probs`` and ``values`` are ``[N]``; ``extras`` maps a name to an array with one row per
    env (``[N, ...]``), stored in datasets as the ``extras/<name>`` column.
    """

    actions: Any
    log_probs: np.ndarray | None = None
    values: np.ndarray | None = None
    extras: dict[str, np.ndarray] = field(default_factory=dict)


@runtime_checkable
class Policy(Protocol):
    """Observations in (batched) with an optional :class:`ActContext`; a :class:`PolicyOutput` out.

    Optional: ``episode_start(env_index: int, session_id: str, info: dict) -> None``, called when
    env ``env_index`` starts an episode (``info`` is its reset info), before the ``act`` that sees
    its first observation.
    """

    def act(self, obs: Any, ctx: ActContext | None = None) -> PolicyOutput: ...


def _takes_context(act: Callable[..., Any]) -> bool:
    try:
        params = list(inspect.signature(act).parameters.values())
    except (TypeError, ValueError):  # builtins and C extensions: assume the current contract
        return True
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return True
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 2 or any(p.name == "ctx" for p in params)


def context_caller(policy: Any) -> Callable[[Any, ActContext], PolicyOutput]:
    """``(obs, ctx) -> PolicyOutput`` for ``policy``: its ``act(obs, ctx)``, or ``act(obs)`` for a policy written before :class:`ActContext`.

    The signature is inspected once here, so callers acting many times keep the returned function.
    """
    act = policy.act
    if _takes_context(act):
        return act  # type: ignore[no-any-return]
    return lambda obs, ctx: act(obs)


def act_with_context(policy: Any, obs: Any, ctx: ActContext) -> PolicyOutput:
    """Calls ``policy.act(obs, ctx)``, or ``policy.act(obs)`` for a policy written before :class:`ActContext`."""
    return context_caller(policy)(obs, ctx)


def notify_episode_start(policy: Any, env_index: int, session_id: str, info: dict[str, Any]) -> None:
    """Calls the policy's optional ``episode_start`` hook."""
    hook = getattr(policy, "episode_start", None)
    if hook is not None:
        hook(env_index, session_id, info)


_REGISTRY: dict[str, Callable[..., Policy]] = {}


def register_policy(name: str) -> Callable[[Callable[..., Policy]], Callable[..., Policy]]:
    """Registers a policy class or factory under ``name`` (a decorator)."""

    def deco(factory: Callable[..., Policy]) -> Callable[..., Policy]:
        if name in _REGISTRY and _REGISTRY[name] is not factory:
            raise ValueError(f"a policy named {name!r} is already registered")
        _REGISTRY[name] = factory
        return factory

    return deco


def make_policy(name: str, **cfg: Any) -> Policy:
    """Builds the policy registered under ``name`` with ``cfg`` as keyword arguments."""
    if name not in _REGISTRY:
        raise KeyError(f"no policy named {name!r}; registered: {', '.join(sorted(_REGISTRY))}")
    return _REGISTRY[name](**cfg)


def registered_policies() -> list[str]:
    return sorted(_REGISTRY)


@register_policy("random")
class RandomPolicy:
    """Uniform random actions from the (single) action space, seeded; log-prob where it is defined."""

    def __init__(self, action_space: gs.Space[Any], num_envs: int = 1, seed: int | None = None) -> None:
        self.single_action_space = action_space
        self.action_space = batch_space(action_space, num_envs)
        self.action_space.seed(seed)
        self.num_envs = num_envs
        self._batch_spaces = {num_envs: self.action_space}

    def act(self, obs: Any, ctx: ActContext | None = None) -> PolicyOutput:
        # The batch is as long as the context says (collection hands over the sessions that run an episode).
        n = self.num_envs if ctx is None else len(ctx.session_ids)
        space = self._batch_spaces.get(n)
        if space is None:
            space = self._batch_spaces[n] = batch_space(self.single_action_space, n)
            space.seed(int(self.action_space.np_random.integers(2**31)))  # seeded from the first, so runs repeat
        actions = space.sample()
        log_prob = None
        if isinstance(self.single_action_space, gs.Discrete):
            log_prob = np.full(n, -np.log(self.single_action_space.n))
        return PolicyOutput(actions=actions, log_probs=log_prob)


@register_policy("constant")
class ConstantPolicy:
    """The same action in every env (handy for tests and baselines)."""

    def __init__(self, action: Any, num_envs: int = 1) -> None:
        self.action = np.asarray(action)
        self.num_envs = num_envs

    def act(self, obs: Any, ctx: ActContext | None = None) -> PolicyOutput:
        return PolicyOutput(actions=np.stack([self.action] * (self.num_envs if ctx is None else len(ctx.session_ids))))


@register_policy("onnx")
class OnnxPolicy:
    """An ONNX model run with onnxruntime, on CUDA when the CUDA provider is present, else on CPU.

    The model takes the batched observation (input ``input_name``, float32) and returns either
    action logits (``discrete=True``: the action is sampled, log-probs returned) or actions.
    """

    def __init__(self, path: str, discrete: bool = True, input_name: str | None = None, seed: int | None = 0, device: str = "auto") -> None:
        import onnxruntime as ort

        available = ort.get_available_providers()
        providers = ["CPUExecutionProvider"]
        if device in ("auto", "cuda") and "CUDAExecutionProvider" in available:
            providers = ["CUDAExecutionProvider", "CPUExecutionProvider"]
        elif device == "cuda":
            raise RuntimeError(f"CUDA was asked for but onnxruntime has only {available}")
        self.session = ort.InferenceSession(path, providers=providers)
        self.device = "cuda" if providers[0].startswith("CUDA") else "cpu"
        self.input_name = input_name or self.session.get_inputs()[0].name
        self.discrete = discrete
        self.rng = np.random.default_rng(seed)

    def act(self, obs: Any) -> PolicyOutput:
        out = self.session.run(None, {self.input_name: np.asarray(obs, dtype=np.float32)})
        head = out[0]
        values = out[1].reshape(-1).astype(np.float64) if len(out) > 1 else None
        if not self.discrete:
            return PolicyOutput(actions=head, values=values)
        logits = head - head.max(axis=1, keepdims=True)
        logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
        probs = np.exp(logp)
        u = self.rng.random((len(probs), 1))
        actions = np.minimum((probs.cumsum(axis=1) < u).sum(axis=1), probs.shape[1] - 1).astype(np.int64)
        return PolicyOutput(actions=actions, log_probs=logp[np.arange(len(actions)), actions].astype(np.float64), values=values)


def write_linear_onnx(path: str, weights: np.ndarray, bias: np.ndarray | None = None, value_weights: np.ndarray | None = None) -> str:
    """Writes a linear policy ``logits = obs @ weights + bias`` (and ``value = obs @ value_weights``) as ONNX.

    For examples and tests: a real ONNX graph that :class:`OnnxPolicy` loads, built with the
    ``onnx`` package (IR version 9, opset 17, loadable by any recent onnxruntime).
    """
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    w = np.asarray(weights, np.float32)
    obs_dim, n_out = w.shape
    inits = [numpy_helper.from_array(w, "W"), numpy_helper.from_array(np.zeros(n_out, np.float32) if bias is None else np.asarray(bias, np.float32), "B")]
    nodes = [helper.make_node("Gemm", ["obs", "W", "B"], ["logits"])]
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", n_out])]
    if value_weights is not None:
        inits.append(numpy_helper.from_array(np.asarray(value_weights, np.float32).reshape(obs_dim, 1), "WV"))
        nodes.append(helper.make_node("MatMul", ["obs", "WV"], ["value"]))
        outputs.append(helper.make_tensor_value_info("value", TensorProto.FLOAT, ["N", 1]))
    graph = helper.make_graph(
        nodes, "gymwire_linear_policy", [helper.make_tensor_value_info("obs", TensorProto.FLOAT, ["N", obs_dim])], outputs, initializer=inits
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.save(model, path)
    return path


#: Weights of a linear CartPole controller (push towards where the pole falls): balances for hundreds of steps.
CARTPOLE_LINEAR_WEIGHTS = np.array([[0.0, 0.0], [0.0, 0.0], [-5.0, 5.0], [-1.0, 1.0]], np.float32)


class PIDController:
    """PID over a sliding window, as in Bench2Drive's TCP/Transfuser agents: I = window mean, D = last difference."""

    def __init__(self, k_p: float, k_i: float, k_d: float, n: int) -> None:
        self.k_p, self.k_i, self.k_d = k_p, k_i, k_d
        self.window: deque[float] = deque([0.0] * n, maxlen=n)

    def step(self, error: float) -> float:
        self.window.append(error)
        integral = float(np.mean(self.window)) if len(self.window) >= 2 else 0.0
        derivative = self.window[-1] - self.window[-2] if len(self.window) >= 2 else 0.0
        return self.k_p * error + self.k_i * integral + self.k_d * derivative

    def reset(self) -> None:
        n = self.window.maxlen or 1
        self.window = deque([0.0] * n, maxlen=n)


@dataclass
class WaypointPIDConfig:
    """TCP's (Bench2Drive baseline) controller constants."""

    turn_kp: float = 0.75
    turn_ki: float = 0.75
    turn_kd: float = 0.3
    turn_n: int = 40
    speed_kp: float = 5.0
    speed_ki: float = 0.5
    speed_kd: float = 1.0
    speed_n: int = 40
    max_throttle: float = 0.75
    brake_speed: float = 0.4
    brake_ratio: float = 1.1
    clip_delta: float = 0.25
    waypoint_dt: float = 0.5


class WaypointPID:
    """Predicted waypoints to ``[throttle, steer, brake]`` (float32), one controller state per env.

    Waypoints are ego-frame ``(x forward, y left)`` in metres, ``waypoint_dt`` seconds apart (the
    convention of the gymwire driving envs); steer is positive to the right, as in CARLA. The
    desired speed is the distance between the first two waypoints over ``waypoint_dt``; the
    heading error aims at their midpoint.
    """

    def __init__(self, num_envs: int = 1, config: WaypointPIDConfig | None = None) -> None:
        self.config = config or WaypointPIDConfig()
        c = self.config
        self.turn = [PIDController(c.turn_kp, c.turn_ki, c.turn_kd, c.turn_n) for _ in range(num_envs)]
        self.speed = [PIDController(c.speed_kp, c.speed_ki, c.speed_kd, c.speed_n) for _ in range(num_envs)]

    def reset(self, env_index: int | None = None) -> None:
        for i in range(len(self.turn)) if env_index is None else [env_index]:
            self.turn[i].reset()
            self.speed[i].reset()

    def control(self, waypoints: np.ndarray, speed: float, env_index: int = 0) -> np.ndarray:
        """One env: ``waypoints`` ``[K, 2]`` (K >= 2), current ``speed`` in m/s."""
        c = self.config
        wp = np.asarray(waypoints, dtype=np.float64)
        desired_speed = float(np.linalg.norm(wp[1] - wp[0])) / c.waypoint_dt
        brake = desired_speed < c.brake_speed or (desired_speed > 0 and speed / desired_speed > c.brake_ratio)
        delta = float(np.clip(desired_speed - speed, 0.0, c.clip_delta))
        throttle = float(np.clip(self.speed[env_index].step(delta), 0.0, c.max_throttle))
        if brake:
            throttle = 0.0
        aim = (wp[0] + wp[1]) / 2.0
        # Angle to the aim point, normalised by 90 degrees; y is left, so a left aim steers negative.
        angle = float(np.degrees(-np.arctan2(aim[1], aim[0]))) / 90.0
        if speed < 0.01 or brake:
            angle = 0.0
        steer = float(np.clip(self.turn[env_index].step(angle), -1.0, 1.0))
        return np.array([throttle, steer, 1.0 if brake else 0.0], dtype=np.float32)

    def __call__(self, waypoints: np.ndarray, speeds: np.ndarray) -> np.ndarray:
        """A batch: ``waypoints`` ``[N, K, 2]``, ``speeds`` ``[N]`` -> controls ``[N, 3]``."""
        return np.stack([self.control(w, float(s), i) for i, (w, s) in enumerate(zip(waypoints, np.asarray(speeds).reshape(-1)))])

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
them from YAML. :class:`WaypointPID` (from :mod:`gymwire.control`) turns predicted ego-frame waypoints into
throttle, steer and brake with the benchmarks' reference controllers, chosen by name.

Example::

    @register_policy("always-right")
    class AlwaysRight:
        def __init__(self, num_envs=1): self.n = num_envs
        def act(self, obs, ctx=None): return PolicyOutput(actions=np.ones(len(obs), np.int64))

    policy = make_policy("always-right")
"""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
from gymnasium import spaces as gs
from gymnasium.vector.utils import batch_space

from . import _random
from ._devices import onnx_session
from .control import WaypointPID as WaypointPID  # re-exported: it lived here before gymwire.control


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


class PolicyMismatchError(ValueError):
    """A policy that does not fit the env's spaces or its own model; raised before any step is taken."""


_ONNX_DTYPES = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(int16)": np.int16,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(uint16)": np.uint16,
}
#: Outputs the ONNX contract reads; every other output is an extra.
_KNOWN_OUTPUTS = ("logits", "action", "mean", "log_std", "value", "log_prob")
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _onnx_batch_dimension(path: str, inputs: list[Any], outputs: list[Any]) -> int | None:
    """The model's fixed batch size, or None when it is symbolic; raises when inputs or outputs disagree."""
    fixed = sorted({i.shape[0] for i in inputs if i.shape and isinstance(i.shape[0], int)})
    symbolic = [i.name for i in inputs if not i.shape or not isinstance(i.shape[0], int)]
    if len(fixed) > 1 or (fixed and symbolic):
        shapes = ", ".join(f"{i.name} [{', '.join('N' if not isinstance(d, int) else str(d) for d in (i.shape or []))}]" for i in inputs)
        raise PolicyMismatchError(f"ONNX model {path}: its inputs disagree on the batch dimension ({shapes}); export it with one dynamic batch axis")
    batch = fixed[0] if fixed else None
    for o in outputs:
        first = o.shape[0] if o.shape else None
        if o.name not in _KNOWN_OUTPUTS or o.name == "log_std" or not isinstance(first, int) or first == batch:
            continue
        if batch is None:
            raise PolicyMismatchError(
                f"ONNX model {path}: output {o.name!r} has a fixed batch dimension {first} but the inputs' is dynamic; "
                "export every output with the dynamic batch axis"
            )
        raise PolicyMismatchError(f"ONNX model {path}: output {o.name!r} has batch dimension {first} but its inputs take {batch}")
    return batch


@register_policy("onnx")
class OnnxPolicy:
    """An ONNX model as a policy, on onnxruntime: the contract the TypeScript SDK's ``OnnxPolicy`` follows too.

    Inputs by name, ``[N, ...]``: a Box observation feeds the model's single input; a Dict feeds each
    input from the observation key of the same name, or from the key ``inputs`` maps it to
    (``{"route_command": "command"}``; nested keys as ``"rgb/CAM_FRONT"``). Discrete leaves (a
    navigation command) feed an int or float input of shape ``[N]`` or ``[N, 1]``. Outputs by name:
    ``logits`` (Discrete actions, sampled or argmax with ``greedy``), ``action`` (Box), or ``mean``
    with ``log_std`` (a Gaussian, sampled here, clipped to the Box bounds when the action space is
    known, log-prob of the sample); optionally ``value`` and ``log_prob``; every other output is
    returned in ``extras``. Sampling uses the TypeScript SDK's generator, so equal seeds give equal
    actions in both SDKs. A fixed batch dimension runs in chunks of that size; inputs that disagree
    on it are refused here, before any session opens. ``device="cuda"`` uses the CUDA provider when
    it loads, else warns and runs on CPU; ``device`` says what actually runs, ``providers`` what
    onnxruntime registered. Passing the env's single ``observation_space``/``action_space`` (or
    calling :meth:`check`) matches them against the model up front.

    Example::

        policy = OnnxPolicy("policy.onnx", inputs={"route_command": "command"}, seed=0)
        policy.check(envs.single_observation_space, envs.single_action_space)
        out = policy.act(obs)  # out.actions, out.log_probs, out.values, out.extras
    """

    def __init__(
        self,
        path: str,
        discrete: bool | None = None,
        input_name: str | None = None,
        seed: int | None = 0,
        device: str = "auto",
        *,
        inputs: dict[str, str] | None = None,
        greedy: bool = False,
        observation_space: gs.Space[Any] | None = None,
        action_space: gs.Space[Any] | None = None,
        device_id: int = 0,
        threads: int | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        self.session, self.device, self.fallback = onnx_session(path, device, device_id, threads, logger)
        #: The execution providers onnxruntime actually registered (a CUDA provider that failed to load is absent).
        self.providers: list[str] = list(self.session.get_providers())
        self.path = path
        self.inputs_meta = self.session.get_inputs()
        self.outputs_meta = self.session.get_outputs()
        self.output_names = [o.name for o in self.outputs_meta]
        self.fixed_batch = _onnx_batch_dimension(path, self.inputs_meta, self.outputs_meta)
        self.mapping = dict(inputs or {})
        if input_name is not None:
            self.mapping.setdefault(input_name, "")
        unknown = [k for k in self.mapping if k not in {i.name for i in self.inputs_meta}]
        if unknown:
            raise PolicyMismatchError(
                f"the inputs option maps {unknown[0]!r}, which is not a model input (the model has: {', '.join(i.name for i in self.inputs_meta)})"
            )
        self.discrete = discrete
        self.greedy = greedy
        self.rng = _random.Random(0 if seed is None else seed)
        self.action_space: gs.Space[Any] | None = None
        if observation_space is not None or action_space is not None:
            self.check(observation_space, action_space)

    def check(self, observation_space: gs.Space[Any] | None, action_space: gs.Space[Any] | None) -> None:
        """Matches the model's inputs and outputs with one env's spaces; raises :class:`PolicyMismatchError` naming the first mismatch."""
        if observation_space is not None:
            for meta in self.inputs_meta:
                self._check_input(meta, self._leaf_space(observation_space, meta.name))
        if action_space is None:
            return
        names = ", ".join(self.output_names)
        shape_of = {o.name: o.shape for o in self.outputs_meta}
        if isinstance(action_space, gs.Discrete):
            if "logits" not in shape_of:
                raise PolicyMismatchError(
                    f"a Discrete({action_space.n}) action space needs a model output named 'logits' [N, {action_space.n}]; the model has: {names}"
                )
            last = (shape_of["logits"] or [None])[-1]
            if isinstance(last, int) and last != action_space.n:
                raise PolicyMismatchError(f"model output 'logits' has {last} actions but the action space is Discrete({action_space.n})")
        elif isinstance(action_space, gs.Box):
            head = "action" if "action" in shape_of else "mean" if "mean" in shape_of else None
            if head is None:
                raise PolicyMismatchError(
                    f"a Box action space needs a model output named 'action' [N, {', '.join(map(str, action_space.shape))}], "
                    f"or 'mean' with 'log_std'; the model has: {names}"
                )
            dims = list(shape_of[head] or [])[1:]
            if shape_of[head] and (
                len(dims) != len(action_space.shape) or any(isinstance(d, int) and d != s for d, s in zip(dims, action_space.shape, strict=True))
            ):
                raise PolicyMismatchError(f"model output {head!r} has shape {list(shape_of[head])} but the action space is {list(action_space.shape)}")
            if head == "mean" and "log_std" not in shape_of:
                raise PolicyMismatchError(
                    f"model output 'mean' needs a 'log_std' output (state-independent {list(action_space.shape)} or [N, ...]); the model has: {names}"
                )
        else:
            raise PolicyMismatchError(f"ONNX policies produce Discrete or Box actions; the env wants {action_space}")
        self.action_space = action_space

    def _key(self, input_name: str) -> list[str]:
        mapped = self.mapping.get(input_name, input_name)
        return [k for k in mapped.split("/") if k]

    def _leaf_space(self, space: gs.Space[Any], input_name: str) -> gs.Space[Any]:
        if not isinstance(space, gs.Dict):
            if len(self.inputs_meta) != 1:
                raise PolicyMismatchError(
                    f"the model has {len(self.inputs_meta)} inputs ({', '.join(i.name for i in self.inputs_meta)}) but the observation is one {space}"
                )
            return space
        sub: Any = space
        for k in self._key(input_name):
            sub = sub.spaces.get(k) if isinstance(sub, gs.Dict) else None
        if sub is None:
            mapped = f" (mapped to {self.mapping[input_name]!r})" if self.mapping.get(input_name) else ""
            raise PolicyMismatchError(
                f"model input {input_name!r} names no observation key{mapped}; the env has: {', '.join(space.spaces)}; "
                "map inputs to keys with the inputs option"
            )
        return sub

    def _check_input(self, meta: Any, space: gs.Space[Any]) -> None:
        where = f"model input {meta.name!r}"
        dtype = _ONNX_DTYPES.get(meta.type)
        if dtype is None:
            raise PolicyMismatchError(f"{where} has element type {meta.type}, which the ONNX policy cannot feed")
        dims = list(meta.shape or [])[1:]
        if isinstance(space, gs.Discrete):
            if len(dims) > 1 or (dims and isinstance(dims[0], int) and dims[0] != 1):
                raise PolicyMismatchError(f"{where} has shape {list(meta.shape)} but a Discrete observation is one value: [N] or [N, 1]")
            return
        if not isinstance(space, gs.Box):
            raise PolicyMismatchError(f"{where}: ONNX policies take Box and Discrete observations, the env gives {space}")
        if not np.issubdtype(dtype, np.floating) and np.dtype(dtype) != space.dtype:
            raise PolicyMismatchError(f"{where} expects {np.dtype(dtype)} but the observation is {space.dtype}; only float inputs accept a conversion")
        if meta.shape and (len(dims) != len(space.shape) or any(isinstance(d, int) and d != s for d, s in zip(dims, space.shape, strict=True))):
            raise PolicyMismatchError(
                f"{where} has shape {list(meta.shape)} but the observation is {list(space.shape)} (expected [N, {', '.join(map(str, space.shape))}])"
            )

    def feeds(self, obs: Any) -> dict[str, np.ndarray]:
        """The model's input tensors for a batch of observations (by input name), as ``session.run`` takes them."""
        feeds = {}
        for meta in self.inputs_meta:
            leaf: Any = obs
            if isinstance(obs, dict):
                for k in self._key(meta.name):
                    if not isinstance(leaf, dict) or k not in leaf:
                        raise PolicyMismatchError(
                            f"model input {meta.name!r} names no observation key; the observation has: {', '.join(obs)}; "
                            "map inputs to keys with the inputs option"
                        )
                    leaf = leaf[k]
            elif len(self.inputs_meta) != 1:
                raise PolicyMismatchError(f"the model has {len(self.inputs_meta)} inputs but the observation is one array")
            arr = np.asarray(leaf)
            dtype = _ONNX_DTYPES.get(meta.type, np.float32)
            if arr.ndim == 1 and meta.shape is not None and len(meta.shape) == 2:
                arr = arr.reshape(-1, 1)  # a Discrete leaf, [N] -> [N, 1]
            feeds[meta.name] = np.ascontiguousarray(arr, dtype=dtype)
        return feeds

    def act(self, obs: Any, ctx: Any = None) -> PolicyOutput:
        feeds = self.feeds(obs)
        n = len(next(iter(feeds.values())))
        b = self.fixed_batch
        if b is None or n == b:
            return self._decode(dict(zip(self.output_names, self.session.run(None, feeds), strict=True)), n)
        # A fixed-batch model: chunks of b rows, the last one padded with copies of its last row.
        parts = []
        for at in range(0, n, b):
            chunk = {k: v[at : at + b] for k, v in feeds.items()}
            rows = len(next(iter(chunk.values())))
            chunk = {k: np.concatenate([v, np.repeat(v[-1:], b - rows, axis=0)]) if rows < b else v for k, v in chunk.items()}
            parts.append(self._decode(dict(zip(self.output_names, self.session.run(None, chunk), strict=True)), rows))
        cat = lambda xs: None if any(x is None for x in xs) else np.concatenate(xs)  # noqa: E731
        return PolicyOutput(
            actions=np.concatenate([p.actions for p in parts]),
            log_probs=cat([p.log_probs for p in parts]),
            values=cat([p.values for p in parts]),
            extras={k: np.concatenate([p.extras[k] for p in parts]) for k in parts[0].extras},
        )

    def _decode(self, out: dict[str, np.ndarray], n: int) -> PolicyOutput:
        values = out["value"].reshape(-1)[:n].astype(np.float64) if "value" in out else None
        extras = {k: v[:n] for k, v in out.items() if k not in _KNOWN_OUTPUTS}
        log_probs = None
        if "logits" in out and self.discrete is not False:
            logits = out["logits"].astype(np.float64)
            start = int(self.action_space.start) if isinstance(self.action_space, gs.Discrete) else 0
            actions = np.empty(n, np.int64)
            log_probs = np.empty(n, np.float64)
            for i in range(n):
                row = logits[i]
                top = float(row.max())
                log_z = top + math.log(sum(math.exp(float(v) - top) for v in row))
                if self.greedy:
                    a = int(np.argmax(row))
                else:
                    # The TypeScript SDK's inverse-CDF walk, draw for draw.
                    u = self.rng.random()
                    a = 0
                    while a < len(row) - 1:
                        u -= math.exp(float(row[a]) - log_z)
                        if u < 0:
                            break
                        a += 1
                log_probs[i] = float(row[a]) - log_z
                actions[i] = start + a
        elif "mean" in out:
            mean = out["mean"][:n].astype(np.float64)
            per = int(np.prod(mean.shape[1:]))
            log_std = out["log_std"].astype(np.float64).reshape(-1)
            shared = log_std.size == per
            flat = mean.reshape(n, per)
            sample = np.empty_like(flat)
            log_probs = np.empty(n, np.float64)
            for i in range(n):
                lp = 0.0
                for k in range(per):
                    ls = float(log_std[k if shared else i * per + k])
                    eps = 0.0 if self.greedy else self.rng.normal()
                    lp += -0.5 * eps * eps - ls - _LOG_SQRT_2PI
                    sample[i, k] = flat[i, k] + math.exp(ls) * eps
                log_probs[i] = lp
            actions = sample.reshape(mean.shape)
            if isinstance(self.action_space, gs.Box):
                # The env gets the sample clipped to the bounds; the log-prob is the unclipped sample's.
                actions = np.clip(actions, self.action_space.low, self.action_space.high).astype(self.action_space.dtype)
        elif "action" in out:
            actions = out["action"][:n]
        elif "logits" in out:
            actions = out["logits"][:n]
        else:
            raise PolicyMismatchError(f"ONNX model {self.path} has none of the outputs 'logits', 'action' or 'mean'; it has: {', '.join(out)}")
        if "log_prob" in out:
            log_probs = out["log_prob"].reshape(-1)[:n].astype(np.float64)
        return PolicyOutput(actions=actions, log_probs=log_probs, values=values, extras=extras)


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

"""Policies: one small protocol so a model is wrapped once and used with every env and integration.

A :class:`Policy` takes a batch of observations (first dimension = number of envs, as a Gymnasium
vector env returns them) and returns a :class:`PolicyOutput`: actions for the batch and, when it
has them, log-probabilities and value estimates. Policies are registered by name
(:func:`register_policy`) and built from config (:func:`make_policy`), so trainers and scripts pick
them from YAML. :class:`WaypointPID` (from :mod:`gymwire.control`) turns predicted ego-frame waypoints into
throttle, steer and brake with the benchmarks' reference controllers, chosen by name.

Example::

    @register_policy("always-right")
    class AlwaysRight:
        def __init__(self, num_envs=1): self.n = num_envs
        def act(self, obs): return PolicyOutput(actions=np.ones(len(obs), np.int64))

    policy = make_policy("always-right")
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np
from gymnasium import spaces as gs
from gymnasium.vector.utils import batch_space

from .control import WaypointPID as WaypointPID  # re-exported: it lived here before gymwire.control


@dataclass
class PolicyOutput:
    """What a policy returns for a batch: ``actions`` (batched like the vector action space) and optional ``[N]`` arrays."""

    actions: Any
    log_probs: np.ndarray | None = None
    values: np.ndarray | None = None
    extras: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Policy(Protocol):
    """Observations in (batched), actions/log-probs/values out."""

    def act(self, obs: Any) -> PolicyOutput: ...


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

    def act(self, obs: Any) -> PolicyOutput:
        actions = self.action_space.sample()
        log_prob = None
        if isinstance(self.single_action_space, gs.Discrete):
            log_prob = np.full(self.num_envs, -np.log(self.single_action_space.n))
        return PolicyOutput(actions=actions, log_probs=log_prob)


@register_policy("constant")
class ConstantPolicy:
    """The same action in every env (handy for tests and baselines)."""

    def __init__(self, action: Any, num_envs: int = 1) -> None:
        self.action = np.asarray(action)
        self.num_envs = num_envs

    def act(self, obs: Any) -> PolicyOutput:
        return PolicyOutput(actions=np.stack([self.action] * self.num_envs))


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

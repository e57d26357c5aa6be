"""The Policy protocol and registry, the ONNX policy, and the waypoint PID controller."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces as gs

import gymwire
from gymwire.policies import CARTPOLE_LINEAR_WEIGHTS, Policy, PolicyOutput, make_policy, register_policy, registered_policies, write_linear_onnx


def test_registry_builds_policies_by_name() -> None:
    @register_policy("test-always-one")
    class AlwaysOne:
        def __init__(self, num_envs: int = 1) -> None:
            self.n = num_envs

        def act(self, obs):
            return PolicyOutput(actions=np.ones(self.n, np.int64))

    p = make_policy("test-always-one", num_envs=3)
    assert isinstance(p, Policy) and p.act(None).actions.tolist() == [1, 1, 1]
    assert {"random", "constant", "onnx", "test-always-one"} <= set(registered_policies())
    with pytest.raises(KeyError, match="registered"):
        make_policy("nope")
    with pytest.raises(ValueError, match="already registered"):
        register_policy("random")(AlwaysOne)


def test_random_policy_is_seeded_and_batched() -> None:
    a = make_policy("random", action_space=gs.Discrete(3), num_envs=4, seed=1).act(None)
    b = make_policy("random", action_space=gs.Discrete(3), num_envs=4, seed=1).act(None)
    assert a.actions.shape == (4,) and np.array_equal(a.actions, b.actions)
    assert np.allclose(a.log_probs, -np.log(3))


def test_onnx_policy_runs_on_cpu_and_balances_cartpole(url: str, tmp_path) -> None:
    path = str(tmp_path / "p.onnx")
    write_linear_onnx(path, CARTPOLE_LINEAR_WEIGHTS, value_weights=np.ones(4))
    policy = make_policy("onnx", path=path, seed=0)
    assert policy.device in ("cpu", "cuda")
    out = policy.act(np.zeros((3, 4), np.float32))
    assert out.actions.shape == (3,) and out.log_probs.shape == (3,) and out.values.shape == (3,)
    envs = gymwire.make_vec(url, "gymwire/CartPole-v1", num_envs=4)
    try:
        manifest = gymwire.collect(envs, policy, episodes=4, out_dir=tmp_path / "ds", seed=0)
    finally:
        envs.close()
    ds = gymwire.load_dataset(tmp_path / "ds")
    returns = ds.episodes.column("return").to_numpy()
    assert manifest["counts"]["episodes"] == 4 and returns.mean() > 60  # random play averages ~22

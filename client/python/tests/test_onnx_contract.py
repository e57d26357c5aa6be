"""The ONNX policy contract (docs/policies.md) in the Python SDK, against the TypeScript SDK on the same seeded models."""

from __future__ import annotations

import json
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO
from gymnasium import spaces as gs

import gymwire
from gymwire.policies import OnnxPolicy, PolicyMismatchError

SEED = 3
BENCH2DRIVE_OBS = [
    {"speed": [0.0], "target_point": [12.5, 0.4], "command": 4},
    {"speed": [3.2], "target_point": [6.0, 7.5], "command": 1},
    {"speed": [7.9], "target_point": [30.0, -2.0], "command": -1},
]
CARTPOLE_OBS = [[0.01, -0.3, 0.05, 0.4], [0.0, 0.2, -0.1, -0.5], [-0.04, 0.0, 0.02, 0.1]]
B2D_OBS_SPACE = gs.Dict(
    {
        "speed": gs.Box(0, np.inf, (1,), np.float32),
        "target_point": gs.Box(-np.inf, np.inf, (2,), np.float32),
        "command": gs.Discrete(8, start=-1),
    }
)
B2D_ACTION_SPACE = gs.Box(np.array([0, -1, 0], np.float32), np.array([1, 1, 1], np.float32), dtype=np.float32)
CART_OBS_SPACE = gs.Box(-np.inf, np.inf, (4,), np.float32)


@pytest.fixture(scope="module")
def typescript(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The contract models written by the repo's seeded script, and the TypeScript SDK's actions on them."""
    tmp = tmp_path_factory.mktemp("onnx-contract")
    (tmp / "in.json").write_text(json.dumps({"seed": SEED, "bench2drive": BENCH2DRIVE_OBS, "cartpole": CARTPOLE_OBS}))
    tsx = REPO / "node_modules" / ".bin" / "tsx"
    if not tsx.exists():
        pytest.fail("node_modules/.bin/tsx is missing: run npm ci at the repository root")
    out = subprocess.run(
        [str(tsx), str(REPO / "client/python/tests/ts/onnx_actions.ts"), str(tmp / "models"), str(tmp / "in.json")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return tmp / "models", json.loads(out.stdout.strip().splitlines()[-1])


def batched_b2d() -> dict[str, np.ndarray]:
    return {
        "speed": np.array([o["speed"] for o in BENCH2DRIVE_OBS], np.float32),
        "target_point": np.array([o["target_point"] for o in BENCH2DRIVE_OBS], np.float32),
        "command": np.array([o["command"] for o in BENCH2DRIVE_OBS], np.int64),
    }


def test_gaussian_dict_model_samples_what_the_typescript_sdk_samples(typescript: tuple[Path, dict]) -> None:
    models, ts = typescript
    policy = OnnxPolicy(
        str(models / "gaussian-dict.onnx"), seed=SEED, inputs={"route_command": "command"}, observation_space=B2D_OBS_SPACE, action_space=B2D_ACTION_SPACE
    )
    out = policy.act(batched_b2d())
    assert out.actions.shape == (3, 3) and out.actions.dtype == np.float32
    np.testing.assert_allclose(out.actions, np.array(ts["gaussian"]["actions"]), atol=1e-6)
    np.testing.assert_allclose(out.log_probs, ts["gaussian"]["logProbs"], atol=1e-6)
    np.testing.assert_allclose(out.values, ts["gaussian"]["values"], atol=1e-6)
    # The output the contract does not read reaches extras, one row per env.
    assert set(out.extras) == {"features"} and out.extras["features"].shape == (3, 4)
    assert B2D_ACTION_SPACE.contains(out.actions[0])


def test_discrete_and_fixed_batch_models_sample_what_the_typescript_sdk_samples(typescript: tuple[Path, dict]) -> None:
    models, ts = typescript
    obs = np.array(CARTPOLE_OBS, np.float32)
    for name, key in (("cartpole.onnx", "discrete"), ("cartpole-fixed-batch.onnx", "fixed")):
        policy = OnnxPolicy(str(models / name), seed=SEED, observation_space=CART_OBS_SPACE, action_space=gs.Discrete(2))
        out = policy.act(obs)
        assert out.actions.tolist() == ts[key]["actions"], name
        np.testing.assert_allclose(out.log_probs, ts[key]["logProbs"], atol=1e-6)
        np.testing.assert_allclose(out.values, ts[key]["values"], atol=1e-6)
    assert OnnxPolicy(str(models / "cartpole-fixed-batch.onnx")).fixed_batch == 1


def test_checks_name_the_mismatch_before_any_session(typescript: tuple[Path, dict], tmp_path: Path) -> None:
    models, _ = typescript
    path = str(models / "gaussian-dict.onnx")
    with pytest.raises(
        PolicyMismatchError, match="model input 'route_command' names no observation key; the env has: command, speed, target_point; map inputs to keys"
    ):
        OnnxPolicy(path, observation_space=B2D_OBS_SPACE)
    with pytest.raises(PolicyMismatchError, match="the inputs option maps 'command', which is not a model input"):
        OnnxPolicy(path, inputs={"command": "command"})
    with pytest.raises(PolicyMismatchError, match="needs a model output named 'logits'"):
        OnnxPolicy(path, inputs={"route_command": "command"}, action_space=gs.Discrete(3))
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["action"])],
        "mixed",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 2]), helper.make_tensor_value_info("b", TensorProto.FLOAT, ["N", 2])],
        [helper.make_tensor_value_info("action", TensorProto.FLOAT, ["N", 2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.save(model, str(tmp_path / "mixed.onnx"))
    with pytest.raises(PolicyMismatchError, match=r"inputs disagree on the batch dimension \(a \[1, 2\], b \[N, 2\]\)"):
        OnnxPolicy(str(tmp_path / "mixed.onnx"))


def test_device_reports_what_runs_and_falls_back_with_a_warning(typescript: tuple[Path, dict]) -> None:
    import onnxruntime as ort

    models, _ = typescript
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        policy = OnnxPolicy(str(models / "cartpole.onnx"), device="cuda")
    assert policy.providers == policy.session.get_providers()
    if "CUDAExecutionProvider" in policy.providers:
        assert policy.device == "cuda" and policy.fallback is None and not caught
    else:
        assert policy.device == "cpu" and policy.providers == ["CPUExecutionProvider"]
        assert policy.fallback and any("CUDA execution provider unavailable; running the ONNX policy on CPU" in str(w.message) for w in caught)
        if "CUDAExecutionProvider" not in ort.get_available_providers():
            assert "onnxruntime has only" in policy.fallback
    assert OnnxPolicy(str(models / "cartpole.onnx"), device="cpu").device == "cpu"
    with pytest.raises(ValueError, match="device must be"):
        OnnxPolicy(str(models / "cartpole.onnx"), device="gpu")


def test_acts_on_real_bench2drive_observations(url: str, typescript: tuple[Path, dict]) -> None:
    models, _ = typescript
    envs = gymwire.make_vec(url, "gymwire/Bench2Drive-v0", num_envs=2, background_vehicles=0)
    try:
        policy = OnnxPolicy(
            str(models / "gaussian-dict.onnx"),
            seed=0,
            inputs={"route_command": "command"},
            observation_space=envs.single_observation_space,
            action_space=envs.single_action_space,
        )
        obs, _ = envs.reset(seed=0)
        for _ in range(3):
            out = policy.act(obs)
            assert envs.action_space.contains(out.actions)
            obs, *_ = envs.step(out.actions)
    finally:
        envs.close()

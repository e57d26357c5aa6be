"""A torch policy end to end: the same seeded ``nn.Module`` collects NAVSIM and Bench2Drive datasets
directly (gymwire.vla's TorchModel), exported to ONNX from Python (OnnxPolicy) and from TypeScript
(``gymwire rollout --policy model.onnx``), and all three record the same episodes.

Torch-marked: ``client/python/scripts/test-torch.sh`` runs these; without torch the module is
skipped, saying so.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from conftest import REPO
from recorded import recorded_episodes

import gymwire
from gymwire.policies import OnnxPolicy
from gymwire.vla import TorchModel, VLAPolicy, adapter_for, export_onnx

pytestmark = pytest.mark.torch
torch = pytest.importorskip("torch", reason="torch is not installed in this venv: client/python/scripts/test-torch.sh runs the torch tests")

NAVSIM = "gymwire/NavsimEnv-v1"
B2D = "gymwire/Bench2Drive-v0"
# The env's reference controller turns the waypoints into controls, so an ONNX graph can drive it.
B2D_KWARGS = {"routes": "dev", "background_vehicles": 0, "action_type": "waypoints"}


class TinyDrivingVLA(torch.nn.Module):
    """A VLA-shaped planner: the navigation command embedded, the proprioceptive state encoded, a
    head predicting a bounded residual on a route-following prior (so episodes end in a few hundred
    ticks), a value head and a confidence extra. Predicts exactly the env's trajectory shape."""

    def __init__(self, env_id: str, hidden: int = 16) -> None:
        super().__init__()
        self.bench2drive = env_id == B2D
        self.k, self.d = (6, 2) if self.bench2drive else (8, 3)
        self.command = torch.nn.Embedding(8, hidden)
        self.encoder = torch.nn.Linear(10 if self.bench2drive else 28, hidden)
        self.head = torch.nn.Linear(hidden, self.k * self.d)
        self.value = torch.nn.Linear(hidden, 1)
        # NAVSIM: lateral bend per driving command (left, straight, right, unknown).
        self.register_buffer("curvature", torch.tensor([0.01, 0.0, -0.01, 0.0]))

    def forward(self, batch: dict[str, Any]) -> dict[str, Any]:
        state, command = batch["state"], batch["command"]
        # Bench2Drive's RoadOption starts at -1 (void).
        h = torch.tanh(self.encoder(state) + self.command(command + 1 if self.bench2drive else command))
        residual = 0.05 * torch.tanh(self.head(h)).reshape(-1, self.k, self.d)
        steps = torch.arange(1, self.k + 1, dtype=torch.float32) * 2.5
        if self.bench2drive:  # towards the target point (state columns 1-2) at 5 m/s
            target = state[:, 1:3]
            direction = target / torch.clamp(target.pow(2).sum(1, keepdim=True).sqrt(), min=1e-3)
            prior = direction[:, None, :] * steps[None, :, None]
        else:  # at the current speed (ego status row 3, column 3), bending with the command
            x = steps[None, :] * torch.clamp(state[:, 24:25], min=1.0) * 0.2
            bend = self.curvature[command][:, None]
            prior = torch.stack([x, bend * x * x, 2 * bend * x], dim=2)
        value = self.value(h).squeeze(1)
        return {"waypoints": prior + residual, "values": value, "confidence": torch.sigmoid(value)}


def seeded_module(env_id: str) -> TinyDrivingVLA:
    torch.manual_seed(0)
    return TinyDrivingVLA(env_id)


def test_export_reads_observations_by_name_and_matches_the_torch_module(tmp_path: Path) -> None:
    module = seeded_module(B2D)
    path = export_onnx(module, B2D, tmp_path / "planner.onnx")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [(i.name, i.shape, i.type) for i in session.get_inputs()] == [
        ("speed", ["batch", 1], "tensor(float)"),
        ("target_point", ["batch", 2], "tensor(float)"),
        ("imu", ["batch", 7], "tensor(float)"),
        ("command", ["batch"], "tensor(int64)"),
    ]
    assert [(o.name, o.shape) for o in session.get_outputs()] == [("action", ["batch", 6, 2]), ("value", ["batch"]), ("confidence", ["batch"])]
    # Any batch size; the same numbers as the module through TorchModel and the Bench2Drive adapter.
    rng = np.random.default_rng(0)
    obs = {
        "speed": rng.uniform(0, 8, (5, 1)).astype(np.float32),
        "target_point": rng.uniform(-20, 20, (5, 2)).astype(np.float32),
        "imu": rng.normal(size=(5, 7)).astype(np.float32),
        "command": rng.integers(-1, 7, 5),
    }
    out = VLAPolicy(TorchModel(module, device="cpu"), adapter_for(B2D, num_envs=5, action_type="waypoints")).act(obs)
    action, value, confidence = session.run(None, obs)
    np.testing.assert_allclose(action, out.actions, atol=1e-5)
    np.testing.assert_allclose(value, out.values, atol=1e-6)
    np.testing.assert_allclose(confidence, out.extras["confidence"], atol=1e-6)


def test_export_names_what_it_cannot_export(tmp_path: Path) -> None:
    class EightPoints(torch.nn.Module):
        def forward(self, batch: dict[str, Any]) -> Any:
            return batch["state"][:, :1].repeat(1, 16).reshape(-1, 8, 2)

    class ValueOnly(torch.nn.Module):
        def forward(self, batch: dict[str, Any]) -> dict[str, Any]:
            return {"values": batch["state"][:, 0]}

    with pytest.raises(ValueError, match=r"waypoints \[8, 2\] but Bench2DriveAdapter's env takes \[6, 2\]"):
        export_onnx(EightPoints(), B2D, tmp_path / "m.onnx")
    with pytest.raises(ValueError, match="no ONNX export for EvacAdapter"):
        export_onnx(EightPoints(), "gymwire/EvacWorldModel-v0", tmp_path / "m.onnx")
    with pytest.raises(ValueError, match="needs 'waypoints' or 'actions'"):
        export_onnx(ValueOnly(), NAVSIM, tmp_path / "m.onnx")


def test_navsim_export_acts_on_the_actions_and_keeps_the_waypoints_as_an_extra(tmp_path: Path) -> None:
    class PosesAndSketch(torch.nn.Module):
        def forward(self, batch: dict[str, Any]) -> dict[str, Any]:
            poses = batch["state"][:, :24].reshape(-1, 8, 3)
            return {"waypoints": 2 * poses, "actions": poses, "log_probs": batch["command"].float()}

    module = PosesAndSketch()
    path = export_onnx(module, NAVSIM, tmp_path / "m.onnx")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [(o.name, o.shape) for o in session.get_outputs()] == [("action", ["batch", 8, 3]), ("log_prob", ["batch"]), ("waypoints", ["batch", 8, 3])]
    ego = np.arange(3 * 28, dtype=np.float32).reshape(3, 4, 7)
    command = np.eye(4, dtype=np.float32)[[2, 0, 3]]
    action, log_prob, waypoints = session.run(None, {"ego_status": ego, "driving_command": command})
    np.testing.assert_array_equal(action, ego.reshape(3, 28)[:, :24].reshape(3, 8, 3))
    np.testing.assert_array_equal(waypoints, 2 * action)
    assert log_prob.tolist() == [2.0, 0.0, 3.0]


def _ts_rollout(url: str, env_id: str, kwargs: dict[str, Any], model: Path, out: Path, episodes: int, sessions: int) -> None:
    """TypeScript's OnnxPolicy through the CLI, lock-step (groups 1) like the Python collections here."""
    cmd = ["node", str(REPO / "bin" / "gymwire.js"), "rollout", "--url", url, "--env", env_id, "--kwargs", json.dumps(kwargs), "--policy", str(model)]
    cmd += ["--sessions", str(sessions), "--episodes", str(episodes), "--groups", "1", "--seed", "0", "--out", str(out), "--no-progress"]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


# Three collections and a TypeScript rollout per env: 80-110 s under load, near pytest-timeout's 120 s default.
@pytest.mark.timeout(360)
@pytest.mark.parametrize(
    ("env_id", "kwargs", "metric", "episodes", "sessions"),
    [(NAVSIM, {}, "pdms", 12, 4), (B2D, B2D_KWARGS, "driving_score", 4, 2)],
)
def test_torch_and_exported_onnx_policies_collect_the_same_episodes_from_python_and_typescript(
    url: str, tmp_path: Path, env_id: str, kwargs: dict[str, Any], metric: str, episodes: int, sessions: int
) -> None:
    module = seeded_module(env_id)
    model = export_onnx(module, env_id, tmp_path / "planner.onnx")
    adapter_options = {"action_type": "waypoints"} if env_id == B2D else {}
    envs = gymwire.make_vec(url, env_id, num_envs=sessions, **kwargs)
    try:
        policies = {
            "torch": VLAPolicy(TorchModel(module, device="cpu"), adapter_for(env_id, num_envs=sessions, **adapter_options)),
            "onnx": OnnxPolicy(str(model), device="cpu", observation_space=envs.single_observation_space, action_space=envs.single_action_space),
        }
        manifests = {name: gymwire.collect(envs, policy, episodes=episodes, out_dir=tmp_path / name, seed=0, groups=1) for name, policy in policies.items()}
    finally:
        envs.close()
    _ts_rollout(url, env_id, kwargs, model, tmp_path / "ts", episodes, sessions)
    manifests["ts"] = json.loads((tmp_path / "ts" / "dataset.json").read_text())
    for name, manifest in manifests.items():
        assert manifest["counts"]["episodes"] == episodes, name
        assert manifest["counts"]["discarded"] == 0 and manifest["counts"]["incomplete"] == 0, name
        assert manifest["counts"] == manifests["torch"]["counts"], name
    runs = {name: recorded_episodes(tmp_path / name) for name in manifests}
    assert sorted(runs["torch"]) == sorted(runs["onnx"]) == sorted(runs["ts"]) == list(range(episodes))
    metrics = {name: [run[e]["terminal"][metric] for e in range(episodes)] for name, run in runs.items()}
    # The runs must not all be alike: a policy that scores everything the same would prove little.
    assert len(set(metrics["torch"])) > 1, metrics
    for e in range(episodes):
        torch_ep, onnx_ep, ts_ep = runs["torch"][e], runs["onnx"][e], runs["ts"][e]
        for key in ("status", "steps", "seed", "session_index"):
            assert torch_ep[key] == onnx_ep[key] == ts_ep[key], f"episode {e}: {key}"
        # One ONNX file on onnxruntime in both SDKs: bit for bit the same.
        np.testing.assert_array_equal(onnx_ep["actions"], ts_ep["actions"])
        assert onnx_ep["terminal"][metric] == ts_ep["terminal"][metric] and onnx_ep["return"] == ts_ep["return"]
        np.testing.assert_array_equal(onnx_ep["extras"]["extras/confidence"], ts_ep["extras"]["extras/confidence"])
        # Torch and onnxruntime round differently (a few float32 ulps on the waypoints); in this
        # closed loop that changed no episode boundary and no terminal metric beyond 1e-9.
        np.testing.assert_allclose(torch_ep["actions"], onnx_ep["actions"], rtol=0, atol=1e-5)
        np.testing.assert_allclose(torch_ep["extras"]["extras/confidence"], onnx_ep["extras"]["extras/confidence"], rtol=0, atol=1e-6)
        assert torch_ep["terminal"][metric] == pytest.approx(onnx_ep["terminal"][metric], rel=1e-9, abs=1e-12), f"episode {e}: {metric}"
        assert torch_ep["return"] == pytest.approx(onnx_ep["return"], rel=1e-9, abs=1e-12)

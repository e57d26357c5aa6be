"""A torch VLA model end to end: nn.Module -> gymwire.vla -> collect -> dataset, then ONNX -> TypeScript.

1. A small planner (a torch ``nn.Module``) takes what gymwire.vla's Bench2Drive adapter builds from
   each observation (``state``: speed, target point, IMU; ``command``: the RoadOption) and
   predicts six waypoints 0.5 s apart, with a value and a confidence.
2. ``TorchModel`` + ``VLAPolicy`` + ``gymwire.collect`` record a dataset of Bench2Drive episodes;
   the env (``action_type: waypoints``) turns the waypoints into controls with Bench2DriveZoo's
   reference controller.
3. ``export_onnx`` writes the same module as an ONNX policy that reads the env's observations.
4. ``gymwire rollout --policy planner.onnx`` (TypeScript's OnnxPolicy) collects the same episodes.

Checks: no episode discarded, both datasets have the same episodes (lengths, driving scores,
waypoints within float tolerance). Needs torch; without it this exits 1 saying so.
Run: python examples/python/vla_torch_onnx.py [--episodes 2] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from _server import REPO, check, server_url

try:
    import torch
except ImportError:
    print("FAILED: torch is not installed; this example needs it (pip install torch)", file=sys.stderr)
    sys.exit(1)

import gymwire
from gymwire.dataset import load_dataset
from gymwire.vla import TorchModel, VLAPolicy, adapter_for, export_onnx

parser = argparse.ArgumentParser()
parser.add_argument("--episodes", type=int, default=2)
parser.add_argument("--out", help="where the datasets and planner.onnx go (default: a temporary folder)")
args = parser.parse_args()

ENV = "gymwire/Bench2Drive-v0"
KWARGS = {"routes": "dev", "background_vehicles": 0, "action_type": "waypoints"}


class Planner(torch.nn.Module):
    """Command-conditioned waypoints: a learned correction on top of 'drive at the target point at `cruise` m/s'."""

    def __init__(self, hidden: int = 32) -> None:
        super().__init__()
        self.cruise = torch.nn.Parameter(torch.tensor(5.0))
        self.command = torch.nn.Embedding(8, hidden)  # RoadOption -1..6, shifted by one
        self.trunk = torch.nn.Sequential(torch.nn.Linear(10, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, hidden))
        self.waypoints = torch.nn.Linear(hidden, 12)
        self.critic = torch.nn.Linear(hidden, 1)

    def forward(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        state = batch["state"]
        features = torch.relu(self.trunk(state) + self.command(batch["command"] + 1))
        target = state[:, 1:3]
        heading = target / torch.clamp(torch.linalg.vector_norm(target, dim=1, keepdim=True), min=1e-3)
        along = torch.arange(1, 7, dtype=state.dtype, device=state.device) * 0.5 * self.cruise
        correction = 0.1 * torch.tanh(self.waypoints(features)).reshape(-1, 6, 2)
        value = self.critic(features).squeeze(1)
        return {"waypoints": heading[:, None, :] * along[None, :, None] + correction, "values": value, "confidence": torch.sigmoid(value)}


def episodes(root: Path) -> list[tuple[int, float]]:
    """(length, driving score) per episode, in the order episodes started."""
    ds = load_dataset(root)
    ids = ds.steps.column("episode_id").to_numpy()
    infos = ds.column("info")
    return [(row["steps"], infos[np.flatnonzero(ids == row["episode_id"])[-1]]["driving_score"]) for row in ds.episodes.to_pylist()]


torch.manual_seed(0)
planner = Planner()
with tempfile.TemporaryDirectory() as scratch, server_url() as url:
    out = Path(args.out or scratch)
    out.mkdir(parents=True, exist_ok=True)

    # 1-2. The torch module as it is: gymwire.vla builds its inputs, collect records whole episodes.
    envs = gymwire.make_vec(url, ENV, num_envs=2, **KWARGS)
    policy = VLAPolicy(TorchModel(planner, device="auto"), adapter_for(ENV, num_envs=2, action_type="waypoints"))
    manifest = gymwire.collect(envs, policy, episodes=args.episodes, out_dir=out / "torch", seed=0, groups=1)
    envs.close()
    torch_episodes = episodes(out / "torch")
    print(f"torch ({policy.device}): {manifest['counts']}; (steps, driving score) per episode: {torch_episodes}")
    check(manifest["counts"]["episodes"] == args.episodes and manifest["counts"]["discarded"] == 0, "every started episode is kept")
    ds = load_dataset(out / "torch")
    check(ds.manifest["columns"]["action"]["shape"] == [6, 2], "the dataset stores the six waypoints the env took")
    check("extras/confidence" in ds.manifest["columns"], "the model's extra outputs reach the dataset")

    # 3-4. The same module as ONNX, run by TypeScript's OnnxPolicy through the gymwire CLI.
    model = export_onnx(planner, ENV, out / "planner.onnx")
    rollout = ["node", str(REPO / "bin" / "gymwire.js"), "rollout", "--url", url, "--env", ENV, "--kwargs", json.dumps(KWARGS)]
    rollout += ["--policy", str(model), "--sessions", "2", "--episodes", str(args.episodes), "--groups", "1", "--seed", "0"]
    done = subprocess.run([*rollout, "--out", str(out / "ts"), "--overwrite", "--no-progress"], cwd=REPO, capture_output=True, text=True)
    check(done.returncode == 0, f"gymwire rollout with the exported model failed:\n{done.stderr[-2000:]}")
    ts_episodes = episodes(out / "ts")
    print(f"TypeScript (onnx): (steps, driving score) per episode: {ts_episodes}")
    check(
        [steps for steps, _ in ts_episodes] == [steps for steps, _ in torch_episodes],
        "the exported model drives the same episodes in TypeScript",
    )
    check(
        np.allclose([score for _, score in ts_episodes], [score for _, score in torch_episodes], rtol=1e-9),
        "same driving scores from torch and from TypeScript's ONNX policy",
    )
    waypoints = load_dataset(out / "torch").column("action"), load_dataset(out / "ts").column("action")
    gap = float(np.abs(waypoints[0] - waypoints[1]).max())
    print(f"largest waypoint difference torch vs ONNX: {gap:.2e} m")
    check(gap < 1e-4, "torch and onnxruntime predict the same waypoints within float tolerance")

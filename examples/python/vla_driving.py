"""The VLA interface end to end: a model registered by name, built from YAML, driving NAVSIM and Bench2Drive.

The model here is a small numpy planner (waypoints towards the route at a speed it reads from its
config); a torch ``nn.Module`` plugs in the same way (``framework: torch`` and a ``device``; with
torch installed this example also runs one). The env adapters turn observations into typed
inputs, resample the predicted trajectory to each env's shape (NAVSIM [8, 3], Bench2Drive [6, 2])
and, for Bench2Drive's controls, run Bench2DriveZoo's reference waypoint controller, keeping the
waypoints as an extra.
Run: python examples/python/vla_driving.py [--steps 120]
"""

from __future__ import annotations

import argparse

import numpy as np
from _server import check, server_url

import gymwire
from gymwire.vla import VLAInput, load_config, policy_from_config, register_model

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=120)
args = parser.parse_args()


@register_model("example-planner")
def example_planner(speed: float = 5.0):
    """Ten waypoints 0.5 s apart towards the target point (Bench2Drive) or straight ahead (NAVSIM)."""

    def plan(inputs: VLAInput) -> dict[str, np.ndarray]:
        n = inputs.batch_size
        ahead = np.tile([1.0, 0.0], (n, 1))
        if inputs.waypoint_dims == 2:  # Bench2Drive: state = [speed, target x, target y, imu...]
            ahead = inputs.state[:, 1:3] / np.maximum(np.linalg.norm(inputs.state[:, 1:3], axis=1, keepdims=True), 1e-6)
        steps = speed * 0.5 * np.arange(1, 11)
        # Instructions in words ("follow the lane", "turn left") reach a language model; here they only pass through.
        assert inputs.instruction is not None and len(inputs.instruction) == n
        return {
            "waypoints": (ahead[:, None, :] * steps[None, :, None]).astype(np.float32),
            "confidence": np.ones(n, np.float32),
        }

    return plan


CONFIG = """
model:
  name: example-planner
  args: {speed: 6.0}
env:
  id: gymwire/Bench2Drive-v0
  num_envs: 2
  controller: bench2drive
"""

with server_url() as url:
    policy = policy_from_config(CONFIG)
    envs = gymwire.make_vec(url, "gymwire/Bench2Drive-v0", num_envs=2, background_vehicles=0)
    obs, _ = envs.reset(seed=0)
    top_speed = 0.0
    for _ in range(args.steps):
        out = policy.act(obs)
        check(
            out.extras["waypoints"].shape == (2, 6, 2),
            "Bench2Drive's waypoints are [6, 2], stored next to the controls",
        )
        obs, rewards, terminated, truncated, infos = envs.step(out.actions)
        top_speed = max(top_speed, float(obs["speed"].max()))
    envs.close()
    print(f"Bench2Drive: {args.steps} steps, top speed {top_speed:.1f} m/s, model on {policy.device}")
    check(
        top_speed > 3.0,
        "the reference controller should follow the planner's 6 m/s waypoints",
    )

    # The same model on NAVSIM: only the env part of the config changes.
    navsim = policy_from_config({**load_config(CONFIG), "env": {"id": "gymwire/NavsimEnv-v1", "num_envs": 2}})
    envs = gymwire.make_vec(url, "gymwire/NavsimEnv-v1", num_envs=2)
    obs, _ = envs.reset(seed=0)
    poses = navsim.act(obs).actions
    check(poses.shape == (2, 8, 3), "NAVSIM takes eight poses (x, y, heading) 0.5 s apart")
    _, rewards, terminated, _, infos = envs.step(poses)
    envs.close()
    print(f"NAVSIM: PDMS {np.round(infos['pdms'], 3).tolist()}")
    check(
        bool(terminated.all()) and bool(np.isfinite(infos["pdms"]).all()),
        "NAVSIM scores the trajectory in one step",
    )

    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        from gymwire.vla import TorchModel, VLAPolicy, adapter_for

        class Straight(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.scale = torch.nn.Parameter(torch.tensor(3.0))

            def forward(self, batch):
                n = batch["state"].shape[0]
                steps = torch.arange(1, 7, device=batch["state"].device, dtype=torch.float32) * self.scale
                return {"waypoints": torch.stack([steps, torch.zeros_like(steps)], dim=1).expand(n, 6, 2)}

        torch_policy = VLAPolicy(
            TorchModel(Straight(), device="auto"),
            adapter_for("gymwire/Bench2Drive-v0", num_envs=1),
        )
        fake_obs = {
            "speed": np.zeros((1, 1), np.float32),
            "target_point": np.array([[20.0, 0.0]], np.float32),
            "imu": np.zeros((1, 7), np.float32),
            "command": np.array([4]),
        }
        check(
            torch_policy.act(fake_obs).actions.shape == (1, 3),
            "a torch module plugs in directly",
        )
        print(f"torch model on {torch_policy.device}")

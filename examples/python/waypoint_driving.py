"""A waypoint policy driving Bench2Drive-v0 through gymwire's WaypointPID (Bench2DriveZoo's control_pid).

The "model" here predicts waypoints straight at the route's target point at 6 m/s; any VLA that
outputs ego-frame waypoints (x forward, y left, 0.5 s apart) plugs in the same way.
Run: python examples/python/waypoint_driving.py [--steps 300]
"""

from __future__ import annotations

import argparse

import numpy as np
from _server import check, server_url

import gymwire
from gymwire.control import WaypointPID

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=300)
args = parser.parse_args()


def predict_waypoints(obs: dict) -> np.ndarray:
    """Six waypoints 0.5 s apart towards the target point at 6 m/s."""
    tp = np.asarray(obs["target_point"], dtype=np.float64)
    direction = tp / max(np.linalg.norm(tp), 1e-6)
    return np.stack([direction * 6.0 * 0.5 * (k + 1) for k in range(6)])


with server_url() as url:
    env = gymwire.make(url, "gymwire/Bench2Drive-v0", action_type="control", background_vehicles=0)
    pid = WaypointPID(num_envs=1, controller="bench2drive")
    obs, info = env.reset(seed=0)
    speeds, total = [], 0.0
    for _ in range(args.steps):
        controls = pid.control(predict_waypoints(obs), float(obs["speed"][0]), obs["target_point"])
        obs, reward, terminated, truncated, info = env.step(controls)
        speeds.append(float(obs["speed"][0]))
        total += reward
        if terminated or truncated:
            break
    env.close()
    print(f"{len(speeds)} steps, max speed {max(speeds):.1f} m/s, return {total:.2f}, last info keys {sorted(info)[:6]}")
    check(max(speeds) > 2.0, "the PID should accelerate the ego vehicle")

#!/usr/bin/env python3
"""Computes the waypoint controllers' expected controls from the reference agents' formulas.

The formulas are those of Bench2DriveZoo's ``team_code/pid_controller.py`` (``PID`` and
``PIDController.control_pid``, constructor defaults; UniAD's agent also zeroes the throttle above
5 m/s) and TransFuser's ``team_code_transfuser/model.py`` (``PIDController`` and
``LidarCenterNet.control_pid`` with ``config.py``'s controller constants), written out here in each
reference's own frame (Bench2DriveZoo: x right, y forward; TransFuser: x forward, y right) with
numpy, as the references compute them. Only the frame change from gymwire's ego frame (x forward,
y left) is added, at the boundary. TransFuser's LiDAR-to-ego shift (``waypoints[:, 0] +=
lidar_pos[0]``) and its stuck detector are agent details outside the controller and are left out.

Inputs are seeded tick sequences (the controllers keep PID windows, so every case is a sequence):
cruising, starting from rest, stopping, curves both ways, a turn announced only by the target
point, and overshooting the desired speed. Writes test/fixtures/waypoint-control/reference.json,
read by test/protocol/waypoint-control.test.ts and client/python/tests/test_control.py:

    python scripts/waypoint-control/reference_vectors.py
"""

from __future__ import annotations

import json
import pathlib
from collections import deque

import numpy as np

OUT = pathlib.Path(__file__).resolve().parents[2] / "test" / "fixtures" / "waypoint-control" / "reference.json"


class RefPID:
    def __init__(self, k_p: float, k_i: float, k_d: float, n: int) -> None:
        self.k_p, self.k_i, self.k_d = k_p, k_i, k_d
        self.window = deque([0 for _ in range(n)], maxlen=n)

    def step(self, error: float) -> float:
        self.window.append(error)
        if len(self.window) >= 2:
            integral = np.mean(self.window)
            derivative = self.window[-1] - self.window[-2]
        else:
            integral = 0.0
            derivative = 0.0
        return self.k_p * error + self.k_i * integral + self.k_d * derivative


class Bench2DriveZooController:
    """control_pid of Bench2DriveZoo (frame: x right, y forward)."""

    def __init__(self, throttle_cut_speed: float | None = None) -> None:
        self.turn = RefPID(0.75, 0.75, 0.3, 40)
        self.speed = RefPID(5.0, 0.5, 1.0, 40)
        self.max_throttle, self.brake_speed, self.brake_ratio, self.clip_delta = 0.75, 0.4, 1.1, 0.25
        self.aim_dist, self.angle_thresh, self.dist_thresh = 4.0, 0.3, 10
        self.throttle_cut_speed = throttle_cut_speed

    def control(self, waypoints: np.ndarray, speed: float, target: np.ndarray) -> tuple[float, float, float]:
        num_pairs = len(waypoints) - 1
        best_norm = 1e5
        desired_speed = 0.0
        aim = waypoints[0]
        for i in range(num_pairs):
            desired_speed += np.linalg.norm(waypoints[i + 1] - waypoints[i]) * 2.0 / num_pairs
            norm = np.linalg.norm((waypoints[i + 1] + waypoints[i]) / 2.0)
            if abs(self.aim_dist - best_norm) > abs(self.aim_dist - norm):
                aim = waypoints[i]
                best_norm = norm
        aim_last = waypoints[-1] - waypoints[-2]
        angle = np.degrees(np.pi / 2 - np.arctan2(aim[1], aim[0])) / 90
        angle_last = np.degrees(np.pi / 2 - np.arctan2(aim_last[1], aim_last[0])) / 90
        angle_target = np.degrees(np.pi / 2 - np.arctan2(target[1], target[0])) / 90
        use_target = np.abs(angle_target) < np.abs(angle)
        use_target = use_target or (np.abs(angle_target - angle_last) > self.angle_thresh and target[1] < self.dist_thresh)
        angle_final = angle_target if use_target else angle
        steer = np.clip(self.turn.step(angle_final), -1.0, 1.0)
        brake = desired_speed < self.brake_speed or (speed / desired_speed) > self.brake_ratio
        delta = np.clip(desired_speed - speed, 0.0, self.clip_delta)
        throttle = np.clip(self.speed.step(delta), 0.0, self.max_throttle)
        throttle = throttle if not brake else 0.0
        if self.throttle_cut_speed is not None and speed > self.throttle_cut_speed:
            throttle = 0
        return float(throttle), float(steer), float(brake)


class TransFuserController:
    """LidarCenterNet.control_pid of TransFuser (frame: x forward, y right)."""

    def __init__(self) -> None:
        self.turn = RefPID(1.25, 0.75, 0.3, 20)
        self.speed = RefPID(5.0, 0.5, 1.0, 20)
        self.brake_speed, self.brake_ratio, self.clip_delta, self.clip_throttle = 0.4, 1.1, 0.25, 0.75

    def control(self, waypoints: np.ndarray, speed: float, target: np.ndarray) -> tuple[float, float, float]:
        desired_speed = np.linalg.norm(waypoints[0] - waypoints[1]) * 2.0
        brake = (desired_speed < self.brake_speed) or ((speed / desired_speed) > self.brake_ratio)
        delta = np.clip(desired_speed - speed, 0.0, self.clip_delta)
        throttle = np.clip(self.speed.step(delta), 0.0, self.clip_throttle)
        throttle = throttle if not brake else 0.0
        aim = (waypoints[1] + waypoints[0]) / 2.0
        angle = np.degrees(np.arctan2(aim[1], aim[0])) / 90.0
        if speed < 0.01:
            angle = 0.0
        if brake:
            angle = 0.0
        steer = np.clip(self.turn.step(angle), -1.0, 1.0)
        return float(throttle), float(steer), float(brake)


def to_b2d_zoo(p: np.ndarray) -> np.ndarray:
    """gymwire (x forward, y left) -> Bench2DriveZoo (x right, y forward)."""
    return np.stack([-p[..., 1], p[..., 0]], axis=-1)


def to_transfuser(p: np.ndarray) -> np.ndarray:
    """gymwire (x forward, y left) -> TransFuser (x forward, y right)."""
    return np.stack([p[..., 0], -p[..., 1]], axis=-1)


CONTROLLERS = {
    "bench2drive": (lambda: Bench2DriveZooController(), to_b2d_zoo),
    "bench2drive-uniad": (lambda: Bench2DriveZooController(throttle_cut_speed=5.0), to_b2d_zoo),
    "transfuser": (lambda: TransFuserController(), to_transfuser),
}


def arc(speed: float, curvature: float, k: int = 6, dt: float = 0.5) -> np.ndarray:
    """k waypoints (gymwire frame) along a circle of the given curvature (1/m, positive left) at constant speed."""
    s = speed * dt * np.arange(1, k + 1)
    if abs(curvature) < 1e-9:
        return np.stack([s, np.zeros_like(s)], axis=-1)
    return np.stack([np.sin(curvature * s) / curvature, (1 - np.cos(curvature * s)) / curvature], axis=-1)


def cases(rng: np.random.Generator) -> list[dict]:
    """Tick sequences of (waypoints [K, 2], speed, target [2]) in gymwire's frame; speed follows a rough response."""
    out = []
    specs = [
        ("cruise_straight", lambda t: (arc(6.0, 0.0), np.array([25.0, 0.3]))),
        ("start_from_rest", lambda t: (arc(min(1.0 + 0.4 * t, 5.0), 0.0), np.array([18.0, -0.2]))),
        (
            "stop",
            lambda t: (
                arc(max(5.0 - 0.5 * t, 0.0), 0.0) if t < 10 else np.zeros((6, 2)) + np.array([0.1, 0.0]) * np.arange(6)[:, None] * 0.01,
                np.array([12.0, 0.0]),
            ),
        ),
        ("curve_left", lambda t: (arc(5.0, 0.05), np.array([15.0, 4.0]))),
        ("curve_right", lambda t: (arc(4.0, -0.08), np.array([9.0, -6.0]))),
        ("target_turn_near", lambda t: (arc(3.0, 0.0), np.array([6.0, 7.0]))),
        ("overspeed", lambda t: (arc(3.0, 0.02), np.array([20.0, 1.0]))),
        ("four_waypoints", lambda t: (arc(4.5, -0.03, k=4), np.array([14.0, -2.0]))),
    ]
    for name, make in specs:
        speed = 0.0 if name == "start_from_rest" else (8.0 if name == "overspeed" else 4.0)
        ticks = []
        for t in range(30):
            wps, target = make(t)
            noise = rng.normal(0.0, 0.05, size=wps.shape)
            wps = (wps + noise).round(4)
            target = (target + rng.normal(0.0, 0.1, size=2)).round(4)
            ticks.append({"waypoints": wps.tolist(), "speed": round(float(speed), 4), "target": target.tolist()})
            desired = float(np.linalg.norm(wps[1] - wps[0]) * 2.0)
            speed = max(0.0, speed + 0.3 * (desired - speed) + rng.normal(0.0, 0.05))
        out.append({"name": name, "ticks": ticks})
    return out


def main() -> None:
    rng = np.random.default_rng(20261125)
    sequences = cases(rng)
    expected: dict[str, dict[str, list[list[float]]]] = {}
    for controller, (make, frame) in CONTROLLERS.items():
        expected[controller] = {}
        for seq in sequences:
            ctl = make()
            rows = []
            for tick in seq["ticks"]:
                wps = frame(np.asarray(tick["waypoints"], np.float64))
                target = frame(np.asarray(tick["target"], np.float64))
                with np.errstate(divide="ignore", invalid="ignore"):
                    rows.append(list(ctl.control(wps, np.float64(tick["speed"]), target)))
            expected[controller][seq["name"]] = rows
    doc = {
        "about": "Inputs in gymwire's ego frame (x forward, y left); expected [throttle, steer, brake] per tick from the reference formulas. Written by scripts/waypoint-control/reference_vectors.py.",
        "sequences": sequences,
        "expected": expected,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()

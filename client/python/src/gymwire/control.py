"""Waypoint controllers: predicted ego-frame waypoints to CARLA controls, as the driving benchmarks' reference agents do it.

The same controllers as the server's Bench2Drive env and the TypeScript SDK
(``runtime/waypoint-control.ts``), with their constants generated from it into
:data:`gymwire._protocol.WAYPOINT_CONTROLLERS`:

- ``"bench2drive"``: Bench2DriveZoo's ``control_pid`` (``team_code/pid_controller.py``, its UniAD
  and VAD agents): desired speed averaged over all waypoint pairs, aim at the waypoint nearest 4 m,
  the route target point when that steers less or the prediction disagrees with the route nearby.
- ``"bench2drive-uniad"``: the same, and no throttle above 5 m/s (UniAD's agent).
- ``"transfuser"``: TransFuser's ``control_pid``: the first two waypoints set speed and heading.

Waypoints are gymwire's ego frame (x forward, y left, metres, 0.5 s apart); steer is positive to
the right, as in CARLA.

Example::

    controller = WaypointController("bench2drive")
    throttle, steer, brake = controller.control([[2, 0], [4, 0], [6, 0]], speed=3.5, target=[20, 0])
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._protocol import WAYPOINT_CONTROLLERS

__all__ = ["WAYPOINT_CONTROLLERS", "WaypointController", "WaypointPID", "WindowPID"]


class WindowPID:
    """PID over the last ``n`` errors, starting as ``n`` zeros: I = window mean, D = last difference."""

    def __init__(self, kp: float, ki: float, kd: float, n: int) -> None:
        self.kp, self.ki, self.kd, self.n = kp, ki, kd, n
        self.window: deque[float] = deque([0.0] * n, maxlen=n)

    def step(self, error: float) -> float:
        self.window.append(error)
        integral = sum(self.window) / len(self.window) if len(self.window) >= 2 else 0.0
        derivative = self.window[-1] - self.window[-2] if len(self.window) >= 2 else 0.0
        return self.kp * error + self.ki * integral + self.kd * derivative

    def reset(self) -> None:
        self.window = deque([0.0] * self.n, maxlen=self.n)


def _clip(v: float, lo: float, hi: float) -> float:
    return min(hi, max(lo, v))


class WaypointController:
    """One vehicle's controller (it keeps two PID windows): use one per env and episode."""

    def __init__(self, name: str = "bench2drive", **overrides: Any) -> None:
        if name not in WAYPOINT_CONTROLLERS:
            raise ValueError(f"unknown waypoint controller {name!r}; known: {', '.join(WAYPOINT_CONTROLLERS)}")
        self.name = name
        self.config: dict[str, Any] = {**WAYPOINT_CONTROLLERS[name], **overrides}
        self.turn = WindowPID(**self.config["turn"])
        self.speed = WindowPID(**self.config["speed"])

    def reset(self) -> None:
        self.turn.reset()
        self.speed.reset()

    def control(self, waypoints: Any, speed: float, target: Sequence[float] | None = None) -> tuple[float, float, float]:
        """``waypoints`` ``[K, 2]`` (K >= 2), ``speed`` in m/s, the route ``target`` point (bench2drive) -> throttle, steer, brake."""
        wps = [(float(p[0]), float(p[1])) for p in np.asarray(waypoints, np.float64).reshape(-1, 2)]
        if len(wps) < 2:
            raise ValueError(f"a waypoint controller needs at least 2 waypoints, got {len(wps)}")
        if self.config["kind"] == "bench2drive":
            if target is None:
                raise ValueError(f"the {self.name} waypoint controller needs the route target point (ego frame, the target_point observation)")
            return self._bench2drive(wps, float(speed), (float(target[0]), float(target[1])))
        return self._transfuser(wps, float(speed))

    def _longitudinal(self, desired: float, speed: float) -> tuple[float, bool]:
        c = self.config
        # desired == 0 never reaches the division: it is below brake_speed.
        brake = desired < c["brake_speed"] or speed / desired > c["brake_ratio"]
        delta = _clip(desired - speed, 0.0, c["clip_delta"])
        throttle = _clip(self.speed.step(delta), 0.0, c["max_throttle"])
        if brake:
            throttle = 0.0
        if c["throttle_cut_speed"] is not None and speed > c["throttle_cut_speed"]:
            throttle = 0.0
        return throttle, brake

    def _bench2drive(self, wps: list[tuple[float, float]], speed: float, target: tuple[float, float]) -> tuple[float, float, float]:
        c = self.config
        pairs = len(wps) - 1
        desired = 0.0
        best_norm = 1e5
        aim = wps[0]
        for i in range(pairs):
            (ax, ay), (bx, by) = wps[i], wps[i + 1]
            desired += math.hypot(bx - ax, by - ay) / c["waypoint_dt"] / pairs
            # The reference measures the segment's midpoint but aims at the segment's first waypoint.
            norm = math.hypot((ax + bx) / 2, (ay + by) / 2)
            if abs(c["aim_dist"] - best_norm) > abs(c["aim_dist"] - norm):
                aim, best_norm = wps[i], norm

        # The reference's frame is x right, y forward: angle = (90° - atan2(forward, right)) / 90°.
        def angle_of(x: float, y: float) -> float:
            return math.degrees(math.pi / 2 - math.atan2(x, -y)) / 90

        angle = angle_of(*aim)
        angle_last = angle_of(wps[-1][0] - wps[-2][0], wps[-1][1] - wps[-2][1])
        angle_target = angle_of(*target)
        use_target = abs(angle_target) < abs(angle) or (abs(angle_target - angle_last) > c["angle_thresh"] and target[0] < c["dist_thresh"])
        steer = _clip(self.turn.step(angle_target if use_target else angle), -1.0, 1.0)
        throttle, brake = self._longitudinal(desired, speed)
        return throttle, steer, 1.0 if brake else 0.0

    def _transfuser(self, wps: list[tuple[float, float]], speed: float) -> tuple[float, float, float]:
        (x0, y0), (x1, y1) = wps[0], wps[1]
        desired = math.hypot(x0 - x1, y0 - y1) / self.config["waypoint_dt"]
        throttle, brake = self._longitudinal(desired, speed)
        # TransFuser's frame is x forward, y right.
        angle = math.degrees(math.atan2(-(y0 + y1) / 2, (x0 + x1) / 2)) / 90
        if speed < 0.01 or brake:
            angle = 0.0
        steer = _clip(self.turn.step(angle), -1.0, 1.0)
        return throttle, steer, 1.0 if brake else 0.0


class WaypointPID:
    """A batch of :class:`WaypointController` (one per env): ``[N, K, 2]`` waypoints to ``[N, 3]`` float32 ``[throttle, steer, brake]``.

    ``controller`` names one of :data:`WAYPOINT_CONTROLLERS` (default ``"bench2drive"``, which also
    needs each env's ``target_point``).
    """

    def __init__(self, num_envs: int = 1, controller: str = "bench2drive") -> None:
        self.controllers = [WaypointController(controller) for _ in range(num_envs)]

    def reset(self, env_index: int | None = None) -> None:
        for i in range(len(self.controllers)) if env_index is None else [env_index]:
            self.controllers[i].reset()

    def control(self, waypoints: Any, speed: float, target: Sequence[float] | None = None, env_index: int = 0) -> np.ndarray:
        """One env's controls as float32 ``[throttle, steer, brake]``."""
        return np.asarray(self.controllers[env_index].control(waypoints, speed, target), np.float32)

    def __call__(self, waypoints: Any, speeds: Any, targets: Any = None) -> np.ndarray:
        speeds = np.asarray(speeds, np.float64).reshape(-1)
        return np.stack([self.control(w, float(s), None if targets is None else targets[i], i) for i, (w, s) in enumerate(zip(waypoints, speeds, strict=True))])

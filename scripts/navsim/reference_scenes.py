#!/usr/bin/env python3
"""Writes the constructed NAVSIM reference scenes (gymwire's scene format) into a folder.

Each scene exercises a path where a re-implementation can drift from NAVSIM's code; score them with
scripts/navsim/reference_vectors.py to get the expected values. Agents are laid out at 2 Hz (as
NAVSIM's logs are) and written on a 0.1 s grid by linear interpolation, which is what NAVSIM's
metric caching does with the 2 Hz samples, so both sides see the same boxes.

    python scripts/navsim/reference_scenes.py test/fixtures/navsim-reference
"""
from __future__ import annotations

import json
import math
import pathlib
import sys
from typing import Any, Callable, Dict, List, Tuple

T0_US = 10_000_000


def rect(x0: float, y0: float, x1: float, y1: float) -> List[List[float]]:
    return [[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]]


def line(x0: float, x1: float, y: float, step: float = 1.0) -> List[List[float]]:
    n = int(round((x1 - x0) / step))
    return [[x0 + i * step, y] for i in range(n + 1)]


def straight_road(extra: Dict[str, Any] | None = None) -> Dict[str, Any]:
    """Two roadblocks of two lanes (right y < 0, left y > 0), 3.5 m wide, speed limit 15 m/s."""
    m: Dict[str, Any] = {
        "name": "straight-two-lane",
        "roadblocks": [
            {"id": "rb_a", "kind": "roadblock", "polygon": rect(-60, -3.5, 100, 3.5), "incoming": [], "outgoing": ["rb_b"]},
            {"id": "rb_b", "kind": "roadblock", "polygon": rect(100, -3.5, 260, 3.5), "incoming": ["rb_a"], "outgoing": []},
        ],
        "lanes": [
            {"id": "a_r", "roadblock_id": "rb_a", "polygon": rect(-60, -3.5, 100, 0), "centerline": line(-60, 100, -1.75), "speed_limit_mps": 15.0, "incoming": [], "outgoing": ["b_r"]},
            {"id": "a_l", "roadblock_id": "rb_a", "polygon": rect(-60, 0, 100, 3.5), "centerline": line(-60, 100, 1.75), "speed_limit_mps": 15.0, "incoming": [], "outgoing": ["b_l"]},
            {"id": "b_r", "roadblock_id": "rb_b", "polygon": rect(100, -3.5, 260, 0), "centerline": line(100, 260, -1.75), "speed_limit_mps": 15.0, "incoming": ["a_r"], "outgoing": []},
            {"id": "b_l", "roadblock_id": "rb_b", "polygon": rect(100, 0, 260, 3.5), "centerline": line(100, 260, 1.75), "speed_limit_mps": 15.0, "incoming": ["a_l"], "outgoing": []},
        ],
        "intersections": [],
        "carparks": [],
        "drivable_areas": [],
    }
    m.update(extra or {})
    return m


def agent(token: str, kind: str, size: Tuple[float, float, float], at: Callable[[float], Tuple[float, float, float, float, float]], until: float = 5.0) -> Dict[str, Any]:
    """`at(t)` gives (x, y, heading, vx, vy) at the 2 Hz samples; 0.1 s states interpolate them linearly."""
    samples = [(k * 0.5, *at(k * 0.5)) for k in range(int(round(until / 0.5)) + 1)]
    states = []
    for i in range(int(round(until / 0.1)) + 1):
        t = round(i * 0.1, 10)
        k = min(int(t // 0.5), len(samples) - 2)
        a, b = samples[k], samples[k + 1]
        f = (t - a[0]) / (b[0] - a[0])
        states.append([t] + [a[j] + f * (b[j] - a[j]) for j in range(1, 6)])
    return {"token": token, "type": kind, "length": size[0], "width": size[1], "height": size[2], "states": states}


def poses(fn: Callable[[float], Tuple[float, float, float]], n: int = 8, dt: float = 0.5) -> Dict[str, Any]:
    return {"interval_length": dt, "poses": [list(fn((k + 1) * dt)) for k in range(n)]}


def history(speeds: List[float], y: float = -1.75) -> List[Dict[str, Any]]:
    """Ego states at -1.5, -1.0, -0.5 s with the given speeds, positions integrated back from x = 0."""
    out, x = [], 0.0
    states = []
    for k, v in zip([-0.5, -1.0, -1.5], reversed(speeds)):
        x -= v * 0.5
        states.append({"t": k, "x": x, "y": y, "heading": 0.0, "vx": v, "vy": 0.0, "ax": 0.0, "ay": 0.0})
    out = sorted(states, key=lambda s: s["t"])
    return out


def scene(name: str, description: str, m: Dict[str, Any], agents: List[Dict[str, Any]], ego: Dict[str, float], agent_traj: Dict[str, Any], human: Dict[str, Any], **extra: Any) -> Dict[str, Any]:
    doc = {
        "format": "navsim-ref-scene/1",
        "name": name,
        "description": description,
        "timestamp_us": T0_US,
        "scene_type": "original",
        "map": m,
        "route_roadblock_ids": [r["id"] for r in m["roadblocks"]],
        "traffic_lights": [],
        "ego": {"x": 0.0, "y": -1.75, "heading": 0.0, "vx": 10.0, "vy": 0.0, "ax": 0.0, "ay": 0.0, **ego},
        "ego_history": history([10.0, 10.0, 10.0]),
        "agents": agents,
        "agent_trajectory": agent_traj,
        "human_trajectory": human,
    }
    doc.update(extra)
    return doc


def cut_in() -> Dict[str, Any]:
    # A car drifting from the left lane into the ego's lane in the logged future; PDM-Closed only
    # sees it at t = 0 and forecasts it straight on. It also overlaps the +1 m path's corridor, so
    # the faster proposals of that path overtake it and keep the slower ones' lead in NAVSIM's buffer.
    def car(t: float):
        y = 1.2 - min(t, 2.0) * 1.475
        return (8.0 + 9.0 * t, y, -0.3 if 0 < t <= 2.0 else 0.0, 9.0, -1.475 if t < 2.0 else 0.0)

    return scene(
        "cut_in",
        "a car 8 m ahead in the left lane cuts into the ego lane within 2 s; the agent keeps 10 m/s",
        straight_road(),
        [agent("cutter", "vehicle", (4.6, 1.9, 1.6), car), agent("cone", "traffic_cone", (0.5, 0.5, 0.8), lambda t: (60.0, -3.0, 0.0, 0.0, 0.0))],
        {},
        poses(lambda t: (10.0 * t, 0.0, 0.0)),
        poses(lambda t: (10.0 * t - 0.4 * t * t, 0.0, 0.0)),
    )


def off_road_human() -> Dict[str, Any]:
    # The logged human drifts onto a `drivable_areas` polygon beside the road, which NAVSIM's
    # drivable map leaves out (DAC 0 for the human, so the v2 filter lifts the agent's DAC); the ego
    # braked hard before t = 0, so history comfort fails for the agent, while the human is scored
    # without history and cannot lift it.
    m = straight_road({"drivable_areas": [{"id": "shoulder", "polygon": rect(-60, -7.0, 260, -3.5)}], "carparks": [{"id": "lot", "polygon": rect(40, 3.5, 80, 20)}]})
    drift = lambda t: (10.0 * t, -1.2 * min(t, 2.5), -0.1 if t < 2.5 else 0.0)  # noqa: E731
    doc = scene(
        "off_road_human",
        "human and agent drift onto a shoulder drawn as a drivable-area polygon; hard braking in the history",
        m,
        [agent("lead", "vehicle", (4.6, 1.9, 1.6), lambda t: (45.0 + 8.0 * t, 1.75, 0.0, 8.0, 0.0))],
        {},
        poses(drift),
        poses(drift),
    )
    doc["ego_history"] = [{**h, "ax": -4.5} for h in history([16.0, 14.0, 12.0])]
    return doc


def arc(cx: float, cy: float, r: float, a0: float, a1: float, step: float = 1.0) -> List[List[float]]:
    n = max(2, int(math.ceil(abs(a1 - a0) * r / step)))
    return [[cx + r * math.cos(a0 + (a1 - a0) * i / n), cy + r * math.sin(a0 + (a1 - a0) * i / n)] for i in range(n + 1)]


def red_light_turn() -> Dict[str, Any]:
    # Lane -> left-turning lane connector (red at t = 0, green from 1.0 s) -> lane going north. The
    # joins keep both headings in NAVSIM's paths; PDM-Closed stops for the red of t = 0; v2 scores
    # the lights per 2 Hz frame. A vehicle ahead on the next lane exercises the leading-agent search.
    r = 15.0
    cx, cy = 0.0, -1.75 + r
    centre = arc(cx, cy, r, -math.pi / 2, 0.0)
    inner, outer = arc(cx, cy, r - 1.75, -math.pi / 2, 0.0), arc(cx, cy, r + 1.75, -math.pi / 2, 0.0)
    conn_poly = outer + list(reversed(inner)) + [outer[0]]
    ex, ey = centre[-1]
    m = {
        "name": "left-turn",
        "roadblocks": [
            {"id": "rb_a", "kind": "roadblock", "polygon": rect(-80, -3.5, 0, 0), "incoming": [], "outgoing": ["rbc_turn"]},
            {"id": "rbc_turn", "kind": "roadblock_connector", "polygon": conn_poly, "incoming": ["rb_a"], "outgoing": ["rb_b"]},
            {"id": "rb_b", "kind": "roadblock", "polygon": rect(ex - 1.75, ey, ex + 1.75, ey + 120), "incoming": ["rbc_turn"], "outgoing": []},
        ],
        "lanes": [
            {"id": "a", "roadblock_id": "rb_a", "polygon": rect(-80, -3.5, 0, 0), "centerline": line(-80, 0, -1.75), "speed_limit_mps": 13.0, "incoming": [], "outgoing": ["turn"]},
            {"id": "turn", "roadblock_id": "rbc_turn", "polygon": conn_poly, "centerline": centre, "speed_limit_mps": 8.0, "incoming": ["a"], "outgoing": ["b"]},
            {"id": "b", "roadblock_id": "rb_b", "polygon": rect(ex - 1.75, ey, ex + 1.75, ey + 120), "centerline": [[ex, ey + i] for i in range(121)], "speed_limit_mps": 13.0, "incoming": ["turn"], "outgoing": []},
        ],
        "intersections": [{"id": "junction", "polygon": rect(-1, -4, ex + 2.5, ey + 1)}],
        "carparks": [],
        "drivable_areas": [],
    }
    doc = scene(
        "red_light_turn",
        "ego 14 m before a left-turn connector that is red at t = 0 and green from 1.0 s; the agent turns at 7 m/s",
        m,
        [agent("ahead", "vehicle", (4.6, 1.9, 1.6), lambda t: (ex, ey + 25.0 + 6.0 * t, math.pi / 2, 0.0, 6.0))],
        {"x": -14.0, "vx": 7.0},
        {"interval_length": 0.5, "poses": []},
        {"interval_length": 0.5, "poses": []},
        traffic_lights=[{"t": 0.0, "red": ["turn"], "green": []}, {"t": 1.0, "red": [], "green": ["turn"]}],
    )
    doc["ego_history"] = [{**h, "x": h["x"] * 0.7 - 14.0, "vx": 7.0} for h in history([10.0, 10.0, 10.0])]
    # Follow the route at 7 m/s: 14 m of lane, then the arc, then north (rear-axle poses relative to the start).
    path = [[-14.0 + i * 0.1, -1.75] for i in range(140)] + centre + [[ex, ey + i] for i in range(1, 60)]
    pts = [path[0]]
    for p in path[1:]:
        if math.dist(p, pts[-1]) > 1e-9:
            pts.append(p)
    cum = [0.0]
    for a, b in zip(pts, pts[1:]):
        cum.append(cum[-1] + math.dist(a, b))

    def at(s: float) -> Tuple[float, float, float]:
        k = next(i for i in range(1, len(cum)) if cum[i] >= s)
        f = (s - cum[k - 1]) / (cum[k] - cum[k - 1])
        (x0, y0), (x1, y1) = pts[k - 1], pts[k]
        return (x0 + f * (x1 - x0) + 14.0, y0 + f * (y1 - y0) + 1.75, math.atan2(y1 - y0, x1 - x0))

    doc["agent_trajectory"] = poses(lambda t: at(7.0 * t))
    doc["human_trajectory"] = poses(lambda t: at(7.0 * t - 0.3 * t * t))
    return doc


def carpark_exit() -> Dict[str, Any]:
    # The agent leaves the road into a carpark beside it: drivable only through the carpark layer
    # (its DAC is 1 because NAVSIM's drivable map holds carparks), and it crosses the lane boundary
    # first (multiple lanes, then off the lanes). The ego braked, then accelerated hard just before
    # t = 0: v2's history comfort fails with NAVSIM's 14 past states and its windows (8, and 15 for
    # jerk), and would pass with v1's windows or with all 15 past states.
    m = straight_road({"carparks": [{"id": "lot", "polygon": rect(15, -30, 90, -3.5)}]})
    swerve = lambda t: (10.0 * t - 0.6 * t * t, -2.6 * max(0.0, t - 1.5) ** 1.4, -0.35 * min(1.0, max(0.0, t - 1.5)))  # noqa: E731
    doc = scene(
        "carpark_exit",
        "the agent brakes gently and turns off the road into a carpark on its right; uneven acceleration in the history",
        m,
        [agent("parked", "vehicle", (4.6, 1.9, 1.6), lambda t: (70.0, -20.0, 0.0, 0.0, 0.0)), agent("lead", "vehicle", (4.6, 1.9, 1.6), lambda t: (40.0 + 10.0 * t, -1.75, 0.0, 10.0, 0.0))],
        {"ax": 1.96},
        poses(swerve),
        poses(lambda t: (10.0 * t, 0.0, 0.0)),
    )
    doc["ego_history"] = [
        {"t": -1.5, "x": -13.4, "y": -1.75, "heading": 0.0, "vx": 7.6, "vy": 0.0, "ax": -1.62, "ay": 0.0},
        {"t": -1.0, "x": -9.2, "y": -1.75, "heading": 0.0, "vx": 8.9, "vy": 0.0, "ax": -1.59, "ay": 0.0},
        {"t": -0.5, "x": -4.7, "y": -1.75, "heading": 0.0, "vx": 9.3, "vy": 0.0, "ax": 2.2, "ay": 0.0},
    ]
    return doc


def kerb_edge() -> Dict[str, Any]:
    # The road narrows 25 m ahead: the kerb steps in from y = -4.0 to y = -3.5, exactly where the
    # agent's right corners run (its rear axle is half the ego width inside the kerb, heading 0, so
    # the corners' y is -3.5 to the last bit). NAVSIM's inside test (shapely `contains`) puts points
    # on the edge outside: DAC 0. The human brakes and never reaches the narrowing.
    half_width = 2.297 / 2
    y0 = -3.5 + half_width
    kerb = [[-60.0, -4.0], [25.0, -4.0], [25.0, -3.5], [100.0, -3.5]]
    m = straight_road()
    m["name"] = "kerb-narrowing"
    m["roadblocks"][0]["polygon"] = kerb + [[100.0, 3.5], [-60.0, 3.5], [-60.0, -4.0]]
    m["lanes"][0]["polygon"] = kerb + [[100.0, 0.0], [-60.0, 0.0], [-60.0, -4.0]]
    doc = scene(
        "kerb_edge",
        "the agent drives straight with its right corners exactly on the kerb where the road narrows; the human brakes short of it",
        m,
        [agent("lead", "vehicle", (4.6, 1.9, 1.6), lambda t: (60.0 + 10.0 * t, 1.75, 0.0, 10.0, 0.0))],
        {"y": y0},
        poses(lambda t: (10.0 * t, 0.0, 0.0)),
        poses(lambda t: (10.0 * min(t, 10 / 3) - 1.5 * min(t, 10 / 3) ** 2, 0.0, 0.0)),
    )
    doc["ego_history"] = history([10.0, 10.0, 10.0], y=y0)
    return doc


def kerb_hair() -> Dict[str, Any]:
    # `kerb_edge` with the narrowed kerb 1e-10 m further out, the whole scene turned by 0.5 rad so
    # the kerb is a slanted edge: the agent's right corners lie a hair inside the road. Shapely's
    # exact predicates count them inside (DAC 1); a tolerance around the edge would put them on it,
    # and so outside.
    doc = kerb_edge()
    for poly in (doc["map"]["roadblocks"][0]["polygon"], doc["map"]["lanes"][0]["polygon"]):
        for p in poly:
            if p[1] == -3.5:
                p[1] = -3.5 - 1e-10
    doc["name"] = "kerb_hair"
    doc["description"] = "the road runs north-east; the agent drives straight with its right corners 1e-10 m inside the kerb where the road narrows; the human brakes short of it"
    return rotated(doc, 0.5)


def barrier_beside(name: str, gap: float, description: str) -> Dict[str, Any]:
    # `kerb_hair` with a barrier beyond the kerb whose edge runs `gap` from the agent's right corners.
    doc = kerb_hair()
    c, s = math.cos(0.5), math.sin(0.5)
    cy = -3.5 - gap - 0.25
    doc["agents"].append(agent("barrier", "barrier", (4.0, 0.5, 1.0), lambda t: (c * 30.0 - s * cy, s * 30.0 + c * cy, 0.5, 0.0, 0.0)))
    doc["name"] = name
    doc["description"] = description
    return doc


def barrier_hair() -> Dict[str, Any]:
    # Shapely's exact `intersects` finds no collision 1e-10 m apart; a tolerance would.
    return barrier_beside("barrier_hair", 1e-10, "kerb_hair with a barrier beyond the kerb, 1e-10 m from the agent's right corners")


def barrier_pico() -> Dict[str, Any]:
    # 1e-11 m apart: still no collision for shapely (GEOS decides exactly), where a separating-axis
    # test with a relative tolerance of 1e-12 calls the boxes touching at these coordinates.
    return barrier_beside("barrier_pico", 1e-11, "kerb_hair with a barrier beyond the kerb, 1e-11 m from the agent's right corners")


def overlap_at_start() -> Dict[str, Any]:
    # A car whose rear overlaps the ego's front bumper at t = 0 and pulls away, and a cone pressed
    # against the ego's left side. NAVSIM v2's log-replay traffic drops both from every frame before
    # scoring; v1 scores them (an at-fault front collision at t = 0). Synthetic, so the v2 human
    # filter (whose human overlaps them too) cannot lift the agent's NC and TTC.
    front = 4.049
    doc = scene(
        "overlap_at_start",
        "a car overlapping the ego's front bumper at t = 0 pulls away; a cone overlaps its left side",
        straight_road(),
        [
            agent("tailgated", "vehicle", (4.6, 1.9, 1.6), lambda t: (front + 2.3 - 0.3 + 10.5 * t, -1.75, 0.0, 10.5, 0.0)),
            agent("cone", "traffic_cone", (0.5, 0.5, 0.8), lambda t: (1.0, -1.75 + 2.297 / 2 + 0.2, 0.0, 0.0, 0.0)),
        ],
        {},
        poses(lambda t: (10.0 * t, 0.0, 0.0)),
        poses(lambda t: (10.0 * t, 0.0, 0.0)),
        scene_type="synthetic",
    )
    return doc


def fork() -> Dict[str, Any]:
    # One lane forks into two lane connectors, listed left first: the left one swings over to the
    # left lane (longer), the right one runs straight on. NAVSIM's Dijkstra takes the shorter, so
    # PDM-Closed's centreline runs straight; the first-listed successor would veer left.
    def s_curve(x: float) -> float:
        u = x / 30.0
        return -1.75 + 3.5 * (3 * u * u - 2 * u * u * u)

    xs = [float(i) for i in range(31)]
    centre = [[x, s_curve(x)] for x in xs]

    def offset(d: float) -> List[List[float]]:
        out = []
        for i, (x, y) in enumerate(centre):
            (xa, ya), (xb, yb) = centre[max(0, i - 1)], centre[min(len(centre) - 1, i + 1)]
            n = math.hypot(xb - xa, yb - ya)
            out.append([x - d * (yb - ya) / n, y + d * (xb - xa) / n])
        return out

    left_poly = offset(-1.75) + list(reversed(offset(1.75)))
    left_poly.append(left_poly[0])
    m = {
        "name": "fork",
        "roadblocks": [
            {"id": "rb_a", "kind": "roadblock", "polygon": rect(-80, -3.5, 0, 0), "incoming": [], "outgoing": ["rbc_fork"]},
            {"id": "rbc_fork", "kind": "roadblock_connector", "polygon": rect(0, -3.5, 30, 3.5), "incoming": ["rb_a"], "outgoing": ["rb_b"]},
            {"id": "rb_b", "kind": "roadblock", "polygon": rect(30, -3.5, 200, 3.5), "incoming": ["rbc_fork"], "outgoing": []},
        ],
        "lanes": [
            {"id": "a", "roadblock_id": "rb_a", "polygon": rect(-80, -3.5, 0, 0), "centerline": line(-80, 0, -1.75), "speed_limit_mps": 15.0, "incoming": [], "outgoing": ["k_left", "k_straight"]},
            {"id": "k_left", "roadblock_id": "rbc_fork", "polygon": left_poly, "centerline": centre, "speed_limit_mps": 15.0, "incoming": ["a"], "outgoing": ["b_l"]},
            {"id": "k_straight", "roadblock_id": "rbc_fork", "polygon": rect(0, -3.5, 30, 0), "centerline": line(0, 30, -1.75), "speed_limit_mps": 15.0, "incoming": ["a"], "outgoing": ["b_r"]},
            {"id": "b_l", "roadblock_id": "rb_b", "polygon": rect(30, 0, 200, 3.5), "centerline": line(30, 200, 1.75), "speed_limit_mps": 15.0, "incoming": ["k_left"], "outgoing": []},
            {"id": "b_r", "roadblock_id": "rb_b", "polygon": rect(30, -3.5, 200, 0), "centerline": line(30, 200, -1.75), "speed_limit_mps": 15.0, "incoming": ["k_straight"], "outgoing": []},
        ],
        "intersections": [{"id": "fork_area", "polygon": rect(0, -3.5, 30, 3.5)}],
        "carparks": [],
        "drivable_areas": [],
    }
    doc = scene(
        "fork",
        "one lane forks into a left connector (listed first, longer) and a straight one; the agent drives straight on at 10 m/s",
        m,
        [agent("ahead", "vehicle", (4.6, 1.9, 1.6), lambda t: (70.0 + 8.0 * t, -1.75, 0.0, 8.0, 0.0))],
        {"x": -12.0},
        poses(lambda t: (10.0 * t, 0.0, 0.0)),
        poses(lambda t: (10.0 * t - 0.2 * t * t, 0.0, 0.0)),
    )
    doc["ego_history"] = [{**h, "x": h["x"] - 12.0} for h in history([10.0, 10.0, 10.0])]
    return doc


def route_loop() -> Dict[str, Any]:
    # The fork with its two connectors in two roadblock connectors that overlap where they leave
    # lane `a`. The logged route passes straight through, comes back over `rb_a` (a repeat NAVSIM
    # drops) and takes the left connector: NAVSIM's route repair cuts the route at the second
    # connector that overlaps an earlier one by more than 1 m^2, so PDM-Closed's centreline runs to
    # `rb_b`, straight on, not to `rb_l` on the left.
    doc = fork()
    blocks = {r["id"]: r for r in doc["map"]["roadblocks"]}
    lanes = {l["id"]: l for l in doc["map"]["lanes"]}
    left_poly = lanes["k_left"]["polygon"]
    doc["map"]["name"] = "route-loop"
    doc["map"]["roadblocks"] = [
        {**blocks["rb_a"], "outgoing": ["rbc_straight", "rbc_left"]},
        {"id": "rbc_straight", "kind": "roadblock_connector", "polygon": rect(0, -3.5, 30, 0), "incoming": ["rb_a"], "outgoing": ["rb_b"]},
        {"id": "rbc_left", "kind": "roadblock_connector", "polygon": left_poly, "incoming": ["rb_a"], "outgoing": ["rb_l"]},
        {"id": "rb_b", "kind": "roadblock", "polygon": rect(30, -3.5, 200, 0), "incoming": ["rbc_straight"], "outgoing": []},
        {"id": "rb_l", "kind": "roadblock", "polygon": rect(30, 0, 200, 3.5), "incoming": ["rbc_left"], "outgoing": []},
    ]
    lanes["k_left"]["roadblock_id"] = "rbc_left"
    lanes["k_straight"]["roadblock_id"] = "rbc_straight"
    lanes["b_l"]["roadblock_id"] = "rb_l"
    doc["name"] = "route_loop"
    doc["description"] = "the logged route runs straight through a fork, comes back over the ego's roadblock and takes the overlapping left connector; the agent drives straight on at 10 m/s"
    doc["route_roadblock_ids"] = ["rb_a", "rbc_straight", "rb_b", "rb_a", "rbc_left", "rb_l"]
    return doc


def lane_tie() -> Dict[str, Any]:
    # The rear axle lies exactly on the line between the two lanes of the route, heading along both:
    # PDM-Closed's starting lane is a tie of heading errors, which NAVSIM breaks by the order of its
    # STR-tree query (numpy's argmin takes the first). A slow car ahead in the right lane makes the
    # two choices plan differently. The left lane is listed first.
    m = straight_road()
    m["lanes"] = [m["lanes"][1], m["lanes"][0], m["lanes"][3], m["lanes"][2]]
    doc = scene(
        "lane_tie",
        "the ego's rear axle lies on the line between two route lanes; a slow car ahead in the right lane; the agent drives on along the line at 10 m/s",
        m,
        [agent("slow", "vehicle", (4.6, 1.9, 1.6), lambda t: (30.0 + 5.0 * t, -1.75, 0.0, 5.0, 0.0))],
        {"y": 0.0},
        poses(lambda t: (10.0 * t, 0.0, 0.0)),
        poses(lambda t: (10.0 * t, 0.0, 0.0)),
    )
    doc["ego_history"] = history([10.0, 10.0, 10.0], y=0.0)
    return doc


def junction_road() -> Dict[str, Any]:
    """One lane east: roadblock rb_a (x < 40), a junction with roadblock connector rbc_j, roadblock rb_b (x > 60)."""
    return {
        "name": "junction-road",
        "roadblocks": [
            {"id": "rb_a", "kind": "roadblock", "polygon": rect(-60, -3.5, 40, 0), "incoming": [], "outgoing": ["rbc_j"]},
            {"id": "rbc_j", "kind": "roadblock_connector", "polygon": rect(40, -3.5, 60, 0), "incoming": ["rb_a"], "outgoing": ["rb_b"]},
            {"id": "rb_b", "kind": "roadblock", "polygon": rect(60, -3.5, 220, 0), "incoming": ["rbc_j"], "outgoing": []},
        ],
        "lanes": [
            {"id": "a", "roadblock_id": "rb_a", "polygon": rect(-60, -3.5, 40, 0), "centerline": line(-60, 40, -1.75), "speed_limit_mps": 15.0, "incoming": [], "outgoing": ["k"]},
            {"id": "k", "roadblock_id": "rbc_j", "polygon": rect(40, -3.5, 60, 0), "centerline": line(40, 60, -1.75), "speed_limit_mps": 15.0, "incoming": ["a"], "outgoing": ["b"]},
            {"id": "b", "roadblock_id": "rb_b", "polygon": rect(60, -3.5, 220, 0), "centerline": line(60, 220, -1.75), "speed_limit_mps": 15.0, "incoming": ["k"], "outgoing": []},
        ],
        "intersections": [{"id": "junction", "polygon": rect(40, -3.5, 60, 0)}],
        "carparks": [],
        "drivable_areas": [],
    }


def route_repair(name: str, route: List[str], description: str, x0: float = 20.0) -> Dict[str, Any]:
    # The logged route misses roadblocks NAVSIM's PDM-Closed puts back before planning
    # (`route_roadblock_correction`); its centreline, and the on-route lanes the scorer tests, use the
    # repaired route.
    doc = scene(
        name,
        description,
        junction_road(),
        [agent("ahead", "vehicle", (4.6, 1.9, 1.6), lambda t: (95.0 + 8.0 * t, -1.75, 0.0, 8.0, 0.0))],
        {"x": x0},
        poses(lambda t: (10.0 * t, 0.0, 0.0)),
        poses(lambda t: (10.0 * t - 0.3 * t * t, 0.0, 0.0)),
        route_roadblock_ids=route,
    )
    doc["ego_history"] = [{**h, "x": h["x"] + x0} for h in history([10.0, 10.0, 10.0])]
    return doc


def rotated(doc: Dict[str, Any], angle: float) -> Dict[str, Any]:
    """The scene turned by `angle` about the origin: map, ego, history and agents (poses are ego-relative)."""
    c, s = math.cos(angle), math.sin(angle)

    def pt(p: List[float]) -> List[float]:
        return [c * p[0] - s * p[1], s * p[0] + c * p[1]]

    def wrap(h: float) -> float:
        return math.atan2(math.sin(h + angle), math.cos(h + angle))

    m = doc["map"]
    for group in ("roadblocks", "lanes", "intersections", "carparks", "drivable_areas"):
        for o in m[group]:
            o["polygon"] = [pt(p) for p in o["polygon"]]
            if "centerline" in o:
                o["centerline"] = [pt(p) for p in o["centerline"]]
    for e in [doc["ego"], *doc.get("ego_history", [])]:
        e["x"], e["y"] = pt([e["x"], e["y"]])
        e["heading"] = wrap(e["heading"])
    for a in doc["agents"]:
        a["states"] = [[t, *pt([x, y]), wrap(h), *pt([vx, vy])] for t, x, y, h, vx, vy in a["states"]]
    return doc


def westbound_weave() -> Dict[str, Any]:
    # The two-lane road turned to run west (heading pi): the agent weaves into the left lane and
    # back, so its heading, the LQR's heading error, the comfort metrics' unwrapped yaw and
    # PDM-Closed's path headings all cross +-pi. A car ahead pulls away.
    weave = lambda t: (10.0 * t, 1.75 * (1 - math.cos(math.pi * t / 2)) / 2, 0.25 * math.sin(math.pi * t / 2))  # noqa: E731
    doc = scene(
        "westbound_weave",
        "the straight road turned to run west; the agent weaves into the left lane and back across heading +-pi",
        straight_road(),
        [agent("lead", "vehicle", (4.6, 1.9, 1.6), lambda t: (35.0 + 11.0 * t, -1.75, 0.0, 11.0, 0.0))],
        {},
        poses(weave),
        poses(lambda t: (10.0 * t, 0.0, 0.0)),
    )
    return rotated(doc, math.pi)


def pop_in() -> Dict[str, Any]:
    # Agents outside the first and last frames: a car first seen 12 m ahead at 1.0 s and last seen at
    # 3.0 s (NAVSIM interpolates it only between its first and last 2 Hz samples), and a pedestrian
    # seen once, at 2.0 s (NAVSIM keeps a single sample in every frame, from t = 0).
    car = agent("late_car", "vehicle", (4.6, 1.9, 1.6), lambda t: (22.0 + 8.0 * t, -1.75, 0.0, 8.0, 0.0), until=5.0)
    car["states"] = [st for st in car["states"] if 1.0 - 1e-9 <= st[0] <= 3.0 + 1e-9]
    walker = {"token": "walker", "type": "pedestrian", "length": 0.6, "width": 0.6, "height": 1.7, "states": [[2.0, 30.0, 2.6, 0.0, 0.0, 0.0]]}
    return scene(
        "pop_in",
        "a car is seen only from 1.0 s to 3.0 s, 12 m ahead; a pedestrian at the left kerb is seen once, at 2.0 s; the agent brakes gently",
        straight_road(),
        [car, walker],
        {},
        poses(lambda t: (10.0 * t - 0.5 * t * t, 0.0, 0.0)),
        poses(lambda t: (10.0 * t - 0.5 * t * t, 0.0, 0.0)),
    )


def standstill() -> Dict[str, Any]:
    # The ego waits behind a stopped car 1.5 m ahead and is run into from behind: a stopped ego is
    # never at fault, TTC skips a stopped ego, and with PDM-Closed held by the car too, no proposal
    # makes 5 m of progress (EP by NAVSIM's threshold branch). The LQR starts from rest.
    front = 4.049
    doc = scene(
        "standstill",
        "the ego waits behind a stopped car; a car from behind runs into it at about 1.9 s",
        straight_road(),
        [
            agent("stopped", "vehicle", (4.6, 1.9, 1.6), lambda t: (front + 1.5 + 2.3, -1.75, 0.0, 0.0, 0.0)),
            agent("rear", "vehicle", (4.6, 1.9, 1.6), lambda t: (-15.0 + 6.0 * t, -1.75, 0.0, 6.0, 0.0)),
        ],
        {"vx": 0.0},
        poses(lambda t: (0.0, 0.0, 0.0)),
        poses(lambda t: (0.0, 0.0, 0.0)),
    )
    doc["ego_history"] = [{**h, "x": 0.0, "vx": 0.0} for h in history([0.0, 0.0, 0.0])]
    return doc


def slowing_to_five(name: str, description: str, agents: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The straight road with `agents`; agent and human slow from 10 to 5 m/s over 4 s."""
    slow = lambda t: (10.0 * t - 0.625 * t * t, 0.0, 0.0)  # noqa: E731
    return scene(name, description, straight_road(), agents, {}, poses(slow), poses(slow))


def lead_tie() -> Dict[str, Any]:
    # Two objects ahead whose rear edges meet at x = 32 at 0.2 s, PDM-Closed's first leading-agent
    # update: a narrow car at 5 m/s and, on its right, a bicycle at 10 m/s, both inside the ego's
    # corridor, at the same polygon distance to the last bit. NAVSIM's `np.argmin` takes the first
    # in its occupancy map's STR-tree order (one slice, bottom to top: the bicycle), not the first
    # listed (the car), and IDM follows that one's speed until the next update.
    return slowing_to_five(
        "lead_tie",
        "a car (5 m/s) and a bicycle (10 m/s) side by side ahead reach the same distance at PDM-Closed's first leading-agent update; the agent slows to 5 m/s",
        [
            agent("car", "vehicle", (4.5, 1.5, 1.6), lambda t: (33.25 + 5.0 * t, -1.5, 0.0, 5.0, 0.0)),
            agent("bike", "bicycle", (2.0, 0.5, 1.7), lambda t: (31.0 + 10.0 * t, -2.625, 0.0, 10.0, 0.0)),
        ],
    )


# Lattice points on circles about the ego centre: 19 vehicles 25 m away (the one ahead in the lane
# left out) and 36 at 65 m, exactly (integer offsets, the ego centre at x = 0, y = -1.75).
CROWD_NEAR = [(a, b) for a in range(-25, 26) for b in range(-25, 26) if a * a + b * b == 625 and (a, b) != (25, 0)]
CROWD_FAR = [(a, b) for a in range(-65, 66) for b in range(-65, 66) if a * a + b * b == 65 * 65]
# Where the car in the lane sits among the far vehicles: numpy 1.23's argsort of 19 distances of 25
# then 36 of 65 puts the far ones listed 12, 13, 14, 16 and 35 last (a stable sort: 31 to 35).
CROWD_LANE_INDEX = 12


def crowd_tie() -> Dict[str, Any]:
    # 55 stopped vehicles, 36 of them at exactly 65 m from the ego centre, one of those in the ego's
    # lane ahead: PDM-Closed keeps the nearest 50 vehicles (`np.argsort`, numpy's introsort, not
    # stable), so which 5 of the tied 36 it drops is numpy's quicksort order. The listing order puts
    # the car in the lane where a stable sort would keep it and numpy's drops it.
    far = [p for p in CROWD_FAR if p != (65, 0)]
    far.insert(CROWD_LANE_INDEX, (65, 0))
    cars = [
        agent(f"car_{i:02d}", "vehicle", (4.6, 1.9, 1.6), lambda t, a=a, b=b: (float(a), -1.75 + b, 0.0, 0.0, 0.0))
        for i, (a, b) in enumerate(CROWD_NEAR + far)
    ]
    doc = scene(
        "crowd_tie",
        "55 stopped vehicles on two circles about the ego centre (25 m and 65 m), one at 65 m in the ego's lane ahead; the agent drives on at 10 m/s",
        straight_road(),
        cars,
        {"x": -1.461},
        poses(lambda t: (10.0 * t, 0.0, 0.0)),
        poses(lambda t: (10.0 * t, 0.0, 0.0)),
    )
    doc["ego_history"] = [{**h, "x": h["x"] - 1.461} for h in history([10.0, 10.0, 10.0])]
    return doc


def empty_road() -> Dict[str, Any]:
    # No agents at all (empty observation frames, no leading agent for PDM-Closed) and an agent that
    # stops at 2.5 s and holds the same pose: zero-length trajectory segments for the interpolation,
    # the tracker and progress.
    stop = lambda t: (10.0 * min(t, 2.5) - 2.0 * min(t, 2.5) ** 2, 0.0, 0.0)  # noqa: E731
    return scene(
        "empty_road",
        "nothing on the road; the agent brakes at 4 m/s² to a stop at 2.5 s and holds its pose",
        straight_road(),
        [],
        {},
        poses(stop),
        poses(stop),
    )


def dead_end() -> Dict[str, Any]:
    # The road ends (no successor roadblock or lane) 0.05 m short of the agent's front corners at
    # 4.0 s: off the drivable area at the last frame only; PDM-Closed's centreline ends there too.
    front = 4.049
    end = 40.0 + front - 0.05
    m = straight_road()
    m["name"] = "dead-end"
    m["roadblocks"] = [{**m["roadblocks"][0], "polygon": rect(-60, -3.5, end, 3.5), "outgoing": []}]
    m["lanes"] = [{**l, "polygon": rect(-60, l["polygon"][0][1], end, l["polygon"][2][1]), "centerline": line(-60, 40, l["centerline"][0][1]) + [[end, l["centerline"][0][1]]], "outgoing": []} for l in m["lanes"][:2]]
    return scene(
        "dead_end",
        "the road ends just short of where the agent's front corners are at 4.0 s; the agent drives on at 10 m/s, the human brakes",
        m,
        [],
        {},
        poses(lambda t: (10.0 * t, 0.0, 0.0)),
        poses(lambda t: (10.0 * t - 1.0 * t * t, 0.0, 0.0)),
    )


def stopped_ahead(name: str, beyond: float, description: str) -> Dict[str, Any]:
    """A stopped car whose rear is `beyond` past where the agent's (10 m/s) front bumper is at 4.0 s; the human brakes."""
    front = 4.049
    return scene(
        name,
        description,
        straight_road(),
        [agent("stopped", "vehicle", (4.6, 1.9, 1.6), lambda t: (40.0 + front + beyond + 2.3, -1.75, 0.0, 0.0, 0.0))],
        {},
        poses(lambda t: (10.0 * t, 0.0, 0.0)),
        poses(lambda t: (10.0 * t - 1.0 * t * t, 0.0, 0.0)),
    )


def last_touch() -> Dict[str, Any]:
    # The car's rear is 0.05 m inside the agent's front bumper at 4.0 s only: an at-fault collision
    # at the last frame (and TTC from earlier).
    return stopped_ahead("last_touch", -0.05, "a stopped car the agent (10 m/s) reaches at the last frame, 4.0 s; the human brakes")


def ttc_horizon() -> Dict[str, Any]:
    # The car 0.95 m beyond the agent's bumper at 4.0 s: never hit, but the bumper projected 0.9 s
    # ahead reaches it from 3.2 s. v2's TTC stops at 3.1 s (40 - 9 steps), v1's runs every step with
    # frames to 4.9 s.
    return stopped_ahead(
        "ttc_horizon",
        0.95,
        "a stopped car 0.95 m beyond the agent's front bumper at 4.0 s (10 m/s): TTC projections reach it only after 3.1 s",
    )


def westbound_minus_pi() -> Dict[str, Any]:
    # `westbound_weave` turned by -pi: the ego heading is -pi (atan2 of a tiny negative sine), the
    # map's lane headings +-pi by the sign of rounding.
    doc = westbound_weave()
    rotated(doc, -2.0 * math.pi)
    doc["name"] = "westbound_minus_pi"
    doc["description"] = "westbound_weave with the ego heading written as -pi"
    return doc


def off_map_start() -> Dict[str, Any]:
    # The ego starts before the road begins, straddling the line between its two lanes: off the
    # drivable area at t = 0 (for the agent and the human alike, so v2's filter lifts DAC), no lane
    # under the rear axle (PDM-Closed's starting lane falls back to the route lane nearest the ego's
    # footprint, a tie of the two lanes at 0.5 m that the first listed wins), and the route repair's
    # search starts from no roadblock of the ego's. The agent drives on along the line; the human
    # moves into the right lane.
    x0 = -60.0 - 4.049 - 0.5
    doc = scene(
        "off_map_start",
        "the ego starts 0.5 m before the road begins, between its two lanes; the agent drives on along the lane line, the human into the right lane",
        straight_road(),
        [agent("ahead", "vehicle", (4.6, 1.9, 1.6), lambda t: (x0 + 45.0 + 9.0 * t, -1.75, 0.0, 9.0, 0.0))],
        {"x": x0, "y": 0.0},
        poses(lambda t: (10.0 * t, 0.0, 0.0)),
        poses(lambda t: (10.0 * t, -1.75 * min(t, 2.0) / 2.0, -0.0875 if t < 2.0 else 0.0)),
    )
    doc["ego_history"] = [{**h, "x": h["x"] + x0} for h in history([10.0, 10.0, 10.0], y=0.0)]
    return doc


def fork_tie() -> Dict[str, Any]:
    # One lane forks into two mirror-image connectors (left and right, listed in that order) of
    # exactly equal length: NAVSIM's Dijkstra takes the smaller queue index of equal costs (Python's
    # `min` over (cost, index) pairs), so the first listed, the left one.
    def s_curve(x: float, side: float) -> float:
        u = x / 30.0
        return side * 3.5 * (3 * u * u - 2 * u * u * u)

    def connector(side: float) -> Tuple[List[List[float]], List[List[float]]]:
        centre = [[float(x), s_curve(float(x), side)] for x in range(31)]
        left = [[x, y + 1.75] for x, y in centre]
        right = [[x, y - 1.75] for x, y in centre]
        return centre, right + list(reversed(left)) + [right[0]]

    up, up_poly = connector(1.0)
    down, down_poly = connector(-1.0)
    m = {
        "name": "fork-tie",
        "roadblocks": [
            {"id": "rb_a", "kind": "roadblock", "polygon": rect(-80, -1.75, 0, 1.75), "incoming": [], "outgoing": ["rbc_fork"]},
            {"id": "rbc_fork", "kind": "roadblock_connector", "polygon": rect(0, -5.25, 30, 5.25), "incoming": ["rb_a"], "outgoing": ["rb_b"]},
            {"id": "rb_b", "kind": "roadblock", "polygon": rect(30, -5.25, 200, 5.25), "incoming": ["rbc_fork"], "outgoing": []},
        ],
        "lanes": [
            {"id": "a", "roadblock_id": "rb_a", "polygon": rect(-80, -1.75, 0, 1.75), "centerline": line(-80, 0, 0.0), "speed_limit_mps": 15.0, "incoming": [], "outgoing": ["k_up", "k_down"]},
            {"id": "k_up", "roadblock_id": "rbc_fork", "polygon": up_poly, "centerline": up, "speed_limit_mps": 15.0, "incoming": ["a"], "outgoing": ["b_up"]},
            {"id": "k_down", "roadblock_id": "rbc_fork", "polygon": down_poly, "centerline": down, "speed_limit_mps": 15.0, "incoming": ["a"], "outgoing": ["b_down"]},
            {"id": "b_up", "roadblock_id": "rb_b", "polygon": rect(30, 1.75, 200, 5.25), "centerline": line(30, 200, 3.5), "speed_limit_mps": 15.0, "incoming": ["k_up"], "outgoing": []},
            {"id": "b_down", "roadblock_id": "rb_b", "polygon": rect(30, -5.25, 200, -1.75), "centerline": line(30, 200, -3.5), "speed_limit_mps": 15.0, "incoming": ["k_down"], "outgoing": []},
        ],
        "intersections": [{"id": "fork_area", "polygon": rect(0, -5.25, 30, 5.25)}],
        "carparks": [],
        "drivable_areas": [],
    }
    weave = lambda t: (10.0 * t, s_curve(min(max(10.0 * t - 12.0, 0.0), 30.0), 1.0), 0.0)  # noqa: E731
    doc = scene(
        "fork_tie",
        "one lane forks into mirror-image left and right connectors of equal length (left listed first); the agent takes the left one at 10 m/s",
        m,
        [],
        {"x": -12.0, "y": 0.0},
        poses(weave),
        poses(weave),
    )
    doc["ego_history"] = [{**h, "x": h["x"] - 12.0} for h in history([10.0, 10.0, 10.0], y=0.0)]
    return doc


def turn_across_pi() -> Dict[str, Any]:
    # `red_light_turn` without its lights, turned by 3pi/4: the left turn sweeps the heading from
    # 3pi/4 through pi to -3pi/4, inside PDM-Closed's centreline (unwrapped headings), its tracker,
    # the agent's poses and the comfort metrics.
    doc = red_light_turn()
    doc["traffic_lights"] = []
    doc["name"] = "turn_across_pi"
    doc["description"] = "a left turn whose heading runs from 3pi/4 through pi to -3pi/4; no lights; the agent turns at 7 m/s"
    return rotated(doc, 3 * math.pi / 4)


def red_at_last_frame() -> Dict[str, Any]:
    # `red_light_turn` with the connector green from t = 0 and red only from 4.0 s, while the agent
    # is in the turn: v2 reads the lights per 2 Hz frame, the last one included (TLC 0); PDM-Closed
    # plans with the green of t = 0. Synthetic, so the human (also in the turn) cannot lift TLC.
    doc = red_light_turn()
    doc["scene_type"] = "synthetic"
    doc["traffic_lights"] = [{"t": 0.0, "red": [], "green": ["turn"]}, {"t": 4.0, "red": ["turn"], "green": []}]
    doc["name"] = "red_at_last_frame"
    doc["description"] = "red_light_turn with the connector green until it turns red at 4.0 s, the agent inside it"
    return doc


def lead_tie_stacked() -> Dict[str, Any]:
    # Two cars in the ego's lane ahead, one inside the other (4.5 m long, 1.5 m and 0.5 m wide, 5 and
    # 10 m/s), whose boxes coincide in x at 0.2 s, PDM-Closed's first leading-agent update: equal
    # distances and equal envelope centres. With 18 cones beside the road the occupancy map holds
    # 20 objects, so GEOS's STR tree orders the equal centres by libstdc++'s introsort (not stable):
    # the wide, slower car comes first although the object manager lists the narrow one first.
    cones = [agent(f"cone_{j:02d}", "traffic_cone", (0.5, 0.5, 0.8), lambda t, j=j: (10.0 + ((j * 5) % 23) * 3.0, 8.0 + (j % 4) * 2.0, 0.0, 0.0, 0.0)) for j in range(18)]
    return slowing_to_five(
        "lead_tie_stacked",
        "two cars ahead, one inside the other, reach the same distance and envelope centre at PDM-Closed's first leading-agent update; 18 cones beside the road; the agent slows to 5 m/s",
        [
            agent("wide", "vehicle", (4.5, 1.5, 1.6), lambda t: (34.25 + 5.0 * t, -1.75, 0.0, 5.0, 0.0)),
            agent("narrow", "vehicle", (4.5, 0.5, 1.6), lambda t: (33.25 + 10.0 * t, -1.75, 0.0, 10.0, 0.0)),
            *cones,
        ],
    )


def main() -> None:
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    for doc in (cut_in(), off_road_human(), red_light_turn(), carpark_exit(), kerb_edge(), kerb_hair(), barrier_hair(), barrier_pico(), overlap_at_start(), fork(), route_loop(), lane_tie(),
        route_repair("route_gap", ["rb_a", "rb_b"], "the logged route skips the junction's roadblock connector; the agent drives through it at 10 m/s"),
        route_repair("route_ahead", ["rb_b"], "the logged route starts beyond the junction, ahead of the ego; the agent drives through it at 10 m/s"),
        route_repair(
            "route_in_junction",
            ["rb_a", "rb_b"],
            "the ego starts inside the junction, whose roadblock connector the logged route leaves out; the agent drives on at 10 m/s",
            x0=48.0,
        ),
        westbound_weave(),
        pop_in(),
        standstill(),
        lead_tie(),
        crowd_tie(),
        empty_road(),
        dead_end(),
        last_touch(),
        ttc_horizon(),
        westbound_minus_pi(),
        off_map_start(),
        fork_tie(),
        turn_across_pi(),
        red_at_last_frame(),
        lead_tie_stacked(),
    ):
        (out / f"{doc['name']}.json").write_text(json.dumps(doc) + "\n")
        print(out / f"{doc['name']}.json")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Scores gymwire NAVSIM scenes with NAVSIM's own code and writes reference vectors.

For each scene JSON (gymwire's scene format, docs/navsim-scenes.md) this builds nuPlan map objects
and a scenario from the scene, runs NAVSIM's metric caching (PDM-Closed, the observation, the
drivable-area map), simulates the scene's `agent_trajectory` with NAVSIM's LQR tracker and bicycle
model, scores it with NAVSIM's PDMScorer (v1: navsim v1.1; v2: navsim main with the human penalty
filter and log-replay traffic) and writes `<scene>.expected-v<N>.json` next to it, in the format
test/envs/navsim/reference.test.ts reads.

NAVSIM's scoring code must be importable: run once per version with PYTHONPATH holding that
version's navsim checkout and nuplan-devkit v1.2, e.g.

    PYTHONPATH=navsim-v1.1:nuplan-devkit python scripts/navsim/reference_vectors.py --version 1 test/fixtures/navsim-reference/cut_in.json
    PYTHONPATH=navsim-main:nuplan-devkit python scripts/navsim/reference_vectors.py --version 2 test/fixtures/navsim-reference/cut_in.json

Python packages: numpy 1.23, scipy, shapely 2, pandas, geopandas, pyogrio, opencv-python-headless,
SQLAlchemy 1.4, pyquaternion and the other imports of nuplan-devkit's scoring path. nuplan-devkit
imports torch from modules the scorer never calls; without torch installed, an empty stand-in
module is registered so that those imports succeed (it is never called while scoring).
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import pathlib
import subprocess
import sys
import types
from typing import Any, Dict, List, Optional


def _stand_in_for_missing_torch() -> None:
    if importlib.util.find_spec("torch") is not None:
        return

    class _Empty(types.ModuleType):
        __path__: List[str] = []

        def __getattr__(self, name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            return type(name, (), {})

    class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
        def find_spec(self, name, path, target=None):  # type: ignore[override]
            if name == "torch" or name.startswith("torch."):
                return importlib.machinery.ModuleSpec(name, self, is_package=True)
            return None

        def create_module(self, spec):  # type: ignore[override]
            return _Empty(spec.name)

        def exec_module(self, module):  # type: ignore[override]
            pass

    sys.meta_path.append(_Finder())


_stand_in_for_missing_torch()

import numpy as np  # noqa: E402
import shapely  # noqa: E402
from shapely.geometry import LineString, Point, Polygon  # noqa: E402

from nuplan.common.actor_state.agent import Agent  # noqa: E402
from nuplan.common.actor_state.ego_state import EgoState  # noqa: E402
from nuplan.common.actor_state.oriented_box import OrientedBox  # noqa: E402
from nuplan.common.actor_state.scene_object import SceneObjectMetadata  # noqa: E402
from nuplan.common.actor_state.state_representation import StateSE2, StateVector2D, TimePoint  # noqa: E402
from nuplan.common.actor_state.static_object import StaticObject  # noqa: E402
from nuplan.common.actor_state.tracked_objects import TrackedObjects  # noqa: E402
from nuplan.common.actor_state.tracked_objects_types import TrackedObjectType  # noqa: E402
from nuplan.common.actor_state.vehicle_parameters import get_pacifica_parameters  # noqa: E402
from nuplan.common.maps.maps_datatypes import SemanticMapLayer, TrafficLightStatusData, TrafficLightStatusType  # noqa: E402
from nuplan.common.maps.nuplan_map.utils import extract_discrete_polyline  # noqa: E402
from nuplan.planning.simulation.observation.observation_type import DetectionsTracks  # noqa: E402
from nuplan.planning.simulation.trajectory.trajectory_sampling import TrajectorySampling  # noqa: E402

import navsim  # noqa: E402
from navsim.common.dataclasses import Trajectory  # noqa: E402
from navsim.evaluate import pdm_score as pdm_score_module  # noqa: E402
from navsim.planning.metric_caching.metric_cache_processor import MetricCacheProcessor  # noqa: E402
from navsim.planning.simulation.planner.pdm_planner.scoring.pdm_scorer import PDMScorer, PDMScorerConfig  # noqa: E402
from navsim.planning.simulation.planner.pdm_planner.simulation.pdm_simulator import PDMSimulator  # noqa: E402

TYPES = {
    "vehicle": TrackedObjectType.VEHICLE,
    "pedestrian": TrackedObjectType.PEDESTRIAN,
    "bicycle": TrackedObjectType.BICYCLE,
    "traffic_cone": TrackedObjectType.TRAFFIC_CONE,
    "barrier": TrackedObjectType.BARRIER,
    "czone_sign": TrackedObjectType.CZONE_SIGN,
    "generic_object": TrackedObjectType.GENERIC_OBJECT,
}
MOVING = {"vehicle", "pedestrian", "bicycle"}
COLUMNS = ["x", "y", "heading", "velocity_x", "velocity_y", "acceleration_x", "acceleration_y", "steering_angle", "steering_rate", "angular_velocity", "angular_acceleration"]


# ---------------------------------------------------------------- map objects (duck-typed nuPlan API)


class _Baseline:
    def __init__(self, points: List[List[float]]):
        self.linestring = LineString(points)
        self.discrete_path = extract_discrete_polyline(self.linestring)
        self.length = self.linestring.length


class _Area:
    def __init__(self, data: Dict[str, Any]):
        self.id = data["id"]
        self.polygon = Polygon(data["polygon"])


class _Lane(_Area):
    def __init__(self, data: Dict[str, Any], connector: bool):
        super().__init__(data)
        self.baseline_path = _Baseline(data["centerline"])
        self.speed_limit_mps = data["speed_limit_mps"]
        self.is_connector = connector
        self._roadblock_id = data["roadblock_id"]
        self._incoming: List[str] = data["incoming"]
        self._outgoing: List[str] = data["outgoing"]
        self.map: Optional[_Map] = None

    def get_roadblock_id(self) -> str:
        return self._roadblock_id

    def contains_point(self, point: Any) -> bool:
        return bool(self.polygon.contains(Point(point.x, point.y)))

    @property
    def incoming_edges(self) -> List["_Lane"]:
        return [self.map.lanes[i] for i in self._incoming if i in self.map.lanes]

    @property
    def outgoing_edges(self) -> List["_Lane"]:
        return [self.map.lanes[i] for i in self._outgoing if i in self.map.lanes]


class _Roadblock(_Area):
    def __init__(self, data: Dict[str, Any]):
        super().__init__(data)
        self.is_connector = data["kind"] == "roadblock_connector"
        self._incoming: List[str] = data["incoming"]
        self._outgoing: List[str] = data["outgoing"]
        self.interior_edges: List[_Lane] = []
        self.map: Optional[_Map] = None

    @property
    def incoming_edges(self) -> List["_Roadblock"]:
        return [self.map.roadblocks[i] for i in self._incoming if i in self.map.roadblocks]

    @property
    def outgoing_edges(self) -> List["_Roadblock"]:
        return [self.map.roadblocks[i] for i in self._outgoing if i in self.map.roadblocks]


class NuPlanRoadBlockConnector(_Roadblock):
    """A roadblock connector under nuPlan's class name: NAVSIM's route repair cuts route loops only at
    objects of that name (`remove_route_loops`), which every connector of a real nuPlan map is."""


class _Map:
    """The map queries NAVSIM's planner, route correction, metric caching and scorer make."""

    def __init__(self, data: Dict[str, Any]):
        self.map_name = data["name"]
        self.roadblocks = {r["id"]: (NuPlanRoadBlockConnector if r["kind"] == "roadblock_connector" else _Roadblock)(r) for r in data["roadblocks"]}
        self.lanes: Dict[str, _Lane] = {}
        for l in data["lanes"]:
            block = self.roadblocks[l["roadblock_id"]]
            lane = _Lane(l, block.is_connector)
            lane.map = self
            block.interior_edges.append(lane)
            self.lanes[lane.id] = lane
        for block in self.roadblocks.values():
            block.map = self
        self.intersections = [_Area(a) for a in data.get("intersections", [])]
        self.carparks = [_Area(a) for a in data.get("carparks", [])]
        self.drivable_areas = [_Area(a) for a in data.get("drivable_areas", [])]

    def _layer(self, layer: SemanticMapLayer) -> List[Any]:
        if layer == SemanticMapLayer.ROADBLOCK:
            return [b for b in self.roadblocks.values() if not b.is_connector]
        if layer == SemanticMapLayer.ROADBLOCK_CONNECTOR:
            return [b for b in self.roadblocks.values() if b.is_connector]
        if layer == SemanticMapLayer.LANE:
            return [l for l in self.lanes.values() if not l.is_connector]
        if layer == SemanticMapLayer.LANE_CONNECTOR:
            return [l for l in self.lanes.values() if l.is_connector]
        if layer == SemanticMapLayer.INTERSECTION:
            return self.intersections
        if layer == SemanticMapLayer.CARPARK_AREA:
            return self.carparks
        if layer == SemanticMapLayer.DRIVABLE_AREA:
            return self.drivable_areas
        return []

    def get_map_object(self, object_id: str, layer: SemanticMapLayer) -> Any:
        return next((o for o in self._layer(layer) if o.id == object_id), None)

    def _get_roadblock(self, object_id: str) -> Any:
        return self.get_map_object(object_id, SemanticMapLayer.ROADBLOCK)

    def _get_roadblock_connector(self, object_id: str) -> Any:
        return self.get_map_object(object_id, SemanticMapLayer.ROADBLOCK_CONNECTOR)

    def get_proximal_map_objects(self, point: Any, radius: float, layers: List[SemanticMapLayer]) -> Dict[SemanticMapLayer, List[Any]]:
        # As nuPlan's GPKG map: objects whose geometry intersects the square patch around the point.
        patch = shapely.geometry.box(point.x - radius, point.y - radius, point.x + radius, point.y + radius)
        return {layer: [o for o in self._layer(layer) if o.polygon.intersects(patch)] for layer in layers}

    def get_distance_to_nearest_map_object(self, point: Any, layer: SemanticMapLayer):
        objects = self._layer(layer)
        if not objects:
            return None, None
        best = min(objects, key=lambda o: o.polygon.distance(Point(point.x, point.y)))
        return best.id, best.polygon.distance(Point(point.x, point.y))


# ---------------------------------------------------------------- the scenario


def _ego_state(e: Dict[str, Any], time_us: int) -> EgoState:
    return EgoState.build_from_rear_axle(
        StateSE2(e["x"], e["y"], e["heading"]),
        rear_axle_velocity_2d=StateVector2D(e.get("vx", 0.0), e.get("vy", 0.0)),
        rear_axle_acceleration_2d=StateVector2D(e.get("ax", 0.0), e.get("ay", 0.0)),
        tire_steering_angle=e.get("steering_angle", 0.0),
        time_point=TimePoint(time_us),
        vehicle_parameters=get_pacifica_parameters(),
        angular_vel=e.get("yaw_rate", 0.0),
    )


class _Scenario:
    """The scenario interface NAVSIM's metric caching reads, at NAVSIM's 2 Hz (`database_interval` 0.5 s)."""

    database_interval = 0.5
    log_name = "gymwire"
    scenario_type = "unknown"
    map_root = ""
    map_version = ""

    def __init__(self, scene: Dict[str, Any]):
        self.scene = scene
        # NAVSIM v2 tells synthetic scenes by their token's length (17 characters; original scenes'
        # tokens have 16), so the token is sized from `scene_type`, whatever the scene's name.
        digest = hashlib.sha1(scene["name"].encode()).hexdigest()
        self.token = digest[:17] if scene.get("scene_type", "original") == "synthetic" else digest[:16]
        self.t0 = int(scene["timestamp_us"])
        self.map_api = _Map(scene["map"])
        self.start_time = TimePoint(self.t0)
        self.initial_ego_state = _ego_state(scene["ego"], self.t0)
        self.initial_tracked_objects = self.get_tracked_objects_at_iteration(0)

    def get_route_roadblock_ids(self) -> List[str]:
        return list(self.scene["route_roadblock_ids"])

    def get_mission_goal(self):
        return None

    def _time_us(self, iteration: int) -> int:
        return self.t0 + int(round(iteration * self.database_interval * 1e6))

    def get_tracked_objects_at_iteration(self, iteration: int) -> DetectionsTracks:
        t = iteration * self.database_interval
        objects = []
        for a in self.scene["agents"]:
            state = next((s for s in a["states"] if abs(s[0] - t) < 1e-6), None)
            if state is None:
                continue
            box = OrientedBox(StateSE2(state[1], state[2], state[3]), a["length"], a["width"], a["height"])
            meta = SceneObjectMetadata(timestamp_us=self._time_us(iteration), token=f"{a['token']}_{iteration}", track_id=None, track_token=a["token"])
            if a["type"] in MOVING:
                objects.append(Agent(tracked_object_type=TYPES[a["type"]], oriented_box=box, velocity=StateVector2D(state[4], state[5]), metadata=meta))
            else:
                objects.append(StaticObject(tracked_object_type=TYPES[a["type"]], oriented_box=box, metadata=meta))
        return DetectionsTracks(TrackedObjects(objects))

    def get_traffic_light_status_at_iteration(self, iteration: int) -> List[TrafficLightStatusData]:
        t = iteration * self.database_interval
        entry = None
        for e in self.scene.get("traffic_lights", []):
            if e["t"] <= t + 1e-9:
                entry = e
        if entry is None:
            return []
        time_us = self._time_us(iteration)
        return [TrafficLightStatusData(TrafficLightStatusType.RED, i, time_us) for i in entry["red"]] + [
            TrafficLightStatusData(TrafficLightStatusType.GREEN, i, time_us) for i in entry["green"]
        ]

    def get_ego_state_at_iteration(self, iteration: int) -> EgoState:
        if iteration == 0:
            return self.initial_ego_state
        if iteration < 0:
            t = iteration * self.database_interval
            e = next(h for h in self.scene["ego_history"] if abs(h["t"] - t) < 1e-6)
            return _ego_state(e, self._time_us(iteration))
        # Future: the logged human trajectory (poses only; NAVSIM reads only the rear-axle poses).
        human = self.scene["human_trajectory"]
        step = int(round(self.database_interval / human["interval_length"]))
        rel = human["poses"][iteration * step - 1]
        origin = self.initial_ego_state.rear_axle
        c, s = np.cos(origin.heading), np.sin(origin.heading)
        pose = {"x": origin.x + c * rel[0] - s * rel[1], "y": origin.y + s * rel[0] + c * rel[1], "heading": origin.heading + rel[2]}
        return _ego_state(pose, self._time_us(iteration))

    def get_ego_past_trajectory(self, iteration: int, time_horizon: float, num_samples: Optional[int] = None):
        history = sorted(self.scene.get("ego_history", []), key=lambda h: h["t"])
        for h in history:
            yield self.get_ego_state_at_iteration(int(round(h["t"] / self.database_interval)))
        yield self.initial_ego_state

    def get_ego_future_trajectory(self, iteration: int, time_horizon: float, num_samples: Optional[int] = None):
        count = int(round(time_horizon / self.database_interval))
        for i in range(1, count + 1):
            yield self.get_ego_state_at_iteration(i)

    def get_past_tracked_objects(self, iteration: int, time_horizon: float, num_samples: Optional[int] = None, future_trajectory_sampling=None):
        for i in range(-int(round(time_horizon / self.database_interval)), 1):
            yield self.get_tracked_objects_at_iteration(i)


# ---------------------------------------------------------------- scoring


def _states(a: np.ndarray) -> Dict[str, Any]:
    return {"columns": COLUMNS, "dt_s": 0.1, "values": np.asarray(a, dtype=float).tolist()}


def _trajectory(t: Dict[str, Any]) -> Trajectory:
    poses = np.array(t["poses"], dtype=np.float64)
    return Trajectory(poses, TrajectorySampling(num_poses=len(poses), interval_length=t["interval_length"]))


def _time(x: float) -> Optional[float]:
    return None if not np.isfinite(x) else round(float(x), 6)


def _raw(scorer: PDMScorer, proposal: int) -> Dict[str, Any]:
    from navsim.planning.simulation.planner.pdm_planner.utils.pdm_enums import EgoAreaIndex

    areas = scorer._ego_areas[proposal]
    steps = lambda k: [int(i) for i in np.nonzero(areas[:, k])[0]]  # noqa: E731
    return {
        "progress_m": {"pdm_closed": float(scorer._progress_raw[0]), "agent": float(scorer._progress_raw[proposal])},
        "time_to_at_fault_collision_s": _time(scorer.time_to_at_fault_collision(proposal)),
        "time_to_ttc_infraction_s": _time(scorer.time_to_ttc_infraction(proposal)),
        "ego_areas": {
            "multiple_lanes_steps": steps(EgoAreaIndex.MULTIPLE_LANES),
            "non_drivable_area_steps": steps(EgoAreaIndex.NON_DRIVABLE_AREA),
            "oncoming_traffic_steps": steps(EgoAreaIndex.ONCOMING_TRAFFIC),
        },
    }


def score_v1(scenario: _Scenario) -> Dict[str, Any]:
    from navsim.planning.metric_caching.metric_cache import MetricCache
    from navsim.planning.simulation.planner.pdm_planner.utils.pdm_enums import MultiMetricIndex, WeightedMetricIndex

    processor = MetricCacheProcessor(cache_path="/nonexistent", force_feature_computation=True)
    planner_input, planner_initialization = processor._get_planner_inputs(scenario)
    processor._pdm_closed.initialize(planner_initialization)
    pdm_closed_trajectory = processor._pdm_closed.compute_planner_trajectory(planner_input)
    observation = processor._interpolate_gt_observation(scenario)
    cache = MetricCache(
        pathlib.Path("/nonexistent"), pdm_closed_trajectory, scenario.initial_ego_state, observation,
        processor._pdm_closed._centerline, list(processor._pdm_closed._route_lane_dict.keys()), processor._pdm_closed._drivable_area_map,
    )
    sampling = TrajectorySampling(num_poses=40, interval_length=0.1)
    simulator, scorer = PDMSimulator(sampling), PDMScorer(sampling)
    result = pdm_score_module.pdm_score(cache, _trajectory(scenario.scene["agent_trajectory"]), sampling, simulator, scorer)

    # The arrays pdm_score builds internally, rebuilt with the same functions for the output.
    ego = cache.ego_state
    pred = pdm_score_module.transform_trajectory(_trajectory(scenario.scene["agent_trajectory"]), ego)
    pdm_states = pdm_score_module.get_trajectory_as_array(cache.trajectory, sampling, ego.time_point)
    pred_states = pdm_score_module.get_trajectory_as_array(pred, sampling, ego.time_point)
    simulated = simulator.simulate_proposals(np.stack([pdm_states, pred_states]), ego)
    scorer.score_proposals(simulated, cache.observation, cache.centerline, cache.route_lane_ids, cache.drivable_area_map)

    def metrics(i: int) -> Dict[str, float]:
        return {
            "nc": float(scorer._multi_metrics[MultiMetricIndex.NO_COLLISION, i]),
            "dac": float(scorer._multi_metrics[MultiMetricIndex.DRIVABLE_AREA, i]),
            "ddc": float(scorer._weighted_metrics[WeightedMetricIndex.DRIVING_DIRECTION, i]),
            "ttc": float(scorer._weighted_metrics[WeightedMetricIndex.TTC, i]),
            "ep": float(scorer._weighted_metrics[WeightedMetricIndex.PROGRESS, i]),
            "comfort": float(scorer._weighted_metrics[WeightedMetricIndex.COMFORTABLE, i]),
        }

    agent = {**metrics(1), "pdms": float(result.score)}
    return {
        "navsim_version": "v1",
        "metrics": agent,
        "pdm_closed": {**metrics(0), "simulated_states": _states(simulated[0])},
        "raw": _raw(scorer, 1),
        "agent_reference_states": _states(pred_states),
        "simulated_states": _states(simulated[1]),
        "context": {"route_lane_ids": cache.route_lane_ids, "drivable_area_map_tokens": list(cache.drivable_area_map.tokens), "observation_frames": len(observation._occupancy_maps)},
    }


def score_v2(scenario: _Scenario) -> Dict[str, Any]:
    from navsim.traffic_agents_policies.log_replay_traffic_agents import LogReplayTrafficAgents

    sampling = TrajectorySampling(num_poses=40, interval_length=0.1)
    cache = MetricCacheProcessor(cache_path=None, force_feature_computation=True, proposal_sampling=sampling).compute_metric_cache(scenario)
    simulator = PDMSimulator(sampling)
    scorer = PDMScorer(sampling, config=PDMScorerConfig(human_penalty_filter=True))
    traffic = LogReplayTrafficAgents(sampling)
    agent_trajectory = _trajectory(scenario.scene["agent_trajectory"])
    result, agent_states = pdm_score_module.pdm_score(cache, agent_trajectory, sampling, simulator, scorer, traffic)
    row = result.iloc[0]

    # Unfiltered agent, PDM-Closed and the logged human, with the functions pdm_score uses.
    ego = cache.ego_state
    pred = pdm_score_module.transform_trajectory(agent_trajectory, ego)
    pdm_states = pdm_score_module.get_trajectory_as_array(cache.trajectory, sampling, ego.time_point)
    pred_states = pdm_score_module.get_trajectory_as_array(pred, sampling, ego.time_point)
    simulated = simulator.simulate_proposals(np.stack([pdm_states, pred_states]), ego)
    tracks = traffic.simulate_environment(simulated[1], cache)
    unfiltered = scorer.score_proposals(simulated, cache.observation, cache.centerline, cache.route_lane_ids, cache.drivable_area_map, cache.map_parameters, tracks, cache.past_human_trajectory)
    raw = _raw(scorer, 1)

    def short(r: Any) -> Dict[str, float]:
        return {
            "nc": float(r["no_at_fault_collisions"]), "dac": float(r["drivable_area_compliance"]), "ddc": float(r["driving_direction_compliance"]),
            "tlc": float(r["traffic_light_compliance"]), "ep": float(r["ego_progress"]), "ttc": float(r["time_to_collision_within_bound"]),
            "lk": float(r["lane_keeping"]), "hc": float(r["history_comfort"]), "pdms": float(r["pdm_score"]),
        }

    human = None
    if cache.human_trajectory is not None:
        human_states = pdm_score_module.get_trajectory_as_array(pdm_score_module.transform_trajectory(cache.human_trajectory, ego), sampling, ego.time_point)
        human_simulated = simulator.simulate_proposals(human_states[None, ...], ego)
        human_row = scorer.score_proposals(human_simulated, cache.observation, cache.centerline, cache.route_lane_ids, cache.drivable_area_map, cache.map_parameters, traffic.simulate_environment(human_simulated[0], cache))[0].iloc[0]
        human = {k: float(human_row[k]) for k in ["no_at_fault_collisions", "drivable_area_compliance", "driving_direction_compliance", "traffic_light_compliance", "ego_progress", "time_to_collision_within_bound", "lane_keeping", "history_comfort"]}

    filtered = short(row)
    w = {"ep": 5.0, "ttc": 5.0, "lk": 2.0, "hc": 2.0}
    mult = filtered["nc"] * filtered["dac"] * filtered["ddc"] * filtered["tlc"]
    # NAVSIM leaves the row's pdm_score as it was; its aggregation recomputes the score from the filtered sub-metrics.
    filtered["pdms"] = mult * sum(w[k] * filtered[k] for k in w) / 14.0
    return {
        "navsim_version": "v2",
        "metrics": {**filtered, "multiplicative_metrics_prod": mult, "ec": None, "epdms_with_ec_1": mult * (sum(w[k] * filtered[k] for k in w) + 2.0) / 16.0},
        "human_penalty_filter": {"enabled": True, "human_metrics": human, "agent_scores_before_filter": short(unfiltered[1].iloc[0])},
        "pdm_closed": {**short(unfiltered[0].iloc[0]), "simulated_states": _states(simulated[0])},
        "raw": raw,
        "agent_reference_states": _states(pred_states),
        "simulated_states": _states(agent_states),
        "context": {"route_lane_ids": cache.route_lane_ids, "drivable_area_map_tokens": list(cache.drivable_area_map.tokens)},
    }


def _commit(module: Any) -> Optional[str]:
    root = pathlib.Path(module.__file__).resolve().parent.parent
    try:
        return subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--version", type=int, choices=[1, 2], required=True, help="1: navsim v1.1 on PYTHONPATH; 2: navsim main")
    parser.add_argument("--commit", help="the navsim commit on PYTHONPATH, recorded in the output (default: git rev-parse)")
    parser.add_argument("scenes", nargs="+", type=pathlib.Path)
    args = parser.parse_args()
    for path in args.scenes:
        scene = json.loads(path.read_text())
        scenario = _Scenario(scene)
        out = score_v1(scenario) if args.version == 1 else score_v2(scenario)
        doc = {
            "scene": scene["name"],
            "scene_type": scene.get("scene_type", "original"),
            "navsim_commit": args.commit or _commit(navsim),
            "shapely": shapely.__version__,
            "numpy": np.__version__,
            **out,
        }
        target = path.with_name(f"{path.stem}.expected-v{args.version}.json")
        target.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"{target}: {json.dumps(doc['metrics'])}")


if __name__ == "__main__":
    main()

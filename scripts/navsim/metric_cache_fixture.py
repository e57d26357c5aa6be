#!/usr/bin/env python3
"""Writes a NAVSIM v2 metric cache for scene ``tok003`` of scripts/navsim/openscene_fixture.py, the
way NAVSIM writes one, for testing gymwire.navsim_convert's metric-cache reader without the devkit.

NAVSIM's ``MetricCache.dump`` (navsim/planning/metric_caching/metric_cache.py @0a380a9) writes
``lzma.compress(pickle.dumps(cache, protocol=pickle.HIGHEST_PROTOCOL), preset=0)`` to
``<cache>/<log_name>/<scenario_type>/<token>/metric_cache.pkl`` (``MetricCacheProcessor._build_file_path``;
NavSimScenario's scenario_type is ``"unknown"``).
Neither ``navsim`` nor ``nuplan-devkit`` is on PyPI, so this script defines classes with the same
module paths, names, attributes and pickling as theirs (nuplan-devkit @e924167: plain classes
pickle their instance dict; TimePoint, StateSE2 and StateVector2D their slots; VehicleParameters
and InterpolatedTrajectory their constructor arguments through ``__reduce__``; enums their value),
registers them under those module names in this process only, fills them as
``MetricCacheProcessor.compute_metric_cache`` does for the fixture's world (ego at 10 m/s, lead car
30 m ahead at the same speed, a cone, connector 121 red until t = 3.5 s), and pickles them. PDM's
own planner is not run: ``trajectory`` holds the logged future, and the PDM path and drivable map
hold the route's centreline and lane polygons; the converter reads neither.

    python scripts/navsim/metric_cache_fixture.py OUT_DIR   # writes OUT_DIR/<log>/unknown/tok003/metric_cache.pkl
"""

from __future__ import annotations

import dataclasses
import enum
import lzma
import math
import pickle
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
from shapely.geometry import LineString, Polygon
from shapely.strtree import STRtree

LOG_NAME = "2021.05.12.22.00.38_veh-35_01008_01518"
TOKEN = "tok003"
X0, Y0, LANE_W = 664_000.0, 3_997_000.0, 3.5
T0_US = 1_600_000_000_000_000 + 3 * 500_000
ROUTE_LANES = ["101", "102", "121", "122", "111", "112"]  # the lanes of roadblocks 10, 30 and 20 (openscene_fixture.py)


def _module(name: str) -> types.ModuleType:
    """An empty module (and its parent packages) under ``name`` in this process, for pickle to find classes in."""
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        sys.modules.setdefault(".".join(parts[:i]), types.ModuleType(".".join(parts[:i])))
    return sys.modules[name]


def _register(module: str, cls: type) -> type:
    cls.__module__ = module
    setattr(_module(module), cls.__name__, cls)
    return cls


# nuplan/common/actor_state/state_representation.py
class TimePoint:
    __slots__ = "time_us"

    def __init__(self, time_us: int) -> None:
        self.time_us = time_us


class Point2D:
    __slots__ = "x", "y"


class StateSE2(Point2D):
    __slots__ = "heading"

    def __init__(self, x: float, y: float, heading: float) -> None:
        self.x, self.y, self.heading = x, y, heading


class StateVector2D:
    __slots__ = "_x", "_y", "_array"

    def __init__(self, x: float, y: float) -> None:
        self._x, self._y = x, y
        self._array = np.array([x, y], dtype=np.float64)


# nuplan/common/actor_state/vehicle_parameters.py
class VehicleParameters:
    def __init__(self, width: float, front_length: float, rear_length: float, cog: float, wheel_base: float, name: str, kind: str, height: float) -> None:
        self.width, self.front_length, self.rear_length, self.wheel_base, self.height = width, front_length, rear_length, wheel_base, height
        self.length = front_length + rear_length
        self.cog_position_from_rear_axle, self.vehicle_name, self.vehicle_type = cog, name, kind
        self.half_width, self.half_length, self.half_height = width / 2, self.length / 2, height / 2

    def __reduce__(self) -> tuple[Any, ...]:
        return self.__class__, (
            self.width,
            self.front_length,
            self.rear_length,
            self.cog_position_from_rear_axle,
            self.wheel_base,
            self.vehicle_name,
            self.vehicle_type,
            self.height,
        )


# nuplan/common/actor_state/oriented_box.py, car_footprint.py, dynamic_car_state.py, ego_state.py
class OrientedBox:
    def __init__(self, center: StateSE2, length: float, width: float, height: float) -> None:
        self._center, self._length, self._width, self._height = center, length, width, height


class CarFootprint(OrientedBox):
    def __init__(self, center: StateSE2, vehicle_parameters: VehicleParameters) -> None:
        super().__init__(center, vehicle_parameters.length, vehicle_parameters.width, vehicle_parameters.height)
        self._vehicle_parameters = vehicle_parameters


class DynamicCarState:
    def __init__(self, rear_axle_to_center_dist: float, velocity: StateVector2D, acceleration: StateVector2D) -> None:
        self._rear_axle_to_center_dist = rear_axle_to_center_dist
        self._angular_velocity = 0.0
        self._angular_acceleration = 0.0
        self._rear_axle_velocity_2d = velocity
        self._rear_axle_acceleration_2d = acceleration
        self._tire_steering_rate = 0.0


class EgoState:
    def __init__(self, car_footprint: CarFootprint, dynamic_car_state: DynamicCarState, time_point: TimePoint) -> None:
        self._car_footprint = car_footprint
        self._tire_steering_angle = 0.0
        self._is_in_auto_mode = True
        self._time_point = time_point
        self._dynamic_car_state = dynamic_car_state


# nuplan/common/actor_state/tracked_objects_types.py (members pickle as TrackedObjectType(value))
class TrackedObjectType(enum.Enum):
    VEHICLE = 0
    PEDESTRIAN = 1
    BICYCLE = 2
    TRAFFIC_CONE = 3
    BARRIER = 4
    CZONE_SIGN = 5
    GENERIC_OBJECT = 6
    EGO = 7


# nuplan/common/actor_state/scene_object.py, agent.py, static_object.py, tracked_objects.py
@dataclasses.dataclass(frozen=True)
class SceneObjectMetadata:
    timestamp_us: int
    token: str
    track_id: int | None
    track_token: str | None
    category_name: str | None = None


class Agent:
    def __init__(self, kind: TrackedObjectType, box: OrientedBox, velocity: StateVector2D, metadata: SceneObjectMetadata) -> None:
        self._initial_time_stamp = None
        self._predictions = None
        self._past_trajectory = None
        self._metadata = metadata
        self.instance_token = None
        self._tracked_object_type = kind
        self._box = box
        self._velocity = velocity
        self._angular_velocity = None


class StaticObject:
    def __init__(self, kind: TrackedObjectType, box: OrientedBox, metadata: SceneObjectMetadata) -> None:
        self._metadata = metadata
        self.instance_token = None
        self._tracked_object_type = kind
        self._box = box
        self.predictions = None
        self.past_trajectory = None
        self.velocity = StateVector2D(0.0, 0.0)


class TrackedObjects:
    def __init__(self, tracked_objects: list[Any]) -> None:
        self.tracked_objects = sorted(tracked_objects, key=lambda o: o._tracked_object_type.value)


# nuplan/planning/simulation/observation/observation_type.py, trajectory/*.py
@dataclasses.dataclass
class DetectionsTracks:
    tracked_objects: TrackedObjects


@dataclasses.dataclass
class TrajectorySampling:
    num_poses: int | None = None
    time_horizon: float | None = None
    interval_length: float | None = None


class InterpolatedTrajectory:
    def __init__(self, trajectory: list[EgoState]) -> None:
        self._trajectory = trajectory

    def __reduce__(self) -> tuple[Any, ...]:
        return self.__class__, (self._trajectory,)


# nuplan/common/maps/maps_datatypes.py
class SemanticMapLayer(enum.IntEnum):
    ROADBLOCK = 7
    ROADBLOCK_CONNECTOR = 8
    CARPARK_AREA = 10
    INTERSECTION = 6


# navsim/common/enums.py, navsim/common/dataclasses.py
class SceneFrameType(enum.IntEnum):
    ORIGINAL = 0
    SYNTHETIC = 1


@dataclasses.dataclass
class Trajectory:
    poses: np.ndarray
    trajectory_sampling: TrajectorySampling


# navsim/planning/simulation/planner/pdm_planner/{observation/pdm_occupancy_map.py, observation/pdm_observation.py, utils/pdm_path.py}
class PDMOccupancyMap:
    def __init__(self, tokens: list[str], geometries: Any) -> None:
        self._tokens = tokens
        self._tokens_to_idx = {t: i for i, t in enumerate(tokens)}
        self._geometries = np.array(geometries, dtype=np.object_)
        self._str_tree = STRtree(self._geometries)


class PDMDrivableMap(PDMOccupancyMap):
    def __init__(self, tokens: list[str], map_types: list[SemanticMapLayer], geometries: Any) -> None:
        super().__init__(tokens, geometries)
        self._map_types = map_types


class PDMObservation:
    def __init__(self, occupancy_maps: list[PDMOccupancyMap], occupancy_maps_tl: list[tuple[list[str], np.ndarray]], unique_objects: dict[str, Any]) -> None:
        self._sample_interval = 0.1
        self._observation_samples = 40
        self._map_radius = 100
        self._observation_sample_res = 1
        self._global_to_local_idcs = list(range(41))
        self._collided_track_ids: list[str] = []
        self._red_light_token = "red_light"
        self._occupancy_maps = occupancy_maps
        self._unique_objects = unique_objects
        self._occupancy_maps_tl = occupancy_maps_tl
        self._initialized = True


class interp1d:  # noqa: N801 - scipy's name; PDMPath keeps one
    def __init__(self, x: np.ndarray, y: np.ndarray) -> None:
        self.x, self.y, self.axis, self.kind = x, y, 0, "linear"


class PDMPath:
    def __init__(self, discrete_path: list[StateSE2]) -> None:
        self._discrete_path = discrete_path
        self._states_se2_array = np.array([[p.x, p.y, p.heading] for p in discrete_path])
        self._progress = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(self._states_se2_array[:, :2], axis=0), axis=1))])
        self._linestring = LineString(self._states_se2_array[:, :2])
        self._interpolator = interp1d(self._progress, self._states_se2_array)


# navsim/planning/metric_caching/metric_cache.py
@dataclasses.dataclass
class MapParameters:
    map_root: str
    map_version: str
    map_name: str


@dataclasses.dataclass
class MetricCache:
    file_path: Path
    log_name: str
    timepoint: TimePoint
    scene_type: SceneFrameType
    trajectory: InterpolatedTrajectory
    human_trajectory: Trajectory | None
    past_human_trajectory: InterpolatedTrajectory
    ego_state: EgoState
    observation: PDMObservation
    centerline: PDMPath
    route_lane_ids: list[str]
    drivable_area_map: PDMDrivableMap
    past_detections_tracks: list[DetectionsTracks]
    current_tracked_objects: list[DetectionsTracks]
    future_tracked_objects: list[DetectionsTracks]
    map_parameters: MapParameters


MODULES = {
    "nuplan.common.actor_state.state_representation": [TimePoint, Point2D, StateSE2, StateVector2D],
    "nuplan.common.actor_state.vehicle_parameters": [VehicleParameters],
    "nuplan.common.actor_state.oriented_box": [OrientedBox],
    "nuplan.common.actor_state.car_footprint": [CarFootprint],
    "nuplan.common.actor_state.dynamic_car_state": [DynamicCarState],
    "nuplan.common.actor_state.ego_state": [EgoState],
    "nuplan.common.actor_state.tracked_objects_types": [TrackedObjectType],
    "nuplan.common.actor_state.scene_object": [SceneObjectMetadata],
    "nuplan.common.actor_state.agent": [Agent],
    "nuplan.common.actor_state.static_object": [StaticObject],
    "nuplan.common.actor_state.tracked_objects": [TrackedObjects],
    "nuplan.planning.simulation.observation.observation_type": [DetectionsTracks],
    "nuplan.planning.simulation.trajectory.trajectory_sampling": [TrajectorySampling],
    "nuplan.planning.simulation.trajectory.interpolated_trajectory": [InterpolatedTrajectory],
    "nuplan.common.maps.maps_datatypes": [SemanticMapLayer],
    "navsim.common.enums": [SceneFrameType],
    "navsim.common.dataclasses": [Trajectory],
    "navsim.planning.simulation.planner.pdm_planner.observation.pdm_occupancy_map": [PDMOccupancyMap, PDMDrivableMap],
    "navsim.planning.simulation.planner.pdm_planner.observation.pdm_observation": [PDMObservation],
    "scipy.interpolate._interpolate": [interp1d],
    "navsim.planning.simulation.planner.pdm_planner.utils.pdm_path": [PDMPath],
    "navsim.planning.metric_caching.metric_cache": [MapParameters, MetricCache],
}

# nuPlan's Pacifica (nuplan/common/actor_state/vehicle_parameters.py get_pacifica_parameters).
PACIFICA = VehicleParameters(2.297, 4.049, 1.127, 1.67, 3.089, "pacifica", "gen1", 1.777)


def ego_state(t_s: float, cache_rear_axle: bool) -> EgoState:
    """The ego at t_s from the current frame: rear axle at (X0 + 10 t, Y0 - LANE_W / 2), heading +x, 10 m/s."""
    rear = StateSE2(X0 + 10.0 * t_s, Y0 - LANE_W / 2, 0.0)
    back = PACIFICA.half_length - PACIFICA.rear_length
    footprint = CarFootprint(StateSE2(rear.x + back, rear.y, 0.0), PACIFICA)
    if cache_rear_axle:
        footprint.__dict__["rear_axle"] = rear  # what CarFootprint's cached_property leaves once read
    dynamics = DynamicCarState(back, StateVector2D(10.0, 0.0), StateVector2D(0.0, 0.0))
    return EgoState(footprint, dynamics, TimePoint(T0_US + round(t_s * 1e6)))


def detections(t_s: float) -> DetectionsTracks:
    """The lead car and the cone at t_s (linear motion, so NAVSIM's 2 Hz -> 10 Hz interpolation is exact)."""
    lead = Agent(
        TrackedObjectType.VEHICLE,
        OrientedBox(StateSE2(X0 + 30.0 + 10.0 * t_s, Y0 - LANE_W / 2, 0.0), 4.6, 2.0, 1.6),
        StateVector2D(10.0, 0.0),
        SceneObjectMetadata(T0_US, "lead3", None, "lead", "vehicle"),
    )
    cone = StaticObject(
        TrackedObjectType.TRAFFIC_CONE,
        OrientedBox(StateSE2(X0 + 150.0, Y0 - LANE_W - 0.3, 0.0), 0.5, 0.5, 0.7),
        SceneObjectMetadata(T0_US, "cone3", None, "cone", "traffic_cone"),
    )
    return DetectionsTracks(TrackedObjects([cone, lead]))


def metric_cache(file_path: Path) -> MetricCache:
    steps = [round(0.1 * k, 10) for k in range(41)]  # proposal sampling: 40 poses at 0.1 s, plus t = 0
    tracks = [detections(t) for t in steps]
    connector_121 = Polygon([(X0 - 10, Y0 - LANE_W), (X0 + 10, Y0 - LANE_W), (X0 + 10, Y0), (X0 - 10, Y0)])
    # _interpolate_traffic_light_status: each 2 Hz status 5 times; connector 121 (on the route) is red for 2 Hz frames 3..9.
    lights = [(["red_light_121"], np.array([connector_121], dtype=np.object_)) if k // 5 < 7 else ([], np.array([], dtype=np.object_)) for k in range(41)]
    occupancy = [
        PDMOccupancyMap(
            [o._metadata.track_token for o in d.tracked_objects.tracked_objects] + lights[k][0],
            [Polygon(_box_corners(o._box)) for o in d.tracked_objects.tracked_objects] + list(lights[k][1]),
        )
        for k, d in enumerate(tracks)
    ]
    unique = {o._metadata.track_token: o for o in tracks[0].tracked_objects.tracked_objects}
    path = [StateSE2(X0 - 60 + x, Y0 - LANE_W / 2, 0.0) for x in range(0, 180, 1)]
    lane_polys = [Polygon([(X0 - 60, Y0 - LANE_W), (X0 + 120, Y0 - LANE_W), (X0 + 120, Y0), (X0 - 60, Y0)])]
    return MetricCache(
        file_path=file_path,
        log_name=LOG_NAME,
        timepoint=TimePoint(T0_US),
        scene_type=SceneFrameType.ORIGINAL,
        trajectory=InterpolatedTrajectory([ego_state(t, cache_rear_axle=False) for t in steps]),
        human_trajectory=Trajectory(
            poses=np.array([[5.0 * (k + 1), 0.0, 0.0] for k in range(8)]),
            trajectory_sampling=TrajectorySampling(num_poses=8, time_horizon=4.0, interval_length=0.5),
        ),
        past_human_trajectory=InterpolatedTrajectory([ego_state(t, cache_rear_axle=True) for t in (-1.5, -1.0, -0.5)]),
        ego_state=ego_state(0.0, cache_rear_axle=False),
        observation=PDMObservation(occupancy, lights, unique),
        centerline=PDMPath(path),
        route_lane_ids=list(ROUTE_LANES),
        drivable_area_map=PDMDrivableMap(["10"], [SemanticMapLayer.ROADBLOCK], lane_polys),
        past_detections_tracks=[detections(-1.0), detections(-0.5)],
        current_tracked_objects=[tracks[0]],
        future_tracked_objects=tracks[1:],
        map_parameters=MapParameters(map_root="/data/maps", map_version="nuplan-maps-v1.0", map_name="us-nv-las-vegas-strip"),
    )


def _box_corners(box: OrientedBox) -> list[tuple[float, float]]:
    c, s = math.cos(box._center.heading), math.sin(box._center.heading)
    hl, hw = box._length / 2, box._width / 2
    return [(box._center.x + dx * c - dy * s, box._center.y + dx * s + dy * c) for dx, dy in ((hl, hw), (hl, -hw), (-hl, -hw), (-hl, hw))]


def main(out: Path) -> Path:
    for module, classes in MODULES.items():
        for cls in classes:
            _register(module, cls)
    file_path = out / LOG_NAME / "unknown" / TOKEN / "metric_cache.pkl"
    file_path.parent.mkdir(parents=True, exist_ok=True)
    cache = metric_cache(file_path)
    # MetricCache.dump: pickle.dumps(self, protocol=pickle.HIGHEST_PROTOCOL), then lzma.compress(..., preset=0).
    file_path.write_bytes(lzma.compress(pickle.dumps(cache, protocol=pickle.HIGHEST_PROTOCOL), preset=0))
    return file_path


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    print(main(Path(sys.argv[1])))

"""Converts NAVSIM data (OpenScene log pickles and nuPlan GeoPackage maps) to gymwire's NAVSIM scene
format (docs/navsim-scenes.md), one JSON file per scene, for ``make('gymwire/NavsimEnv-v1',
scene_dir=...)``.

NAVSIM's devkit (``navsim``, ``nuplan-devkit``) is not on PyPI, so this reads the files on disk
directly instead of through its loaders: a log is a pickled list of 2 Hz frame dicts (numpy arrays and
plain Python values, read as ``navsim/common/dataclasses.py`` and ``dataloader.py`` read them), and a
map is a GeoPackage (SQLite) whose layers and columns are those ``nuplan_map.py`` reads. Scenes are cut
as NAVSIM's ``filter_scenes`` cuts them (``num_history_frames`` + ``num_future_frames`` frames, every
``frame_interval`` frames, scenes without a route dropped) and agents are put on the 0.1 s grid as
``MetricCacheProcessor._interpolate_gt_observation`` does. Needs the ``navsim`` extra (shapely; pyproj
only for a map whose layers are not stored in its UTM system).

It also reads NAVSIM v2's metric cache (``run_metric_caching.py``'s ``<log>/<scene type>/<token>/
metric_cache.pkl``: lzma-compressed pickles of ``MetricCache``, nuPlan objects inside) without the
devkit: ``read_metric_cache`` unpickles NAVSIM's and nuPlan's classes as ``CachedObject`` stand-ins
holding their pickled state (numpy and shapely load as themselves; nothing else is imported or
called), and ``scene_from_metric_cache`` reads the fields by the names those classes store them under.

Example::

    python -m gymwire.navsim_convert --logs $OPENSCENE_DATA_ROOT/navsim_logs/test \\
        --maps $NUPLAN_MAPS_ROOT --out /data/navsim/navtest
    python -m gymwire.navsim_convert --metric-cache $NAVSIM_EXP_ROOT/metric_cache \\
        --maps $NUPLAN_MAPS_ROOT --out /data/navsim/navtest-cache
"""

from __future__ import annotations

import argparse
import io
import json
import lzma
import math
import pickle
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

MAP_VERSION = "nuplan-maps-v1.0"
# navsim_scenario_utils.tracked_object_types; the first three are nuPlan's AGENT_TYPES (they move).
AGENT_TYPES = ("vehicle", "pedestrian", "bicycle")
OBJECT_TYPES = (*AGENT_TYPES, "traffic_cone", "barrier", "czone_sign", "generic_object")
# Half size of the square of map kept around the ego: NAVSIM's drivable map is a 200 m square
# (radius 100 m), and lanes reaching into it are kept whole.
MAP_HALF_SIZE_M = 110.0


class ConversionError(Exception):
    """A log or map that cannot be converted; the message names the file and what is wrong."""


# ---- GeoPackage ----


def _gpkg_geometry(blob: bytes) -> Any:
    """A GeoPackage geometry blob ('GP' header, optional envelope, then WKB) as a shapely geometry."""
    from shapely import wkb

    if blob[:2] != b"GP":
        raise ConversionError("not a GeoPackage geometry blob")
    flags = blob[3]
    envelope = (0, 32, 48, 48, 64)[(flags >> 1) & 0b111]
    return wkb.loads(bytes(blob[8 + envelope :]))


@dataclass
class _Feature:
    fid: str
    geometry: Any
    row: dict[str, Any]


class GpkgMap:
    """The layers of one nuPlan map GeoPackage, in the map's UTM system (as ``GPKGMapsDB`` gives them)."""

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise ConversionError(f"{path}: no such map file")
        self.path = path
        self._db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        self._layers: dict[str, list[_Feature]] = {}
        self._target_epsg = self._projected_epsg()

    def close(self) -> None:
        self._db.close()

    def _projected_epsg(self) -> int | None:
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'projectedCoordSystem'").fetchone()
        except sqlite3.Error:
            return None
        if not row:
            return None
        text = str(row[0])
        return int(text.split(":")[-1]) if text.upper().startswith("EPSG:") else None

    def _layer_epsg(self, name: str) -> int | None:
        row = self._db.execute(
            "SELECT s.organization, s.organization_coordsys_id FROM gpkg_geometry_columns g"
            " JOIN gpkg_spatial_ref_sys s ON g.srs_id = s.srs_id WHERE g.table_name = ?",
            (name,),
        ).fetchone()
        return int(row[1]) if row and str(row[0]).upper() == "EPSG" else None

    def layer(self, name: str) -> list[_Feature]:
        """Every feature of a layer (empty when the map has no such layer)."""
        if name in self._layers:
            return self._layers[name]
        exists = self._db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone()
        if not exists:
            self._layers[name] = []
            return []
        geom_col = self._db.execute("SELECT column_name FROM gpkg_geometry_columns WHERE table_name = ?", (name,)).fetchone()
        cur = self._db.execute(f'SELECT * FROM "{name}"')
        cols = [c[0] for c in cur.description]
        transform = self._transformer(name)
        feats = []
        for values in cur.fetchall():
            row = dict(zip(cols, values, strict=True))
            geom = _gpkg_geometry(row.pop(geom_col[0])) if geom_col and row.get(geom_col[0]) is not None else None
            if geom is not None and transform is not None:
                from shapely.ops import transform as apply

                geom = apply(transform, geom)
            feats.append(_Feature(str(row["fid"]), geom, row))
        self._layers[name] = feats
        return feats

    def _transformer(self, name: str) -> Any:
        source = self._layer_epsg(name)
        if source is None or self._target_epsg is None or source == self._target_epsg:
            return None
        try:
            from pyproj import Transformer
        except ImportError as e:  # pragma: no cover - depends on the installed extras
            raise ConversionError(
                f"{self.path}: layer {name} is in EPSG:{source}, the map's system is EPSG:{self._target_epsg}; install pyproj to reproject"
            ) from e
        return Transformer.from_crs(source, self._target_epsg, always_xy=True).transform


def find_map(maps_root: Path, location: str) -> Path:
    """``<maps_root>/<location>/<version>/map.gpkg`` with the version from ``nuplan-maps-v1.0.json``."""
    meta = maps_root / f"{MAP_VERSION}.json"
    if meta.is_file():
        versions = json.loads(meta.read_text())
        if location not in versions:
            raise ConversionError(f"{meta}: no map location {location!r}")
        return maps_root / location / str(versions[location]["version"]) / "map.gpkg"
    found = sorted((maps_root / location).glob("*/map.gpkg"))
    if not found:
        raise ConversionError(f"{maps_root}: no {MAP_VERSION}.json and no {location}/<version>/map.gpkg")
    return found[-1]


# ---- geometry helpers ----


def _coords(geom: Any) -> list[list[float]]:
    if geom.geom_type == "Polygon":
        pts = geom.exterior.coords
    elif geom.geom_type == "MultiPolygon":
        pts = max(geom.geoms, key=lambda g: g.area).exterior.coords
    else:
        pts = geom.coords
    return [[float(p[0]), float(p[1])] for p in pts]


def _near(geom: Any, box: Any) -> bool:
    return geom is not None and geom.intersects(box)


def _yaw(q: Sequence[float]) -> float:
    """Yaw of a (w, x, y, z) quaternion, as pyquaternion's ``yaw_pitch_roll[0]``."""
    w, x, y, z = (float(v) for v in q)
    return math.atan2(2.0 * (w * z + x * y), 1.0 - 2.0 * (y * y + z * z))


def _normalize(a: float) -> float:
    return (a + math.pi) % (2 * math.pi) - math.pi


def _ego_pose(frame: dict[str, Any]) -> tuple[float, float, float]:
    t = frame["ego2global_translation"]
    return float(t[0]), float(t[1]), _yaw(frame["ego2global_rotation"])


# ---- map ----


def _map_around(m: GpkgMap, x: float, y: float, route: Sequence[str], name: str) -> dict[str, Any]:
    from shapely.geometry import box

    area = box(x - MAP_HALF_SIZE_M, y - MAP_HALF_SIZE_M, x + MAP_HALF_SIZE_M, y + MAP_HALF_SIZE_M)
    route_ids = {str(r) for r in route}
    groups = [f for f in m.layer("lane_groups_polygons") if f.fid in route_ids or _near(f.geometry, area)]
    connectors = [f for f in m.layer("lane_group_connectors") if f.fid in route_ids or _near(f.geometry, area)]
    all_connectors = m.layer("lane_group_connectors")
    kept = {f.fid for f in groups} | {f.fid for f in connectors}

    def ids(values: Iterator[Any]) -> list[str]:
        return [str(v) for v in values if v is not None and str(v) in kept]

    roadblocks = [
        {
            "id": g.fid,
            "kind": "roadblock",
            "polygon": _coords(g.geometry),
            "incoming": ids(c.fid for c in all_connectors if str(c.row["to_lane_group_fid"]) == g.fid),
            "outgoing": ids(c.fid for c in all_connectors if str(c.row["from_lane_group_fid"]) == g.fid),
        }
        for g in groups
    ] + [
        {
            "id": c.fid,
            "kind": "roadblock_connector",
            "polygon": _coords(c.geometry),
            "incoming": ids(iter([c.row["from_lane_group_fid"]])),
            "outgoing": ids(iter([c.row["to_lane_group_fid"]])),
        }
        for c in connectors
    ]

    baselines: dict[tuple[str, str], Any] = {}
    for b in m.layer("baseline_paths"):
        if b.row.get("lane_fid") is not None:
            baselines[("lane", str(b.row["lane_fid"]))] = b.geometry
        if b.row.get("lane_connector_fid") is not None:
            baselines[("connector", str(b.row["lane_connector_fid"]))] = b.geometry
    boundaries = {b.fid: b.geometry for b in m.layer("boundaries")}
    lane_rows = [f for f in m.layer("lanes_polygons") if str(f.row["lane_group_fid"]) in kept]
    conn_rows = [f for f in m.layer("lane_connectors") if str(f.row["lane_group_connector_fid"]) in kept]
    conn_polys = {str(p.row["lane_connector_fid"]): p.geometry for p in m.layer("gen_lane_connectors_scaled_width_polygons")}
    all_lane_connectors = m.layer("lane_connectors")
    lane_ids = {f.fid for f in lane_rows} | {f.fid for f in conn_rows}

    def boundary(fid: Any) -> dict[str, Any]:
        g = boundaries.get(str(fid)) if fid is not None else None
        return {} if g is None else {"points": _coords(g)}

    lanes: list[dict[str, Any]] = []
    for f in lane_rows:
        group = str(f.row["lane_group_fid"])
        index = int(f.row["lane_index"])
        same_group = {int(o.row["lane_index"]): o.fid for o in lane_rows if str(o.row["lane_group_fid"]) == group}
        centre = baselines.get(("lane", f.fid))
        if centre is None:
            raise ConversionError(f"{m.path}: lane {f.fid} has no baseline path")
        lane: dict[str, Any] = {
            "id": f.fid,
            "roadblock_id": group,
            "polygon": _coords(f.geometry),
            "centerline": _coords(centre),
            "speed_limit_mps": _speed(f.row.get("speed_limit_mps")),
            # lane.py: a lane's incoming connectors enter it (entry_lane_fid), outgoing ones leave it (exit_lane_fid).
            "incoming": [c.fid for c in all_lane_connectors if str(c.row["entry_lane_fid"]) == f.fid and c.fid in lane_ids],
            "outgoing": [c.fid for c in all_lane_connectors if str(c.row["exit_lane_fid"]) == f.fid and c.fid in lane_ids],
            "left_neighbour": same_group.get(index - 1),
            "right_neighbour": same_group.get(index + 1),
        }
        _add_boundaries(lane, boundary(f.row.get("left_boundary_fid")), boundary(f.row.get("right_boundary_fid")))
        lanes.append(lane)
    for f in conn_rows:
        centre = baselines.get(("connector", f.fid)) or f.geometry
        poly = conn_polys.get(f.fid)
        if poly is None:
            poly = centre.buffer(1.75, cap_style="flat")
        lane = {
            "id": f.fid,
            "roadblock_id": str(f.row["lane_group_connector_fid"]),
            "polygon": _coords(poly),
            "centerline": _coords(centre),
            "speed_limit_mps": _speed(f.row.get("speed_limit_mps")),
            "incoming": [str(f.row["exit_lane_fid"])] if str(f.row["exit_lane_fid"]) in lane_ids else [],
            "outgoing": [str(f.row["entry_lane_fid"])] if str(f.row["entry_lane_fid"]) in lane_ids else [],
        }
        _add_boundaries(lane, boundary(f.row.get("left_boundary_fid")), boundary(f.row.get("right_boundary_fid")))
        lanes.append(lane)

    def areas(layer: str) -> list[dict[str, Any]]:
        return [{"id": f.fid, "polygon": _coords(f.geometry)} for f in m.layer(layer) if _near(f.geometry, area)]

    return {
        "name": name,
        "roadblocks": roadblocks,
        "lanes": lanes,
        "intersections": areas("intersections"),
        "carparks": areas("carpark_areas"),
        "drivable_areas": areas("drivable_area"),
        "crosswalks": areas("crosswalks"),
    }


def _speed(v: Any) -> float | None:
    return float(v) if v is not None and float(v) > 0 else None


def _add_boundaries(lane: dict[str, Any], left: dict[str, Any], right: dict[str, Any]) -> None:
    if left:
        lane["left_boundary"] = left["points"]
    if right:
        lane["right_boundary"] = right["points"]


# ---- scenes ----


def _agent_tracks(frames: Sequence[dict[str, Any]], step_s: float = 0.5, grid_s: float = 0.1) -> list[dict[str, Any]]:
    """Boxes of frames 0.. (2 Hz) in global coordinates, joined by track token and put on the 0.1 s
    grid as NAVSIM's metric caching does (linear, heading unwrapped; a track seen once is held)."""
    samples: dict[str, list[list[float]]] = {}
    first: dict[str, tuple[str, float, float, float]] = {}
    for k, frame in enumerate(frames):
        ex, ey, eh = _ego_pose(frame)
        c, s = math.cos(eh), math.sin(eh)
        anns = frame["anns"]
        for i, box in enumerate(anns["gt_boxes"]):
            kind = str(anns["gt_names"][i])
            if kind not in OBJECT_TYPES:
                continue
            token = str(anns["track_tokens"][i])
            bx, by, bh = float(box[0]), float(box[1]), float(box[6])
            state = [k * step_s, ex + bx * c - by * s, ey + bx * s + by * c, _normalize(bh + eh), 0.0, 0.0]
            if kind in AGENT_TYPES:
                vx, vy = float(anns["gt_velocity_3d"][i][0]), float(anns["gt_velocity_3d"][i][1])
                state[4:] = [vx * c - vy * s, vx * s + vy * c]
            if token not in samples:
                samples[token] = []
                first[token] = (kind, float(box[3]), float(box[4]), float(box[5]))
            samples[token].append(state)
    horizon = (len(frames) - 1) * step_s
    grid = np.arange(0, int(round(horizon / grid_s)) + 1, dtype=float) * grid_s
    agents = []
    for token, rows in samples.items():
        arr = np.array(rows, dtype=np.float64)
        kind, length, width, height = first[token]
        if len(arr) == 1:
            states = [[0.0, *arr[0, 1:].tolist()]]
        else:
            arr[:, 3] = np.unwrap(arr[:, 3])
            t0, t1 = arr[0, 0], arr[-1, 0]
            states = []
            for t in grid:
                if t0 - 1e-9 <= t <= t1 + 1e-9:
                    states.append([round(float(t), 10), *(float(np.interp(t, arr[:, 0], arr[:, j])) for j in range(1, 6))])
        if states:
            agents.append({"token": token, "type": kind, "length": length, "width": width, "height": height, "states": states})
    return agents


def _ego_state(frame: dict[str, Any]) -> dict[str, float]:
    x, y, h = _ego_pose(frame)
    d = [float(v) for v in frame["ego_dynamic_state"]]
    return {"x": x, "y": y, "heading": h, "vx": d[0], "vy": d[1], "ax": d[2], "ay": d[3]}


def _relative(pose: tuple[float, float, float], origin: tuple[float, float, float]) -> list[float]:
    dx, dy = pose[0] - origin[0], pose[1] - origin[1]
    c, s = math.cos(origin[2]), math.sin(origin[2])
    return [dx * c + dy * s, -dx * s + dy * c, _normalize(pose[2] - origin[2])]


def _cameras(frame: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for name, cam in sorted((frame.get("cams") or {}).items()):
        rot = np.asarray(cam["sensor2lidar_rotation"], dtype=np.float64)
        tr = np.asarray(cam["sensor2lidar_translation"], dtype=np.float64)
        k = np.asarray(cam["cam_intrinsic"], dtype=np.float64)
        axis = rot[:, 2]  # the optical axis (camera z) in the LiDAR frame
        out.append(
            {
                "name": name,
                "x": float(tr[0]),
                "y": float(tr[1]),
                "z": float(tr[2]),
                "yaw": math.atan2(axis[1], axis[0]),
                "pitch": math.atan2(-axis[2], math.hypot(axis[0], axis[1])),
                "fov_deg": math.degrees(2 * math.atan2(k[0, 2], k[0, 0])),
                "image_path": str(cam["data_path"]),
                "intrinsics": [float(v) for v in k.reshape(-1)],
                "distortion": [float(v) for v in np.asarray(cam["distortion"]).reshape(-1)],
            }
        )
    return out


def scene_from_frames(frames: Sequence[dict[str, Any]], num_history_frames: int, gpkg: GpkgMap) -> dict[str, Any]:
    """One scene document from its frames (history, current, future), as docs/navsim-scenes.md describes."""
    cur_i = num_history_frames - 1
    cur = frames[cur_i]
    origin = _ego_pose(cur)
    future = frames[cur_i:]
    history = [{"t": -(cur_i - i) * 0.5, **_ego_state(frames[i])} for i in range(max(0, cur_i - 3), cur_i)]
    lights = []
    for k, frame in enumerate(future):
        pairs = [(str(int(lc)), bool(red)) for lc, red in frame.get("traffic_lights", [])]
        lights.append({"t": k * 0.5, "red": [lc for lc, red in pairs if red], "green": [lc for lc, red in pairs if not red]})
    human = [_relative(_ego_pose(f), origin) for f in future[1:9]]
    scene: dict[str, Any] = {
        "format": "gymwire-navsim-scene/1",
        "name": str(cur["token"]),
        "description": f"{cur['log_name']} scene {cur.get('scene_token', '')}",
        "timestamp_us": int(cur["timestamp"]),
        "scene_type": "original",
        "map": _map_around(gpkg, origin[0], origin[1], [str(r) for r in cur["roadblock_ids"]], str(cur["map_location"])),
        "route_roadblock_ids": [str(r) for r in cur["roadblock_ids"]],
        "traffic_lights": lights,
        "ego": _ego_state(cur),
        "agents": _agent_tracks(future),
        "driving_command": [float(v) for v in cur["driving_command"]],
    }
    if history:
        scene["ego_history"] = history
    if len(human) == 8:
        scene["human_trajectory"] = {"interval_length": 0.5, "poses": human}
    cams = _cameras(cur)
    if cams:
        scene["cameras"] = cams
    if cur.get("lidar_path"):
        scene["lidar_path"] = str(cur["lidar_path"])
    return scene


def read_log(path: Path) -> list[dict[str, Any]]:
    """An OpenScene log: the pickled list of frame dicts."""
    with open(path, "rb") as f:
        frames = pickle.load(f)
    if not isinstance(frames, list) or not frames or not isinstance(frames[0], dict) or "ego2global_translation" not in frames[0]:
        raise ConversionError(f"{path}: not an OpenScene log (a pickled list of frame dicts)")
    return frames


def split_scenes(
    frames: Sequence[dict[str, Any]], num_history_frames: int = 4, num_future_frames: int = 10, frame_interval: int | None = None
) -> list[list[dict[str, Any]]]:
    """``filter_scenes``: windows of history + future frames every ``frame_interval`` (default: the
    window length), dropping short windows and those whose current frame has no route."""
    n = num_history_frames + num_future_frames
    step = frame_interval or n
    out = []
    for i in range(0, len(frames), step):
        window = list(frames[i : i + n])
        if len(window) < n or len(window[num_history_frames - 1]["roadblock_ids"]) == 0:
            continue
        out.append(window)
    return out


class _Maps:
    """The map GeoPackages of one conversion, each opened once, by location."""

    def __init__(self, maps_root: Path) -> None:
        self._root = maps_root
        self._open: dict[str, GpkgMap] = {}

    def __call__(self, location: str) -> GpkgMap:
        if location not in self._open:
            self._open[location] = GpkgMap(find_map(self._root, location))
        return self._open[location]

    def close(self) -> None:
        for m in self._open.values():
            m.close()


def _write_scenes(out_dir: Path, scenes: Iterator[dict[str, Any]]) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for scene in scenes:
        path = out_dir / f"{scene['name']}.json"
        path.write_text(json.dumps(scene))
        written.append(path)
    return written


def convert_logs(
    logs: Path, maps_root: Path, out_dir: Path, num_history_frames: int = 4, num_future_frames: int = 10, frame_interval: int | None = None
) -> list[Path]:
    """Converts one log pickle, or every ``*.pkl`` in a folder, into ``out_dir/<token>.json`` files."""
    files = sorted(logs.glob("*.pkl")) if logs.is_dir() else [logs]
    if not files:
        raise ConversionError(f"{logs}: no log pickles")
    maps = _Maps(maps_root)
    try:
        return _write_scenes(
            out_dir,
            (
                scene_from_frames(window, num_history_frames, maps(str(window[num_history_frames - 1]["map_location"])))
                for log in files
                for window in split_scenes(read_log(log), num_history_frames, num_future_frames, frame_interval)
            ),
        )
    finally:
        maps.close()


# ---- NAVSIM's metric cache ----


class CachedObject:
    """A NAVSIM or nuPlan object from a metric cache, without its class: the arguments its pickle
    passes to the constructor (``args``, e.g. an enum's value) and its pickled attributes (``state``,
    instance dict and slots merged). ``cls_name`` is the class's ``module.qualname``."""

    cls_name = "CachedObject"

    def __new__(cls, *args: Any, **kwargs: Any) -> CachedObject:
        obj = object.__new__(cls)
        obj.args = args
        obj.state = dict(kwargs)
        return obj

    def __setstate__(self, state: Any) -> None:
        slots = None
        if isinstance(state, tuple) and len(state) == 2:
            state, slots = state
        self.state.update(state or {})
        self.state.update(slots or {})

    def __getitem__(self, name: str) -> Any:
        if name not in self.state:
            raise ConversionError(f"a {self.cls_name} in the metric cache has no {name!r} (fields: {', '.join(sorted(self.state))})")
        return self.state[name]

    def __repr__(self) -> str:
        return f"<{self.cls_name} {self.args or ''}{sorted(self.state)}>"


# What a metric cache may load as itself: numpy arrays and scalars, shapely geometries and trees,
# paths. Everything else becomes a CachedObject, so unpickling imports and calls nothing else.
_REAL_GLOBALS = {
    **{(m, n): None for m in ("numpy.core.multiarray", "numpy._core.multiarray") for n in ("_reconstruct", "scalar")},
    **{(m, "_frombuffer"): None for m in ("numpy.core.numeric", "numpy._core.numeric")},
    ("numpy", "ndarray"): None,
    ("numpy", "dtype"): None,
    ("shapely.io", "from_wkb"): None,
    ("shapely.wkb", "loads"): None,
    ("shapely.strtree", "STRtree"): None,
    ("pathlib", "PosixPath"): None,
    ("pathlib", "PurePosixPath"): None,
    ("builtins", "set"): None,
    ("builtins", "frozenset"): None,
    ("collections", "OrderedDict"): None,
}


class _MetricCacheUnpickler(pickle.Unpickler):
    def __init__(self, file: Any) -> None:
        super().__init__(file)
        self._stand_ins: dict[tuple[str, str], type] = {}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _REAL_GLOBALS:
            # NAVSIM pins numpy 1.x, whose pickles name numpy.core; numpy 2 keeps it as a deprecated alias of numpy._core.
            if module.startswith("numpy.core.") and (f"numpy._core.{module[11:]}", name) in _REAL_GLOBALS:
                try:
                    return super().find_class(f"numpy._core.{module[11:]}", name)
                except ImportError:
                    pass
            return super().find_class(module, name)
        key = (module, name)
        if key not in self._stand_ins:
            self._stand_ins[key] = type(name, (CachedObject,), {"cls_name": f"{module}.{name}", "__module__": module})
        return self._stand_ins[key]


def read_metric_cache(path: Path) -> CachedObject:
    """One ``metric_cache.pkl`` (lzma-compressed pickle of a NAVSIM ``MetricCache``) as a CachedObject tree."""
    try:
        raw = lzma.decompress(path.read_bytes())
    except (OSError, lzma.LZMAError) as e:
        raise ConversionError(f"{path}: not a NAVSIM metric cache (an lzma-compressed pickle): {e}") from e
    try:
        cache = _MetricCacheUnpickler(io.BytesIO(raw)).load()
    except Exception as e:  # any unpickling failure is a bad file
        raise ConversionError(f"{path}: cannot unpickle the metric cache: {e}") from e
    if not isinstance(cache, CachedObject) or not cache.cls_name.endswith(".MetricCache"):
        raise ConversionError(f"{path}: the pickle holds {type(cache).__name__}, not NAVSIM's MetricCache")
    if "future_tracked_objects" not in cache.state:
        raise ConversionError(f"{path}: a NAVSIM v1 metric cache (no tracked objects, only PDM's occupancy maps); gymwire reads v2 caches (navsim >= 2.0)")
    return cache


def _se2(pose: CachedObject) -> tuple[float, float, float]:
    return float(pose["x"]), float(pose["y"]), float(pose["heading"])


def _vector(v: CachedObject) -> tuple[float, float]:
    return float(v["_x"]), float(v["_y"])


def _rear_axle(ego_state: CachedObject) -> tuple[float, float, float]:
    """The rear-axle pose of an EgoState: CarFootprint's cached ``rear_axle``, else its centre moved
    back by ``rear_axle_to_center`` (VehicleParameters: half length minus rear length)."""
    footprint = ego_state["_car_footprint"]
    if "rear_axle" in footprint.state:
        return _se2(footprint.state["rear_axle"])
    x, y, h = _se2(footprint["_center"])
    # VehicleParameters pickles as (width, front_length, rear_length, cog_position_from_rear_axle, wheel_base, name, type, height).
    _, front, rear = (float(v) for v in footprint["_vehicle_parameters"].args[:3])
    back = (front + rear) / 2 - rear
    return x - back * math.cos(h), y - back * math.sin(h), h


def _cached_ego(ego_state: CachedObject) -> dict[str, float]:
    x, y, h = _rear_axle(ego_state)
    dyn = ego_state["_dynamic_car_state"]
    vx, vy = _vector(dyn["_rear_axle_velocity_2d"])
    ax, ay = _vector(dyn["_rear_axle_acceleration_2d"])
    ego = {"x": x, "y": y, "heading": h, "vx": vx, "vy": vy, "ax": ax, "ay": ay}
    steering, yaw_rate = float(ego_state.state.get("_tire_steering_angle", 0.0)), float(dyn.state.get("_angular_velocity", 0.0))
    if steering:
        ego["steering_angle"] = steering
    if yaw_rate:
        ego["yaw_rate"] = yaw_rate
    return ego


def _time_us(ego_state: CachedObject) -> int:
    return int(ego_state["_time_point"]["time_us"])


def _cached_agents(snapshots: Sequence[CachedObject], step_s: float) -> list[dict[str, Any]]:
    """Tracked objects of DetectionsTracks at t = 0, step_s, ... joined by track token."""
    agents: dict[str, dict[str, Any]] = {}
    for k, detections in enumerate(snapshots):
        for obj in detections["tracked_objects"]["tracked_objects"]:
            kind_index = int(obj["_tracked_object_type"].args[0])
            if kind_index >= len(OBJECT_TYPES):
                continue  # EGO
            box = obj["_box"]
            x, y, h = _se2(box["_center"])
            velocity = obj.state.get("_velocity", obj.state.get("velocity"))
            vx, vy = _vector(velocity) if OBJECT_TYPES[kind_index] in AGENT_TYPES and velocity is not None else (0.0, 0.0)
            token = str(obj["_metadata"]["track_token"])
            if token not in agents:
                dims = (float(box["_length"]), float(box["_width"]), float(box["_height"]))
                agents[token] = {"token": token, "type": OBJECT_TYPES[kind_index], "length": dims[0], "width": dims[1], "height": dims[2], "states": []}
            agents[token]["states"].append([round(k * step_s, 10), x, y, h, vx, vy])
    return list(agents.values())


def _route_roadblocks(m: GpkgMap, route_lane_ids: Sequence[str]) -> list[str]:
    """The roadblocks (lane groups and lane group connectors) of PDM-Closed's route lanes, in route order."""
    group_of = {f.fid: str(f.row["lane_group_fid"]) for f in m.layer("lanes_polygons")}
    group_of.update({f.fid: str(f.row["lane_group_connector_fid"]) for f in m.layer("lane_connectors")})
    missing = [lane for lane in route_lane_ids if str(lane) not in group_of]
    if missing:
        raise ConversionError(f"{m.path}: route lanes {', '.join(missing[:5])} of the metric cache are not in this map")
    return list(dict.fromkeys(group_of[str(lane)] for lane in route_lane_ids))


def _cached_red_lights(observation: CachedObject, step_s: float) -> list[dict[str, Any]]:
    """Red lights on the route per 0.1 s from PDMObservation's ``_occupancy_maps_tl`` (tokens ``red_light_<id>``)."""
    lights: list[dict[str, Any]] = []
    for k, (tokens, _polygons) in enumerate(observation.state.get("_occupancy_maps_tl") or []):
        red = sorted(str(t).removeprefix("red_light_") for t in tokens)
        if not lights or lights[-1]["red"] != red:
            lights.append({"t": round(k * step_s, 10), "red": red, "green": []})
    return lights or [{"t": 0.0, "red": [], "green": []}]


def scene_from_metric_cache(cache: CachedObject, token: str, map_for: Callable[[str], GpkgMap]) -> dict[str, Any]:
    """One scene document from a v2 metric cache; ``map_for`` opens the map it names (``map_parameters.map_name``)."""
    location = str(cache["map_parameters"]["map_name"])
    gpkg = map_for(location)
    ego_state = cache["ego_state"]
    t0 = _time_us(ego_state)
    ego = _cached_ego(ego_state)
    route = _route_roadblocks(gpkg, [str(v) for v in cache["route_lane_ids"]])
    past = cache["past_human_trajectory"].args[0] if cache["past_human_trajectory"].args else []
    history = [{"t": round((_time_us(s) - t0) / 1e6, 6), **_cached_ego(s)} for s in past if _time_us(s) < t0][-3:]
    future = list(cache["future_tracked_objects"])
    step_s = 0.1
    if len(future) >= 1 and len(future) * step_s < 3.95:
        raise ConversionError(f"metric cache {token}: {len(future)} future observations cover less than NAVSIM v2's 4 s")
    synthetic = int(cache["scene_type"].args[0]) == 1 if isinstance(cache["scene_type"], CachedObject) else int(cache["scene_type"]) == 1
    scene: dict[str, Any] = {
        "format": "gymwire-navsim-scene/1",
        "name": token,
        "description": f"{cache['log_name']} (NAVSIM metric cache)",
        "timestamp_us": int(cache["timepoint"]["time_us"]),
        "scene_type": "synthetic" if synthetic else "original",
        "map": _map_around(gpkg, ego["x"], ego["y"], route, location),
        "route_roadblock_ids": route,
        "traffic_lights": _cached_red_lights(cache["observation"], step_s),
        "ego": ego,
        "agents": _cached_agents([*cache["current_tracked_objects"], *future], step_s),
    }
    if history:
        scene["ego_history"] = history
    human = cache.state.get("human_trajectory")
    if human is not None:
        sampling = human["trajectory_sampling"]
        scene["human_trajectory"] = {"interval_length": float(sampling["interval_length"]), "poses": np.asarray(human["poses"], dtype=float).tolist()}
    return scene


def convert_metric_cache(cache_root: Path, maps_root: Path, out_dir: Path) -> list[Path]:
    """Converts every ``metric_cache.pkl`` under ``cache_root`` (or one file) into ``out_dir/<token>.json``;
    the token is the file's folder, as ``MetricCacheProcessor._build_file_path`` names it."""
    files = sorted(cache_root.rglob("metric_cache.pkl")) if cache_root.is_dir() else [cache_root]
    if not files:
        raise ConversionError(f"{cache_root}: no metric_cache.pkl files")
    maps = _Maps(maps_root)
    try:
        return _write_scenes(out_dir, (scene_from_metric_cache(read_metric_cache(file), file.parent.name, maps) for file in files))
    finally:
        maps.close()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m gymwire.navsim_convert", description="OpenScene logs or a NAVSIM v2 metric cache + nuPlan maps -> gymwire NAVSIM scene JSON files"
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--logs", type=Path, help="a log pickle or a folder of them (navsim_logs/<split>)")
    source.add_argument("--metric-cache", type=Path, help="a metric_cache.pkl or a folder holding them (run_metric_caching.py's output)")
    p.add_argument("--maps", type=Path, required=True, help="NUPLAN_MAPS_ROOT (holds nuplan-maps-v1.0.json and <location>/<version>/map.gpkg)")
    p.add_argument("--out", type=Path, required=True, help="output folder for <token>.json scenes")
    p.add_argument("--history", type=int, default=4, help="history frames including the current one (NAVSIM: 4)")
    p.add_argument("--future", type=int, default=10, help="future frames (NAVSIM: 10 = 5 s)")
    p.add_argument("--interval", type=int, default=None, help="frames between scene starts (default: history + future)")
    a = p.parse_args(argv)
    try:
        if a.metric_cache is not None:
            written = convert_metric_cache(a.metric_cache, a.maps, a.out)
        else:
            written = convert_logs(a.logs, a.maps, a.out, a.history, a.future, a.interval)
    except ConversionError as e:
        p.exit(2, f"error: {e}\n")
    print(f"wrote {len(written)} scenes to {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

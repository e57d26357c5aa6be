#!/usr/bin/env python3
"""Writes a small NAVSIM data folder in the on-disk layout NAVSIM users have, for testing
gymwire's converter (gymwire.navsim_convert) without the real data set.

NAVSIM's devkit (navsim, nuplan-devkit) is not on PyPI, so its loaders cannot run here; this script
mirrors what they read instead:

- ``navsim_logs/<split>/<log_name>.pkl``: an OpenScene log, a pickled list of 2 Hz frame dicts with
  the keys ``navsim/common/dataclasses.py`` (``Scene.from_scene_dict_list``, ``_build_ego_status``,
  ``_build_annotations``) and ``navsim/common/dataloader.py`` (``filter_scenes``) read: token,
  timestamp, log_name, scene_token, map_location, ego2global_translation, ego2global_rotation
  (w, x, y, z), ego_dynamic_state (vx, vy, ax, ay), driving_command, roadblock_ids,
  traffic_lights ((lane_connector_id, is_red) pairs), anns (gt_boxes x, y, z, l, w, h, yaw in the
  ego frame, gt_names, gt_velocity_3d, instance_tokens, track_tokens), cams, lidar_path.
- ``maps/nuplan-maps-v1.0.json`` and ``maps/<location>/<version>/map.gpkg``: a nuPlan map as
  ``GPKGMapsDB`` finds it, a GeoPackage with the layers and columns ``nuplan_map.py``, ``lane.py``,
  ``lane_connector.py``, ``roadblock.py`` and ``roadblock_connector.py`` read, geometries in UTM
  (the ``meta`` table's projectedCoordSystem).

The world: a straight road along +x (two roadblocks of two lanes, joined by a roadblock connector
with two lane connectors, a red light on one of them), an intersection polygon, a carpark, the ego
at 10 m/s in the right lane with a lead car 30 m ahead at the same speed and a cone on the kerb. Two scenes of
4 history + 10 future frames.

    python scripts/navsim/openscene_fixture.py OUT_DIR
"""

from __future__ import annotations

import json
import math
import pickle
import sqlite3
import struct
import sys
from pathlib import Path
from typing import Any

import numpy as np

LOCATION = "us-nv-las-vegas-strip"
MAP_VERSION = "9.15.1915"
EPSG = 32611  # UTM zone 11N, Las Vegas
X0, Y0 = 664_000.0, 3_997_000.0
LANE_W = 3.5
FRAMES = 28


def rect(x0: float, y0: float, x1: float, y1: float) -> list[tuple[float, float]]:
    return [(x0, y0), (x1, y0), (x1, y1), (x0, y1), (x0, y0)]


def wkb_polygon(ring: list[tuple[float, float]]) -> bytes:
    return struct.pack("<BIII", 1, 3, 1, len(ring)) + b"".join(struct.pack("<dd", x, y) for x, y in ring)


def wkb_line(pts: list[tuple[float, float]]) -> bytes:
    return struct.pack("<BII", 1, 2, len(pts)) + b"".join(struct.pack("<dd", x, y) for x, y in pts)


def gpkg_blob(wkb: bytes) -> bytes:
    """GeoPackage binary: 'GP', version 0, flags (little endian, no envelope), srs id, then WKB."""
    return b"GP" + bytes([0, 0b00000001]) + struct.pack("<i", EPSG) + wkb


def line(x0: float, x1: float, y: float, step: float = 1.0) -> list[tuple[float, float]]:
    n = int(round((x1 - x0) / step))
    return [(x0 + i * step, y) for i in range(n + 1)]


def write_map(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE gpkg_spatial_ref_sys (srs_name TEXT, srs_id INTEGER PRIMARY KEY, organization TEXT, organization_coordsys_id INTEGER, definition TEXT)"
    )
    db.execute("INSERT INTO gpkg_spatial_ref_sys VALUES ('WGS 84 / UTM zone 11N', ?, 'EPSG', ?, 'undefined')", (EPSG, EPSG))
    db.execute("CREATE TABLE gpkg_geometry_columns (table_name TEXT, column_name TEXT, geometry_type_name TEXT, srs_id INTEGER, z INTEGER, m INTEGER)")
    db.execute("CREATE TABLE meta (fid INTEGER PRIMARY KEY, key TEXT, value TEXT)")
    db.execute("INSERT INTO meta (key, value) VALUES ('projectedCoordSystem', ?)", (f"EPSG:{EPSG}",))

    def layer(name: str, columns: str, rows: list[tuple[Any, ...]]) -> None:
        db.execute(f'CREATE TABLE "{name}" (fid INTEGER PRIMARY KEY, geom BLOB, {columns})')
        db.execute("INSERT INTO gpkg_geometry_columns VALUES (?, 'geom', 'GEOMETRY', ?, 0, 0)", (name, EPSG))
        n = len(columns.split(","))
        for row in rows:
            db.execute(f'INSERT INTO "{name}" VALUES ({",".join("?" * (n + 2))})', row)

    # Roadblocks (lane groups) 10: x -60..100, 20: x 110..260; connector 30 between them (x 100..110).
    a0, a1, b0, b1 = X0 - 60, X0 + 100, X0 + 110, X0 + 260
    yr, yl = Y0 - LANE_W / 2, Y0 + LANE_W / 2
    layer(
        "lane_groups_polygons",
        "name TEXT",
        [(10, gpkg_blob(wkb_polygon(rect(a0, Y0 - LANE_W, a1, Y0 + LANE_W))), "a"), (20, gpkg_blob(wkb_polygon(rect(b0, Y0 - LANE_W, b1, Y0 + LANE_W))), "b")],
    )
    layer(
        "lane_group_connectors",
        "from_lane_group_fid INTEGER, to_lane_group_fid INTEGER",
        [(30, gpkg_blob(wkb_polygon(rect(a1, Y0 - LANE_W, b0, Y0 + LANE_W))), 10, 20)],
    )
    # Lanes: index 0 is the leftmost of a group (nuPlan: left neighbour = index - 1).
    lanes = [
        (101, rect(a0, Y0, a1, Y0 + LANE_W), 10, 0, 201, 202),
        (102, rect(a0, Y0 - LANE_W, a1, Y0), 10, 1, 202, 203),
        (111, rect(b0, Y0, b1, Y0 + LANE_W), 20, 0, 211, 212),
        (112, rect(b0, Y0 - LANE_W, b1, Y0), 20, 1, 212, 213),
    ]
    layer(
        "lanes_polygons",
        "lane_group_fid INTEGER, lane_index INTEGER, speed_limit_mps REAL, left_boundary_fid INTEGER, right_boundary_fid INTEGER",
        [(fid, gpkg_blob(wkb_polygon(poly)), group, index, 15.0, left, right) for fid, poly, group, index, left, right in lanes],
    )
    # Lane connectors: exit_lane_fid is the lane it leaves, entry_lane_fid the lane it enters (lane.py).
    layer(
        "lane_connectors",
        "lane_group_connector_fid INTEGER, exit_lane_fid INTEGER, entry_lane_fid INTEGER, speed_limit_mps REAL,"
        " left_boundary_fid INTEGER, right_boundary_fid INTEGER",
        [
            (121, gpkg_blob(wkb_line(line(a1, b0, yl))), 30, 101, 111, 15.0, None, None),
            (122, gpkg_blob(wkb_line(line(a1, b0, yr))), 30, 102, 112, 15.0, None, None),
        ],
    )
    layer(
        "gen_lane_connectors_scaled_width_polygons",
        "lane_connector_fid INTEGER",
        [(1, gpkg_blob(wkb_polygon(rect(a1, Y0, b0, Y0 + LANE_W))), 121), (2, gpkg_blob(wkb_polygon(rect(a1, Y0 - LANE_W, b0, Y0))), 122)],
    )
    layer(
        "baseline_paths",
        "lane_fid INTEGER, lane_connector_fid INTEGER",
        [
            (301, gpkg_blob(wkb_line(line(a0, a1, yl))), 101, None),
            (302, gpkg_blob(wkb_line(line(a0, a1, yr))), 102, None),
            (303, gpkg_blob(wkb_line(line(b0, b1, yl))), 111, None),
            (304, gpkg_blob(wkb_line(line(b0, b1, yr))), 112, None),
            (305, gpkg_blob(wkb_line(line(a1, b0, yl))), None, 121),
            (306, gpkg_blob(wkb_line(line(a1, b0, yr))), None, 122),
        ],
    )
    layer(
        "boundaries",
        "boundary_type_fid INTEGER",
        [
            (201, gpkg_blob(wkb_line(line(a0, a1, Y0 + LANE_W))), 1),
            (202, gpkg_blob(wkb_line(line(a0, a1, Y0))), 1),
            (203, gpkg_blob(wkb_line(line(a0, a1, Y0 - LANE_W))), 1),
            (211, gpkg_blob(wkb_line(line(b0, b1, Y0 + LANE_W))), 1),
            (212, gpkg_blob(wkb_line(line(b0, b1, Y0))), 1),
            (213, gpkg_blob(wkb_line(line(b0, b1, Y0 - LANE_W))), 1),
        ],
    )
    layer("intersections", "intersection_type_fid INTEGER", [(401, gpkg_blob(wkb_polygon(rect(a1, Y0 - LANE_W, b0, Y0 + LANE_W))), 1)])
    layer("carpark_areas", "name TEXT", [(501, gpkg_blob(wkb_polygon(rect(X0, Y0 - LANE_W - 20, X0 + 30, Y0 - LANE_W))), "lot")])
    layer("crosswalks", "name TEXT", [(601, gpkg_blob(wkb_polygon(rect(b0 + 5, Y0 - LANE_W, b0 + 9, Y0 + LANE_W))), "cw")])
    layer("drivable_area", "name TEXT", [(701, gpkg_blob(wkb_polygon(rect(a0, Y0 - LANE_W, b1, Y0 + LANE_W))), "road")])
    # A far-away roadblock: outside the query box, so the converter leaves it out.
    layer_rows = db.execute('SELECT COUNT(*) FROM "lane_groups_polygons"').fetchone()
    assert layer_rows[0] == 2
    db.execute('INSERT INTO "lane_groups_polygons" VALUES (?, ?, ?)', (90, gpkg_blob(wkb_polygon(rect(X0 + 5000, Y0, X0 + 5100, Y0 + 7))), "far"))
    db.commit()
    db.close()


def quaternion_from_yaw(yaw: float) -> list[float]:
    return [math.cos(yaw / 2), 0.0, 0.0, math.sin(yaw / 2)]


def frames() -> list[dict[str, Any]]:
    """28 frames at 2 Hz: ego at 10 m/s in the right lane, lead car 30 m ahead at the same speed, a cone."""
    out = []
    for i in range(FRAMES):
        t = (i - 3) * 0.5
        ego_x, ego_y, yaw = X0 + 10.0 * t, Y0 - LANE_W / 2, 0.0
        lead_x = X0 + 30.0 + 10.0 * t
        cone_x = X0 + 150.0
        # Boxes in the ego (rear-axle) frame: the ego heads +x, so the frame is a shift.
        boxes = np.array(
            [
                [lead_x - ego_x, Y0 - LANE_W / 2 - ego_y, 0.8, 4.6, 2.0, 1.6, 0.0],
                [cone_x - ego_x, Y0 - LANE_W - 0.3 - ego_y, 0.3, 0.5, 0.5, 0.7, 0.0],
            ],
            dtype=np.float32,
        )
        out.append(
            {
                "token": f"tok{i:03d}",
                "timestamp": 1_600_000_000_000_000 + i * 500_000,
                "log_name": "2021.05.12.22.00.38_veh-35_01008_01518",
                "log_token": "log0",
                "scene_token": f"scene{i // 14}",
                "map_location": LOCATION,
                "lidar_path": f"2021.05.12.22.00.38_veh-35_01008_01518/MergedPointCloud/{i:04d}.pcd",
                "ego2global_translation": np.array([ego_x, ego_y, 600.0], dtype=np.float64),
                "ego2global_rotation": np.array(quaternion_from_yaw(yaw), dtype=np.float64),
                "ego_dynamic_state": [10.0, 0.0, 0.0, 0.0],
                "driving_command": np.array([0, 1, 0, 0], dtype=np.int64),
                "roadblock_ids": ["10", "30", "20"],
                "traffic_lights": [(121, i < 10), (122, False)],
                "anns": {
                    "gt_boxes": boxes,
                    "gt_names": np.array(["vehicle", "traffic_cone"]),
                    "gt_velocity_3d": np.array([[10.0, 0.0, 0.0], [0.0, 0.0, 0.0]], dtype=np.float32),
                    "instance_tokens": np.array([f"lead{i}", f"cone{i}"]),
                    "track_tokens": np.array(["lead", "cone"]),
                },
                "cams": {
                    "CAM_F0": {
                        "data_path": f"2021.05.12.22.00.38_veh-35_01008_01518/CAM_F0/{i:04d}.jpg",
                        "sensor2lidar_rotation": np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]]),
                        "sensor2lidar_translation": np.array([1.5, 0.0, 1.5]),
                        "cam_intrinsic": np.array([[1545.0, 0.0, 960.0], [0.0, 1545.0, 560.0], [0.0, 0.0, 1.0]]),
                        "distortion": np.array([-0.35, 0.1, 0.0, 0.0, 0.0]),
                    }
                },
            }
        )
    return out


def main(out: Path) -> None:
    logs = out / "navsim_logs" / "test"
    logs.mkdir(parents=True, exist_ok=True)
    fr = frames()
    with open(logs / f"{fr[0]['log_name']}.pkl", "wb") as f:
        pickle.dump(fr, f)
    maps = out / "maps"
    maps.mkdir(parents=True, exist_ok=True)
    (maps / "nuplan-maps-v1.0.json").write_text(json.dumps({LOCATION: {"version": MAP_VERSION}}))
    write_map(maps / LOCATION / MAP_VERSION / "map.gpkg")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))

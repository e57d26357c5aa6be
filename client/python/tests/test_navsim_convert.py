"""gymwire.navsim_convert on a NAVSIM data folder written by scripts/navsim/openscene_fixture.py.

NAVSIM's devkit is not on PyPI, so the fixture is not written with its dataclasses: the script
mirrors the pickled log frames and the GeoPackage map layers its loaders read (see the script). The
converted scenes are then served by a real gymwire server (``--data-root``) and scored there.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO
from navsim_served import assert_humans_drive_cleanly

from gymwire.navsim_convert import ConversionError, _agent_tracks, convert_logs, find_map, read_log, split_scenes

FIXTURE_SCRIPT = REPO / "scripts" / "navsim" / "openscene_fixture.py"
X0, Y0, LANE_W = 664_000.0, 3_997_000.0, 3.5


@pytest.fixture(scope="module")
def navsim_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("navsim")
    subprocess.run([sys.executable, str(FIXTURE_SCRIPT), str(root)], check=True)
    return root


@pytest.fixture(scope="module")
def scenes(navsim_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("served") / "navtest"
    convert_logs(navsim_data / "navsim_logs" / "test", navsim_data / "maps", out)
    return out


def test_scenes_are_cut_as_filter_scenes_cuts_them(navsim_data: Path, scenes: Path) -> None:
    frames = read_log(next((navsim_data / "navsim_logs" / "test").glob("*.pkl")))
    assert len(frames) == 28
    windows = split_scenes(frames)
    # 28 frames in windows of 14 every 14 frames; the current frame is the 4th of each window.
    assert [w[3]["token"] for w in windows] == ["tok003", "tok017"]
    assert sorted(p.name for p in scenes.iterdir()) == ["tok003.json", "tok017.json"]
    assert len(split_scenes(frames, frame_interval=1)) == 15


def test_scene_fields(scenes: Path) -> None:
    s = json.loads((scenes / "tok003.json").read_text())
    assert s["timestamp_us"] == 1_600_000_000_000_000 + 3 * 500_000
    assert s["ego"] == {"x": X0, "y": Y0 - LANE_W / 2, "heading": 0.0, "vx": 10.0, "vy": 0.0, "ax": 0.0, "ay": 0.0}
    assert [h["t"] for h in s["ego_history"]] == [-1.5, -1.0, -0.5]
    assert s["route_roadblock_ids"] == ["10", "30", "20"]
    kinds = {r["id"]: r["kind"] for r in s["map"]["roadblocks"]}
    # The far roadblock (5 km away) is left out; the route's are kept.
    assert kinds == {"10": "roadblock", "20": "roadblock", "30": "roadblock_connector"}
    lanes = {lane["id"]: lane for lane in s["map"]["lanes"]}
    assert lanes["102"]["outgoing"] == ["122"] and lanes["112"]["incoming"] == ["122"]
    assert lanes["122"]["incoming"] == ["102"] and lanes["122"]["outgoing"] == ["112"]
    assert lanes["102"]["left_neighbour"] == "101" and lanes["101"]["right_neighbour"] == "102"
    assert lanes["101"]["left_boundary"][0] == [X0 - 60, Y0 + LANE_W]
    assert [a["id"] for a in s["map"]["intersections"]] == ["401"]
    assert [a["id"] for a in s["map"]["carparks"]] == ["501"]
    # Lights per 2 Hz frame from t = 0: connector 121 is red until frame 10 (t = 3.5 s from frame 3).
    assert s["traffic_lights"][0] == {"t": 0.0, "red": ["121"], "green": ["122"]}
    assert s["traffic_lights"][7] == {"t": 3.5, "red": [], "green": ["121", "122"]}
    human = s["human_trajectory"]["poses"]
    assert len(human) == 8 and human[0] == [5.0, 0.0, 0.0] and human[-1] == [40.0, 0.0, 0.0]
    cam = s["cameras"][0]
    assert cam["name"] == "CAM_F0" and cam["yaw"] == 0.0
    assert cam["fov_deg"] == pytest.approx(math.degrees(2 * math.atan2(960, 1545)))


def test_agents_are_global_and_on_the_metric_cache_grid(scenes: Path) -> None:
    s = json.loads((scenes / "tok003.json").read_text())
    agents = {a["token"]: a for a in s["agents"]}
    lead = agents["lead"]
    assert lead["type"] == "vehicle" and (lead["length"], lead["width"]) == (pytest.approx(4.6), pytest.approx(2.0))
    assert len(lead["states"]) == 51
    t, x, y, h, vx, vy = lead["states"][13]
    assert t == pytest.approx(1.3) and x == pytest.approx(X0 + 30 + 10 * 1.3) and y == pytest.approx(Y0 - LANE_W / 2) and (vx, vy) == (pytest.approx(10.0), 0.0)
    cone = agents["cone"]
    assert cone["type"] == "traffic_cone" and cone["states"][0][4:] == [0.0, 0.0]


def test_rotated_ego_frame_and_single_sightings() -> None:
    """Boxes are in the rear-axle frame: a box 10 m ahead of an ego heading north is 10 m north; a
    track seen in one frame only is one state (held by the env over the horizon, as NAVSIM does)."""

    def frame(k: int, boxes: list[list[float]], tokens: list[str]) -> dict:
        return {
            "ego2global_translation": [100.0, 200.0 + 5 * k, 0.0],
            "ego2global_rotation": [math.cos(math.pi / 4), 0.0, 0.0, math.sin(math.pi / 4)],
            "anns": {
                "gt_boxes": np.array(boxes, dtype=np.float32).reshape(-1, 7),
                "gt_names": np.array(["vehicle"] * len(boxes)),
                "gt_velocity_3d": np.array([[3.0, 0.0, 0.0]] * len(boxes), dtype=np.float32).reshape(-1, 3),
                "track_tokens": np.array(tokens),
            },
        }

    tracks = {
        a["token"]: a
        for a in _agent_tracks([frame(0, [[10, 0, 0, 4, 2, 1.5, 0]], ["a"]), frame(1, [[10, 0, 0, 4, 2, 1.5, 0], [5, 1, 0, 4, 2, 1.5, 0]], ["a", "b"])])
    }
    t, x, y, h, vx, vy = tracks["a"]["states"][0]
    assert (x, y) == (pytest.approx(100.0), pytest.approx(210.0)) and h == pytest.approx(math.pi / 2)
    assert (vx, vy) == (pytest.approx(0.0, abs=1e-9), pytest.approx(3.0))
    assert len(tracks["a"]["states"]) == 6
    assert tracks["b"]["states"] == [
        [0.0, pytest.approx(99.0), pytest.approx(210.0), pytest.approx(math.pi / 2), pytest.approx(0.0, abs=1e-9), pytest.approx(3.0)]
    ]


def test_errors_name_the_file(tmp_path: Path, navsim_data: Path) -> None:
    bad = tmp_path / "bad.pkl"
    bad.write_bytes(__import__("pickle").dumps({"not": "a log"}))
    with pytest.raises(ConversionError, match="bad.pkl: not an OpenScene log"):
        read_log(bad)
    with pytest.raises(ConversionError, match="no map location 'sg-one-north'"):
        find_map(navsim_data / "maps", "sg-one-north")


@pytest.mark.parametrize("version", [1, 2])
def test_converted_scenes_are_served_and_scored(scenes: Path, version: int) -> None:
    """A real server serves the converted folder (``--data-root``); the logged human drives it cleanly."""
    humans = {token: json.loads((scenes / f"{token}.json").read_text())["human_trajectory"]["poses"] for token in ("tok003", "tok017")}
    assert_humans_drive_cleanly(scenes.parent, "navtest", humans, version)

"""The waypoint controllers against the reference agents' formulas (scripts/waypoint-control/reference_vectors.py)."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest

from gymwire.control import WAYPOINT_CONTROLLERS, WaypointController, WaypointPID

REFERENCE = json.loads((pathlib.Path(__file__).resolve().parents[3] / "test" / "fixtures" / "waypoint-control" / "reference.json").read_text())


def test_the_reference_vectors_cover_every_controller() -> None:
    assert set(WAYPOINT_CONTROLLERS) == set(REFERENCE["expected"])


@pytest.mark.parametrize("name", sorted(WAYPOINT_CONTROLLERS))
def test_matches_the_reference_formulas_tick_by_tick(name: str) -> None:
    for seq in REFERENCE["sequences"]:
        controller = WaypointController(name)
        for i, tick in enumerate(seq["ticks"]):
            got = controller.control(tick["waypoints"], tick["speed"], tick["target"])
            want = REFERENCE["expected"][name][seq["name"]][i]
            assert got == pytest.approx(want, abs=1e-9), f"{seq['name']} tick {i}"


def test_waypoint_pid_batches_one_controller_per_env() -> None:
    seqs = REFERENCE["sequences"][:3]
    pid = WaypointPID(num_envs=3, controller="bench2drive")
    for t in range(10):
        ticks = [s["ticks"][t] for s in seqs]
        out = pid([k["waypoints"] for k in ticks], [k["speed"] for k in ticks], [k["target"] for k in ticks])
        assert out.shape == (3, 3) and out.dtype == np.float32
        for i, s in enumerate(seqs):
            assert out[i] == pytest.approx(np.float32(REFERENCE["expected"]["bench2drive"][s["name"]][t]), abs=1e-6)
    pid.reset()
    first = seqs[0]["ticks"][0]
    assert pid.control(first["waypoints"], first["speed"], first["target"]) == pytest.approx(
        np.float32(REFERENCE["expected"]["bench2drive"][seqs[0]["name"]][0]), abs=1e-6
    )


def test_refuses_unknown_names_short_inputs_and_a_missing_target() -> None:
    with pytest.raises(ValueError, match="unknown waypoint controller 'tcp'"):
        WaypointController("tcp")
    with pytest.raises(ValueError, match="at least 2 waypoints"):
        WaypointController().control([[1.0, 0.0]], 0.0, [5.0, 0.0])
    with pytest.raises(ValueError, match="target point"):
        WaypointController().control([[1.0, 0.0], [2.0, 0.0]], 0.0)
    assert WaypointController("transfuser").control([[1.0, 0.0], [2.0, 0.0]], 0.0) == (0.75, 0.0, 0.0)

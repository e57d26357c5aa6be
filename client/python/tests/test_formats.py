"""gymwire.formats without LeRobot or Minari installed (the SDK's default test venv): the frame mapping,
the env families, and the error that names the pip extra. tests/datasets_suite.py (scripts/test-datasets.sh)
loads the written datasets with the real libraries."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from gymnasium import spaces as gs

from gymwire.formats import FORMATS, MissingExtraError, open_writer, require
from gymwire.formats.mapping import FrameLayout, family_of


def test_layout_splits_cameras_task_and_state() -> None:
    obs_space = gs.Dict(
        {
            "cam": gs.Box(0, 255, (16, 24, 3), np.uint8),
            "history": gs.Box(0, 255, (4, 16, 24, 3), np.uint8),
            "state": gs.Box(-1, 1, (2, 2), np.float32),
            "command": gs.Discrete(8, start=-1),
            "task_description": gs.Text(64),
        }
    )
    layout = FrameLayout.of(obs_space, gs.Box(-1, 1, (2, 3), np.float32))
    assert [n for n, _ in layout.cameras] == ["cam", "history"] and layout.camera_shapes["history"] == (16, 24, 3)
    # In the space's key order (gymnasium's Dict sorts a plain dict's keys).
    assert layout.state_names == ["command", "state[0,0]", "state[0,1]", "state[1,0]", "state[1,1]"]
    obs = obs_space.sample()
    obs["task_description"] = "pick up the cube"
    np.testing.assert_array_equal(layout.state_of(obs), np.r_[obs["command"], obs["state"].reshape(-1)].astype(np.float32))
    np.testing.assert_array_equal(layout.camera_of(obs, layout.cameras[1][1]), obs["history"][-1])
    assert layout.task_of(obs, {}, "gymwire/X-v0") == "pick up the cube"
    assert len(layout.action_names) == 6


def test_task_falls_back_to_info_then_env_id() -> None:
    layout = FrameLayout.of(gs.Box(-1, 1, (4,), np.float32), gs.Discrete(2))
    assert layout.task_of(np.zeros(4), {"instruction": "balance"}, "gymwire/CartPole-v1") == "balance"
    assert layout.task_of(np.zeros(4), {}, "gymwire/CartPole-v1") == "gymwire/CartPole-v1"


def test_families_by_env_id() -> None:
    assert family_of("gymwire/NavsimEnv-v2").scores == ("pdms", "epdms", "score")
    assert family_of("gymwire/Bench2Drive-v0").fps == 20 and "driving_score" in family_of("gymwire/Bench2Drive-v0").scores
    assert family_of("gymwire/EvacWorldModel-v0").success == "success"
    assert family_of("my/Thing-v0").name == "other"


@pytest.mark.parametrize("format", ["lerobot", "minari"])
def test_missing_library_names_the_extra(format: str, tmp_path) -> None:
    try:
        require(format)
    except MissingExtraError as err:
        assert f"gymwire[{format}]" in str(err)
        with pytest.raises(MissingExtraError):
            open_writer(format, tmp_path / "x-v0", "gymwire/CartPole-v1", gs.Box(-1, 1, (4,)), gs.Discrete(2))
        r = subprocess.run([sys.executable, "-m", "gymwire.formats", "check", format], capture_output=True, text=True)
        assert r.returncode == 3 and f"gymwire[{format}]" in r.stderr
    else:
        pytest.skip(f"{format}'s library is installed here; tests/datasets_suite.py covers it")


def test_unknown_format_is_refused() -> None:
    assert FORMATS == ("arrow", "lerobot", "minari")
    with pytest.raises(ValueError, match="unknown dataset format"):
        require("hdf5")

"""A world model against its simulator (gymwire.compare): the repo's seeded tiny EVAC model served by
a real `gymwire serve`, against real robosuite and Meta-World envs served by the same server's
workers (this venv's Python, scripts/test-sim.sh), through the same first frame and actions.

The metrics are scikit-image's; the first test holds them to Wang et al.'s SSIM written out here
with scipy's Gaussian filter and to PSNR's formula, so a change of scikit-image's defaults shows.
Skipped where robosuite, metaworld or scikit-image is not installed (the default test venv).
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("robosuite")
pytest.importorskip("metaworld")
pytest.importorskip("skimage")

from conftest import ServerProcess, sessions_left  # noqa: E402
from scipy.ndimage import gaussian_filter  # noqa: E402

import gymwire  # noqa: E402
from gymwire.compare import action_rows, compare_envs  # noqa: E402
from gymwire.compare.metrics import psnr, resize_frame, ssim  # noqa: E402
from gymwire.errors import InvalidOptionsError  # noqa: E402

pytestmark = pytest.mark.timeout(600)


def wang_ssim(a: np.ndarray, b: np.ndarray) -> float:
    """Wang et al. 2004: Gaussian-weighted local statistics (sigma 1.5, 11-pixel window), K1 0.01,
    K2 0.03, L 255; the map averaged away from the borders the window overhangs, then over channels."""
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    out = []
    for ch in range(3):
        x, y = a[..., ch].astype(np.float64), b[..., ch].astype(np.float64)

        def blur(v: np.ndarray) -> np.ndarray:
            return gaussian_filter(v, sigma=1.5, truncate=3.5, mode="reflect")

        mx, my = blur(x), blur(y)
        vx, vy, cxy = blur(x * x) - mx * mx, blur(y * y) - my * my, blur(x * y) - mx * my
        s = ((2 * mx * my + c1) * (2 * cxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
        out.append(s[5:-5, 5:-5].mean())
    return float(np.mean(out))


def test_metrics_are_wang_ssim_and_psnr() -> None:
    rng = np.random.default_rng(0)
    clean = rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)
    clean = np.asarray(gaussian_filter(clean.astype(float), sigma=(2, 2, 0)), np.uint8)  # some structure to keep
    assert psnr(clean, clean) is None and ssim(clean, clean) == 1.0
    last = 1.0
    for level in (4, 16, 48):
        noisy = np.clip(clean.astype(int) + rng.integers(-level, level + 1, clean.shape), 0, 255).astype(np.uint8)
        mse = np.mean((clean.astype(float) - noisy.astype(float)) ** 2)
        assert psnr(noisy, clean) == pytest.approx(10 * np.log10(255**2 / mse), rel=1e-9)
        value = ssim(noisy, clean)
        assert value == pytest.approx(wang_ssim(noisy, clean), abs=1e-9)
        assert value < last
        last = value
    with pytest.raises(ValueError, match=r"both be \[H, W, 3\]"):
        ssim(clean, clean[:32])
    # Resizing: shrinking keeps a flat colour exactly, and a frame of the size asked is kept as it is.
    flat = np.full((224, 224, 3), (200, 30, 90), np.uint8)
    assert (resize_frame(flat, 64, 64) == flat[:64, :64]).all()
    assert resize_frame(clean, 64, 64) is not None and np.array_equal(resize_frame(clean, 64, 64), clean)


def test_compare_command_robosuite_against_evac(sim_server: ServerProcess, tmp_path) -> None:
    report_path = tmp_path / "report.json"
    cmd = [
        sys.executable,
        "-m",
        "gymwire.compare",
        "--url",
        sim_server.url,
        "--world-model",
        "gymwire/EvacWorldModel-v0",
        "--world-model-kwargs",
        json.dumps({"resolution": 128, "return_all_frames": True}),
        "--simulator",
        "robosuite/Lift-v0",
        "--simulator-kwargs",
        json.dumps({"image_size": 128, "flip_images": True}),
        "--simulator-image",
        "agentview_image",
        "--chunks",
        "1",
        "--seed",
        "3",
        "--json",
        str(report_path),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads(report_path.read_text())
    # The table on stdout has a row per frame and the summary.
    lines = done.stdout.strip().splitlines()
    assert lines[0].split()[:4] == ["step", "chunk", "PSNR", "dB"] and len(lines) == 2 + 9 + 2 and lines[-1].startswith("8 frames: mean PSNR")

    assert report["world_model"]["env_id"] == "gymwire/EvacWorldModel-v0" and report["simulator"]["env_id"] == "robosuite/Lift-v0"
    assert report["frame_shape"] == [128, 128, 3] and report["simulator_frame_shape"] == [128, 128, 3] and report["chunk"] == 8
    steps = report["steps"]
    # Row 0: the world model started from the simulator's own first frame.
    assert steps[0] == {"step": 0, "chunk": None, "psnr": None, "ssim": 1.0, "simulator_success": False, "world_model_success": None, "success_agrees": None}
    assert [r["step"] for r in steps] == list(range(9)) and [r["chunk"] for r in steps[1:]] == [0] * 8
    for r in steps[1:]:
        assert 0 < r["psnr"] < 60 and -1 <= r["ssim"] < 1
        # The tiny model imagines its own tabletop, not robosuite's: the frames differ, as the numbers say.
        assert isinstance(r["simulator_success"], bool) and isinstance(r["world_model_success"], bool)
        assert r["success_agrees"] == (r["simulator_success"] == r["world_model_success"])
    summary = report["summary"]
    assert summary["frames"] == 8 and summary["ended"] == "actions exhausted"
    assert summary["mean_ssim"] == pytest.approx(np.mean([r["ssim"] for r in steps[1:]]))
    assert summary["success_agreement"] == pytest.approx(np.mean([r["success_agrees"] for r in steps[1:]]))
    assert report["methods"]["ssim"].startswith("Wang et al. 2004")


def test_compare_metaworld_resized_is_deterministic(sim_server: ServerProcess) -> None:
    with gymwire.Client(sim_server.url) as client:
        world_model = client.make("gymwire/EvacWorldModel-v0", resolution=64)
        simulator = client.make("metaworld/MT1-v3", task="reach-v3", image_size=128)
        try:
            with pytest.raises(ValueError, match="the simulator takes 4 action values and is given 7"):
                compare_envs(world_model, simulator, simulator_image="image", chunks=1, seed=5)
            # Meta-World's action is x, y, z and the gripper: EVAC's columns 0, 1, 2 and 6.
            columns = [0, 1, 2, 6]
            first = compare_envs(world_model, simulator, simulator_image="image", chunks=2, seed=5, simulator_action_columns=columns)
            again = compare_envs(world_model, simulator, simulator_image="image", chunks=2, seed=5, simulator_action_columns=columns)
            rows = action_rows(world_model, simulator, 16, 5, columns)
        finally:
            world_model.close()
            simulator.close()
    # Frames resized 128 -> 64; without all frames in the step info, one frame per chunk (its last).
    assert first.frame_shape == (64, 64, 3) and first.simulator_frame_shape == (128, 128, 3)
    assert [r.step for r in first.rows] == [0, 8, 16] and first.rows[0].ssim == 1.0
    # The same seed, the same report: same actions, same simulated and imagined frames.
    assert first.as_dict() == again.as_dict()
    assert first.as_dict()["simulator_action_columns"] == columns
    # The actions come from the seed and lie within both envs' bounds.
    assert rows.shape == (16, 7) and rows.dtype == np.float32 and (np.abs(rows) <= 1).all()
    assert np.array_equal(rows, action_rows(world_model, simulator, 16, 5, columns))


def test_evac_refuses_a_frame_of_another_shape(sim_server: ServerProcess) -> None:
    env = gymwire.make(sim_server.url, "gymwire/EvacWorldModel-v0", resolution=64)
    try:
        with pytest.raises(InvalidOptionsError, match=r"frame must be a uint8 tensor \[64, 64, 3\].*got uint8 \[128, 128, 3\]"):
            env.reset(seed=0, options={"frame": np.zeros((128, 128, 3), np.uint8)})
        with pytest.raises(InvalidOptionsError, match=r"got float32 \[64, 64, 3\]"):
            env.reset(seed=0, options={"frame": np.zeros((64, 64, 3), np.float32)})
        # The session is unharmed: a frame of the right shape starts it.
        frame = np.arange(64 * 64 * 3, dtype=np.uint8).reshape(64, 64, 3)
        obs, info = env.reset(seed=0, options={"frame": frame, "task": "pick up the red cube"})
        assert np.array_equal(obs["full_image"], frame) and obs["task_description"] == "pick up the red cube" and info["given_frame"]
    finally:
        env.close()


def test_sessions_are_closed(sim_server: ServerProcess) -> None:
    assert sessions_left(sim_server.url, wait=30) == 0

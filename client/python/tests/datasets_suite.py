"""gymwire's LeRobot and Minari datasets loaded by the real ``lerobot`` and ``minari`` packages.

Run by scripts/test-datasets.sh in its own venv (LeRobot needs torch); named outside pytest's
test_*.py pattern so the SDK's default run, which has neither library, never collects it. Every
test collects from a live server, writes with :mod:`gymwire.formats`, loads the files with the
other library and compares every mapped field with what was collected.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# minari and LeRobotDataset are imported here, at collection, not inside a test: the first import of
# LeRobot (torch, datasets) takes tens of seconds on a busy 2-core machine.
import minari
import numpy as np
import pytest
from conftest import REPO
from lerobot.datasets.lerobot_dataset import LeRobotDataset
from test_collect import B2D, B2D_KWARGS, NAVSIM, ParityDriver

import gymwire
from gymwire.dataset import EpisodeRecord
from gymwire.formats import open_writer
from gymwire.formats.mapping import FrameLayout, family_of, score_of
from gymwire.policies import make_policy

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # LeRobot must read the local root, never the hub

# Writing encodes video and saves parquet per episode: slower than the SDK's default 120 s per test on a busy machine.
pytestmark = pytest.mark.timeout(300)

EVAC = "gymwire/EvacWorldModel-v0"
EVAC_KWARGS = {"model_dir": "tiny-128", "max_episode_steps": 24}
# AV1 at LeRobot's CRF 30 is lossy: each decoded frame must stay within this PSNR of the original.
MIN_PSNR_DB = 30.0


def _collect(url: str, env_id: str, episodes: int, policy: str = "random", **kwargs: Any) -> tuple[Any, list[EpisodeRecord]]:
    env = gymwire.make_vec(url, env_id, num_envs=2, **kwargs)
    pol = ParityDriver(env_id) if policy == "driver" else make_policy("random", action_space=env.single_action_space, num_envs=2, seed=0)
    records = gymwire.collect(env, pol, episodes=episodes, seed=0, progress=None)
    return env, records


def _write(format: str, out: Path, env: Any, records: list[EpisodeRecord], env_id: str, **kw: Any) -> dict[str, Any]:
    w = open_writer(format, out, env_id, env.single_observation_space, env.single_action_space, **kw)
    for r in records:
        w.add(r)
    return w.close("test")


def _psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


# ---------------------------------------------------------------------------------------------
# LeRobot


def _check_lerobot(root: Path, env_id: str, env: Any, records: list[EpisodeRecord]) -> None:
    ds = LeRobotDataset(f"gymwire/{root.name}", root=root, video_backend="pyav")
    layout = FrameLayout.of(env.single_observation_space, env.single_action_space)
    fam = family_of(env_id)
    assert ds.meta.total_episodes == len(records)
    assert ds.num_frames == sum(len(r.steps) for r in records)
    assert ds.fps == fam.fps
    index = 0
    for e, rec in enumerate(records):
        ep = ds.meta.episodes[e]
        assert ep["episode_index"] == e and ep["length"] == len(rec.steps)
        assert ep["dataset_from_index"] == index and ep["dataset_to_index"] == index + len(rec.steps)
        for t, s in enumerate(rec.steps):
            item = ds[index]
            assert item["episode_index"].item() == e and item["frame_index"].item() == t
            assert item["task"] == layout.task_of(s.obs, s.info, env_id)
            if layout.state:
                np.testing.assert_array_equal(item["observation.state"].numpy(), layout.state_of(s.obs))
            np.testing.assert_array_equal(item["action"].numpy(), layout.action_of(s.action))
            assert item["next.reward"].item() == pytest.approx(s.reward, rel=1e-6)
            assert bool(item["next.terminated"].item()) == s.terminated and bool(item["next.truncated"].item()) == s.truncated
            assert bool(item["next.done"].item()) == (s.terminated or s.truncated)
            assert bool(item["next.done"].item()) == (t == len(rec.steps) - 1)  # episode boundaries
            if fam.success:
                assert bool(item["next.success"].item()) == bool(s.info.get(fam.success, False))
            for key in fam.scores:
                assert item[f"next.{key}"].item() == pytest.approx(score_of(s.info, key), rel=1e-6)
            for name, plan in layout.cameras:
                decoded = (item[f"observation.images.{name}"].numpy().transpose(1, 2, 0) * 255).round().astype(np.uint8)
                assert _psnr(decoded, layout.camera_of(s.obs, plan)) >= MIN_PSNR_DB
            index += 1


def test_lerobot_camera_task_state_and_success_load_in_lerobot(url: str, tmp_path: Path) -> None:
    env, records = _collect(url, EVAC, 3, **EVAC_KWARGS)
    assert any(len(r.steps) > 1 for r in records)
    manifest = _write("lerobot", tmp_path / "evac", env, records, EVAC)
    assert "observation.images.full_image" in manifest["features"] and "next.success" in manifest["features"]
    _check_lerobot(tmp_path / "evac", EVAC, env, records)
    env.close()


def test_lerobot_keeps_navsim_scores(url: str, tmp_path: Path) -> None:
    env, records = _collect(url, NAVSIM, 4, policy="driver")
    assert all(isinstance(r.steps[-1].info["pdms"], (int, float)) for r in records)
    _write("lerobot", tmp_path / "navsim", env, records, NAVSIM)
    _check_lerobot(tmp_path / "navsim", NAVSIM, env, records)
    env.close()


def test_collect_format_lerobot_writes_what_it_collects(url: str, tmp_path: Path) -> None:
    env, records = _collect(url, "gymwire/CartPole-v1", 3)
    pol = make_policy("random", action_space=env.single_action_space, num_envs=2, seed=0)
    manifest = gymwire.collect(env, pol, episodes=3, seed=0, progress=None, out_dir=tmp_path / "cartpole", format="lerobot")
    assert manifest["counts"]["episodes"] == 3
    _check_lerobot(tmp_path / "cartpole", "gymwire/CartPole-v1", env, records)
    env.close()


# ---------------------------------------------------------------------------------------------
# Minari


def _tree_equal(a: Any, b: Any) -> None:
    if isinstance(b, dict):
        assert set(a) == set(b)
        for k in b:
            _tree_equal(a[k], b[k])
    elif isinstance(b, (list, tuple)) and b and isinstance(b[0], str):
        assert list(a) == list(b)
    else:
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def _stack(values: list[Any]) -> Any:
    if isinstance(values[0], dict):
        return {k: _stack([v[k] for v in values]) for k in values[0]}
    if isinstance(values[0], str):
        return values
    return np.stack([np.asarray(v) for v in values])


def _check_minari(datasets_root: Path, dataset_id: str, env_id: str, records: list[EpisodeRecord], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(datasets_root))
    assert dataset_id in minari.list_local_datasets()
    ds = minari.load_dataset(dataset_id)
    fam = family_of(env_id)
    # Minari's own invariants: counts in its metadata, N+1 observations per N steps, every value in its space.
    assert ds.total_episodes == len(records) and ds.total_steps == sum(len(r.steps) for r in records)
    assert len(list(ds.episode_indices)) == len(records)
    for rec, ep in zip(records, ds.iterate_episodes(), strict=True):
        n = len(rec.steps)
        assert len(ep) == n and len(ep.rewards) == n
        _tree_equal(ep.observations, _stack([s.obs for s in rec.steps] + [rec.steps[-1].final_obs]))
        _tree_equal(ep.actions, _stack([s.action for s in rec.steps]))
        for t in range(n + 1):
            assert ds.observation_space.contains(_pick_step(ep.observations, t))
        np.testing.assert_array_equal(ep.rewards, [s.reward for s in rec.steps])
        np.testing.assert_array_equal(ep.terminations, [s.terminated for s in rec.steps])
        np.testing.assert_array_equal(ep.truncations, [s.truncated for s in rec.steps])
        assert [json.loads(x) for x in ep.infos["gymwire_info"][1:]] == [json.loads(json.dumps(gymwire.dataset.to_json_value(s.info))) for s in rec.steps]
        for key in fam.scores:
            np.testing.assert_allclose(ep.infos[key][1:], [score_of(s.info, key) for s in rec.steps])
        meta = next(iter(ds.storage.get_episode_metadata([ep.id])))
        assert meta.get("seed") == rec.seed and meta["gymwire_status"] == rec.status
        for key in fam.scores:
            assert meta[key] == pytest.approx(score_of(rec.steps[-1].info, key))


def _pick_step(obs: Any, t: int) -> Any:
    if isinstance(obs, dict):
        return {k: _pick_step(v, t) for k, v in obs.items()}
    return obs[t]


def test_minari_keeps_navsim_scores_and_loads_in_minari(url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env, records = _collect(url, NAVSIM, 4, policy="driver")
    _write("minari", tmp_path / "gymwire" / "navsim-driver-v0", env, records, NAVSIM, dataset_id="gymwire/navsim-driver-v0")
    _check_minari(tmp_path, "gymwire/navsim-driver-v0", NAVSIM, records, monkeypatch)
    env.close()


def test_bench2drive_driving_score_kept_in_lerobot_and_minari(url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # One short route without background traffic (cameras off, the env's default): the driver finishes it,
    # and the route record's driving score, completion and penalty travel with the last step of each episode.
    env, records = _collect(url, B2D, 2, policy="driver", **B2D_KWARGS)
    assert all(isinstance(r.steps[-1].info["driving_score"], (int, float)) for r in records)
    _write("lerobot", tmp_path / "b2d", env, records, B2D)
    _check_lerobot(tmp_path / "b2d", B2D, env, records)
    _write("minari", tmp_path / "minari" / "gymwire" / "b2d-driver-v0", env, records, B2D, dataset_id="gymwire/b2d-driver-v0")
    _check_minari(tmp_path / "minari", "gymwire/b2d-driver-v0", B2D, records, monkeypatch)
    env.close()


def test_minari_camera_and_task_text(url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env, records = _collect(url, EVAC, 2, **EVAC_KWARGS)
    _write("minari", tmp_path / "evac-random-v0", env, records, EVAC)
    _check_minari(tmp_path, "evac-random-v0", EVAC, records, monkeypatch)
    env.close()


# ---------------------------------------------------------------------------------------------
# gymwire rollout --format, stopped mid-collection


@pytest.mark.parametrize("format", ["minari", "lerobot"])
def test_rollout_stopped_by_sigint_leaves_a_loadable_dataset(url: str, tmp_path: Path, format: str, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "cartpole-random-v0"
    cmd = [
        "node", str(REPO / "bin" / "gymwire.js"), "rollout", "--url", url, "--env", "gymwire/CartPole-v1", "--policy", "random",
        "--sessions", "1", "--episodes", "100000", "--out", str(out), "--format", format, "--no-progress",
    ]  # fmt: skip
    # A process group of its own: Ctrl-C reaches the command and the child it re-runs itself in (bin/reexec.ts).
    proc = subprocess.Popen(
        cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "GYMWIRE_PYTHON": sys.executable}, start_new_session=True
    )
    staging = Path(f"{out}.gymwire-arrow")
    deadline = time.monotonic() + 180
    while not any(staging.glob("steps-*.arrow")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert any(staging.glob("steps-*.arrow")), "the rollout never started writing"
    # The first episodes are written: stop now, so converting what was collected stays short.
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130, stderr[-3000:]
    assert not staging.exists()  # converted, then removed
    if format == "minari":
        monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path))
        ds = minari.load_dataset("cartpole-random-v0")
        assert ds.total_episodes > 0
        assert all(bool(ep.terminations[-1] or ep.truncations[-1]) for ep in ds.iterate_episodes())
    else:
        ds = LeRobotDataset("gymwire/cartpole-random-v0", root=out, video_backend="pyav")
        assert ds.meta.total_episodes > 0 and ds.num_frames > 0
        assert bool(ds[ds.num_frames - 1]["next.done"].item())
    assert "dataset" in stdout


def test_rollout_names_the_extra_when_python_lacks_it(url: str, tmp_path: Path) -> None:
    # A Python without gymwire's source on its path stands for one without the extra.
    cmd = [
        "node",
        str(REPO / "bin" / "gymwire.js"),
        "rollout",
        "--url",
        url,
        "--env",
        "gymwire/CartPole-v1",
        "--episodes",
        "1",
        "--out",
        str(tmp_path / "x"),
        "--format",
        "lerobot",
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=120, env={**os.environ, "GYMWIRE_PYTHON": "/nonexistent/python3"})
    assert proc.returncode != 0
    assert "gymwire[lerobot]" in proc.stderr
    assert not (tmp_path / "x").exists()

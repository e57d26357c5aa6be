"""RLinf (the released package, see requirements-frameworks-rlinf.txt) driving gymwire sessions.

The launcher test runs RLinf's own validate_cfg, Cluster and EnvWorker (init_worker, bootstrap_step,
env_interact_step, env_evaluate_step, finish_rollout) inside a Ray actor, registered only through the
config's Hydra callback and RLINF_EXT_MODULE. The other tests check RemoteGymEnv's semantics against
RLinf's config keys with RLinf's own modules imported in this process.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import rlinf.envs
import torch
from conftest import robosuite_server
from omegaconf import OmegaConf
from ray_start import ATTEMPTS

import gymwire
from gymwire.errors import ConnectFailedError, UnknownEnvError
from gymwire.integrations import rlinf as gw_rlinf
from gymwire.integrations.rlinf import RemoteGymEnv

APP = Path(__file__).parent / "rlinf_app" / "train_env_worker.py"
EVAC = "gymwire/EvacWorldModel-v0"
CARTPOLE = "gymwire/CartPole-v1"
# Starting Ray and RLinf's managers takes minutes on a loaded 2-core machine; it happens once per module.
LAUNCHER_TIMEOUT = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def launcher_report(url: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = tmp_path_factory.mktemp("rlinf")
    env = {k: v for k, v in os.environ.items() if k != "RLINF_EXT_MODULE"}
    env.update(GYMWIRE_URL=url, GYMWIRE_RLINF_OUT=str(out), RAY_DEDUP_LOGS="0")
    proc = subprocess.run([sys.executable, str(APP)], env=env, cwd=out, capture_output=True, text=True, timeout=600)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("GYMWIRE_REPORT ")]
    assert lines, f"RLinf launcher failed (rc {proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
    report = json.loads(lines[-1].split(" ", 1)[1])
    report["exit_code"] = proc.returncode
    report["log"] = proc.stdout + proc.stderr
    return report


@pytest.fixture(scope="module")
def robosuite_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict]]:
    """RLinf's launcher against a server whose workers serve robosuite (the sim venv's Python), with a seeded stand-in VLA."""
    server = robosuite_server()
    try:
        out = tmp_path_factory.mktemp("rlinf-robosuite")
        env = {k: v for k, v in os.environ.items() if k != "RLINF_EXT_MODULE"}
        env.update(GYMWIRE_URL=server.url, GYMWIRE_RLINF_OUT=str(out), GYMWIRE_STANDIN_SEED="5", RAY_DEDUP_LOGS="0")
        # Ray's 30 s wait for its raylet is too short on a loaded 2-core machine (ray_start.py).
        env.setdefault("RAY_raylet_start_wait_time_s", "120")
        for attempt in range(ATTEMPTS):
            proc = subprocess.run(
                [sys.executable, str(APP), "--config-name", "gymwire_robosuite"], env=env, cwd=out, capture_output=True, text=True, timeout=800
            )
            # Ray's own start-up timing out on a loaded machine is retried, as ray_start.init_ray does.
            if "timed out during startup" not in proc.stderr or attempt == ATTEMPTS - 1:
                break
        lines = [line for line in proc.stdout.splitlines() if line.startswith("GYMWIRE_REPORT ")]
        assert lines, f"RLinf launcher failed (rc {proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
        yield server.url, json.loads(lines[-1].split(" ", 1)[1])
    finally:
        server.stop()


def sha256(image: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(image).tobytes()).hexdigest()


@pytest.mark.timeout(1200)
def test_env_worker_runs_a_served_robosuite_task_in_liberos_layout(robosuite_run: tuple[str, dict]) -> None:
    """RLinf's EnvWorker (in its Ray actor) over gymwire sessions of robosuite/Lift-v0: images arrive as
    RLinf's LIBERO env hands them to a policy (uint8 [N, H, W, 3] torch tensors, turned 180 degrees),
    with LIBERO's 8-number state and the instruction; and they are the served task's own frames for
    the reset seeds and actions RLinf used (a direct session replays them)."""
    url, report = robosuite_run
    assert report["probe"]["env_cls"] == "gymwire.integrations.rlinf.RemoteGymEnv"
    boot = report["bootstrap"]
    assert boot["main_images"] == [2, 128, 128, 3] and boot["wrist_images"] == [2, 128, 128, 3]
    assert boot["main_images_dtype"] == "torch.uint8" and boot["main_images_type"] == "Tensor" and boot["states"] == [2, 8]
    steps = report["train"]
    assert len(steps) == 2
    for s in steps:
        assert s["main_images"] == [2, 128, 128, 3] and s["wrist_images"] == [2, 128, 128, 3] and s["states"] == [2, 8]
        assert s["task_descriptions"] == ["pick up the red cube"] * 2
        assert np.asarray(s["rewards"]).shape == (2, 8)
    # The stand-in VLA's actions [N, C * A] went through RLinf's prepare_actions to the sessions: a
    # direct session with RLinf's reset seed and the same actions gives the same bytes.
    for i, seed in enumerate(report["train_reset_ids"]):
        direct = gymwire.make(url, "robosuite/Lift-v0", image_size=128, flip_images=True)
        try:
            obs, _ = direct.reset(seed=int(seed))
            assert sha256(obs["agentview_image"]) == boot["main_images_sha256"][i]
            assert sha256(obs["robot0_eye_in_hand_image"]) == boot["wrist_images_sha256"][i]
            for k, sent in enumerate(report["actions"]):
                for row in np.asarray(sent, dtype=np.float32)[i].reshape(8, 7):
                    obs, *_ = direct.step(row)
                assert sha256(obs["agentview_image"]) == steps[k]["main_images_sha256"][i], f"env {i}, chunk {k}"
                assert sha256(obs["robot0_eye_in_hand_image"]) == steps[k]["wrist_images_sha256"][i]
                np.testing.assert_array_equal(np.asarray(steps[k]["state_values"][i], np.float32), obs["state"])
        finally:
            direct.close()
    assert report["probe"]["eval_resets"] == [1]


@LAUNCHER_TIMEOUT
def test_registration_reaches_the_driver_and_the_ray_actor(launcher_report: dict) -> None:
    probe = launcher_report["probe"]
    assert launcher_report["driver_ext_module"] == "gymwire.integrations.rlinf"  # set by the Hydra callback
    assert probe["pid"] != launcher_report["driver_pid"]
    assert probe["ext_module"] == "gymwire.integrations.rlinf"
    assert probe["get_env_cls_patched"] is True
    assert probe["env_cls"] == "gymwire.integrations.rlinf.RemoteGymEnv"


@LAUNCHER_TIMEOUT
def test_env_worker_interacts_with_chunks_and_auto_resets_once_per_episode(launcher_report: dict) -> None:
    assert launcher_report["bootstrap"]["states"] == [4, 16]
    steps = launcher_report["train"]
    assert len(steps) == 4
    for s in steps:
        assert s["main_images"] == [4, 64, 64, 3] and s["states"] == [4, 16]
        assert {"main_images", "states", "task_descriptions"} <= set(s["obs_keys"])
        assert np.asarray(s["rewards"]).shape == (4, 8)
        assert not np.asarray(s["dones"])[:, :-1].any()  # auto_reset collapses done flags onto the last column
        assert all(isinstance(t, str) and t for t in s["task_descriptions"])
    # 32 frames = max_episode_steps: every episode is cut on the 4th chunk, and RLinf gets its episode metrics.
    last = steps[-1]
    assert np.asarray(last["truncations"])[:, -1].all()
    assert set(last["env_info"]) >= {"success_once", "return", "episode_len", "reward"}
    assert last["env_info"]["episode_len"] == [32, 32, 32, 32]
    ends = sum(np.asarray(s["dones"])[:, -1].astype(int) for s in steps)
    # One reset at init (auto_reset), none in bootstrap, one per finished episode: no double resets.
    assert launcher_report["probe"]["train_resets"] == (1 + ends).tolist()


@LAUNCHER_TIMEOUT
def test_env_worker_evaluates_and_reports_finished_episodes(launcher_report: dict) -> None:
    evals = launcher_report["eval"]
    assert len(evals) == 2
    assert evals[0]["env_info"] == {}
    final = evals[-1]["env_info"]
    assert final["episode_len"] == [16, 16]
    assert final["success_once"] == [False, False] or all(isinstance(x, bool) for x in final["success_once"])
    assert launcher_report["probe"]["eval_resets"] == [1, 1]


@LAUNCHER_TIMEOUT
def test_a_wrong_action_shape_is_a_clear_error_in_the_driver(launcher_report: dict) -> None:
    log = launcher_report["log"]
    assert "GYMWIRE_BAD_ACTION_ACCEPTED" not in log
    assert "ValueError: gymwire: the policy's actions have shape (4, 57), which is not [num_envs, 8 (num_action_chunks), 7 (action_dim)]" in log
    assert launcher_report["exit_code"] != 0


def evaluate(env: RemoteGymEnv, eval_cfg, chunks: int, epochs: int) -> dict[str, list]:
    """RLinf's ``EnvWorker.evaluate`` loop with its own ``env_evaluate_step`` (where RLinf decides which episodes count),
    run on an object holding what those methods read; the policy (a VLA on a GPU) is a stand-in that pushes right.
    ``evaluate`` itself is not called: it talks to the rollout workers over RLinf's channels."""
    from rlinf.workers.env.env_worker import EnvWorker

    gw_rlinf.register()  # what RLINF_EXT_MODULE makes every RLinf worker process do
    worker = types.SimpleNamespace(
        cfg=OmegaConf.create({"env": {"eval": eval_cfg}}),
        model_cfg=OmegaConf.create({"model_type": "mlp_policy", "num_action_chunks": 8, "action_dim": 1}),
        eval_env_list=[env],
        eval_prev_done=[None],
        use_external_reward_model=False,
    )
    metrics: dict[str, list] = {}
    for epoch in range(epochs):
        if not eval_cfg.auto_reset or epoch == 0:  # as EnvWorker.evaluate does
            env.is_start = True
            worker.eval_prev_done[0] = torch.zeros(env.num_envs, dtype=torch.bool)
            env.reset()
        for _ in range(chunks):
            _, env_info = EnvWorker.env_evaluate_step(worker, np.ones((env.num_envs, 8), dtype=np.int64), 0)
            for key, value in env_info.items():
                metrics.setdefault(key, []).extend(value.tolist())
    return metrics


@pytest.mark.parametrize("auto_reset", [False, True], ids=["auto_reset-false", "auto_reset-true"])
def test_eval_counts_episodes_that_end_mid_chunk(url: str, auto_reset: bool) -> None:
    """CartPole pushed right falls after 9 or 10 steps: inside the second chunk of 8. Two eval epochs of 4 chunks."""
    import gc

    from conftest import sessions_left

    eval_cfg = config(url, auto_reset=auto_reset, is_eval=True, max_episode_steps=32, env_type="gymwire")
    env = make(eval_cfg)
    metrics = evaluate(env, eval_cfg, chunks=4, epochs=2)
    lengths = metrics.get("episode_len", [])
    assert lengths and all(0 < n < 32 for n in lengths) and any(n % 8 for n in lengths), metrics  # episodes ending mid-chunk are counted
    assert metrics["return"] == [float(n) for n in lengths]  # reward 1 a step: each return counted once, lengths stop at the end
    if auto_reset:
        assert len(lengths) == int(env.sessions.reset_count.sum()) - 2  # every episode that ended, once (2 resets at start)
    else:
        assert len(lengths) == 2 * 2  # one episode per env per epoch, each counted once
    del env
    gc.collect()  # RLinf's env worker drops its envs without close(): the sessions close anyway
    assert sessions_left(url) == 0


def config(url: str, env_id: str = CARTPOLE, **extra) -> object:
    base = {
        "env_type": "gymwire",
        "group_size": 1,
        "seed": 3,
        "auto_reset": False,
        "ignore_terminations": False,
        "use_fixed_reset_state_ids": False,
        "use_rel_reward": False,
        "reward_coef": 1.0,
        "max_episode_steps": 200,
        "gymwire": {"url": url, "env_id": env_id},
    }
    base.update(extra)
    return OmegaConf.create(base)


def make(cfg, num_envs: int = 2, seed_offset: int = 0, processes: int = 1) -> RemoteGymEnv:
    return RemoteGymEnv(cfg=cfg, num_envs=num_envs, seed_offset=seed_offset, total_num_processes=processes, worker_info=None)


def push(env: RemoteGymEnv, chunk: int, value: int = 1) -> tuple:
    return env.chunk_step(torch.full((env.num_envs, chunk, 1), value, dtype=torch.int64))


def test_register_extends_rlinf_lookups_and_prepare_actions_takes_keywords() -> None:
    gw_rlinf.register()
    from rlinf.envs.action_utils import prepare_actions
    from rlinf.workers.env import env_worker

    assert rlinf.envs.SupportedEnvType("gymwire").value == "gymwire"
    assert env_worker.get_env_cls("gymwire", {}) is RemoteGymEnv
    raw = torch.arange(2 * 4 * 7, dtype=torch.float32).reshape(2, 28)
    out = env_worker.prepare_actions(
        raw_chunk_actions=raw, env_type="gymwire", model_type="mlp_policy", num_action_chunks=4, action_dim=7, policy=None, wm_env_type=None
    )
    assert out.shape == (2, 4, 7) and np.array_equal(out.reshape(2, 28), raw.numpy())
    # Other env types still reach RLinf's own code.
    libero = prepare_actions(
        raw_chunk_actions=np.ones((1, 2, 7), dtype=np.float32), env_type="libero", model_type="openvla_oft", num_action_chunks=2, action_dim=7
    )
    assert libero[0, 0, -1] == -1.0
    assert gw_rlinf.register() == []


def test_reset_consumes_is_start_so_bootstrap_resets_once(url: str) -> None:
    env = make(config(url))
    try:
        env.is_start = True  # what EnvWorker.bootstrap_step does before reset()
        env.reset()
        assert env.is_start is False
        push(env, 3)
        assert env.sessions.reset_count.tolist() == [1, 1]
    finally:
        env.close()


def test_termination_is_not_success_without_a_success_signal(url: str) -> None:
    env = make(config(url))
    try:
        env.reset()
        ended = False
        for _ in range(60):
            _, _, terms, _, infos = push(env, 4)
            if terms.any():
                ended = True
                break
        assert ended, "CartPole pushed one way must fall"
        assert not infos[-1]["episode"]["success_once"].any()
    finally:
        env.close()


def test_max_episode_steps_truncates_and_reward_coef_scales(url: str) -> None:
    env = make(config(url, max_episode_steps=3, reward_coef=2.5))
    try:
        env.reset(reset_state_ids=[5, 5])
        _, r1, _, tr1, _ = push(env, 2, 0)
        _, r2, _, tr2, infos = push(env, 2, 1)
        assert torch.equal(r1, torch.full((2, 2), 2.5))
        assert not tr1.any() and tr2[:, 0].all() and tr2[:, 1].all()  # without auto_reset the end stays on later columns, as LIBERO's does
        assert r2[:, 1].tolist() == [0.0, 0.0]  # a truncated session is not stepped again
        assert infos[-1]["episode"]["episode_len"].tolist() == [3, 3]  # the episode's length, not the columns after its end
    finally:
        env.close()


def test_relative_reward_is_the_change_per_sub_step(url: str) -> None:
    env = make(config(url, use_rel_reward=True, reward_coef=2.0))
    try:
        env.reset()
        _, rewards, _, _, _ = push(env, 3, 0)
        assert rewards.tolist() == [[2.0, 0.0, 0.0], [2.0, 0.0, 0.0]]
    finally:
        env.close()


def test_eval_reset_ids_are_ordered_and_distinct_across_processes(url: str) -> None:
    a = make(config(url, is_eval=True), num_envs=2, seed_offset=0, processes=2)
    b = make(config(url, is_eval=True), num_envs=2, seed_offset=1, processes=2)
    try:
        a.reset()
        b.reset()
        assert a.reset_state_ids.tolist() == [0, 2] and b.reset_state_ids.tolist() == [1, 3]
        a.is_start = True
        a.reset()
        assert a.reset_state_ids.tolist() == [0, 2]  # a new eval epoch replays the same starts
    finally:
        a.close()
        b.close()


def test_specific_reset_id_pins_every_env_to_one_start(url: str) -> None:
    env = make(config(url, specific_reset_id=42), num_envs=3)
    try:
        obs, _ = env.reset()
        assert env.reset_state_ids.tolist() == [42, 42, 42]
        assert torch.equal(obs["states"][0], obs["states"][2])
    finally:
        env.close()


def test_ignore_terminations_runs_every_env_to_the_limit(url: str) -> None:
    env = make(config(url, ignore_terminations=True, max_episode_steps=40))
    try:
        env.reset()
        truncs_seen = []
        for _ in range(10):
            _, _, terms, truncs, infos = push(env, 4)
            assert not terms.any()
            truncs_seen.append(truncs[:, -1])
        assert truncs_seen[-1].all() and not torch.stack(truncs_seen[:-1]).any()
        assert "success_at_end" in infos[-1]["episode"]
    finally:
        env.close()


def test_unknown_env_id_and_a_down_server_are_clear_errors(url: str) -> None:
    with pytest.raises(UnknownEnvError, match="NoSuchEnv"):
        make(config(url, env_id="gymwire/NoSuchEnv-v0"))
    with pytest.raises(ConnectFailedError):
        make(config("ws://127.0.0.1:9", gymwire={"url": "ws://127.0.0.1:9", "env_id": CARTPOLE, "client_options": {"connect_timeout": 2}}))
    with pytest.raises(ValueError, match="gymwire.url"):
        make(OmegaConf.create({"gymwire": {}}))


def test_world_model_success_comes_from_its_success_info(url: str) -> None:
    env = make(config(url, env_id=EVAC, max_episode_steps=None), num_envs=2)
    try:
        env.reset()
        _, rewards, terms, _, infos = env.chunk_step(torch.zeros((2, 8, 7)))
        success = np.array([bool(np.asarray(s).any()) for s in infos[-1]["success"]])
        assert rewards.shape == terms.shape == (2, 8)
        assert infos[-1]["episode"]["success_once"].numpy().tolist() == success.tolist()
    finally:
        env.close()


@pytest.mark.timeout(400)
def test_example_runs_rlinf_code(url: str) -> None:
    example = Path(__file__).resolve().parents[4] / "examples" / "python" / "rlinf_env.py"
    out = subprocess.run([sys.executable, str(example)], capture_output=True, text=True, timeout=300, env={**os.environ, "GYMWIRE_URL": url})
    assert out.returncode == 0, f"{out.stdout[-2000:]}\n{out.stderr[-3000:]}"

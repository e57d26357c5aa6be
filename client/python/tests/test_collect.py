"""gymwire.collect and vector autoreset against a live server with the built-in driving envs.

Sessions that end at different ticks, terminal infos on every episode's last row in every
autoreset mode, exactly the requested episodes run to their end (cut ones marked), the policy
contract (ActContext, episode_start, extras), and parity with the TypeScript rollout engine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import REPO
from recorded import recorded_episodes

import gymwire
from gymwire.dataset import episodes_to_arrays, load_dataset, to_json_value
from gymwire.policies import ActContext, PolicyOutput
from gymwire.vector import batch_infos

B2D = "gymwire/Bench2Drive-v0"
NAVSIM = "gymwire/NavsimEnv-v1"
# A short route without background traffic keeps Bench2Drive episodes to a few hundred ticks.
B2D_KWARGS = {"route": "HighwayCutIn_0", "background_vehicles": 0}
MODES = ["next_step", "same_step", "disabled"]


# Mirrors client/python/tests/ts/collect.ts (same arithmetic in the same order, so actions are bit-identical).
def bench2drive_action(target_x: float, target_y: float, speed: float) -> list[float]:
    return [0.6 if speed < 5 else 0.0, min(1.0, max(-1.0, (-0.8 * target_y) / max(target_x, 2.0))), 0.0]


def navsim_trajectory(speed: float, command: list[int]) -> list[float]:
    out: list[float] = []
    for k in range(8):
        out += [(k + 1) * 0.5 * max(speed, 1.0), 0.02 * (k + 1) * (command[0] - command[2]), 0.0]
    return out


class ParityDriver:
    """The deterministic driver of collect.ts; records what collect hands it."""

    name = "parity-driver"

    def __init__(self, env_id: str) -> None:
        self.bench2drive = "Bench2Drive" in env_id
        self.contexts: list[ActContext] = []
        self.starts: list[tuple[int, str, dict[str, Any]]] = []

    def episode_start(self, env_index: int, session_id: str, info: dict[str, Any]) -> None:
        self.starts.append((env_index, session_id, info))

    def act(self, obs: Any, ctx: ActContext | None = None) -> PolicyOutput:
        assert ctx is not None
        self.contexts.append(ctx)
        n = len(ctx.session_ids)
        if self.bench2drive:
            tp, speed = obs["target_point"], obs["speed"]
            speeds = np.array([float(speed[i, 0]) for i in range(n)])
            actions = np.array([bench2drive_action(float(tp[i, 0]), float(tp[i, 1]), speeds[i]) for i in range(n)], np.float32)
            return PolicyOutput(actions=actions, extras={"aim": np.asarray(tp, np.float32), "speed": speeds})
        status, cmd = obs["ego_status"], obs["driving_command"]
        speeds = np.array([float(status[i, 3, 3]) for i in range(n)])
        actions = np.array([navsim_trajectory(speeds[i], [int(c) for c in cmd[i]]) for i in range(n)], np.float32).reshape(n, 8, 3)
        return PolicyOutput(actions=actions, extras={"speed": speeds})


# ---------------------------------------------------------------------------------------------
# Vector infos


def test_batch_infos_tolerates_null_versus_dict_in_any_order() -> None:
    reset = {"status": "Running", "metric_info": None, "tick": 0}
    step = {"status": "Running", "metric_info": {"speed": 3.5, "ok": True}, "tick": 7, "score": 0.5}
    for order in ([reset, step], [step, reset]):
        infos = batch_infos(order, 2)
        dict_at = 0 if order[0] is step else 1
        assert isinstance(infos["metric_info"], dict)
        assert infos["_metric_info"].tolist() == [dict_at == 0, dict_at == 1]
        assert infos["metric_info"]["speed"][dict_at] == 3.5 and infos["metric_info"]["_speed"].tolist() == infos["_metric_info"].tolist()
        assert infos["tick"].dtype == np.int64 and sorted(infos["tick"].tolist()) == [0, 7]
    # int in one env and float in another: one float64 array, nothing truncated.
    mixed = batch_infos([{"x": 1}, {"x": 2.5}], 2)
    assert mixed["x"].dtype == np.float64 and mixed["x"].tolist() == [1.0, 2.5]


@pytest.mark.parametrize("mode", MODES)
def test_bench2drive_vector_env_survives_sessions_ending_at_different_ticks(url: str, mode: str) -> None:
    # Session 1 brakes and never finishes in the window; session 0 drives and ends on its own tick.
    envs = gymwire.make_vec(url, B2D, num_envs=2, autoreset_mode=mode, **B2D_KWARGS)
    try:
        obs, infos = envs.reset(seed=0)
        assert infos["metric_info"].tolist() == [None, None]  # no env has a dict yet: Gymnasium's object array
        ended_at, ended_info = None, None
        for t in range(2000):
            a0 = bench2drive_action(float(obs["target_point"][0, 0]), float(obs["target_point"][0, 1]), float(obs["speed"][0, 0]))
            actions = np.array([a0, [0.0, 0.0, 1.0]], np.float32)
            if ended_at is not None and mode == "disabled":
                break
            obs, rewards, terms, truncs, infos = envs.step(actions)
            assert infos["_status"].all()
            if terms[0] or truncs[0]:
                ended_at = t
                ended_info = infos["final_info"] if mode == "same_step" else infos
                if mode != "next_step":
                    break
            elif ended_at is not None:  # next_step: the step after the end is the reset
                assert infos["status"][0] == "Running" and infos["_metric_info"].tolist() == [False, True]
                break
        assert ended_at is not None and ended_at > 0
        assert ended_info is not None and ended_info["status"][0] != "Running"
        assert 0 <= float(ended_info["driving_score"][0]) <= 100
        assert not terms[1] and not truncs[1] and infos["status"][1] == "Running"
    finally:
        envs.close()


# ---------------------------------------------------------------------------------------------
# collect


@pytest.mark.parametrize("mode", MODES)
def test_every_navsim_row_keeps_its_own_pdms_in_every_mode(url: str, tmp_path: Path, mode: str) -> None:
    envs = gymwire.make_vec(url, NAVSIM, num_envs=3, autoreset_mode=mode)
    try:
        manifest = gymwire.collect(envs, ParityDriver(NAVSIM), episodes=8, out_dir=tmp_path, seed=0)
    finally:
        envs.close()
    ds = load_dataset(tmp_path)
    infos = ds.column("info")
    assert manifest["counts"] == {"steps": 8, "episodes": 8, "terminated": 8, "truncated": 0, "incomplete": 0, "discarded": 0}
    assert all(isinstance(i["pdms"], (int, float)) and 0 <= i["pdms"] <= 1 for i in infos)
    # Reward is the scene's PDMS: the row's info belongs to the row's own step.
    assert [i["pdms"] for i in infos] == pytest.approx(ds.steps.column("reward").to_pylist())
    assert len({i["scene_token"] for i in infos}) == 8


@pytest.mark.parametrize("mode", MODES)
def test_bench2drive_episodes_end_with_their_own_driving_score(url: str, mode: str) -> None:
    envs = gymwire.make_vec(url, B2D, num_envs=2, autoreset_mode=mode, **B2D_KWARGS)
    try:
        policy = ParityDriver(B2D)
        episodes = gymwire.collect(envs, policy, episodes=3, seed=0)
    finally:
        envs.close()
    assert isinstance(episodes, list) and len(episodes) == 3
    for ep in episodes:
        last = ep.steps[-1]
        assert ep.status in ("terminated", "truncated") and (last.terminated or last.truncated)
        assert last.info["status"] != "Running" and isinstance(last.info["driving_score"], (int, float))
        assert all(s.info["status"] == "Running" for s in ep.steps[:-1])
        assert last.final_obs is not None and set(last.final_obs) == set(ep.steps[0].obs)
    # One episode_start per episode, each before the act that sees the episode's first obs.
    assert len(policy.starts) == 3
    assert sorted(ep.seed for ep in episodes if ep.seed is not None) == [0, 1]


def test_collect_finishes_what_it_starts_and_marks_a_cut(url: str, tmp_path: Path) -> None:
    envs = gymwire.make_vec(url, "gymwire/CartPole-v1", num_envs=4)
    try:
        policy = gymwire.make_policy("random", action_space=envs.single_action_space, num_envs=4, seed=3)
        manifest = gymwire.collect(envs, policy, episodes=10, out_dir=tmp_path / "all", seed=0)
        assert manifest["counts"]["episodes"] == 10 and manifest["counts"]["terminated"] + manifest["counts"]["truncated"] == 10
        assert manifest["counts"]["discarded"] == 0 and manifest["counts"]["incomplete"] == 0
        ids = sorted(load_dataset(tmp_path / "all").episodes.column("episode_id").to_pylist())
        assert ids == list(range(10))
        cut = gymwire.collect(envs, policy, episodes=10, out_dir=tmp_path / "cut", seed=0, max_steps=30)
    finally:
        envs.close()
    table = load_dataset(tmp_path / "cut").episodes
    assert cut["counts"]["incomplete"] >= 1 and cut["counts"]["discarded"] == 0
    incomplete = [r for r in table.to_pylist() if r["status"] == "incomplete"]
    assert incomplete and all(r["reason"] == "max_steps reached" for r in incomplete)
    assert cut["counts"]["steps"] <= 30 + 4


def test_context_hooks_and_extras_reach_the_policy_and_the_dataset(url: str, tmp_path: Path) -> None:
    envs = gymwire.make_vec(url, B2D, num_envs=2, autoreset_mode="same_step", **B2D_KWARGS)
    try:
        policy = ParityDriver(B2D)
        gymwire.collect(envs, policy, episodes=3, out_dir=tmp_path, seed=0, groups=1)
        sessions = envs.remote.session_ids
    finally:
        envs.close()
    ds = load_dataset(tmp_path)
    assert ds.manifest["columns"]["extras/aim"] == {"encoding": "raw", "dtype": "float32", "shape": [2]}
    assert ds.manifest["columns"]["extras/speed"] == {"encoding": "raw", "dtype": "float64", "shape": []}
    arrays = episodes_to_arrays(ds)
    assert arrays["extras/aim"].shape[:2] == arrays["mask"].shape
    np.testing.assert_array_equal(ds.column("extras/aim"), ds.column("obs.target_point"))
    np.testing.assert_array_equal(ds.column("extras/speed"), ds.column("obs.speed")[:, 0].astype(np.float64))
    # Contexts: session ids of the envs acted for, their latest infos, episode starts exactly at starts.
    first = policy.contexts[0]
    assert first.session_ids == sessions and first.episode_starts.tolist() == [True, True]
    assert all(i["status"] == "Running" and i["metric_info"] is None for i in first.infos)
    assert not policy.contexts[1].episode_starts.any() and policy.contexts[1].infos[0]["metric_info"] is not None
    restarts = sum(int(c.episode_starts.sum()) for c in policy.contexts)
    assert restarts == len(policy.starts) == 3
    assert [s[:2] for s in policy.starts[:2]] == [(0, sessions[0]), (1, sessions[1])]


def test_one_argument_policies_keep_working(url: str) -> None:
    class Old:
        def act(self, obs: Any) -> PolicyOutput:
            return PolicyOutput(actions=np.zeros(len(obs), np.int64))

    env = gymwire.make(url, "gymwire/CartPole-v1")
    try:
        episodes = gymwire.collect(env, Old(), episodes=2, seed=0)
    finally:
        env.close()
    assert [ep.status for ep in episodes] == ["terminated", "terminated"]


# ---------------------------------------------------------------------------------------------
# Parity with the TypeScript rollout


def _ts_collect(url: str, env_id: str, out: Path, episodes: int, sessions: int, groups: int, kwargs: dict[str, Any]) -> dict[str, Any]:
    tsx = REPO / "node_modules" / ".bin" / "tsx"
    if not tsx.exists():
        pytest.fail("node_modules/.bin/tsx is missing: run npm ci at the repository root")
    cmd = [str(tsx), str(REPO / "client/python/tests/ts/collect.ts"), url, env_id, str(out), str(episodes), str(sessions), "0", str(groups), json.dumps(kwargs)]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("env_id", "kwargs", "metric", "episodes", "sessions"),
    [(NAVSIM, {}, "pdms", 12, 4), (B2D, B2D_KWARGS, "driving_score", 4, 2)],
)
def test_python_and_typescript_collect_the_same_episodes(
    url: str, tmp_path: Path, env_id: str, kwargs: dict[str, Any], metric: str, episodes: int, sessions: int
) -> None:
    # Lock-step on both sides (groups=1): which session starts which episode then follows one fixed order.
    ts_summary = _ts_collect(url, env_id, tmp_path / "ts", episodes, sessions, 1, kwargs)
    envs = gymwire.make_vec(url, env_id, num_envs=sessions, **kwargs)
    try:
        manifest = gymwire.collect(envs, ParityDriver(env_id), episodes=episodes, out_dir=tmp_path / "py", seed=0, groups=1)
    finally:
        envs.close()
    ts_manifest = json.loads((tmp_path / "ts" / "dataset.json").read_text())
    assert ts_summary["discarded"] == 0 and ts_manifest["counts"] == manifest["counts"]
    assert manifest["counts"]["episodes"] == episodes and manifest["counts"]["discarded"] == 0 and manifest["counts"]["incomplete"] == 0
    py, ts = recorded_episodes(tmp_path / "py"), recorded_episodes(tmp_path / "ts")
    assert sorted(py) == sorted(ts) == list(range(episodes))
    for e in range(episodes):
        a, b = py[e], ts[e]
        for key in ("status", "steps", "seed", "session_index", "return"):
            assert a[key] == b[key], f"episode {e}: {key} {a[key]} != {b[key]}"
        assert to_json_value(a["terminal"]) == to_json_value(b["terminal"]), f"episode {e}: terminal infos differ"
        assert isinstance(a["terminal"][metric], (int, float))
        np.testing.assert_array_equal(a["actions"], b["actions"])
        np.testing.assert_array_equal(a["rewards"], b["rewards"])
        assert a["extras"].keys() == b["extras"].keys() and a["extras"]
        for k in a["extras"]:
            np.testing.assert_array_equal(a["extras"][k], b["extras"][k])


def test_pipelined_groups_record_the_same_episodes_as_lock_step(url: str) -> None:
    class Balance:
        """Pushes towards where the pole falls; records its batch sizes."""

        def __init__(self) -> None:
            self.batch_sizes: list[int] = []

        def act(self, obs: Any, ctx: ActContext | None = None) -> PolicyOutput:
            self.batch_sizes.append(len(obs))
            return PolicyOutput(actions=(obs[:, 2] + 0.3 * obs[:, 3] > 0).astype(np.int64))

    envs = gymwire.make_vec(url, "gymwire/CartPole-v1", num_envs=4)
    try:
        runs = {}
        for groups in (1, 2):
            policy = Balance()
            eps = gymwire.collect(envs, policy, episodes=4, seed=11, groups=groups)
            runs[groups] = sorted((ep.seed, len(ep.steps), [float(s.reward) for s in ep.steps], np.stack([s.obs for s in ep.steps]).tobytes()) for ep in eps)
            assert max(policy.batch_sizes) == 4 // groups
    finally:
        envs.close()
    assert runs[1] == runs[2]


def test_collect_shows_a_progress_bar_on_a_terminal(url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A person collecting at a terminal sees the episodes counted; piped output stays clean."""
    import io

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    envs = gymwire.make_vec(url, "gymwire/CartPole-v1", num_envs=2)
    policy = gymwire.make_policy("random", action_space=envs.single_action_space, num_envs=2, seed=0)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    gymwire.collect(envs, policy, episodes=6, out_dir=tmp_path / "bar", seed=0)
    assert "collecting into" in terminal.getvalue() and "6/6" in terminal.getvalue()
    piped = io.StringIO()
    monkeypatch.setattr(sys, "stderr", piped)
    gymwire.collect(envs, policy, episodes=3, out_dir=tmp_path / "quiet", seed=0)
    assert piped.getvalue() == ""
    envs.close()

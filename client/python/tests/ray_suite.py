"""gymwire.ray on a real two-node Ray cluster started on this machine (scripts/test-ray.sh runs this).

The cluster is ``ray start --head --block`` plus a second raylet joined with ``ray start --address
--block`` (each with one CPU and its own custom resource, a small object store, token auth with a
token made for the run); both are child processes of this test, ended when it finishes. Servers are
real ``gymwire serve`` processes under Ray actors, found through ``GYMWIRE_BIN`` as a node would.
Named outside pytest's test_*.py pattern so the SDK's own run (whose venv has no Ray) skips it.
"""

from __future__ import annotations

import os
import random
import re
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

# Token auth for the test cluster (Ray's default for `ray start`). Ray reads these when it is
# imported, so they are set before the import, for this process and the `ray start` children alike.
os.environ.setdefault("RAY_AUTH_MODE", "token")
os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(16))

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import ray  # noqa: E402

import gymwire  # noqa: E402
from gymwire.ray import GymwireCommandNotFoundError, ServerLostError, ServerPool, find_gymwire_command, plan_placement  # noqa: E402
from gymwire.ray.server import fetch_health, http_url_of  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
RAY = str(Path(sys.executable).with_name("ray"))
ENV_ID = "gymwire/CartPole-v1"


def _free_port() -> int:
    # Below the kernel's ephemeral range (where Ray's own components and every outgoing connection
    # take ports) and above Ray's worker ports (10002-19999), so the head's port stays free until used.
    while True:
        port = random.randrange(20000, 30000)
        with socket.socket() as s:
            try:
                s.bind(("0.0.0.0", port))
            except OSError:
                continue
            return port


class RayCluster:
    """A head node and one worker node, each a blocking ``ray start`` child process."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.temp_dir = tempfile.mkdtemp(prefix="gwray")  # short: Ray puts Unix sockets under it
        self.env = {
            **os.environ,
            # Every node finds the server command the documented way.
            "GYMWIRE_BIN": shlex.join(["node", str(REPO / "bin" / "gymwire.js")]),
            "RAY_USAGE_STATS_ENABLED": "0",
        }
        self.env.pop("RAY_ADDRESS", None)
        common = ["--block", "--num-cpus=1", "--object-store-memory=80000000", "--disable-usage-stats"]
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []
        self._start(
            "head",
            [RAY, "start", "--head", f"--port={self.port}", "--include-dashboard=false", f"--temp-dir={self.temp_dir}", *common, '--resources={"node_a": 1}'],
        )
        self._start("worker", [RAY, "start", f"--address={self.address}", *common, '--resources={"node_b": 1}'])

    def _start(self, name: str, argv: list[str], timeout: float = 120) -> None:
        log = Path(self.temp_dir) / f"ray-start-{name}.log"
        self.logs.append(log)
        with open(log, "wb") as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        self.procs.append(proc)
        deadline = time.monotonic() + timeout
        while "Ray runtime started" not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                output = log.read_text(errors="replace")[-3000:]
                self.stop()
                raise RuntimeError(f"ray start ({name}) failed:\n{output}")
            time.sleep(0.5)

    def stop(self) -> None:
        # Worker first, then head; `ray start --block` ends the processes it started when terminated.
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, 9)
                    proc.wait(10)
        shutil.rmtree(self.temp_dir, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    for attempt in range(3):
        try:
            c = RayCluster()
            break
        except RuntimeError:
            if attempt == 2:
                raise  # a port taken between choosing and binding is retried; three failures are not that
    saved = {k: os.environ.get(k) for k in ("GYMWIRE_BIN",)}
    os.environ.update({k: c.env[k] for k in saved})
    try:
        ray.init(address=c.address, logging_level="warning", log_to_driver=False)
        deadline = time.monotonic() + 60
        while len([n for n in ray.nodes() if n["Alive"]]) < 2:
            assert time.monotonic() < deadline, f"the worker node did not join: {ray.nodes()}"
            time.sleep(0.5)
        yield c
    finally:
        if ray.is_initialized():
            ray.shutdown()
        c.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _nodes_by_resource() -> dict[str, str]:
    return {r: n["NodeID"] for n in ray.nodes() if n["Alive"] for r in n["Resources"] if r.startswith("node_")}


def _wait_new_incarnation(pool: ServerPool, index: int, before: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while pool.servers[index]["incarnation"] == before:
        assert time.monotonic() < deadline, "the pool did not reconnect to the restarted server"
        time.sleep(0.2)


# -- placement and the command lookup: no cluster needed ---------------------------------------

NODES = [
    {"NodeID": "a", "Alive": True, "Resources": {"CPU": 4.0}},
    {"NodeID": "b", "Alive": True, "Resources": {"CPU": 4.0, "GPU": 1.0}},
    {"NodeID": "c", "Alive": False, "Resources": {"CPU": 4.0, "GPU": 1.0}},
    {"NodeID": "d", "Alive": True, "Resources": {"CPU": 4.0, "GPU": 2.0}},
]


def test_placement_one_per_node_by_default() -> None:
    assert plan_placement(NODES) == ["a", "b", "d"]


def test_placement_n_per_node_and_resource_filter() -> None:
    assert plan_placement(NODES, servers_per_node=2) == ["a", "a", "b", "b", "d", "d"]
    assert plan_placement(NODES, servers_per_node=1, node_resource="GPU") == ["b", "d"]
    assert plan_placement(NODES, num_servers=3, node_resource="GPU") == ["b", "d", "b"]
    assert plan_placement(NODES, num_servers=3) == [None, None, None]
    with pytest.raises(ValueError, match="does not match"):
        plan_placement(NODES, num_servers=4, servers_per_node=1)
    with pytest.raises(ValueError, match="resource 'TPU'"):
        plan_placement(NODES, node_resource="TPU")


def test_find_gymwire_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert find_gymwire_command("node /x/bin/gymwire.js") == ["node", "/x/bin/gymwire.js"]
    monkeypatch.setenv("GYMWIRE_BIN", "node '/opt/my gymwire/bin/gymwire.js'")
    assert find_gymwire_command() == ["node", "/opt/my gymwire/bin/gymwire.js"]
    monkeypatch.delenv("GYMWIRE_BIN")
    # From this checkout (npm install done) the command is its own bin/gymwire.js; the order past it,
    # and the error, are tested without Ray in tests/test_ray_command.py.
    assert find_gymwire_command()[1:] == [str(REPO / "bin" / "gymwire.js")]
    assert issubclass(GymwireCommandNotFoundError, RuntimeError)


def test_the_wheel_carries_gymwire_ray_and_the_ray_extra(tmp_path: Path) -> None:
    """What `pip install "./client/python[ray]"` installs: the gymwire.ray modules and Ray as the extra."""
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "-q", "-w", str(tmp_path), str(REPO / "client" / "python")],
        check=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("gymwire-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        (meta_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = zf.read(meta_name).decode()
    for module in ("__init__", "placement", "pool", "server", "vector"):
        assert f"gymwire/ray/{module}.py" in names
    assert "Provides-Extra: ray" in meta and 'Requires-Dist: ray>=2.40; extra == "ray"' in meta


def test_info_merge_matches_gymnasium_add_info() -> None:
    """Joining two parts' vector infos gives what Gymnasium builds for the whole vector env."""
    import gymnasium as gym

    from gymwire.ray.vector import _InfoMerger

    class Builder(gym.vector.VectorEnv):
        def __init__(self, n: int) -> None:
            self.num_envs = n

    per_env = [{"a": 1}, {}, {"a": 2.5, "b": {"c": True}}, {"b": {"c": False}, "name": "x"}, {"final_obs": np.ones(2)}]
    parts = [(0, 2), (2, 3)]

    def build(n: int, infos: list[dict]) -> dict:
        out: dict = {}
        for i, info in enumerate(infos):
            out = Builder(n)._add_info(out, info, i)
        return out

    whole = build(5, per_env)
    pieces = [(SimpleNamespace(start=start, count=count), build(count, per_env[start : start + count])) for start, count in parts]
    merged = _InfoMerger(5).merge(pieces)  # type: ignore[arg-type]
    assert merged.keys() == whole.keys()
    for key in ("a", "_a", "_b", "name", "_name", "_final_obs"):
        np.testing.assert_array_equal(merged[key], whole[key])
        assert merged[key].dtype == whole[key].dtype
    np.testing.assert_array_equal(merged["b"]["c"], whole["b"]["c"])
    np.testing.assert_array_equal(merged["b"]["_c"], whole["b"]["_c"])
    np.testing.assert_array_equal(merged["final_obs"][4], np.ones(2))
    assert merged["final_obs"][0] is None


# -- on the two-node cluster --------------------------------------------------------------------


def test_one_server_per_node_healthy_and_stepping_like_one_server(cluster: RayCluster) -> None:
    with ServerPool(servers_per_node=1, serve_args=["--log-level", "warn"]) as pool:
        nodes = _nodes_by_resource()
        assert sorted(s["node_id"] for s in pool.servers) == sorted(nodes.values())
        assert len(set(pool.urls)) == 2 and all(u.startswith("ws://") for u in pool.urls)
        health = pool.health()
        assert [h["ok"] for h in health] == [True, True], health
        assert all(h["body"]["status"] == "ok" for h in health)

        envs = pool.make_vec(ENV_ID, num_envs=6)
        assert envs.server_of_env == [0, 0, 0, 1, 1, 1]
        # The same sessions on one server are the reference: equal seeds and actions, equal results.
        reference = gymwire.make_vec(pool.urls[0], ENV_ID, num_envs=6)
        try:
            obs, infos = envs.reset(seed=7)
            ref_obs, _ = reference.reset(seed=7)
            np.testing.assert_array_equal(obs, ref_obs)
            rng = np.random.default_rng(0)
            finished = 0
            for _ in range(60):
                actions = rng.integers(0, 2, size=6)
                got = envs.step(actions)
                want = reference.step(actions)
                for g, w in zip(got[:4], want[:4], strict=True):
                    np.testing.assert_array_equal(g, w)
                finished += int(np.sum(got[2] | got[3]))
            assert finished > 0  # episodes ended and autoreset ran on both servers
            masked_obs, _ = envs.reset(seed=[None, None, None, None, 5, None], options={"reset_mask": np.array([0, 0, 0, 0, 1, 0], bool)})
            assert masked_obs.shape == (6, 4)
        finally:
            reference.close()
            envs.close()


def test_killed_server_fails_its_sessions_fast_and_others_keep_stepping(cluster: RayCluster) -> None:
    with ServerPool(servers_per_node=1, serve_args=["--log-level", "warn"], restart_timeout=60) as pool:
        envs = pool.make_vec(ENV_ID, num_envs=4)
        single = pool.make(ENV_ID, server=0)
        envs.reset(seed=0)
        single.reset(seed=0)
        envs.step(np.zeros(4, dtype=np.int64))
        dead_url = pool.urls[1]
        before = pool.servers[1]["incarnation"]

        ray.kill(pool.actors[1], no_restart=False)
        started = time.monotonic()
        with pytest.raises(ServerLostError) as caught:
            for _ in range(1000):  # the very next step usually raises; never more than a few
                envs.step(np.zeros(4, dtype=np.int64))
                _, _, terminated, truncated, _ = single.step(0)
                if terminated or truncated:
                    single.reset()
        assert time.monotonic() - started < 90, "the lost server was noticed only after a long wait"
        err = caught.value
        assert err.code == "SESSION_LOST"
        assert err.details["env_indices"] == [2, 3] and err.details["server"] == 1
        assert "recreate_sessions=True" in str(err)

        # Later calls raise at once, the server on the other node keeps stepping.
        started = time.monotonic()
        with pytest.raises(ServerLostError):
            envs.step(np.zeros(4, dtype=np.int64))
        assert time.monotonic() - started < 5
        for _ in range(20):
            _, _, terminated, truncated, _ = single.step(0)
            if terminated or truncated:
                single.reset()

        # Ray restarted the actor with a fresh server; the pool is connected to it again.
        _wait_new_incarnation(pool, 1, before)
        assert pool.urls[1] != dead_url
        assert fetch_health(http_url_of(dead_url), timeout=2)["ok"] is False  # the old server did not outlive its actor
        assert [h["ok"] for h in pool.health()] == [True, True]
        fresh = pool.make_vec(ENV_ID, num_envs=4)
        fresh.reset(seed=1)
        fresh.step(np.ones(4, dtype=np.int64))
        fresh.close()


def test_recreate_sessions_reports_truncation_then_autoresets(cluster: RayCluster) -> None:
    with ServerPool(servers_per_node=1, serve_args=["--log-level", "warn"], recreate_sessions=True) as pool:
        envs = pool.make_vec(ENV_ID, num_envs=4)
        obs, _ = envs.reset(seed=3)
        obs, *_ = envs.step(np.zeros(4, dtype=np.int64))
        before = pool.servers[0]["incarnation"]
        old_sessions = envs.session_ids

        ray.kill(pool.actors[0], no_restart=False)
        lost_step = None
        for _ in range(1000):
            result = envs.step(np.zeros(4, dtype=np.int64))
            if "server_lost" in result[4]:
                lost_step = result
                break
            obs = result[0]
        assert lost_step is not None
        step_obs, rewards, terminated, truncated, infos = lost_step
        np.testing.assert_array_equal(truncated[:2], [True, True])
        np.testing.assert_array_equal(infos["_server_lost"], [True, True, False, False])
        np.testing.assert_array_equal(step_obs[:2], obs[:2])  # the last observation seen before the loss
        assert rewards[:2].tolist() == [0.0, 0.0] and not terminated[:2].any()
        assert envs.session_ids[:2] != old_sessions[:2] and envs.session_ids[2:] == old_sessions[2:]
        assert pool.servers[0]["incarnation"] != before

        # next_step autoreset: the following step returns the new sessions' reset observation.
        reset_obs, rewards, terminated, truncated, _ = envs.step(np.zeros(4, dtype=np.int64))
        assert not truncated[:2].any() and rewards[:2].tolist() == [0.0, 0.0]
        assert np.all(np.abs(reset_obs[:2]) <= 0.05)  # CartPole's reset state
        for _ in range(10):
            envs.step(np.ones(4, dtype=np.int64))


def test_node_resource_places_servers_only_on_nodes_that_have_it(cluster: RayCluster) -> None:
    with ServerPool(num_servers=1, node_resource="node_b", serve_args=["--log-level", "warn"]) as pool:
        assert [s["node_id"] for s in pool.servers] == [_nodes_by_resource()["node_b"]]
        env = pool.make(ENV_ID)
        env.reset(seed=0)
        env.step(1)


def test_a_missing_server_command_fails_the_pool_at_once_with_the_reason(cluster: RayCluster) -> None:
    started = time.monotonic()
    with pytest.raises(ray.exceptions.RayActorError, match="could not run /nonexistent/gymwire serve"):
        ServerPool(num_servers=1, gymwire_bin="/nonexistent/gymwire", startup_timeout=60)
    assert time.monotonic() - started < 60  # a failed start is not retried as a crash


def test_shutdown_stops_every_server_and_actor(cluster: RayCluster) -> None:
    pool = ServerPool(num_servers=2, serve_args=["--log-level", "warn"])
    urls, actors = pool.urls, pool.actors
    assert all(h["ok"] for h in pool.health())
    pool.shutdown()
    assert [fetch_health(http_url_of(u), timeout=2)["ok"] for u in urls] == [False, False]
    for actor in actors:
        deadline = time.monotonic() + 60
        while True:  # ray.kill is asynchronous: a call just after it may still be answered
            try:
                ray.get(actor.info.remote(), timeout=30)
            except ray.exceptions.RayActorError:
                break
            assert time.monotonic() < deadline, "the server actor is still alive after shutdown"
            time.sleep(0.5)
    pool.shutdown()  # idempotent


def test_scale_out_doc_script_runs_against_the_cluster(cluster: RayCluster, tmp_path: Path) -> None:
    """The script in docs/scale-out.md, as a user runs it: a plain script whose pool calls ray.init()."""
    doc = (REPO / "docs" / "scale-out.md").read_text()
    blocks = re.findall(r"<!-- tested: scale-out-script -->\s*(?:<!--[^\n]*-->\s*)*```python\n(.*?)```", doc, re.S)
    assert len(blocks) == 1, "docs/scale-out.md must mark exactly one script as tested"
    script = tmp_path / "train.py"
    script.write_text(blocks[0])
    env = {**cluster.env, "RAY_ADDRESS": cluster.address}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "mean return" in done.stdout

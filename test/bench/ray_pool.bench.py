"""Aggregate env-steps/s of a gymwire.ray pool of 1 and of 2 servers, stepped by the same client.

Each run uses one PoolVectorEnv of --num-envs CartPole sessions (split evenly over the servers,
one step_batch frame per server per step, sent in parallel) on a local Ray started here. The floor,
measured in the same run, is gymwire.make_vec against one plain `gymwire serve` process with the
same sessions: what the pool adds or gains is read against it. CPU seconds per wall second of the
client process and of each server process say where the machine's cores go.

Run: client/python/.venv-ray/bin/python test/bench/ray_pool.bench.py [--seconds 5] [--num-envs 64]
(client/python/scripts/test-ray.sh creates that venv). Prints JSON lines {"bench", "metric",
"value", "unit", ...}; the last one is the ratio of 2 servers over 1.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "client" / "python" / "src"))

import numpy as np  # noqa: E402
import ray  # noqa: E402

import gymwire  # noqa: E402
from gymwire.ray import ServerPool  # noqa: E402

BENCH = "ray_pool"
ENV_ID = "gymwire/CartPole-v1"
GYMWIRE_BIN = shlex.join(["node", str(REPO / "bin" / "gymwire.js")])
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def emit(metric: str, value: float, unit: str, **extra: object) -> None:
    print(json.dumps({"bench": BENCH, "metric": metric, "value": round(value, 3), "unit": unit, **extra}), flush=True)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process and its finished children (the server re-runs itself once)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(fields[i]) for i in (11, 12, 13, 14))
    return (utime + stime + cutime + cstime) / CLOCK_TICKS


def tree_cpu_seconds(pid: int) -> float:
    """CPU time of a process and its live descendants (gymwire serve's launcher and its server child)."""
    total = cpu_seconds(pid)
    for child in Path(f"/proc/{pid}/task").glob("*/children"):
        for cpid in child.read_text().split():
            try:
                total += tree_cpu_seconds(int(cpid))
            except (FileNotFoundError, ProcessLookupError):
                pass
    return total


def measure(envs: Any, seconds: float, server_pids: list[int]) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    actions = rng.integers(0, 2, size=(256, envs.num_envs))
    envs.reset(seed=0)
    for i in range(100):
        envs.step(actions[i % len(actions)])
    client0, servers0 = time.process_time(), [tree_cpu_seconds(p) for p in server_pids]
    batches, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(20):
            envs.step(actions[batches % len(actions)])
            batches += 1
    elapsed = time.perf_counter() - start
    return {
        "steps_per_s": batches * envs.num_envs / elapsed,
        "batches": batches,
        "client_cpu": (time.process_time() - client0) / elapsed,
        "server_cpu": [round((tree_cpu_seconds(p) - s0) / elapsed, 2) for p, s0 in zip(server_pids, servers0)],
    }


def start_server() -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [*shlex.split(GYMWIRE_BIN), "serve", "--port", "0", "--log-level", "warn"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        found = re.search(r"on (ws://\S+)", line)
        if found:
            return proc, found.group(1)
    raise RuntimeError("the server exited before printing its URL")


def run_pool(num_servers: int, args: argparse.Namespace) -> dict[str, Any]:
    with ServerPool(num_servers=num_servers, num_cpus=0.5, gymwire_bin=GYMWIRE_BIN, serve_args=["--log-level", "warn"]) as pool:
        envs = pool.make_vec(ENV_ID, num_envs=args.num_envs)
        result = measure(envs, args.seconds, [s["pid"] for s in pool.servers])
        envs.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--num-envs", type=int, default=64)
    args = parser.parse_args()
    n = args.num_envs
    common = {"num_envs": n, "env": ENV_ID, "cpus": os.cpu_count()}

    proc, url = start_server()
    try:
        floor_envs = gymwire.make_vec(url, ENV_ID, num_envs=n)
        floor = measure(floor_envs, args.seconds, [proc.pid])
        floor_envs.close()
    finally:
        proc.terminate()
        proc.wait(10)
    emit("floor_one_plain_server_steps_per_s", floor["steps_per_s"], "env-steps/s", client_cpu=round(floor["client_cpu"], 2), server_cpu=floor["server_cpu"], **common)

    ray.init(num_cpus=2, object_store_memory=80_000_000, include_dashboard=False, logging_level="warning", log_to_driver=False)
    try:
        one = run_pool(1, args)
        emit("pool_1_server_steps_per_s", one["steps_per_s"], "env-steps/s", client_cpu=round(one["client_cpu"], 2), server_cpu=one["server_cpu"], **common)
        two = run_pool(2, args)
        emit("pool_2_servers_steps_per_s", two["steps_per_s"], "env-steps/s", client_cpu=round(two["client_cpu"], 2), server_cpu=two["server_cpu"], **common)
    finally:
        ray.shutdown()
    emit("ratio_pool_1_over_floor", one["steps_per_s"] / floor["steps_per_s"], "x", **common)
    emit("ratio_pool_2_over_pool_1", two["steps_per_s"] / one["steps_per_s"], "x", **common)


if __name__ == "__main__":
    main()

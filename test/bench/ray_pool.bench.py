"""Aggregate env-steps/s of a gymwire.ray pool of 1 and of 2 servers, stepped by the same client.

Each setup is one vector env of --num-envs CartPole sessions (--env picks another); a pool's are
split evenly over its servers, one step_batch frame per server per step, sent in parallel, on a
local Ray started here. The floor,
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
        "server_cpu": [round((tree_cpu_seconds(p) - s0) / elapsed, 2) for p, s0 in zip(server_pids, servers0, strict=True)],
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=3.0, help="per measurement; each setup is measured --rounds times, interleaved")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--env", default=ENV_ID)
    args = parser.parse_args()
    common = {"num_envs": args.num_envs, "env": args.env, "cpus": os.cpu_count(), "rounds": args.rounds}

    ray.init(num_cpus=2, object_store_memory=80_000_000, include_dashboard=False, logging_level="warning", log_to_driver=False)
    proc, url = start_server()
    pools = [ServerPool(num_servers=count, num_cpus=0.5, gymwire_bin=GYMWIRE_BIN, serve_args=["--log-level", "warn"]) for count in (1, 2)]
    try:
        # All three setups live at once and are measured in turns, so the load other work puts on the
        # machine falls on each of them alike; the median of each one's rounds is reported.
        setups = {
            "floor_one_plain_server": (gymwire.make_vec(url, args.env, num_envs=args.num_envs), [proc.pid]),
            "pool_1_server": (pools[0].make_vec(args.env, num_envs=args.num_envs), [s["pid"] for s in pools[0].servers]),
            "pool_2_servers": (pools[1].make_vec(args.env, num_envs=args.num_envs), [s["pid"] for s in pools[1].servers]),
        }
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in setups}
        for _ in range(args.rounds):
            for name, (envs, pids) in setups.items():
                runs[name].append(measure(envs, args.seconds, pids))
        rates = {}
        for name, results in runs.items():
            mid = sorted(results, key=lambda r: r["steps_per_s"])[len(results) // 2]
            rates[name] = mid["steps_per_s"]
            emit(f"{name}_steps_per_s", mid["steps_per_s"], "env-steps/s", client_cpu=round(mid["client_cpu"], 2), server_cpu=mid["server_cpu"], **common)
        for envs, _ in setups.values():
            envs.close()
    finally:
        for pool in pools:
            pool.shutdown()
        ray.shutdown()
        proc.terminate()
        proc.wait(10)
    emit("ratio_pool_1_over_floor", rates["pool_1_server"] / rates["floor_one_plain_server"], "x", **common)
    emit("ratio_pool_2_over_pool_1", rates["pool_2_servers"] / rates["pool_1_server"], "x", **common)


if __name__ == "__main__":
    main()

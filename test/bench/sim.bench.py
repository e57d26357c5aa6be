"""Env-steps/s of a simulator served by gymwire's Python workers (gymwire.make_vec over a real
server) against the same envs in Gymnasium's AsyncVectorEnv in this process's machine, images
included, for 1, 8 (and 32 where the machine holds them) envs, in the same run.

Run: client/python/.venv-sim/bin/python test/bench/sim.bench.py [--env metaworld] [--num-envs 1,8] [--workers 2] [--seconds 8]
(client/python/scripts/test-sim.sh creates that venv). --env metaworld is metaworld/MT1-v3
(reach-v3, 128-pixel camera image); --env robosuite is robosuite/Lift-v0 (two 128-pixel cameras).
Both render with the backend the workers choose (OSMesa on a CPU-only machine, effects off).
The floor and gymwire are measured in turns, round after round, so load that moves slows both
alike; the ratio reported is the median of the per-round ratios. Prints JSON lines
{"bench", "metric", "value", "unit", ...}.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "client" / "python" / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gymnasium as gym  # noqa: E402
import gymwire  # noqa: E402
import numpy as np  # noqa: E402
from bench_server import start_server  # noqa: E402
from gymwire.sim.rendering import configure_gl  # noqa: E402

BENCH = "sim"
ENVS = {
    "metaworld": ("metaworld/MT1-v3", "gymwire.sim.metaworld_tasks:MetaWorldTask", {"task": "reach-v3", "image_size": 128}),
    "robosuite": ("robosuite/Lift-v0", "gymwire.sim.robosuite_tasks:RobosuiteTask", {"task": "Lift", "image_size": 128}),
}


def emit(metric: str, value: float, unit: str, **extra: object) -> None:
    print(json.dumps({"bench": BENCH, "metric": metric, "value": round(value, 3), "unit": unit, **extra}), flush=True)


def local_env(target: str, kwargs: dict[str, object]) -> gym.Env:
    module, _, name = target.partition(":")
    cls = getattr(__import__(module, fromlist=[name]), name)
    # The served env is truncated by the server's TimeLimit; the local one gets Gymnasium's.
    return gym.wrappers.TimeLimit(cls(**kwargs), 500)


def measure(envs: gym.vector.VectorEnv, seconds: float, rng: np.random.Generator) -> float:
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        envs.step(rng.uniform(-1, 1, envs.action_space.shape).astype(np.float32))
        steps += 1
    return steps * envs.num_envs / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--env", choices=sorted(ENVS), default="metaworld")
    parser.add_argument("--num-envs", default="1,8", help="comma-separated env counts")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="the server's Python workers (default: one per core)")
    parser.add_argument("--seconds", type=float, default=8.0, help="time on each vector env per count, over all rounds")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    configure_gl()
    env_id, target, kwargs = ENVS[args.env]
    proc, url = start_server("--workers", str(args.workers))
    rng = np.random.default_rng(0)
    try:
        for n in (int(c) for c in args.num_envs.split(",")):
            # spawn: forking this process (threads of the server pipe, numba, BLAS) can deadlock a child on a lock.
            floor = gym.vector.AsyncVectorEnv([functools.partial(local_env, target, kwargs)] * n, context="spawn")
            served = gymwire.make_vec(url, env_id, num_envs=n, **kwargs)
            try:
                for e in (floor, served):
                    e.reset(seed=0)
                    measure(e, 1.0, rng)  # warm up: first frames, JIT, caches
                rates: dict[str, list[float]] = {"floor": [], "gymwire": []}
                for _ in range(args.rounds):
                    rates["floor"].append(measure(floor, args.seconds / args.rounds, rng))
                    rates["gymwire"].append(measure(served, args.seconds / args.rounds, rng))
            finally:
                floor.close()
                served.close()
            ratios = [a / b for a, b in zip(rates["gymwire"], rates["floor"])]
            common = {"env": env_id, "num_envs": n, "workers": args.workers, "cpus": os.cpu_count(), "gl": os.environ.get("MUJOCO_GL")}
            emit("async_vector_env_steps_per_s", statistics.median(rates["floor"]), "env-steps/s", **common, rounds=[round(r, 1) for r in rates["floor"]])
            emit("gymwire_make_vec_steps_per_s", statistics.median(rates["gymwire"]), "env-steps/s", **common, rounds=[round(r, 1) for r in rates["gymwire"]])
            emit("ratio_gymwire_over_async_vector_env", statistics.median(ratios), "x", **common, min=round(min(ratios), 2), max=round(max(ratios), 2))
    finally:
        proc.terminate()
        proc.wait(10)


if __name__ == "__main__":
    main()

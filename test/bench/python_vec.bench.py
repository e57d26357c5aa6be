"""Steps per second of gymwire.make_vec (16 CartPole sessions, one frame per step) against Gymnasium's
own AsyncVectorEnv of CartPole-v1 with 16 envs, on the same machine, in the same run.

Run: client/python/.venv/bin/python test/bench/python_vec.bench.py [--seconds 5] [--rounds 5] [--num-envs 16] [--hosted]
(client/python/scripts/test.sh creates that venv). With --hosted the sessions are Gymnasium's own
Python CartPole-v1 hosted by the server's worker pool (`gymwire serve --gym CartPole-v1`, id
gym/CartPole-v1, workers running this python) instead of the built-in TypeScript CartPole. With
--dict-image they are a hosted Dict observation env with two 128x128 RGB cameras, a state and a
text key (test/bench/dict_image_env.py), against AsyncVectorEnv of the same env. Prints JSON lines
{"bench", "metric", "value", "unit"}; gymwire is measured on both transports of the sync Client
(the socket fast path, then the asyncio fallback), each with its ratio gymwire / AsyncVectorEnv.
The three vector envs stay open and are measured in turns, round after round (each round
seconds / rounds long), so a machine whose load moves from second to second slows all three alike;
the ratio reported is the median of the per-round ratios, with their range.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# GYMWIRE_BENCH_SRC: another checkout's client/python/src, to measure a change before and after.
sys.path.insert(0, os.environ.get("GYMWIRE_BENCH_SRC") or str(REPO / "client" / "python" / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import gymnasium as gym  # noqa: E402
import gymwire  # noqa: E402
import numpy as np  # noqa: E402
from bench_server import start_server  # noqa: E402

BENCH = "python_vec"


def emit(metric: str, value: float, unit: str, **extra: object) -> None:
    print(
        json.dumps(
            {
                "bench": BENCH,
                "metric": metric,
                "value": round(value, 3),
                "unit": unit,
                **extra,
            }
        ),
        flush=True,
    )


def warm_up(envs: gym.vector.VectorEnv, actions: np.ndarray, seed: int = 0) -> None:
    envs.reset(seed=seed)
    for i in range(200):
        envs.step(actions[i % len(actions)])


def measure(
    envs: gym.vector.VectorEnv, actions: np.ndarray, seconds: float
) -> tuple[float, int]:
    """Env steps per second over `seconds` of random actions."""
    steps = 0
    start = time.perf_counter()
    deadline = start + seconds
    i = 0
    while time.perf_counter() < deadline:
        for _ in range(50):
            envs.step(actions[i % len(actions)])
            i += 1
        steps += 50
    elapsed = time.perf_counter() - start
    return steps * envs.num_envs / elapsed, steps


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--seconds",
        type=float,
        default=5.0,
        help="time on each vector env, over all rounds",
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument(
        "--hosted",
        action="store_true",
        help="Gymnasium's CartPole-v1 run by the server's Python workers",
    )
    parser.add_argument(
        "--dict-image",
        action="store_true",
        help="a hosted Dict env with two 128x128 images, a state and a text key",
    )
    args = parser.parse_args()
    n = args.num_envs
    actions = np.random.default_rng(0).integers(0, 2, size=(4096, n))
    per_round = args.seconds / args.rounds

    if args.dict_image:
        from dict_image_env import DictImageEnv

        # The server's workers import the env from this folder.
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parent), os.environ.get("PYTHONPATH")]))
        env_id = "bench/DictImage-v0"
        server_args = ["--python", "dict_image_env:DictImageEnv", "--id", env_id]
    else:
        env_id = "gym/CartPole-v1" if args.hosted else "gymwire/CartPole-v1"
        server_args = ["--gym", "CartPole-v1"] if args.hosted else []
    proc, url = start_server(*server_args)
    envs: dict[str, gym.vector.VectorEnv] = {}
    try:
        envs["floor"] = (
            gym.vector.AsyncVectorEnv([DictImageEnv] * n)
            if args.dict_image
            else gym.make_vec("CartPole-v1", num_envs=n, vectorization_mode="async")
        )
        for transport in ("socket", "asyncio"):
            envs[transport] = gymwire.make_vec(
                url, env_id, num_envs=n, client_options={"transport": transport}
            )
        for e in envs.values():
            warm_up(e, actions)
        rates: dict[str, list[float]] = {name: [] for name in envs}
        for _ in range(args.rounds):
            for name, e in envs.items():
                rates[name].append(measure(e, actions, per_round)[0])
    finally:
        for e in envs.values():
            e.close()
        proc.terminate()
        proc.wait(10)
    floor = rates["floor"]
    emit(
        "gymnasium_async_vector_env_steps_per_s",
        statistics.median(floor),
        "env-steps/s",
        num_envs=n,
        rounds=[round(r) for r in floor],
    )
    for transport in ("socket", "asyncio"):
        ours = rates[transport]
        ratios = [a / b for a, b in zip(ours, floor)]
        emit(
            "gymwire_make_vec_steps_per_s",
            statistics.median(ours),
            "env-steps/s",
            num_envs=n,
            env=env_id,
            transport=transport,
            rounds=[round(r) for r in ours],
        )
        emit(
            "gymwire_make_vec_batch_latency_us",
            1e6 * n / statistics.median(ours),
            "us/step_batch",
            num_envs=n,
            env=env_id,
            transport=transport,
        )
        emit(
            "ratio_gymwire_over_async_vector_env",
            statistics.median(ratios),
            "x",
            num_envs=n,
            cpus=os.cpu_count(),
            env=env_id,
            transport=transport,
            min=round(min(ratios), 2),
            max=round(max(ratios), 2),
        )


if __name__ == "__main__":
    main()

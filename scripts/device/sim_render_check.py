"""Renders one seeded robosuite Lift and one Meta-World reach episode with the OpenGL backend that
MUJOCO_GL names, or compares two such recordings (scripts/device/sim-egl.sh runs both steps).

    python sim_render_check.py record OUT.npz       frames of both envs (render_effects off, so the
                                                    two backends draw the same scene)
    python sim_render_check.py compare A.npz B.npz  per-env PSNR and the largest pixel difference, as JSON
"""

from __future__ import annotations

import json
import os
import sys
import time

import numpy as np

STEPS = 20


def record(path: str) -> None:
    from gymwire.sim.metaworld_tasks import MetaWorldTask
    from gymwire.sim.robosuite_tasks import RobosuiteTask

    frames: dict[str, np.ndarray] = {}
    timings: dict[str, float] = {}
    rng = np.random.default_rng(0)
    envs = {
        "robosuite_lift": (RobosuiteTask(task="Lift", image_size=128, render_effects=False), lambda o: o["agentview_image"]),
        "metaworld_reach": (MetaWorldTask(task="reach-v3", image_size=128, render_effects=False), lambda o: o["image"]),
    }
    for name, (env, image) in envs.items():
        obs, _ = env.reset(seed=3)
        shots = [image(obs)]
        start = time.perf_counter()
        for _ in range(STEPS):
            obs, *_ = env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))
            shots.append(image(obs))
        timings[name] = STEPS / (time.perf_counter() - start)
        frames[name] = np.stack(shots)
        env.close()
    np.savez(path, **frames)
    print(json.dumps({"backend": os.environ.get("MUJOCO_GL"), "steps_per_s": timings}))


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


def compare(a_path: str, b_path: str) -> None:
    a, b = np.load(a_path), np.load(b_path)
    report = {}
    for name in a.files:
        x, y = a[name], b[name]
        report[name] = {
            "psnr_db_min": min(psnr(x[t], y[t]) for t in range(len(x))),
            "max_abs_diff": int(np.abs(x.astype(np.int16) - y.astype(np.int16)).max()),
            "byte_equal": bool(x.tobytes() == y.tobytes()),
        }
    print(json.dumps(report))


if __name__ == "__main__":
    if sys.argv[1:2] == ["record"]:
        record(sys.argv[2])
    elif sys.argv[1:2] == ["compare"]:
        compare(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)

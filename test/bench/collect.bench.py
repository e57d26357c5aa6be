"""Steps per second of Python ``gymwire.collect`` against the TypeScript rollout engine, same run, same server.

Both collect datasets (written to disk) of the same envs with the same deterministic driving policy
(client/python/tests/ts/collect.ts and its Python mirror in client/python/tests/test_collect.py),
the same number of sessions and episodes and two session groups. The TypeScript rollout is the
floor: the figure is Python's steps/s and the ratio TS / Python, which should stay at or under 1.5.

Run: client/python/.venv/bin/python test/bench/collect.bench.py [--quick]
(client/python/scripts/test.sh creates that venv). Prints JSON lines {"bench", "metric", "value", "unit", ...}.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "client" / "python" / "src"))
sys.path.insert(0, str(REPO / "client" / "python" / "tests"))

import gymwire  # noqa: E402
from conftest import ServerProcess  # noqa: E402
from test_collect import ParityDriver  # noqa: E402

BENCH = "collect"


def emit(metric: str, value: float, unit: str, **extra: object) -> None:
    print(json.dumps({"bench": BENCH, "metric": metric, "value": round(value, 3), "unit": unit, **extra}), flush=True)


def ts_rollout(url: str, env_id: str, kwargs: dict[str, object], out: Path, episodes: int, sessions: int, groups: int) -> float:
    tsx = REPO / "node_modules" / ".bin" / "tsx"
    cmd = [str(tsx), str(REPO / "client/python/tests/ts/collect.ts"), url, env_id, str(out), str(episodes), str(sessions), "0", str(groups), json.dumps(kwargs)]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600, check=True)
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    return float(summary["stepsPerSec"])


def py_collect(url: str, env_id: str, kwargs: dict[str, object], out: Path, episodes: int, sessions: int, groups: int) -> float:
    envs = gymwire.make_vec(url, env_id, num_envs=sessions, **kwargs)
    try:
        t = time.perf_counter()
        manifest = gymwire.collect(envs, ParityDriver(env_id), episodes=episodes, out_dir=out, seed=0, groups=groups, overwrite=True)
        elapsed = time.perf_counter() - t
    finally:
        envs.close()
    return manifest["counts"]["steps"] / elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--groups", type=int, default=2)
    args = ap.parse_args()
    cases = [
        ("bench2drive", "gymwire/Bench2Drive-v0", {}, 4 if args.quick else 8, 4 if args.quick else 8),
        ("navsim", "gymwire/NavsimEnv-v1", {}, 64 if args.quick else 128, 16),
    ]
    server = ServerProcess()
    url = server.url
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name, env_id, kwargs, episodes, sessions in cases:
                # TS first, then Python, then TS again: the floor is the better of the two TS runs.
                ts1 = ts_rollout(url, env_id, kwargs, Path(tmp) / f"{name}-ts", episodes, sessions, args.groups)
                py = py_collect(url, env_id, kwargs, Path(tmp) / f"{name}-py", episodes, sessions, args.groups)
                ts2 = ts_rollout(url, env_id, kwargs, Path(tmp) / f"{name}-ts", episodes, sessions, args.groups)
                floor = max(ts1, ts2)
                common = {"env": env_id, "episodes": episodes, "sessions": sessions, "groups": args.groups}
                emit(f"{name}_ts_rollout_steps_per_s", floor, "steps/s", **common)
                emit(f"{name}_py_collect_steps_per_s", py, "steps/s", floor_ts_steps_per_s=round(floor, 1), **common)
                emit(f"{name}_ts_over_py", floor / py, "x", target=1.5, **common)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
